/**
 * The breaking-change gate (issue 20, part 3): each breaking change the issue names, made on a copy
 * of the released document, is named as breaking and fails the gate; additive changes pass; a new
 * date version declared in the registry and the changelog lets a breaking change through.
 */
import fs from 'node:fs';
import type { ApiVersionEntry } from '../../../packages/contract/src/generated/versions';
import { locations } from '../../codegen/paths';
import { latestReleased } from '../check';
import { type GateVerdict, judge, report } from '../gate';

// Each verdict diffs two whole documents (several seconds on a loaded machine).
jest.setTimeout(120_000);

// biome-ignore lint/suspicious/noExplicitAny: the tests walk and edit OpenAPI documents by path.
type Json = Record<string, any>;
const latest = latestReleased();

/**
 * The released document cut down to the operations and events these tests change (components whole):
 * the tool resolves every `$ref` at each use, so a diff of the whole document costs several seconds
 * and this one a fraction. The committed bundle is still judged against the whole document below.
 */
const KEPT_PATHS = /\/v1\/(pages|orders|products)(\/\{id\})?$/;
const KEPT_EVENTS = new Set(['order.created', 'order.paid']);
function cutDown(document: Json): Json {
  const copy = structuredClone(document);
  copy.paths = Object.fromEntries(Object.entries(copy.paths).filter(([path]) => KEPT_PATHS.test(path)));
  copy.webhooks = Object.fromEntries(Object.entries(copy.webhooks).filter(([event]) => KEPT_EVENTS.has(event)));
  return copy;
}
const released = { version: latest.version, document: cutDown(latest.document as Json) };
const CURRENT: ApiVersionEntry = { version: released.version, released: released.version, deprecated: null, sunset: null, changelog: released.version };
const CHANGELOG = `# Changelog\n\n## ${released.version}\n\nThe first version.\n`;

function changed(mutate: (document: Json) => void): Json {
  const copy = structuredClone(released.document) as Json;
  mutate(copy);
  return copy;
}

function verdictOf(working: Json, versions: ApiVersionEntry[] = [CURRENT], changelog = CHANGELOG): GateVerdict {
  return judge({ released, working, versions, changelog });
}

/** The gate fails, and names a breaking change at `where` whose description matches `what`. */
function expectBreaking(verdict: GateVerdict, where: string, what: RegExp): void {
  expect(verdict.passes).toBe(false);
  expect(verdict.breaking).toEqual(expect.arrayContaining([expect.objectContaining({ where, description: expect.stringMatching(what) })]));
  expect(report(verdict)).toMatch(new RegExp(`^BREAKING ${where.replace(/[{}]/g, '\\$&')}: `, 'm'));
}

const schemas = (document: Json): Json => document.components.schemas;
const PAGES = '/stores/{storeId}/v1/pages';

