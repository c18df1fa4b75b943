/**
 * The docs site's console in Chromium, against the built service started as `pnpm start` starts it
 * (SEED_DEMO, on a port of its own): a reader signs in as the demo app with the credentials the
 * banner printed (authorization code with PKCE; the demo owner signs in and approves), calls
 * products.list and products.get from the page, and sees 200 with the answer's headers: RateLimit,
 * API-Version, X-Request-Id, ETag. The page runs under its Content-Security-Policy with nothing
 * refused and nothing loaded from outside this machine.
 */
import fs from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { freePort } from '../../../tools/testbed/ports';
import { until } from '../../../tools/testbed/until';
import { DEMO_OWNER } from '../src/seeds/demo';
import { ensureBuilt, type ServerRun, startBuiltServer, tempDataDir } from './support/built-server';
import { chromiumPath, describeInChromium } from './support/requirements';

/** The page's global scope as an init script sees it, typed by hand: these tests compile without the DOM's types. */
interface PageWithViolations {
  cspViolations: string[];
  document: { addEventListener(type: 'securitypolicyviolation', listener: (event: { effectiveDirective: string; blockedURI: string }) => void): void };
}

describeInChromium('the docs console in a browser', () => {
  let browser: Browser;
  let server: ServerRun;
  let dataDir = '';
  let origin = '';
  let banner: Record<string, string> = {};

  beforeAll(async () => {
    ensureBuilt();
    dataDir = tempDataDir();
    const port = await freePort();
    // `localhost`, as the demo app's redirect URL names the console: the address a reader opens.
    origin = `http://localhost:${port}`;
    server = startBuiltServer({ DATA_DIR: dataDir, SEED_DEMO: 'true', PORT: String(port) });
    await until(async () => /^Samples {4}export /m.test(server.stdout) || server.child.exitCode !== null, { everyMs: 100 });
    const exportLine = /^Samples {4}export (.+)$/m.exec(server.stdout)?.[1] ?? '';
    banner = Object.fromEntries(exportLine.split(' ').map((pair) => pair.split('=', 2) as [string, string]));
    expect(banner.SVC_URL).toBe(origin);
    browser = await chromium.launch({
      executablePath: chromiumPath,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (server?.child.exitCode === null) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** A page that refuses every request leaving this machine and records its CSP violations and errors. */
  async function watchedPage(): Promise<{ page: Page; refused: string[]; errors: string[] }> {
    const page = await browser.newPage();
    const refused: string[] = [];
    const errors: string[] = [];
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      refused.push(url);
      return route.abort('internetdisconnected');
    });
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.addInitScript(() => {
      const scope = globalThis as unknown as PageWithViolations;
      scope.cspViolations = [];
      scope.document.addEventListener('securitypolicyviolation', (event) => scope.cspViolations.push(`${event.effectiveDirective} ${event.blockedURI}`));
    });
    return { page, refused, errors };
  }

  /** Swagger UI's block of a Products operation: its id escapes the operationId's dots (`products\\.list`), and the selector escapes the backslash. */
  const operationBlock = (operationId: string) => `[id="operations-Products-${operationId.replace(/\./g, '\\\\.')}"]`;

  /** Opens an operation, executes it and answers the status and the response headers Swagger UI shows. */
  async function execute(page: Page, operationId: string, fill: Record<string, string> = {}): Promise<{ status: string; headers: string }> {
    const block = page.locator(operationBlock(operationId));
    await block.locator('.opblock-summary').first().click();
    // Swagger UI resolves the operation when it opens: its form is there once the store id is.
    await block.locator('tr[data-param-name="storeId"] input').waitFor({ state: 'visible', timeout: 20_000 });
    for (const [name, value] of Object.entries(fill)) await block.locator(`tr[data-param-name="${name}"] input`).fill(value);
    await block.getByRole('button', { name: 'Execute' }).click();
    const response = block.locator('.live-responses-table .response').first();
    await response.waitFor({ state: 'visible', timeout: 20_000 });
    return {
      status: ((await response.locator('.response-col_status').textContent()) ?? '').trim(),
      headers: (await response.locator('.response-col_description').textContent()) ?? '',
    };
  }

  it('signs in as the demo app through the authorization code flow with PKCE, and calls products.list and products.get from the page', async () => {
    const { page, refused, errors } = await watchedPage();
    const answer = await page.goto(`${origin}/docs/console/`);
    expect(answer?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.getByLabel('Store id').fill(banner.STORE_ID as string);
    await page.getByLabel('Client id').fill(banner.CLIENT_ID as string);
    await page.getByLabel('Client secret').fill(banner.CLIENT_SECRET as string);
    await page.getByRole('button', { name: 'Sign in' }).click();

    // The owner signs in to the dashboard and approves, as for any app.
    await page.getByRole('heading', { name: 'Sign in to your store' }).waitFor();
    await page.getByLabel('E-mail').fill(DEMO_OWNER.email);
    await page.getByLabel('Password').fill(DEMO_OWNER.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: /Allow Demo App to access/ }).waitFor();
    await page.getByRole('button', { name: 'Approve' }).click();

    await page.waitForURL(`${origin}/docs/console/`);
    await page.getByText(`Signed in: a token for store ${banner.STORE_ID}`).waitFor({ timeout: 20_000 });

    const list = await execute(page, 'products.list');
    expect(list.status).toBe('200');
    for (const header of [
      /ratelimit: "installation";r=\d+;t=\d+/i,
      /ratelimit-policy: "installation";q=\d+;w=\d+/i,
      /api-version: 2026-10-15/i,
      /x-request-id: [\w-]+/i,
    ]) {
      expect(list.headers).toMatch(header);
    }
    const id = /"id": (\d+)/.exec(
      (await page
        .locator(`${operationBlock('products.list')} .live-responses-table .microlight`)
        .first()
        .textContent()) ?? '',
    )?.[1];
    expect(id).toEqual(expect.any(String));
    const read = await execute(page, 'products.get', { id: id as string });
    expect(read.status).toBe('200');
    expect(read.headers).toMatch(/etag: "p1\.\d+\.[\w-]{43}"/i);

    const violations = await page.evaluate(() => (globalThis as unknown as PageWithViolations).cspViolations);
    expect({ violations, errors, refused }).toEqual({ violations: [], errors: [], refused: [] });
    await page.close();
  }, 120_000);

  it('links each operation of the reference to its place in the console', async () => {
    const { page } = await watchedPage();
    await page.goto(`${origin}/docs/#/products/products.list`);
    const link = page.locator('#api-content').getByRole('link', { name: 'Try it in the console' }).first();
    await link.waitFor({ state: 'visible', timeout: 20_000 });
    expect(await link.getAttribute('href')).toBe('console/?operation=products.list');
    await link.click();
    await page.waitForURL(`${origin}/docs/console/#/Products/products.list`);
    await page.locator(`${operationBlock('products.list')}.is-open`).waitFor({ timeout: 20_000 });
    await page.close();
  }, 60_000);
});
