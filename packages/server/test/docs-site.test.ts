import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { operationTable } from '@svc/contract';
import { type Browser, chromium, type Page } from 'playwright-core';
import request from 'supertest';
import { createApp, docsSiteDir } from '../src/app';
import { ManualClock } from '../src/core/clock';
import { engineOfHandle } from '../src/db/engine';
import { createServices } from '../src/services/container';
import { unreadDatabase } from './support/databases';
import { chromiumPath, describeInChromium } from './support/requirements';

const indexFile = path.join(docsSiteDir, 'index.html');
/** The title of each guide in docs/guides and of CHANGELOG.md, each a section of the site. */
const GUIDE_TITLES = ['Getting started', 'OAuth and tokens', 'Errors', 'Paging', 'Idempotency and concurrency', 'Webhooks', 'Rate limits', 'Changelog'];
// The docs site reads no database.
const db = unreadDatabase();
const services = createServices({ db, engine: engineOfHandle(db), clock: new ManualClock(), rateLimits: { perInstallation: 1, perClient: 1 } });
const app = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services });

describe('the docs site', () => {
  it('is built (by `pnpm build`, `pnpm run docs` or `pnpm generate`) and loads nothing from the network', () => {
    const html = fs.readFileSync(indexFile, 'utf8');
    expect(html).toContain('Store Management Service');
    expect(html.match(/<(?:script|link)[^>]+(?:src|href)="(?:https?:)?\/\/[^"]+"/g)).toBeNull();
    expect(html).not.toMatch(/@import\s+url\(["']?https?:/);
    expect(html).not.toMatch(/https:\/\/cdn\.redoc(ly)?\./);
  });

  it('carries the guides, the changelog, samples in curl, TypeScript, Python, PHP and Go on every operation, and the link to /openapi.json', () => {
    const html = fs.readFileSync(indexFile, 'utf8');
    for (const title of GUIDE_TITLES) expect(html).toContain(JSON.stringify(title));
    expect(html).toContain('"x-traitTag":true');
    const operations = Object.values(operationTable).length;
    for (const [lang, label] of [
      ['Shell', 'curl'],
      ['TypeScript', 'TypeScript'],
      ['Python', 'Python'],
      ['PHP', 'PHP'],
      ['Go', 'Go'],
    ]) {
      expect(html.match(new RegExp(`"lang":"${lang}","label":"${label}"`, 'g'))).toHaveLength(operations);
    }
    expect(html).toContain('(/openapi.json)');
  });

  it('links every operation to the console beside it, which is Swagger UI and its own files, nothing from the network, under a policy of its own', async () => {
    const html = fs.readFileSync(indexFile, 'utf8');
    expect(html.match(/Try it in the console\]\(console\/\?operation=[\w.]+\)/g)).toHaveLength(Object.values(operationTable).length);
    const consoleDir = path.join(docsSiteDir, 'console');
    for (const file of ['index.html', 'console.js', 'console.css', 'swagger-ui-bundle.js', 'swagger-ui.css', 'LICENSE', 'NOTICE']) {
      expect(fs.existsSync(path.join(consoleDir, file))).toBe(true);
    }
    const page = fs.readFileSync(path.join(consoleDir, 'index.html'), 'utf8');
    expect(page.match(/<(?:script|link)[^>]+(?:src|href)="(?:https?:)?\/\/[^"]+"/g)).toBeNull();
    // Its scripts are files: the policy needs no hash and no 'unsafe-inline' for scripts.
    expect(page.match(/<script(?![^>]*\ssrc=)[^>]*>/g)).toBeNull();
    const response = await request(app).get('/docs/console/');
    expect(response.status).toBe(200);
    expect(response.text).toBe(page);
    expect(response.headers['content-security-policy']).toBe(
      "default-src 'none';script-src 'self';style-src 'self' 'unsafe-inline';img-src 'self' data:;font-src 'self' data:;connect-src 'self';base-uri 'none';form-action 'none';frame-ancestors 'none'",
    );
    expect((await request(app).get('/docs/console/swagger-ui-bundle.js')).status).toBe(200);
  });

  it('has its docs for machines beside it: llms.txt linking every page as plain Markdown, and llms-full.txt, served at /docs and /llms.txt', async () => {
    const llms = fs.readFileSync(path.join(docsSiteDir, 'llms.txt'), 'utf8');
    expect(llms).toMatch(/^# Store Management Service\n\n> .+ Date version 2026-10-15\.\n/);
    expect(llms).toMatch(/^## Guides$/m);
    const links = [...llms.matchAll(/^- \[([^\]]+)\]\((guides\/[\w-]+\.md)\): \S/gm)].map((match) => ({ title: match[1] as string, file: match[2] as string }));
    expect(links.map((link) => link.title)).toEqual(expect.arrayContaining([...GUIDE_TITLES, '@svc/client']));
    const full = fs.readFileSync(path.join(docsSiteDir, 'llms-full.txt'), 'utf8');
    for (const { title, file } of links) {
      const page = fs.readFileSync(path.join(docsSiteDir, file), 'utf8');
      expect(page.startsWith(`# ${title}\n\n`)).toBe(true);
      expect(full).toContain(page);
      // Links between the pages are to the Markdown files beside them, none to the site's sections or the repository.
      expect(page).not.toMatch(/\]\(#\/|\]\(\.\.\//);
      for (const [, target] of page.matchAll(/\]\(([\w-]+\.md)[)#]/g)) expect(fs.existsSync(path.join(docsSiteDir, 'guides', target as string))).toBe(true);
    }
    const served = await request(app).get('/docs/llms.txt');
    expect(served.status).toBe(200);
    expect(served.headers['content-type']).toMatch(/^text\/plain/);
    expect(served.text).toBe(llms);
    const markdown = await request(app).get('/docs/guides/getting-started.md');
    expect(markdown.headers['content-type']).toMatch(/^text\/markdown/);
    const root = await request(app).get('/llms.txt');
    expect([root.status, root.headers.location]).toEqual([301, '/docs/llms.txt']);
  });

  it('is served at /docs', async () => {
    const response = await request(app).get('/docs/');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.text).toBe(fs.readFileSync(indexFile, 'utf8'));
    expect((await request(app).get('/docs')).status).toBeLessThan(400);
  });
});

const sdkReferenceDir = path.join(docsSiteDir, 'sdk');

describe("the SDK's API reference (TypeDoc)", () => {
  it('is built by `pnpm run docs` into the site: every export of @svc/client, not the raw spec maps, nothing from the network', () => {
    const index = fs.readFileSync(path.join(sdkReferenceDir, 'index.html'), 'utf8');
    expect(index).toContain('@svc/client SDK reference');
    for (const page of ['functions/createStoreClient.html', 'functions/verifyWebhook.html', 'interfaces/TransportOptions.html', 'classes/StoreApiError.html']) {
      expect(fs.existsSync(path.join(sdkReferenceDir, page))).toBe(true);
    }
    expect(fs.readFileSync(path.join(sdkReferenceDir, 'interfaces', 'TransportOptions.html'), 'utf8')).toContain('timeoutMs');
    // The openapi-typescript maps restate the spec, which the Redoc page documents.
    expect(fs.existsSync(path.join(sdkReferenceDir, 'interfaces', 'operations.html'))).toBe(false);
    const pages = fs.readdirSync(sdkReferenceDir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.html'));
    for (const page of pages) {
      expect(fs.readFileSync(path.join(sdkReferenceDir, page), 'utf8').match(/<(?:script|link)[^>]+(?:src|href)="(?:https?:)?\/\/[^"]+"/g)).toBeNull();
    }
  });

  it("is served at /docs/sdk/ under its own policy: its own files and its pages' inline script", async () => {
    const response = await request(app).get('/docs/sdk/');
    expect(response.status).toBe(200);
    expect(response.text).toBe(fs.readFileSync(path.join(sdkReferenceDir, 'index.html'), 'utf8'));
    expect(response.headers['content-security-policy']).toMatch(/script-src 'self' 'sha256-[^;]+;style-src 'self' 'unsafe-inline';/);
    expect((await request(app).get('/docs/sdk/assets/main.js')).status).toBe(200);
    // The Redoc page keeps its policy of hashes only.
    expect((await request(app).get('/docs/')).headers['content-security-policy']).not.toContain("'self'");
  });
});

/**
 * Opens the site in headless Chromium with every request outside this machine refused, from the
 * server and straight from disk. Runs where Chromium is (CHROMIUM_PATH; CI installs Debian's package
 * and sets REQUIRE_BROWSER=1 so that a missing browser fails instead of skipping).
 */
const BROWSER_SUITE = 'the docs site in a browser with the network off';
describeInChromium(BROWSER_SUITE, () => {
  let browser: Browser;
  let server: Server;
  let origin: string;

  beforeAll(async () => {
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await chromium.launch({
      executablePath: chromiumPath,
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
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
  });

  /** Opens a page that refuses (and records) every request leaving this machine. */
  async function offlinePage(): Promise<{ page: Page; refused: string[] }> {
    const page = await browser.newPage();
    const refused: string[] = [];
    await page.route('**/*', async (route) => {
      const url = route.request().url();
      if (url.startsWith(origin) || url.startsWith('file:') || url.startsWith('data:') || url.startsWith('blob:')) return route.continue();
      refused.push(url);
      return route.abort('internetdisconnected');
    });
    return { page, refused };
  }

  async function expectRendered(page: Page) {
    await page.getByRole('heading', { name: /Store Management Service \(2026-10-15\)/ }).waitFor({ state: 'visible', timeout: 20000 });
    await page.getByText('Products', { exact: true }).first().click();
    await page.getByText('Create a product').first().waitFor({ state: 'visible', timeout: 10000 });
    // Each operation's samples, under a language picker (Redoc's form of the tabs), curl first.
    let shown = 'curl';
    for (const [language, line] of [
      ['TypeScript', "import { createStoreClient } from '@svc/client';"],
      ['Python', 'import requests'],
      ['PHP', 'curl_setopt_array($curl, ['],
      ['Go', '"net/http"'],
      ['curl', 'curl -X GET'],
    ] as const) {
      await page.locator('#api-content').getByRole('button', { name: shown, exact: true }).first().click();
      await page.getByRole('menuitem', { name: language }).first().click();
      await page.locator('#api-content').getByText(line).first().waitFor({ state: 'visible', timeout: 10000 });
      shown = language;
    }
    await page.getByText('Getting started', { exact: true }).first().click();
    await page.getByRole('heading', { name: /Start the service/ }).waitFor({ state: 'visible', timeout: 10000 });
  }

  it('renders from /docs', async () => {
    const { page, refused } = await offlinePage();
    await page.goto(`${origin}/docs/`);
    await expectRendered(page);
    expect(refused).toEqual([]);
    await page.close();
  });

  it('renders from /docs under its Content-Security-Policy with no violation reported', async () => {
    /** The page's global scope as the init script sees it, typed by hand: these tests compile without the DOM's types. */
    interface PageWithViolations {
      cspViolations: string[];
      document: { addEventListener(type: 'securitypolicyviolation', listener: (event: { effectiveDirective: string; blockedURI: string }) => void): void };
    }
    const { page, refused } = await offlinePage();
    const cspMessages: string[] = [];
    const pageErrors: string[] = [];
    page.on('console', (message) => {
      if (/Content[- ]Security[- ]Policy/i.test(message.text())) cspMessages.push(message.text());
    });
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    await page.addInitScript(() => {
      const scope = globalThis as unknown as PageWithViolations;
      scope.cspViolations = [];
      scope.document.addEventListener('securitypolicyviolation', (event) => scope.cspViolations.push(`${event.effectiveDirective} ${event.blockedURI}`));
    });
    const response = await page.goto(`${origin}/docs/`);
    expect(response?.headers()['content-security-policy']).toMatch(/script-src 'sha256-/);
    await expectRendered(page);
    const violations = await page.evaluate(() => (globalThis as unknown as PageWithViolations).cspViolations);
    expect(cspMessages).toEqual([]);
    expect(pageErrors).toEqual([]);
    // Redoc's search probes for workers with Function() inside a try and searches in the page when refused (http/security-headers).
    expect(violations.filter((violation) => violation !== 'script-src eval')).toEqual([]);
    expect(refused).toEqual([]);
    await page.close();
  });

  it('renders from docs/site/index.html on disk', async () => {
    const { page, refused } = await offlinePage();
    await page.goto(pathToFileURL(indexFile).href);
    await expectRendered(page);
    expect(refused).toEqual([]);
    await page.close();
  });

  /** Waits until a section's heading is at the top of the window: the reader is at that section. */
  async function atSection(page: Page, heading: string) {
    /** The page's global scope, typed by hand: these tests compile without the DOM's types. */
    interface Headings {
      document: { querySelectorAll(selector: string): ArrayLike<{ textContent: string | null; getBoundingClientRect(): { top: number } }> };
    }
    const atTop = (title: string) =>
      Array.from((globalThis as unknown as Headings).document.querySelectorAll('h1, h2')).some(
        (element) => element.textContent === title && Math.abs(element.getBoundingClientRect().top) < 200,
      );
    await page.waitForFunction(atTop, heading, { timeout: 10000 });
  }

  it('shows the SDK reference from /docs/sdk/ under its policy with no violation, and its search finds verifyWebhook', async () => {
    const { page, refused } = await offlinePage();
    const pageErrors: string[] = [];
    const cspMessages: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(String(error)));
    page.on('console', (message) => {
      if (/Content[- ]Security[- ]Policy/i.test(message.text())) cspMessages.push(message.text());
    });
    await page.goto(`${origin}/docs/sdk/`);
    await page.locator('.tsd-navigation').getByText('createStoreClient', { exact: true }).first().waitFor({ state: 'visible', timeout: 20000 });
    await page.locator('#tsd-search-trigger').click();
    await page.locator('#tsd-search-input').fill('verifyWeb');
    await page.locator('#tsd-search-results').getByText('verifyWebhook').first().waitFor({ state: 'visible', timeout: 10000 });
    expect(cspMessages).toEqual([]);
    expect(pageErrors).toEqual([]);
    expect(refused).toEqual([]);
    await page.close();
  });

  it('gives each section an address under /docs/ that the menu, a guide link, a reload, back and a path all reach', async () => {
    const { page, refused } = await offlinePage();
    const menuLink = (address: string) => page.locator(`[data-component-name="Menu/MenuItem"] a[href="#/${address}"]`);
    await page.goto(`${origin}/docs/`);
    await page.getByRole('heading', { name: /Store Management Service \(2026-10-15\)/ }).waitFor({ state: 'visible', timeout: 20000 });
    await menuLink('paging').click();
    await page.waitForURL(`${origin}/docs/#/paging`);
    await atSection(page, 'Paging');
    await page.reload();
    expect(page.url()).toBe(`${origin}/docs/#/paging`);
    await atSection(page, 'Paging');
    // The first call in Getting started links to the SDK's README, a section of the site too.
    await menuLink('getting-started').click();
    await menuLink('getting-started/2.-the-first-call').click();
    await atSection(page, '2. The first call');
    await page.locator('#api-content a[href="#/svc-client"]').first().click();
    await page.waitForURL(`${origin}/docs/#/svc-client`);
    await atSection(page, '@svc/client');
    await page.goBack();
    await page.waitForURL(`${origin}/docs/#/getting-started/2.-the-first-call`);
    await atSection(page, '2. The first call');
    await page.goto(`${origin}/docs/idempotency-and-concurrency`);
    await page.waitForURL(`${origin}/docs/#/idempotency-and-concurrency`);
    await atSection(page, 'Idempotency and concurrency');
    expect(refused).toEqual([]);
    await page.close();
  }, 120_000);
});
