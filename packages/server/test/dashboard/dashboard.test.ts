import request from 'supertest';
import { CONSENT_MS } from '../../src/oauth/consent';
import { dashboardHome, EXTERNAL_REFERENCE, installationAction, me, outboxEvents, postForm, signIn } from '../support/auth-steps';
import {
  answerConsentForm,
  authorizeQuery,
  authorizeUrl,
  CookieJar,
  consentScopeLines,
  decodeHtml,
  inputValue,
  signInAndOpenConsent,
} from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, createTestStore, installWithTokens, LAUNCH_URL, type StoreFixture, suiteHarness, UUID } from '../support/harness';
import { specDescriptionOf, specScopeDescriptions } from '../support/spec-scopes';

const SESSION_COOKIE = 'svc_session';

const setCookies = (response: request.Response): string[] => ([] as string[]).concat(response.headers['set-cookie'] ?? []);
const setsSession = (response: request.Response) => setCookies(response).some((line) => line.startsWith(`${SESSION_COOKIE}=`) && !/max-age=0/i.test(line));

/** Every dashboard page: no framing, no outside assets. */
function expectPageProtections(response: request.Response): void {
  expect(response.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  expect(response.headers['x-frame-options']).toBe('DENY');
  if (response.text) expect(response.text).not.toMatch(EXTERNAL_REFERENCE);
}

describe.each(testDatabases())('the merchant dashboard on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let client: AppFixture;
  let sharedStore: StoreFixture;

  beforeAll(async () => {
    client = await createTestApp(h, { required: ['products:read'], optional: ['orders:read'], name: 'Dashboard Sync' });
    sharedStore = await createTestStore(h, 'Shared Store');
  });

  const loginPage = async (jar: CookieJar, returnTo?: string) => {
    const page = await request(h.app)
      .get(`/dashboard/login${returnTo === undefined ? '' : `?return_to=${encodeURIComponent(returnTo)}`}`)
      .set('Cookie', jar.header());
    jar.store(page);
    return page;
  };

  const submitLogin = (jar: CookieJar, fields: Record<string, string>) => postForm(h.app, jar, '/dashboard/login', fields);

  /** A store owner on the consent page of a fresh store (nothing installed there yet). */
  async function openConsent(): Promise<{ store: StoreFixture; jar: CookieJar; consent: request.Response }> {
    const store = await createTestStore(h);
    const jar = new CookieJar();
    const consent = await signInAndOpenConsent(h.app, jar, store, authorizeUrl(authorizeQuery(store, client, ['products:read'])));
    expect(consent.status).toBe(200);
    return { store, jar, consent };
  }

  async function expectNothingInstalled(store: StoreFixture): Promise<void> {
    expect(await h.db('installations').where({ store_id: store.store.id })).toHaveLength(0);
    expect(await h.db('authorization_codes').where({ store_id: store.store.id })).toHaveLength(0);
  }

  /** A store with the app installed (tokens in hand) and its owner signed in to the dashboard. */
  async function installedAndSignedIn() {
    const store = await createTestStore(h);
    const tokens = await installWithTokens(h, store, client, ['products:read', 'orders:read']);
    const jar = new CookieJar();
    await signIn(h.app, jar, store);
    const { csrf } = await dashboardHome(h.app, jar);
    return { store, tokens, jar, csrf };
  }

  describe('sign-in', () => {
    it('a wrong password is a 401 page and starts no session', async () => {
      const store = await createTestStore(h);
      const jar = new CookieJar();
      const page = await loginPage(jar);
      const response = await submitLogin(jar, {
        csrf: inputValue(page.text, 'csrf'),
        return_to: '/dashboard',
        email: store.email,
        password: 'not the password',
      });
      expect(response.status).toBe(401);
      expect(response.headers['content-type']).toMatch(/^text\/html/);
      expect(setsSession(response)).toBe(false);
      expect(await h.db('dashboard_sessions').where({ owner_id: store.owner.id })).toHaveLength(0);
    });

    it('a login form without the CSRF cookie, without the CSRF field, or with another token is 403 and starts no session', async () => {
      const store = await createTestStore(h);
      const credentials = { return_to: '/dashboard', email: store.email, password: store.password };
      const jar = new CookieJar();
      const page = await loginPage(jar);
      const csrf = inputValue(page.text, 'csrf');
      const attempts = [
        submitLogin(new CookieJar(), { ...credentials, csrf }),
        submitLogin(jar, credentials),
        submitLogin(jar, { ...credentials, csrf: `${csrf.slice(0, -1)}${csrf.endsWith('A') ? 'B' : 'A'}` }),
      ];
      for (const response of await Promise.all(attempts)) {
        expect(response.status).toBe(403);
        expect(setsSession(response)).toBe(false);
      }
      expect(await h.db('dashboard_sessions').where({ owner_id: store.owner.id })).toHaveLength(0);
    });

    it('the session is stored only as a hash of the cookie value', async () => {
      const store = await createTestStore(h);
      const jar = new CookieJar();
      const signedIn = await signIn(h.app, jar, store);
      const cookieLine = setCookies(signedIn).find((line) => line.startsWith(`${SESSION_COOKIE}=`)) as string;
      expect(cookieLine).toMatch(/; HttpOnly/);
      expect(cookieLine).toMatch(/; SameSite=Lax/);
      const token = jar.get(SESSION_COOKIE) as string;
      const rows = await h.db('dashboard_sessions').where({ owner_id: store.owner.id });
      expect(rows).toHaveLength(1);
      expect(rows[0].session_hash).not.toBe(token);
      expect(JSON.stringify(rows)).not.toContain(token);
    });

    it.each(['//evil.example', 'https://evil.example', '/\\evil.example', 'javascript:alert(1)'])('return_to %s lands on /dashboard', async (returnTo) => {
      const store = sharedStore;
      const jar = new CookieJar();
      const page = await loginPage(jar, returnTo);
      expect(inputValue(page.text, 'return_to')).toBe('/dashboard');
      const response = await submitLogin(jar, { csrf: inputValue(page.text, 'csrf'), return_to: returnTo, email: store.email, password: store.password });
      expect(response.status).toBe(303);
      expect(response.headers.location).toBe('/dashboard');
    });
  });

  describe('the consent form', () => {
    it('an answer without the CSRF token, or with a wrong one, is 403 and issues no code', async () => {
      const { store, jar, consent } = await openConsent();
      const requestId = inputValue(consent.text, 'request_id');
      const withoutCsrf = await postForm(h.app, jar, '/dashboard/consent', { request_id: requestId, decision: 'approve' });
      expect(withoutCsrf.status).toBe(403);
      expect(withoutCsrf.headers.location).toBeUndefined();
      const wrongCsrf = await postForm(h.app, jar, '/dashboard/consent', { csrf: 'x'.repeat(43), request_id: requestId, decision: 'approve' });
      expect(wrongCsrf.status).toBe(403);
      expect(wrongCsrf.headers.location).toBeUndefined();
      await expectNothingInstalled(store);
    });

    it('a consent request seen by one session and answered from another is 400 and installs nothing', async () => {
      const { store, consent } = await openConsent();
      const otherSession = new CookieJar();
      await signIn(h.app, otherSession, store);
      const { csrf } = await dashboardHome(h.app, otherSession);
      const response = await postForm(h.app, otherSession, '/dashboard/consent', {
        csrf,
        request_id: inputValue(consent.text, 'request_id'),
        decision: 'approve',
      });
      expect(response.status).toBe(400);
      expect(response.headers.location).toBeUndefined();
      await expectNothingInstalled(store);
    });

    it('a consent request answered twice: the second answer is 400', async () => {
      const { jar, consent } = await openConsent();
      const first = await answerConsentForm(h.app, jar, consent.text, 'approve');
      expect(first.status).toBe(302);
      const second = await answerConsentForm(h.app, jar, consent.text, 'approve');
      expect(second.status).toBe(400);
      expect(second.headers.location).toBeUndefined();
      const denied = await answerConsentForm(h.app, jar, consent.text, 'deny');
      expect(denied.status).toBe(400);
    });

    it('a consent request 10 minutes old is 400 and installs nothing', async () => {
      const { store, jar, consent } = await openConsent();
      h.clock.advance(CONSENT_MS);
      const response = await answerConsentForm(h.app, jar, consent.text, 'approve');
      expect(response.status).toBe(400);
      expect(response.headers.location).toBeUndefined();
      await expectNothingInstalled(store);
    });

    it('a consent request just under 10 minutes old can still be answered', async () => {
      const { jar, consent } = await openConsent();
      h.clock.advance(CONSENT_MS - 1);
      const response = await answerConsentForm(h.app, jar, consent.text, 'approve');
      expect(response.status).toBe(302);
    });
  });

  describe('scopes in words', () => {
    const everyScope = [...specScopeDescriptions.keys()];

    it('the consent page names every requested scope with the description the spec gives it, required ones first', async () => {
      const optional = everyScope.filter((scope) => scope !== 'products:read');
      const asksForEverything = await createTestApp(h, { required: ['products:read'], optional, name: 'Everything Sync' });
      const store = await createTestStore(h);
      const consent = await signInAndOpenConsent(h.app, new CookieJar(), store, authorizeUrl(authorizeQuery(store, asksForEverything, everyScope)));
      expect(consent.status).toBe(200);
      expect(consentScopeLines(consent.text)).toEqual(['products:read', ...optional].map((scope) => ({ words: specDescriptionOf(scope), scope })));
    });

    it('the installed apps list shows the granted scopes in the same words, in the order of the spec', async () => {
      const { jar } = await installedAndSignedIn();
      const { page } = await dashboardHome(h.app, jar);
      const access = /<td class="muted">(.*?)<\/td>/s.exec(page.text)?.[1];
      const granted = everyScope.filter((scope) => scope === 'products:read' || scope === 'orders:read');
      expect(access?.split('<br>').map(decodeHtml)).toEqual(granted.map(specDescriptionOf));
    });
  });

  describe('installed apps', () => {
    it('the list shows the installed app with Open and Uninstall', async () => {
      const { store, tokens, jar } = await installedAndSignedIn();
      const { page } = await dashboardHome(h.app, jar);
      expect(page.text).toContain('Dashboard Sync');
      expect(page.text).toContain(`action="${installationAction(store, tokens.installation_id, 'open')}"`);
      expect(page.text).toContain(`action="${installationAction(store, tokens.installation_id, 'uninstall')}"`);
    });

    it('Open is 303 to the launch URL with svc_store_id, svc_launch_token and svc_timestamp', async () => {
      const { store, tokens, jar, csrf } = await installedAndSignedIn();
      const response = await postForm(h.app, jar, installationAction(store, tokens.installation_id, 'open'), { csrf });
      expect(response.status).toBe(303);
      const launch = new URL(response.headers.location as string);
      expect(`${launch.origin}${launch.pathname}`).toBe(LAUNCH_URL);
      expect(Object.fromEntries(launch.searchParams)).toEqual({
        svc_store_id: store.store.id,
        svc_launch_token: expect.stringMatching(/^svc_lt_/),
        svc_timestamp: String(Math.floor(h.clock.now() / 1000)),
      });
    });

    it('Open and Uninstall without the CSRF token are 403 and change nothing', async () => {
      const { store, tokens, jar } = await installedAndSignedIn();
      for (const action of ['open', 'uninstall'] as const) {
        const response = await postForm(h.app, jar, installationAction(store, tokens.installation_id, action), {});
        expect(response.status).toBe(403);
      }
      expect((await me(h.app, store.store.id, tokens.access_token)).status).toBe(200);
    });

    it('another owner cannot open or uninstall the app', async () => {
      const { store, tokens } = await installedAndSignedIn();
      const stranger = new CookieJar();
      await signIn(h.app, stranger, await createTestStore(h));
      const { csrf } = await dashboardHome(h.app, stranger);
      for (const action of ['open', 'uninstall'] as const) {
        const response = await postForm(h.app, stranger, installationAction(store, tokens.installation_id, action), { csrf });
        expect(response.status).toBe(404);
      }
      expect((await me(h.app, store.store.id, tokens.access_token)).status).toBe(200);
    });

    it('Uninstall marks the installation uninstalled, revokes its tokens and writes app.uninstalled to the outbox', async () => {
      const { store, tokens, jar, csrf } = await installedAndSignedIn();
      const response = await postForm(h.app, jar, installationAction(store, tokens.installation_id, 'uninstall'), { csrf });
      expect(response.status).toBe(303);
      expect(response.headers.location).toBe('/dashboard');

      const installation = await h.db('installations').where({ id: tokens.installation_id }).first();
      expect(installation.status).toBe('uninstalled');
      const afterwards = await me(h.app, store.store.id, tokens.access_token);
      expect(afterwards.status).toBe(401);
      expect(afterwards.body.error.code).toBe('UNAUTHENTICATED');

      const events = await outboxEvents(h, store.store.id, 'app.uninstalled');
      expect(events).toEqual([
        {
          id: expect.stringMatching(UUID),
          type: 'app.uninstalled',
          api_version: '2026-10-15',
          store_id: store.store.id,
          occurred_at: new Date(h.clock.now()).toISOString(),
          data: {
            app_id: client.app.id,
            installation_id: tokens.installation_id,
            installation_generation: 1,
            uninstalled_at: new Date(h.clock.now()).toISOString(),
          },
        },
      ]);
      const { page } = await dashboardHome(h.app, jar);
      expect(page.text).not.toContain(tokens.installation_id);
    });
  });

  it('logout ends the session: the old cookie no longer opens the dashboard', async () => {
    const store = await createTestStore(h);
    const jar = new CookieJar();
    await signIn(h.app, jar, store);
    const oldCookie = jar.header();
    const { csrf } = await dashboardHome(h.app, jar);
    const loggedOut = await postForm(h.app, jar, '/dashboard/logout', { csrf });
    expect(loggedOut.status).toBe(303);
    expect(loggedOut.headers.location).toBe('/dashboard/login');
    expect(setCookies(loggedOut).some((line) => line.startsWith(`${SESSION_COOKIE}=;`) && /max-age=0/i.test(line))).toBe(true);
    const replayed = await request(h.app).get('/dashboard').set('Cookie', oldCookie);
    expect(replayed.status).toBe(303);
    expect(replayed.headers.location).toMatch(/^\/dashboard\/login\?return_to=/);
    expect(await h.db('dashboard_sessions').where({ owner_id: store.owner.id })).toHaveLength(0);
  });

  it('every page forbids framing and loads nothing from elsewhere', async () => {
    const jar = new CookieJar();
    const login = await loginPage(jar);
    const { store, jar: signedIn, consent } = await openConsent();
    const { page: home } = await dashboardHome(h.app, signedIn);
    const refused = await postForm(h.app, signedIn, '/dashboard/consent', { request_id: inputValue(consent.text, 'request_id'), decision: 'approve' });
    const missing = await request(h.app).get('/dashboard/nowhere').set('Cookie', signedIn.header());
    const failedLogin = await submitLogin(jar, {
      csrf: inputValue(login.text, 'csrf'),
      return_to: '/dashboard',
      email: store.email,
      password: 'wrong password',
    });
    for (const page of [login, consent, home, refused, missing, failedLogin]) expectPageProtections(page);
  });
});
