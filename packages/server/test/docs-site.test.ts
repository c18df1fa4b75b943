import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { operationTable } from '@svc/contract';
import knex from 'knex';
import { type Browser, chromium, type Page } from 'playwright-core';
import request from 'supertest';
import { createApp, docsSiteDir } from '../src/app';
import { ManualClock } from '../src/core/clock';
import { createServices } from '../src/platform/services';

const indexFile = path.join(docsSiteDir, 'index.html');
/** The title of each guide in docs/guides and of CHANGELOG.md, each a section of the site. */
const GUIDE_TITLES = ['Getting started', 'OAuth and tokens', 'Errors', 'Paging', 'Idempotency and concurrency', 'Webhooks', 'Rate limits', 'Changelog'];
// The docs site needs no database: an in-memory SQLite that is never queried.
const db = knex({ client: 'better-sqlite3', connection: { filename: ':memory:' }, useNullAsDefault: true });
const services = createServices({ db, clock: new ManualClock(), rateLimits: { perInstallation: 1, perClient: 1 } });
const app = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services });
afterAll(() => db.destroy());

describe('the docs site', () => {
  it('is built (by install, `pnpm docs` or `pnpm generate`) and loads nothing from the network', () => {
    const html = fs.readFileSync(indexFile, 'utf8');
    expect(html).toContain('Store Management Service');
    expect(html.match(/<(?:script|link)[^>]+(?:src|href)="(?:https?:)?\/\/[^"]+"/g)).toBeNull();
    expect(html).not.toMatch(/@import\s+url\(["']?https?:/);
    expect(html).not.toMatch(/https:\/\/cdn\.redoc(ly)?\./);
  });

  it('carries the guides, the changelog, a curl and a TypeScript sample on every operation, and the link to /openapi.json', () => {
    const html = fs.readFileSync(indexFile, 'utf8');
    for (const title of GUIDE_TITLES) expect(html).toContain(JSON.stringify(title));
    expect(html).toContain('"x-traitTag":true');
    const operations = Object.values(operationTable).length;
    expect(html.match(/"lang":"Shell","label":"curl"/g)).toHaveLength(operations);
    expect(html.match(/"lang":"TypeScript","label":"@svc\/client"/g)).toHaveLength(operations);
    expect(html).toContain('(/openapi.json)');
  });

  it('is served at /docs', async () => {
    const response = await request(app).get('/docs/');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.text).toBe(fs.readFileSync(indexFile, 'utf8'));
    expect((await request(app).get('/docs')).status).toBeLessThan(400);
  });
});

/**
 * Opens the site in headless Chromium with every request outside this machine refused, from the
 * server and straight from disk. Runs where Chromium is installed (CI installs Debian's package and
 * sets REQUIRE_BROWSER=1 so that a missing browser fails instead of skipping).
 */
const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const haveBrowser = fs.existsSync(chromiumPath);
if (!haveBrowser && process.env.REQUIRE_BROWSER === '1') throw new Error(`REQUIRE_BROWSER=1 but no Chromium at ${chromiumPath}`);
(haveBrowser ? describe : describe.skip)('the docs site in a browser with the network off', () => {
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
    await page.getByText('@svc/client', { exact: true }).first().waitFor({ state: 'visible', timeout: 10000 });
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

  it('renders from docs/site/index.html on disk', async () => {
    const { page, refused } = await offlinePage();
    await page.goto(pathToFileURL(indexFile).href);
    await expectRendered(page);
    expect(refused).toEqual([]);
    await page.close();
  });
});
