import { randomBytes } from 'node:crypto';
import express, { type Request, type Response, Router } from 'express';
import { verifySignIn } from '../credentials/passwords';
import { safeEqual } from '../credentials/secrets';
import { noteUnexpectedError } from '../http/request-log';
import { pageHeaders } from '../http/security-headers';
import { answerConsent } from '../oauth/consent';
import { issueLaunch } from '../oauth/launch';
import { findApp, findVersion } from '../platform/apps';
import { findInstallation, listInstallations, uninstall } from '../platform/installations';
import { findOwnerByEmail, findStore, storesOwnedBy } from '../platform/stores';
import type { Services } from '../services/container';
import { clearCookie, readCookie, setCookie } from './cookies';
import { safeReturnTo } from './security';
import { csrfMatches, currentSession, type DashboardSession, endSession, SESSION_COOKIE, SESSION_MS, startSession } from './sessions';
import { createSignInGuard, type SignInRefusal } from './sign-in-guard';
import { homePage, loginPage, messagePage, type StoreView } from './views';

/** The login form's CSRF token (double-submit cookie: there is no session yet to bind it to). */
const LOGIN_CSRF_COOKIE = 'svc_login_csrf';

function render(res: Response, status: number, html: string, formTargets: readonly string[] = []): void {
  res.status(status).set(pageHeaders(formTargets)).type('html').send(html);
}

function redirect(res: Response, location: string, status = 303): void {
  res.status(status).set(pageHeaders()).location(location).end();
}

const bodyField = (req: Request, name: string): string | undefined => {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
};

const bodyList = (req: Request, name: string): string[] => {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  if (typeof value === 'string') return [value];
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
};

function showLogin(req: Request, res: Response, input: { returnTo: string; error?: string; email?: string; signedInAs?: string }, status = 200): void {
  const existing = readCookie(req.headers.cookie, LOGIN_CSRF_COOKIE);
  const csrfToken = existing && /^[A-Za-z0-9_-]{43}$/.test(existing) ? existing : randomBytes(32).toString('base64url');
  setCookie(req, res, LOGIN_CSRF_COOKIE, csrfToken);
  render(res, status, loginPage({ csrfToken, ...input }));
}

/** "a minute", "15 minutes", "an hour", "24 hours": the wait, rounded up, in words. */
function waitInWords(seconds: number): string {
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 120) return minutes === 1 ? 'a minute' : `${minutes} minutes`;
  return `${Math.ceil(minutes / 60)} hours`;
}

/**
 * The answer to a blocked caller: the same page whether or not the e-mail belongs to an owner, with
 * when to try again.
 */
function refuseSignIn(req: Request, res: Response, input: { returnTo: string; email: string }, refusal: SignInRefusal): void {
  res.set('Retry-After', String(refusal.retryAfterSeconds));
  showLogin(req, res, { ...input, error: `Too many failed attempts from here. Try again in ${waitInWords(refusal.retryAfterSeconds)}.` }, 429);
}

async function storeViews(services: Services, ownerId: string): Promise<StoreView[]> {
  const stores = await storesOwnedBy(services.db, ownerId);
  return Promise.all(
    stores.map(async (store) => {
      const installations = await listInstallations(services.db, { storeId: store.id, installedOnly: true });
      const installed = await Promise.all(
        installations.map(async (installation) => {
          const [app, version] = await Promise.all([findApp(services.db, installation.appId), findVersion(services.db, installation.versionId)]);
          return {
            installationId: installation.id,
            appName: app?.name ?? installation.appId,
            versionNumber: version?.number ?? 0,
            launchUrl: version?.launchUrl,
            scopes: installation.scopes,
            generation: installation.generation,
            installedAt: installation.installedAt,
          };
        }),
      );
      return { id: store.id, name: store.name, domain: store.domain, routingState: store.routing_state, installed };
    }),
  );
}

/** The store owner's installation named in the path, if the session's owner owns its store. */
async function ownedInstallation(services: Services, session: DashboardSession, req: Request) {
  const store = await findStore(services.db, String(req.params.storeId));
  const installation = await findInstallation(services.db, String(req.params.installationId));
  if (!store || store.owner_id !== session.owner.id || !installation || installation.storeId !== store.id || installation.status !== 'installed')
    return undefined;
  return installation;
}

type SignedInHandler = (req: Request, res: Response, session: DashboardSession) => Promise<void>;

/** A page or form for signed-in owners only; forms must carry the session's CSRF token. */
function signedIn(services: Services, handler: SignedInHandler, { form }: { form: boolean }) {
  return async (req: Request, res: Response) => {
    const session = await currentSession(services, req.headers.cookie);
    if (!session) return redirect(res, `/dashboard/login?return_to=${encodeURIComponent(form ? '/dashboard' : req.originalUrl)}`);
    if (form && !csrfMatches(session, bodyField(req, 'csrf')))
      return render(res, 403, messagePage('Form expired', 'The form was not sent from this dashboard session. Go back, reload and try again.'));
    return handler(req, res, session);
  };
}