describe('the gate names each breaking change and fails', () => {
  test("a narrowed maxLength: PageCreate.title's 200 made 20", () => {
    const verdict = verdictOf(
      changed((d) => {
        schemas(d).PageCreate.properties.title.maxLength = 20;
      }),
    );
    expectBreaking(verdict, `POST ${PAGES}`, /maxLength.*`title`.*Request Body/);
  });

  test('a narrowed maximum: the limit parameter 100 made 50', () => {
    const verdict = verdictOf(
      changed((d) => {
        d.components.parameters.Limit.schema.maximum = 50;
      }),
    );
    expectBreaking(verdict, `GET ${PAGES}`, /\[replace parameters\/0\/schema\/maximum\]/);
    expectBreaking(verdict, 'GET /stores/{storeId}/v1/products', /maximum validator in query parameter `limit`/);
  });

  test('a removed response property: Page.excerpt', () => {
    const verdict = verdictOf(
      changed((d) => {
        const page = schemas(d).Page;
        delete page.properties.excerpt;
        page.required = page.required.filter((name: string) => name !== 'excerpt');
      }),
    );
    expectBreaking(verdict, `GET ${PAGES}`, /\[Removed\] property `excerpt`.*Response 200/);
    expectBreaking(verdict, `GET ${PAGES}/{id}`, /\[remove responses\/200\/content\/application\/json\/schema\/properties\/data\/properties\/excerpt\]/);
  });

  test('an optional request property made required: PageCreate.body', () => {
    const verdict = verdictOf(
      changed((d) => {
        schemas(d).PageCreate.required.push('body');
      }),
    );
    expectBreaking(verdict, `POST ${PAGES}`, /\[Added\] required status to `body` in Request Body/);
  });

  test("a removed enum value in a request: the orders filter's status", () => {
    const verdict = verdictOf(
      changed((d) => {
        const status = schemas(d).OrderStatus;
        status.enum = status.enum.filter((value: string) => value !== 'cancelled');
      }),
    );
    expectBreaking(verdict, 'GET /stores/{storeId}/v1/orders', /possible values in query parameter `status`/);
  });

  test('a new required parameter', () => {
    const verdict = verdictOf(
      changed((d) => {
        d.paths[PAGES].get.parameters.push({
          name: 'locale',
          in: 'query',
          required: true,
          description: 'The language.',
          schema: { type: 'string', maxLength: 5 },
        });
      }),
    );
    expectBreaking(verdict, `GET ${PAGES}`, /\[Added\] required query parameter `locale`/);
  });

  test('a removed operation', () => {
    const verdict = verdictOf(
      changed((d) => {
        delete d.paths[PAGES].post;
      }),
    );
    expectBreaking(verdict, `POST ${PAGES}`, /\[Removed\] operation POST/);
  });

  test('a changed type: PageCreate.title from string to integer', () => {
    const verdict = verdictOf(
      changed((d) => {
        schemas(d).PageCreate.properties.title.type = 'integer';
      }),
    );
    expectBreaking(verdict, `POST ${PAGES}`, /type definition of `title`/);
  });

  test("a removed property of an event's payload, and a removed event", () => {
    const verdict = verdictOf(
      changed((d) => {
        const event = schemas(d).OrderCreatedEvent;
        delete event.properties.occurred_at;
        event.required = event.required.filter((name: string) => name !== 'occurred_at');
        delete d.webhooks['order.paid'];
      }),
    );
    expectBreaking(verdict, 'event order.created', /\[Removed\] property `occurred_at`/);
    expect(verdict.breaking).toEqual(expect.arrayContaining([expect.objectContaining({ where: 'event order.paid' })]));
  });
});

describe('response headers', () => {
  test('a response header made optional after being required, and one no longer sent, are breaking', () => {
    const released = changed((d) => {
      d.components.headers['X-Request-Id'].required = true;
    });
    const working = changed((d) => {
      delete d.paths[PAGES].post.responses['201'].headers.ETag;
    });
    const verdict = judge({ released: { version: CURRENT.version, document: released }, working, versions: [CURRENT], changelog: CHANGELOG });
    expectBreaking(verdict, `POST ${PAGES}`, /\[remove responses\/201\/headers\/ETag\]/);
    expectBreaking(verdict, `GET ${PAGES}`, /\[remove responses\/200\/headers\/X-Request-Id\/required\]/);
  });
});

describe('enums that grow', () => {
  const withNewCode = (marked: boolean) =>
    changed((d) => {
      const codes = schemas(d).ErrorCode;
      codes.enum.push('GIFT_CARD_EXPIRED');
      if (marked) codes['x-extensible-enum'] = true;
      else delete codes['x-extensible-enum'];
    });

  test('a new error code passes when ErrorCode is marked x-extensible-enum', () => {
    const verdict = verdictOf(withNewCode(true));
    expect(verdict.breaking).toEqual([]);
    expect(verdict.passes).toBe(true);
  });

  test('the same code in an enum not marked extensible is breaking in the answers that carry it', () => {
    expectBreaking(verdictOf(withNewCode(false)), `POST ${PAGES}`, /possible values of `error.code`|annotation/);
  });

  test('the marker does not let a value be removed from a request enum', () => {
    const verdict = verdictOf(
      changed((d) => {
        const status = schemas(d).OrderStatus;
        status['x-extensible-enum'] = true;
        status.enum = status.enum.filter((value: string) => value !== 'cancelled');
      }),
    );
    expectBreaking(verdict, 'GET /stores/{storeId}/v1/orders', /possible values in query parameter `status`/);
  });
});

