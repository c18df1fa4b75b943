import fs from 'node:fs';
import type { RequestListener } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { ManualClock } from '@svc/server/src/core/clock';
import { createDispatcher, type Dispatcher } from '@svc/server/src/delivery/dispatcher';
import { placeOrder } from '@svc/server/src/domain/storefront/orders/changes';
import { addVersion, registerApp } from '@svc/server/src/platform/apps';
import { testDatabases } from '@svc/server/test/support/databases';
import { suiteHarness } from '@svc/server/test/support/harness';
import { type Listening, listen } from '@svc/server/test/support/listen';
import { chromiumPath, describeInChromium } from '@svc/server/test/support/requirements';
import { forSale, openShop, type Shop } from '@svc/server/test/support/storefront-fixtures';
import { type Browser, chromium, type Page } from 'playwright-core';
import { createExampleApp, SCOPES } from '../src/app';
import { JsonStorage } from '../src/storage';

/**
 * The example app as an owner meets it, in Debian's headless Chromium: install from the app's link,
 * sign in to the dashboard, consent, land on the app's page with the store's products and orders;
 * open it again from the dashboard (a launch token the app verifies); then a new order reaches the
 * app as a signed webhook the server's dispatcher delivers, and shows on its page. Skipped where
 * Chromium is missing (CHROMIUM_PATH) unless REQUIRE_BROWSER=1.
 */
const SUITE = 'the example app in headless Chromium';

const TIMEOUT_MS = 90_000;