/**
 * The merchant dashboard: sign-in, the consent page's answer, the installed apps with open and
 * uninstall. Server-rendered, no scripts, CSRF-protected forms, sessions in the database.
 */
export function dashboardRouter(services: Services): Router {
  const router = Router();
  const guard = createSignInGuard(services);
  router.use(express.urlencoded({ extended: false, limit: 65536, parameterLimit: 200 }));

  router.get('/login', async (req, res) => {
    const session = await currentSession(services, req.headers.cookie);
    showLogin(req, res, { returnTo: safeReturnTo(req.query.return_to), ...(session ? { signedInAs: session.owner.email } : {}) });
  });

  router.post('/login', async (req, res) => {
    const returnTo = safeReturnTo(bodyField(req, 'return_to'));
    const email = (bodyField(req, 'email') ?? '').trim().toLowerCase();
    const cookieToken = readCookie(req.headers.cookie, LOGIN_CSRF_COOKIE);
    const formToken = bodyField(req, 'csrf');
    if (!cookieToken || !formToken || !safeEqual(cookieToken, formToken))
      return showLogin(req, res, { returnTo, email, error: 'The form expired; please sign in again.' }, 403);
    // Without an address (the connection already closed) the attempt still counts, in one shared bucket.
    const attempt = { email, address: req.ip ?? 'unknown' };
    const blocked = await guard.refusal(attempt);
    if (blocked) return refuseSignIn(req, res, { returnTo, email }, blocked);
    const owner = await findOwnerByEmail(services.db, email);
    const valid = await verifySignIn(bodyField(req, 'password') ?? '', owner?.password_hash);
    if (!owner || !valid) {
      const nowBlocked = await guard.failed(attempt);
      if (nowBlocked) return refuseSignIn(req, res, { returnTo, email }, nowBlocked);
      return showLogin(req, res, { returnTo, email, error: 'That e-mail and password do not match.' }, 401);
    }
    await guard.succeeded(attempt);
    const { token } = await startSession(services, owner.id);
    setCookie(req, res, SESSION_COOKIE, token, SESSION_MS);
    clearCookie(req, res, LOGIN_CSRF_COOKIE);
    return redirect(res, returnTo);
  });

  router.post(
    '/logout',
    signedIn(
      services,
      async (req, res, session) => {
        await endSession(services, session);
        clearCookie(req, res, SESSION_COOKIE);
        redirect(res, '/dashboard/login');
      },
      { form: true },
    ),
  );

  router.get(
    '/',
    signedIn(
      services,
      async (_req, res, session) => {
        const stores = await storeViews(services, session.owner.id);
        const launchTargets = stores.flatMap((store) => store.installed.flatMap((app) => (app.launchUrl ? [app.launchUrl] : [])));
        render(res, 200, homePage({ ownerEmail: session.owner.email, csrfToken: session.csrfToken, stores }), launchTargets);
      },
      { form: false },
    ),
  );

  router.post(
    '/consent',
    signedIn(
      services,
      async (req, res, session) => {
        const decision = bodyField(req, 'decision');
        if (decision !== 'approve' && decision !== 'deny') return render(res, 400, messagePage('Choose an answer', 'Approve or deny the request.'));
        const outcome = await answerConsent(services, {
          requestId: bodyField(req, 'request_id') ?? '',
          sessionHash: session.sessionHash,
          approve: decision === 'approve',
          optionalScopesKept: bodyList(req, 'optional_scope'),
          issuer: services.issuer,
        });
        if (!outcome.ok) return render(res, 400, messagePage('This request cannot be answered', outcome.reason));
        return redirect(res, outcome.location, 302);
      },
      { form: true },
    ),
  );

  router.post(
    '/stores/:storeId/installations/:installationId/open',
    signedIn(
      services,
      async (req, res, session) => {
        const installation = await ownedInstallation(services, session, req);
        if (!installation) return render(res, 404, messagePage('Not found', 'No such app in your stores.'));
        return redirect(res, await issueLaunch(services, installation.storeId, installation.appId));
      },
      { form: true },
    ),
  );

  router.post(
    '/stores/:storeId/installations/:installationId/uninstall',
    signedIn(
      services,
      async (req, res, session) => {
        const installation = await ownedInstallation(services, session, req);
        if (!installation) return render(res, 404, messagePage('Not found', 'No such app in your stores.'));
        await uninstall(services, installation.id);
        return redirect(res, '/dashboard');
      },
      { form: true },
    ),
  );

  router.use((_req: Request, res: Response) => render(res, 404, messagePage('Not found', 'There is no such dashboard page.')));
  router.use((error: unknown, _req: Request, res: Response, _next: express.NextFunction) => {
    noteUnexpectedError(res, error);
    render(res, 500, messagePage('Something went wrong', `Please try again. Reference: ${String(res.locals.requestId)}`));
  });
  return router;
}
