import { currentSession } from '../../dashboard/sessions';
import { consentPage } from '../../dashboard/views';
import type { Handler } from '../../http/handler';
import { pageHeaders } from '../../http/security-headers';
import { type AuthorizeParameters, validateAuthorization } from '../../oauth/authorize';
import { rememberAuthorization } from '../../oauth/consent';
import { findInstallationOf } from '../../platform/installations';

/**
 * `oauth.authorize`: GET /oauth/authorize. Checks the request (JSON errors, never a redirect), then
 * sends a signed-out browser to the dashboard login and shows a signed-in store owner the consent page.
 */
const oauthAuthorize: Handler<'oauth.authorize'> = async (context) => {
  const { services } = context;
  const parameters = context.query as AuthorizeParameters;
  const request = await validateAuthorization(services, parameters);
  const session = await currentSession(services, context.headers.cookie);
  if (!session || session.owner.id !== request.store.owner_id) {
    const returnTo = `/oauth/authorize?${new URLSearchParams(Object.entries(parameters)).toString()}`;
    return { status: 302, body: undefined, headers: { ...pageHeaders(), Location: `/dashboard/login?return_to=${encodeURIComponent(returnTo)}` } };
  }
  const requestId = await rememberAuthorization(services, session.sessionHash, session.owner.id, request);
  const installation = await findInstallationOf(services.db, request.store.id, request.app.id);
  const page = consentPage({
    requestId,
    csrfToken: session.csrfToken,
    appName: request.app.name,
    storeName: request.store.name,
    storeDomain: request.store.domain,
    ownerEmail: session.owner.email,
    requiredScopes: request.scopes.filter((scope) => request.version.requiredScopes.includes(scope)),
    optionalScopes: request.scopes.filter((scope) => !request.version.requiredScopes.includes(scope)),
    alreadyGranted: installation?.status === 'installed' ? installation.scopes : [],
  });
  return { status: 200, body: page, headers: pageHeaders([request.redirectUri]) };
};

export default oauthAuthorize;