describeInChromium(SUITE, () => {
  describe.each(testDatabases())('on $name', (database) => {
    const h = suiteHarness(database, { teardownMs: TIMEOUT_MS });
    let service: Listening;
    let example: Listening;
    let storage: JsonStorage;
    let dispatcher: Dispatcher;
    let browser: Browser;
    let shop: Shop;
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'example-app-'));
    // Closed before the harness closes the database, last opened first.
    h.atEnd(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    h.atEnd(() => service?.close());
    h.atEnd(() => example?.close());
    h.atEnd(() => dispatcher?.stop());
    h.atEnd(() => browser?.close());

    beforeAll(async () => {
      // Webhook timestamps are the service's clock and the app checks them against its own: the same time.
      const clock = h.clock as ManualClock;
      clock.advance(Date.now() - clock.now());
      service = await listen(h.app);
      let handler: RequestListener | undefined;
      example = await listen((req, res) => handler?.(req, res));
      const { app, clientSecret } = await registerApp(h.services, { name: 'Example App' });
      await addVersion(h.services, app.id, {
        redirectUrls: [`${example.origin}/callback`],
        launchUrl: `${example.origin}/launch`,
        requiredScopes: [...SCOPES],
        optionalScopes: [],
      });
      storage = await JsonStorage.open(dataDir);
      handler = createExampleApp({ serviceUrl: service.origin, publicUrl: example.origin, clientId: app.id, clientSecret, storage });
      dispatcher = createDispatcher(h.services, { pollMs: 50 });
      dispatcher.start();
      shop = await openShop(h);
      await forSale(h, shop, 34900, { name: 'Royal Oud Perfume' });
      const musk = await forSale(h, shop, 2550, { name: 'مسك الطهارة' });
      await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: musk, quantity: 2 }], reference: 'ORD-EXAMPLE-1' });
      browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: ['--no-sandbox', '--disable-gpu', '--no-first-run'] });
    }, TIMEOUT_MS);

    async function until(condition: () => boolean): Promise<void> {
      const deadline = Date.now() + 20_000;
      while (!condition()) {
        if (Date.now() > deadline) throw new Error('The webhook did not arrive in 20 s');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }

    // biome-ignore lint/performance/useDomNodeTextContent: the rendered text, cells apart, is what the owner reads and what the row patterns match
    const tableText = (page: Page, name: string) => page.getByRole('table', { name }).innerText();

    async function signIn(page: Page): Promise<void> {
      await page.getByRole('heading', { name: 'Sign in to your store' }).waitFor();
      await page.getByLabel('E-mail').fill(shop.store.email);
      await page.getByLabel('Password').fill(shop.store.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
    }

    it(
      'installs through sign-in and consent, shows the store’s products and orders, opens again from the dashboard, and shows a new order’s verified webhook',
      async () => {
        const context = await browser.newContext();
        const page = await context.newPage();
        try {
          await page.goto(`${example.origin}/install?store_id=${shop.storeId}`);
          await signIn(page);
          await page.getByRole('heading', { name: /Allow Example App to access/ }).waitFor();
          await page.getByRole('button', { name: 'Approve' }).click();
          await page.waitForURL(`${example.origin}/`);
          expect(await tableText(page, 'Products')).toMatch(/Royal Oud Perfume[\s\S]*349\.00 SAR/);
          expect(await tableText(page, 'Products')).toContain('مسك الطهارة');
          expect(await tableText(page, 'Recent orders')).toMatch(/ORD-EXAMPLE-1\s+pending\s+unpaid\s+\d+\.\d{2} SAR/);
          const installation = storage.installation(shop.storeId);
          expect(installation).toMatchObject({
            installationId: expect.any(String),
            webhooks: { subscriptionId: expect.any(String), secrets: [expect.stringMatching(/^whsec_/)] },
          });
          expect(JSON.parse(fs.readFileSync(path.join(dataDir, 'state.json'), 'utf8')).installations[shop.storeId].tokens.refresh_token).toMatch(/^svc_rt_/);

          // Without its session, the app is reached again only through the dashboard's Open (a launch token).
          await context.clearCookies({ name: 'example_session' });
          await page.goto(`${example.origin}/`);
          await page.getByRole('button', { name: 'Install in my store' }).waitFor();
          await page.goto(`${service.origin}/dashboard`);
          await page.getByRole('button', { name: 'Open' }).click();
          await page.waitForURL(`${example.origin}/`);
          expect(await tableText(page, 'Recent orders')).toContain('ORD-EXAMPLE-1');

          const forged = await fetch(`${example.origin}/webhooks/${shop.storeId}`, {
            method: 'POST',
            headers: {
              'Content-Type': 'application/json',
              'webhook-id': 'forged',
              'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
              'webhook-signature': 'v1,Zm9yZ2Vk',
            },
            body: JSON.stringify({ id: 'forged', type: 'order.created', store_id: shop.storeId }),
          });
          expect(forged.status).toBe(400);
          expect(await forged.text()).toBe('BAD_SIGNATURE');

          const [product] = await h.db('products').where({ store_id: shop.storeId, name: 'Royal Oud Perfume' }).select('id');
          const order = await placeOrder(h.db, shop.actor(), {
            customerId: shop.customer.id,
            items: [{ productId: product.id as number, quantity: 1 }],
            reference: 'ORD-EXAMPLE-2',
          });
          await until(() => storage.recentEvents(shop.storeId).some((event) => event.summary.includes('ORD-EXAMPLE-2')));
          await page.reload();
          const webhooks = await tableText(page, 'Recent events');
          expect(webhooks).toContain('order.created');
          expect(webhooks).toContain(`Order ORD-EXAMPLE-2: ${order.status}`);
          expect(webhooks).not.toContain('forged');
          expect(await tableText(page, 'Recent orders')).toContain('ORD-EXAMPLE-2');
        } finally {
          await context.close();
        }
      },
      TIMEOUT_MS,
    );

    it('refuses a callback whose state this browser was not given, and a launch the service does not vouch for', async () => {
      const callback = await fetch(`${example.origin}/callback?code=svc_c_stolen&state=guessed`, { redirect: 'manual' });
      expect(callback.status).toBe(400);
      expect(await callback.text()).toContain('not started here');
      const launch = await fetch(
        `${example.origin}/launch?svc_store_id=${shop.storeId}&svc_launch_token=svc_lt_forged&svc_timestamp=${Math.floor(Date.now() / 1000)}`,
        {
          redirect: 'manual',
        },
      );
      expect(launch.status).toBe(502);
      expect(await launch.text()).toContain('INVALID_LAUNCH');
      expect(launch.headers.get('set-cookie')).toBeNull();
    });
  });
});
