import type { IncomingMessage, ServerResponse } from 'node:http';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { addVersion, registerApp } from '../../src/platform/apps';
import { authorizeQuery, authorizeUrl } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, basicHeader, createTestStore, RFC7636_VERIFIER, type StoreFixture, suiteHarness, UUID } from '../support/harness';
import { type Listening, listen } from '../support/listen';
import { chromiumPath, describeInChromium } from '../support/requirements';

/**
 * The authorization-code flow in a real browser: Debian's Chromium, headless, signs in on the
 * dashboard, answers the consent page, and is redirected to a local app server's callback; the
 * test then exchanges the code as the app would. Every request leaving the two local servers is
 * refused and recorded (the dashboard must load nothing from outside). Runs where Chromium is
 * (CHROMIUM_PATH); REQUIRE_BROWSER=1 makes a missing browser fail instead of skipping.
 */
const SUITE = 'the authorization-code flow in headless Chromium';

const TIMEOUT_MS = 60_000;
const REQUIRED = ['products:read'];
const OPTIONAL = ['products:write', 'orders:read'];
const databases = testDatabases('sqlite');

/** The app's side: a callback endpoint that records what the browser brought. */
function appServer(received: URL[]) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? 'localhost'}`);
    if (url.pathname === '/callback') received.push(url);
    res.writeHead(url.pathname === '/callback' ? 200 : 404, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>Stock Sync</title><p>Callback received.</p>');
  };
}

interface OfflinePage {
  page: Page;
  context: BrowserContext;
  /** Every request the page made, redirects included. */
  requested: string[];
  /** Requests to anything but the two local servers (refused). */
  refused: string[];
  /** Console errors, where Chromium reports CSP violations. */
  consoleErrors: string[];
}

describeInChromium(SUITE, () => {
  describe.each(databases)('on $name', (testDatabase) => {
    const h = suiteHarness(testDatabase, { teardownMs: TIMEOUT_MS });
    h.atEnd(async () => {
      await browser?.close();
      await app?.close();
      await service?.close();
    });
    let service: Listening;
    let app: Listening;
    let callbackUrl: string;
    let client: AppFixture;
    let browser: Browser;
    const received: URL[] = [];

    beforeAll(async () => {
      service = await listen(h.app);
      app = await listen(appServer(received));
      callbackUrl = `http://localhost:${app.port}/callback`;
      // createTestApp registers fixed URLs; this app's redirect URL is the callback server's.
      const { app: registered, clientSecret } = await registerApp(h.services, { name: 'Stock Sync' });
      const version = await addVersion(h.services, registered.id, {
        redirectUrls: [callbackUrl],
        launchUrl: `http://localhost:${app.port}/launch`,
        requiredScopes: REQUIRED,
        optionalScopes: OPTIONAL,
      });
      client = { app: registered, version, clientSecret, basic: basicHeader(registered.id, clientSecret) };
      browser = await chromium.launch({
        executablePath: chromiumPath,
        headless: true,
        args: [
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    }, TIMEOUT_MS);

    const localOrigins = () => [service.origin, new URL(callbackUrl).origin];

    /** A fresh browser profile whose page may reach the two local servers only. */
    async function offlinePage(): Promise<OfflinePage> {
      const context = await browser.newContext();
      const page = await context.newPage();
      const opened: OfflinePage = { page, context, requested: [], refused: [], consoleErrors: [] };
      page.on('request', (request) => opened.requested.push(request.url()));
      page.on('console', (message) => {
        if (message.type() === 'error') opened.consoleErrors.push(message.text());
      });
      await page.route('**/*', async (route) => {
        const url = route.request().url();
        if (localOrigins().includes(new URL(url).origin)) return route.continue();
        opened.refused.push(url);
        return route.abort('internetdisconnected');
      });
      return opened;
    }

    function expectStayedLocal(opened: OfflinePage): void {
      expect(opened.refused).toEqual([]);
      expect(opened.requested.filter((url) => !localOrigins().includes(new URL(url).origin))).toEqual([]);
      expect(opened.consoleErrors.filter((text) => /Content Security Policy/i.test(text))).toEqual([]);
    }

    /** Goes to the authorize URL signed out, lands on the login page, signs in and arrives at the consent page. */
    async function signInToConsent(page: Page, store: StoreFixture, query: Record<string, string>): Promise<void> {
      await page.goto(`${service.origin}${authorizeUrl(query)}`);
      expect(new URL(page.url()).pathname).toBe('/dashboard/login');
      await page.getByRole('heading', { name: 'Sign in to your store' }).waitFor();
      await page.getByLabel('E-mail').fill(store.email);
      await page.getByLabel('Password').fill(store.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: /Allow Stock Sync to access/ }).waitFor();
      expect(new URL(page.url()).pathname).toBe('/oauth/authorize');
    }

    /**
     * Clicks a consent button and waits until the browser is at the app's callback (Chromium applies
     * the consent page's CSP form-action to the redirect after the post); what the app server received.
     */
    async function answerAndArrive(opened: OfflinePage, button: 'Approve' | 'Deny'): Promise<URL> {
      const before = received.length;
      await opened.page.getByRole('button', { name: button }).click();
      try {
        await opened.page.waitForURL((url) => `${url.origin}${url.pathname}` === callbackUrl, { timeout: 20_000 });
      } catch (error) {
        throw new Error(`The browser did not reach ${callbackUrl} (at ${opened.page.url()}); console errors: ${JSON.stringify(opened.consoleErrors)}`, {
          cause: error,
        });
      }
      await opened.page.getByText('Callback received.').waitFor();
      expect(received).toHaveLength(before + 1);
      expect(opened.requested.some((url) => url.startsWith(`${callbackUrl}?`))).toBe(true);
      return received[before] as URL;
    }

    it(
      'goes from the authorize URL through sign-in and consent (one optional scope unticked) to the callback with code, state and iss; the code exchanges for the narrower grant',
      async () => {
        const store = await createTestStore(h);
        const opened = await offlinePage();
        const query = authorizeQuery(store, client, [...REQUIRED, ...OPTIONAL], { redirect_uri: callbackUrl });
        try {
          await signInToConsent(opened.page, store, query);
          const unticked = opened.page.getByRole('checkbox', { name: /orders:read/ });
          await unticked.uncheck();
          expect(await opened.page.getByRole('checkbox', { name: /products:write/ }).isChecked()).toBe(true);

          const callback = await answerAndArrive(opened, 'Approve');
          expect([...callback.searchParams.keys()].sort()).toEqual(['code', 'iss', 'state']);
          expect(callback.searchParams.get('iss')).toBe(h.services.issuer);
          expect(callback.searchParams.get('state')).toBe(query.state);
          const code = callback.searchParams.get('code') as string;
          expect(code).toMatch(/^svc_c_/);
          expectStayedLocal(opened);

          const exchanged = await fetch(`${service.origin}/oauth/token`, {
            method: 'POST',
            headers: { Authorization: client.basic, 'Content-Type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: callbackUrl, code_verifier: RFC7636_VERIFIER }),
          });
          expect(exchanged.status).toBe(200);
          expect(exchanged.headers.get('cache-control')).toBe('no-store');
          const tokens = (await exchanged.json()) as Record<string, unknown>;
          expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 900, store_id: store.store.id, installation_id: expect.stringMatching(UUID) });
          expect(String(tokens.scope).split(' ').sort()).toEqual(['products:read', 'products:write']);
        } finally {
          await opened.context.close();
        }
      },
      TIMEOUT_MS,
    );

    it(
      'Deny brings the browser to the callback with error=access_denied and the state, and installs nothing',
      async () => {
        const store = await createTestStore(h, 'Amber House');
        const opened = await offlinePage();
        const query = authorizeQuery(store, client, [...REQUIRED, ...OPTIONAL], { redirect_uri: callbackUrl });
        try {
          await signInToConsent(opened.page, store, query);
          const callback = await answerAndArrive(opened, 'Deny');
          expect(Object.fromEntries(callback.searchParams)).toEqual({ error: 'access_denied', state: query.state, iss: h.services.issuer });
          expectStayedLocal(opened);
          expect(await h.db('installations').where({ store_id: store.store.id })).toHaveLength(0);
        } finally {
          await opened.context.close();
        }
      },
      TIMEOUT_MS,
    );
  });
});
