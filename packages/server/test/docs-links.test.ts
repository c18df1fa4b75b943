import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { createApp } from '../src/app';
import { ManualClock } from '../src/core/clock';
import { repositoryRoot } from '../src/core/paths';
import { engineOfHandle } from '../src/db/engine';
import { createServices } from '../src/services/container';
import { unreadDatabase } from './support/databases';

/**
 * The served docs site crawled without a browser: every link a reader can follow, in the page's
 * markup (Redoc's menu, the overview) and in the Markdown that Redoc renders from the embedded
 * definition (the guides, the pages they link to, every description), must land on something.
 */
// The docs site reads no database.
const db = unreadDatabase();
const services = createServices({ db, engine: engineOfHandle(db), clock: new ManualClock(), rateLimits: { perInstallation: 1, perClient: 1 } });
const app = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services });

const SITE = '/docs/';
const ORIGIN = 'http://docs.test';

type Tag = { name: string; description?: string; 'x-displayName'?: string; 'x-traitTag'?: boolean };

const decodeEntities = (text: string) =>
  text
    .replace(/&quot;/g, '"')
    .replace(/&#x27;|&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The page as markup: its scripts and styles (whose text only looks like attributes) left out. */
const markupOf = (html: string) => html.replace(/<script\b[\s\S]*?<\/script\s*>/gi, '').replace(/<style\b[\s\S]*?<\/style\s*>/gi, '');

/** The definition Redoc hydrates the page from, embedded as JSON. */
function definitionOf(html: string): { tags: Tag[]; [key: string]: unknown } {
  const json = /const __redoc_definition = (\{.*\});\n/.exec(html)?.[1];
  if (!json) throw new Error('No Redoc definition in the page');
  return JSON.parse(json);
}

/** Every string of a JSON value. */
function* stringsOf(value: unknown): Generator<string> {
  if (typeof value === 'string') yield value;
  else if (Array.isArray(value)) for (const item of value) yield* stringsOf(item);
  else if (value !== null && typeof value === 'object') for (const item of Object.values(value)) yield* stringsOf(item);
}

/** The targets of the inline Markdown links and HTML links in a text. */
const linksIn = (text: string) => [
  ...[...text.matchAll(/\]\(([^)\s]+)\)/g)].map((match) => match[1] as string),
  ...[...text.matchAll(/\s(?:href|src)="([^"]*)"/g)].map((match) => decodeEntities(match[1] as string)),
];

let html: string;
let markup: string;
let definition: ReturnType<typeof definitionOf>;
/** The ids a fragment can name: Redoc's sections (`/paging`) and the elements' own ids. */
let targets: Set<string>;

beforeAll(async () => {
  const page = await request(app).get(SITE);
  expect(page.status).toBe(200);
  html = page.text;
  markup = markupOf(html);
  definition = definitionOf(html);
  targets = new Set([...markup.matchAll(/\s(?:data-section-id|id)="([^"]*)"/g)].map((match) => decodeEntities(match[1] as string)));
});

/** Every link of the site, by where it was found. */
function everyLink(): { from: string; target: string }[] {
  return [
    ...linksIn(markup).map((target) => ({ from: 'the page', target })),
    ...[...stringsOf(definition)].flatMap((text) => linksIn(text).map((target) => ({ from: 'the definition', target }))),
  ];
}

describe('every link of the served docs site', () => {
  it('is found: the menu, the overview and the Markdown links', () => {
    const links = everyLink();
    expect(links.filter((link) => link.from === 'the page').length).toBeGreaterThan(20);
    for (const tag of definition.tags.filter((candidate) => candidate['x-traitTag'])) {
      expect(links).toContainEqual({ from: 'the page', target: `#/${tag.name}` });
    }
  });

  it('to a place on the page has its target there', () => {
    const fragments = [...new Set(everyLink().map((link) => link.target))].filter((target) => target.startsWith('#'));
    expect(fragments.length).toBeGreaterThan(20);
    const missing = fragments.filter((fragment) => !targets.has(decodeURIComponent(fragment.slice(1))));
    expect(missing).toEqual([]);
  });

  it('to this host answers 200 when opened as an address', async () => {
    const addresses = [...new Set(everyLink().map((link) => link.target))]
      .filter((target) => !target.startsWith('#'))
      .map((target) => new URL(target, `${ORIGIN}${SITE}`))
      .filter((url) => url.origin === ORIGIN)
      .map((url) => `${url.pathname}${url.search}`);
    expect(addresses.length).toBeGreaterThan(0);
    const answers = await Promise.all(addresses.map(async (address) => ({ address, status: (await request(app).get(address)).status })));
    expect(answers.filter((answer) => answer.status !== 200)).toEqual([]);
  });
});

describe('the sections of the docs site', () => {
  it('each answer as a path under /docs/, sent to the section in the page', async () => {
    const sections = [...targets].filter((id) => /^\/[^/]/.test(id));
    expect(sections).toEqual(expect.arrayContaining(['/getting-started', '/paging', '/svc-client', '/products']));
    for (const section of sections) {
      const answer = await request(app).get(`/docs${section}`);
      expect({ section, status: answer.status, location: answer.headers.location }).toEqual({ section, status: 302, location: `/docs/#${section}` });
    }
    expect((await request(app).get('/docs/getting-started/').redirects(1)).status).toBe(200);
  });

  it('while a missing file under /docs/ stays a 404', async () => {
    for (const file of ['/docs/redoc.standalone.js', '/docs/icons/fa/7.0.0/x.svg', '/docs/paging.html']) {
      expect({ file, status: (await request(app).get(file)).status }).toEqual({ file, status: 404 });
    }
  });

  it('include the guides, and the repository pages they link to, with their links sent to sections', () => {
    const sectionOf = new Map(definition.tags.map((tag) => [`#/${tag.name}`, tag['x-displayName'] ?? tag.name]));
    const guidesDir = path.join(repositoryRoot, 'docs', 'guides');
    const sources = [...fs.readdirSync(guidesDir).map((name) => path.join(guidesDir, name)), path.join(repositoryRoot, 'CHANGELOG.md')];
    const linked = sources.flatMap((file) =>
      [...fs.readFileSync(file, 'utf8').matchAll(/\[([^\]]*)\]\(([^)\s#:]+\.md)\)/g)].map(([, text, target]) => ({
        text: text as string,
        file: path.resolve(path.dirname(file), target as string),
      })),
    );
    expect(linked.map((link) => path.relative(repositoryRoot, link.file))).toEqual(
      expect.arrayContaining(['packages/client/README.md', 'docs/guides/02-oauth-and-tokens.md', 'docs/guides/04-paging.md']),
    );
    const descriptions = definition.tags.map((tag) => tag.description ?? '').join('\n');
    for (const link of linked) {
      const title = /^# (.+)$/m.exec(fs.readFileSync(link.file, 'utf8'))?.[1] as string;
      const escaped = link.text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const targetsOfText = [...descriptions.matchAll(new RegExp(`\\[${escaped}\\]\\((#/[^)]+)\\)`, 'g'))].map((match) => match[1] as string);
      expect({ text: link.text, titles: targetsOfText.map((target) => sectionOf.get(target)) }).toEqual({
        text: link.text,
        titles: expect.arrayContaining([expect.stringContaining(title)]),
      });
    }
  });
});