describe('additive changes pass', () => {
  test('a new optional request field, a new response field, a wider maxLength, a new operation and event, a description beside a $ref', () => {
    const verdict = verdictOf(
      changed((d) => {
        const s = schemas(d);
        s.PageCreate.properties.locale = { type: 'string', maxLength: 5 };
        s.PageCreate.properties.title.maxLength = 300;
        s.Page.properties.locale = { type: 'string', maxLength: 5 };
        s.PageCreate.properties.slug.description = 'The address of the page.';
        d.paths[`${PAGES}/{id}/history`] = { get: { ...structuredClone(d.paths[PAGES].get), operationId: 'pages.history' } };
        d.webhooks['page.created'] = structuredClone(d.webhooks['order.created']);
      }),
    );
    expect(verdict.breaking).toEqual([]);
    expect(verdict.problems).toEqual([]);
    expect(verdict.passes).toBe(true);
  });

  test('the committed bundle passes against the latest released document', () => {
    const working = JSON.parse(fs.readFileSync(locations.bundledSpec, 'utf8')) as Json;
    const verdict = judge({ released: latest, working, versions: [CURRENT], changelog: fs.readFileSync(locations.changelog, 'utf8') });
    expect(report(verdict)).not.toMatch(/BREAKING/);
    expect(verdict.passes).toBe(true);
  });
});

describe('a breaking change in a new date version', () => {
  const NEXT: ApiVersionEntry = { version: '2027-04-01', released: '2027-04-01', deprecated: null, sunset: null, changelog: '2027-04-01' };
  const narrowedInNext = () =>
    changed((d) => {
      schemas(d).PageCreate.properties.title.maxLength = 20;
      d.info.version = NEXT.version;
    });

  test('passes when the version is in the registry and the changelog says what it changes, and is still named', () => {
    const changelog = `${CHANGELOG}\n## 2027-04-01\n\n- **Breaking**: a page title is at most 20 characters.\n`;
    const verdict = verdictOf(narrowedInNext(), [CURRENT, NEXT], changelog);
    expect(verdict.passes).toBe(true);
    expect(verdict.declaredFor).toBe('2027-04-01');
    expect(report(verdict)).toMatch(/^breaking \(declared\) POST \/stores\/\{storeId\}\/v1\/pages: .*maxLength/m);
  });

  test('fails when the changelog has no entry for it', () => {
    const verdict = verdictOf(narrowedInNext(), [CURRENT, NEXT], CHANGELOG);
    expect(verdict.passes).toBe(false);
    expect(verdict.problems.join()).toMatch(/CHANGELOG.md has no "## 2027-04-01"/);
  });

  test('fails when the registry does not list it', () => {
    const verdict = verdictOf(narrowedInNext(), [CURRENT], `${CHANGELOG}\n## 2027-04-01\n\nChanges.\n`);
    expect(verdict.passes).toBe(false);
    expect(verdict.problems.join()).toMatch(/not in spec\/versions.yaml/);
  });

  test('a breaking change under the released version itself is not declared by a changelog entry', () => {
    const verdict = verdictOf(
      changed((d) => {
        schemas(d).PageCreate.properties.title.maxLength = 20;
      }),
      [CURRENT],
      `${CHANGELOG}\n- **Breaking**: titles of 20 characters.\n`,
    );
    expect(verdict.passes).toBe(false);
    expect(verdict.declaredFor).toBeNull();
  });
});
