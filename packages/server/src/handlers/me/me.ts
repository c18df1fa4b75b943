import { toIso } from '../../core/clock';
import { PUBLISHED_LIMITS } from '../../core/limits';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf } from '../../http/handler';
import { sortScopes } from '../../platform/scopes';
import { findStore } from '../../platform/stores';

/** `me`: GET /stores/{storeId}/v1/me: the store, app and installation the token acts for, its scopes and the limits. */
const me: Handler<'me'> = async (context) => {
  const principal = principalOf(context);
  const store = await findStore(context.services.db, principal.storeId);
  if (!store) throw new Error(`Store ${principal.storeId} of a live token is missing`);
  return {
    status: 200,
    body: envelope(context, {
      store: { id: store.id, name: store.name, domain: store.domain, currency: store.currency, timezone: store.timezone, locale: store.locale },
      app: { id: principal.appId, name: principal.appName, version_id: principal.versionId },
      installation: {
        id: principal.installationId,
        generation: principal.generation,
        grant_revision: principal.grantRevision,
        installed_at: toIso(principal.installedAt),
      },
      scopes: sortScopes(principal.scopes),
      limits: PUBLISHED_LIMITS,
    }),
  };
};

export default me;
