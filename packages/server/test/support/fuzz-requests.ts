import type { OperationEntry } from '@svc/contract';
import type { Express } from 'express';
import fc from 'fast-check';
import request from 'supertest';
import { documentedParameters } from './example-requests';

/** Name and value pairs in order (a name may repeat), as a query string or a form body has them. */
export type Pairs = [string, string][];

export type Body = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'form'; pairs: Pairs } | { kind: 'text'; contentType: string; text: string };

/** Whose credentials a request carries; the test maps each to an `Authorization` header (or none). */
export const CALLERS = ['own', 'none', 'garbage', 'other-store', 'narrow-scope', 'other-scheme', 'wrong-secret'] as const;
export type Caller = (typeof CALLERS)[number];

/** A request before it is sent: what the spec describes, then mutated. */
export interface Draft {
  entry: OperationEntry;
  pathValues: Record<string, string>;
  query: Pairs;
  /** Query fragments appended as they are, unescaped (`%zz`, `a=%00`, `&&`). */
  rawQuery: string[];
  headers: [string, string[]][];
  caller: Caller;
  body: Body;
}

/** One change to a request; the indexes pick among what the request has (modulo its length). */
export type Mutation =
  | { kind: 'set-field'; at: number; value: unknown }
  | { kind: 'add-field'; name: string; value: unknown }
  | { kind: 'drop-field'; at: number }
  | { kind: 'raw-number'; at: number; text: string }
  | { kind: 'replace-body'; body: Body }
  | { kind: 'query'; name: string | number; value: string | typeof EXAMPLE }
  | { kind: 'raw-query'; text: string }
  | { kind: 'header'; name: string; values: string[] }
  | { kind: 'path-id'; value: string }
  | { kind: 'caller'; caller: Caller };

/** A query mutation's value meaning "the parameter's own example from the spec". */
export const EXAMPLE = Symbol('the example');

export const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty'] as const;

/** A JSON number written as text, which JSON.stringify cannot produce (`1e309`, `-0`, 2^63 exactly). */
const RAW_NUMBER_MARK = '\u0000raw-number:';
const RAW_NUMBER_IN_JSON = /"\\u0000raw-number:([^"]*)"/g;

export const jsonText = (value: unknown): string => (JSON.stringify(value) ?? 'null').replace(RAW_NUMBER_IN_JSON, '$1');

const HUGE = 'x'.repeat(70_000);
/** Strings no field expects: lone surrogates, direction marks, non-characters, stacked combining marks, 70 KB. */
const ODD_STRINGS = [
  '',
  ' ',
  '\uD800',
  'a\uDFFFb',
  '\u202Eevil\u202C',
  '\u200F\u200E\u061C',
  '\uFFFF',
  '\uFFFE\uFEFF',
  `e${'\u0301'.repeat(50)}`,
  'دهن العود',
  '𝒪𝓊𝒹 🛢️',
  '\u00A0\u2028\u2029',
  '0',
  '-1',
  'null',
  HUGE,
];
/** Query values stay well under Node's 16 KiB limit on a request's head (beyond it Node itself answers 431). */
const ODD_QUERY_VALUES = [...ODD_STRINGS.filter((text) => text !== HUGE), 'x'.repeat(3000), 'é'.repeat(300)];
const ODD_NUMBERS = [0, -0, -1, 1.5, 2 ** 31, 2 ** 53, 2 ** 63, -(2 ** 63), Number.MAX_VALUE, 1e-300];
const RAW_NUMBERS = ['1e309', '-1e309', '9223372036854775808', '-0', '1.5', '1e-400', '1E2', '123456789012345678901234567890'];
/** Path ids the validator or the lookups must refuse: zero, leading zeros, exponents, beyond 2^53, not digits at all. */
const ODD_IDS = [
  '0',
  '01',
  '1e3',
  String(2 ** 53),
  '99999999999999999999',
  '999999999999999',
  '2147483648',
  '-1',
  '1.5',
  ' ',
  '%',
  '٣',
  '１',
  ...PROTOTYPE_KEYS,
];
const CONTENT_TYPES = [
  'application/json',
  'text/plain',
  'application/xml',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=zz',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/merge-patch+json',
  'a/b/c',
  ';;',
  'application/json; __proto__=1',
  'application/json; constructor=x; toString=y',
];
const CONTENT_ENCODINGS = ['gzip', 'deflate', 'br', 'compress', 'identity', 'gzip, gzip', 'x-unknown'];
const IF_MATCHES = ['*', 'W/"x"', '"p1.1.short"', `"p1.99999999999999999999.${'A'.repeat(43)}"`, `"p1.1.${'A'.repeat(43)}"`, 'garbage', '', '"a", "b"'];
const IDEMPOTENCY_KEYS = ['', ' ', 'k'.repeat(129), 'k'.repeat(6000), 'clé', 'reused-key', 'reused-key'];
const RAW_QUERIES = [
  '%zz',
  '%E0%A4%A',
  '%ED%A0%80',
  'limit=%00',
  'search=%00',
  '&&&',
  '=x',
  'search',
  'search=',
  'limit=1e3',
  'limit=01',
  'limit=-0',
  'limit=1.5',
  'limit=99999999999999999999',
  'limit=1e309',
  'limit=0x10',
  `search=${'%F0%9F%9B%A2'.repeat(30)}`,
  `cursor=${'A'.repeat(3000)}`,
  'cursor=a.b',
  'status[]=active',
  'status[x]=active',
  'a[__proto__]=1',
  '__proto__[x]=1',
];

const oddString = fc.oneof(fc.constantFrom(...ODD_STRINGS), fc.string({ unit: 'binary', maxLength: 30 }), fc.string({ maxLength: 30 }));
const prototypeObject = fc.constantFrom(...PROTOTYPE_KEYS).map((key) => JSON.parse(`{"${key}":{"name":"x"}}`) as unknown);
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  oddString,
  fc.constantFrom(...ODD_NUMBERS),
  fc.constantFrom<unknown>(null, true, false, [], {}, ['a'], { a: 1 }),
  fc.jsonValue({ maxDepth: 2 }),
  prototypeObject,
);

const jsonTextBody = (text: string, contentType = 'application/json'): Body => ({ kind: 'text', contentType, text });
/** Bodies no operation takes as they are: empty, not an object, not JSON, deeply nested, other media types, prototype keys. */
const ODD_BODIES: Body[] = [
  jsonTextBody(''),
  jsonTextBody('[]'),
  jsonTextBody('null'),
  jsonTextBody('"x"'),
  jsonTextBody('1'),
  jsonTextBody('{'),
  jsonTextBody('{"a":1}{'),
  jsonTextBody('\uFEFF{}'),
  jsonTextBody(`{"name":"${HUGE}"}`),
  jsonTextBody(`${'['.repeat(20_000)}${']'.repeat(20_000)}`),
  jsonTextBody(`${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`),
  jsonTextBody('hello', 'text/plain'),
  jsonTextBody('<a/>', 'application/xml'),
  jsonTextBody('__proto__=1&constructor=2', 'application/x-www-form-urlencoded'),
  jsonTextBody('--zz--', 'multipart/form-data; boundary=zz'),
  jsonTextBody('{}', 'application/json; charset=utf-16'),
  ...PROTOTYPE_KEYS.map((key) => jsonTextBody(`{"${key}":1}`)),
];
const oddBody: fc.Arbitrary<Body> = fc.oneof(
  fc.constantFrom(...ODD_BODIES),
  fc.jsonValue({ maxDepth: 2 }).map((value): Body => ({ kind: 'json', value })),
);

/** A header set to one odd value, or repeated with two (superagent sends one Content-Type only; Node keeps the first anyway). */
const headerMutation = (name: string, values: readonly string[], { repeatable = true } = {}): fc.Arbitrary<Mutation> =>
  fc.array(fc.constantFrom(...values), { minLength: 1, maxLength: repeatable ? 2 : 1 }).map((chosen) => ({ kind: 'header', name, values: chosen }));

const weighted = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });

/** Every kind of change the fuzz test makes, weighted towards the body and the query. */
export const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  weighted(3, fc.record({ kind: fc.constant('set-field' as const), at: fc.nat(), value: oddValue })),
  weighted(
    2,
    fc.record({
      kind: fc.constant('add-field' as const),
      name: fc.oneof(fc.constantFrom(...PROTOTYPE_KEYS, 'colour', ''), fc.string({ maxLength: 10 })),
      value: oddValue,
    }),
  ),
  weighted(1, fc.record({ kind: fc.constant('drop-field' as const), at: fc.nat() })),
  weighted(2, fc.record({ kind: fc.constant('raw-number' as const), at: fc.nat(), text: fc.constantFrom(...RAW_NUMBERS) })),
  weighted(2, fc.record({ kind: fc.constant('replace-body' as const), body: oddBody })),
  weighted(
    4,
    fc.record({
      kind: fc.constant('query' as const),
      name: fc.oneof(fc.nat(), fc.constantFrom(...PROTOTYPE_KEYS, 'colour', 'limit', 'cursor', 'search', '')),
      value: fc.oneof(
        fc.constant(EXAMPLE),
        fc.constantFrom(...ODD_QUERY_VALUES),
        fc.constantFrom(...RAW_NUMBERS),
        fc.string({ unit: 'binary', maxLength: 30 }),
      ),
    }),
  ),
  weighted(3, fc.record({ kind: fc.constant('raw-query' as const), text: fc.constantFrom(...RAW_QUERIES) })),
  weighted(
    3,
    fc.oneof(
      headerMutation('Content-Type', CONTENT_TYPES, { repeatable: false }),
      headerMutation('Content-Encoding', CONTENT_ENCODINGS),
      headerMutation('If-Match', IF_MATCHES),
      headerMutation('Idempotency-Key', IDEMPOTENCY_KEYS),
      headerMutation('Accept', ['text/html', 'application/xml', '*/*;q=0']),
      headerMutation('X-Fuzz', ['x'.repeat(6000), 'é', '']),
    ),
  ),
  weighted(2, fc.record({ kind: fc.constant('path-id' as const), value: fc.constantFrom(...ODD_IDS) })),
  weighted(2, fc.record({ kind: fc.constant('caller' as const), caller: fc.constantFrom(...CALLERS) })),
);

/** Up to three changes, or none (the request as the spec describes it, which must not fail either). */
export const mutations = fc.array(mutation, { maxLength: 3 });

const ODD_FIELD_VALUES: unknown[] = ['\uD800', '\u202Eevil', '\uFFFF', `e${'\u0301'.repeat(50)}`, HUGE, null, [], {}, 1.5, -0, 2 ** 63];
const HEADER_VALUES: [string, readonly string[]][] = [
  ['Content-Type', CONTENT_TYPES],
  ['Content-Encoding', CONTENT_ENCODINGS],
  ['If-Match', IF_MATCHES],
  ['Idempotency-Key', IDEMPOTENCY_KEYS],
];

/**
 * Each odd input of the lists above on its own, for one operation: every raw query, every odd path
 * id, header value, caller and body, each declared query parameter with each odd number, each body
 * field of the spec's example with each odd value. Random combinations come on top of these.
 */
export function singleMutations(entry: OperationEntry, exampleFields: readonly string[]): Mutation[] {
  const queryNames = documentedParameters(entry)
    .filter((parameter) => parameter.in === 'query')
    .map((parameter) => parameter.name);
  const fieldIndexes = exampleFields.map((_name, index) => index);
  return [
    ...RAW_QUERIES.map((text): Mutation => ({ kind: 'raw-query', text })),
    ...queryNames.flatMap((name) => RAW_NUMBERS.map((value): Mutation => ({ kind: 'query', name, value }))),
    ...PROTOTYPE_KEYS.flatMap((name): Mutation[] => [
      { kind: 'query', name, value: '1' },
      { kind: 'add-field', name, value: 1 },
    ]),
    ...(entry.path.includes('{id}') ? ODD_IDS.map((value): Mutation => ({ kind: 'path-id', value })) : []),
    ...HEADER_VALUES.flatMap(([name, values]) => values.map((value): Mutation => ({ kind: 'header', name, values: [value] }))),
    ...CALLERS.map((caller): Mutation => ({ kind: 'caller', caller })),
    ...fieldIndexes.flatMap((at) => [
      ...RAW_NUMBERS.map((text): Mutation => ({ kind: 'raw-number', at, text })),
      ...ODD_FIELD_VALUES.map((value): Mutation => ({ kind: 'set-field', at, value })),
      { kind: 'drop-field', at } as Mutation,
    ]),
    { kind: 'add-field', name: 'colour', value: 'red' },
    ...ODD_BODIES.map((body): Mutation => ({ kind: 'replace-body', body })),
  ];
}

const pick = <T>(items: readonly T[], at: number): T | undefined => (items.length === 0 ? undefined : items[at % items.length]);

/** A form field's text: strings as they are (a raw number as its text), anything else as JSON. */
const formValue = (value: unknown): string =>
  typeof value !== 'string' ? jsonText(value) : value.startsWith(RAW_NUMBER_MARK) ? value.slice(RAW_NUMBER_MARK.length) : value;

function withJsonObject(body: Body, change: (fields: [string, unknown][]) => [string, unknown][]): Body {
  if (body.kind === 'form') return { kind: 'form', pairs: change(body.pairs).map(([name, value]) => [name, formValue(value)]) };
  const value = body.kind === 'json' && body.value !== null && typeof body.value === 'object' && !Array.isArray(body.value) ? body.value : {};
  return { kind: 'json', value: Object.fromEntries(change(Object.entries(value))) };
}

/** The draft with one mutation applied (a new draft; the old one is unchanged). */
export function mutate(draft: Draft, change: Mutation): Draft {
  switch (change.kind) {
    case 'set-field':
      return {
        ...draft,
        body: withJsonObject(draft.body, (fields) =>
          fields.map((field, index) => (index === change.at % Math.max(fields.length, 1) ? [field[0], change.value] : field)),
        ),
      };
    case 'add-field':
      return { ...draft, body: withJsonObject(draft.body, (fields) => [...fields, [change.name, change.value]]) };
    case 'drop-field':
      return { ...draft, body: withJsonObject(draft.body, (fields) => fields.filter((_field, index) => index !== change.at % Math.max(fields.length, 1))) };
    case 'raw-number':
      return {
        ...draft,
        body: withJsonObject(draft.body, (fields) =>
          fields.map((field, index) => (index === change.at % Math.max(fields.length, 1) ? [field[0], `${RAW_NUMBER_MARK}${change.text}`] : field)),
        ),
      };
    case 'replace-body':
      return { ...draft, body: change.body };
    case 'query': {
      const declared = documentedParameters(draft.entry).filter((parameter) => parameter.in === 'query');
      const parameter = typeof change.name === 'number' ? pick(declared, change.name) : declared.find((candidate) => candidate.name === change.name);
      const name = typeof change.name === 'number' ? (parameter?.name ?? 'unknown') : change.name;
      const value = change.value === EXAMPLE ? String(parameter?.example ?? 'x') : change.value;
      return { ...draft, query: [...draft.query, [name, value]] };
    }
    case 'raw-query':
      return { ...draft, rawQuery: [...draft.rawQuery, change.text] };
    case 'header':
      return { ...draft, headers: [...draft.headers.filter(([name]) => name.toLowerCase() !== change.name.toLowerCase()), [change.name, change.values]] };
    case 'path-id':
      return 'id' in draft.pathValues ? { ...draft, pathValues: { ...draft.pathValues, id: change.value } } : draft;
    case 'caller':
      return { ...draft, caller: change.caller };
  }
}

export function urlOf(draft: Draft): string {
  const path = draft.entry.path.replace(/\{([^}]+)\}/g, (_match, name: string) => encodeURIComponent(draft.pathValues[name] ?? ''));
  const query = [new URLSearchParams(draft.query).toString(), ...draft.rawQuery].filter((part) => part !== '').join('&');
  return query === '' ? path : `${path}?${query}`;
}

const bodyText = (body: Body): { contentType: string; text: string } | undefined => {
  switch (body.kind) {
    case 'none':
      return undefined;
    case 'json':
      return { contentType: 'application/json', text: jsonText(body.value) };
    case 'form':
      return { contentType: 'application/x-www-form-urlencoded', text: new URLSearchParams(body.pairs).toString() };
    case 'text':
      return { contentType: body.contentType, text: body.text };
  }
};

/** Sends the draft with the `Authorization` header its caller maps to (undefined: none). */
export function send(app: Express, draft: Draft, authorization: string | undefined): request.Test {
  let call = request(app)[draft.entry.method](urlOf(draft));
  if (authorization !== undefined) call = call.set('Authorization', authorization);
  const body = bodyText(draft.body);
  if (body) call = call.set('Content-Type', body.contentType).send(body.text);
  // Node sends an array as one header line per value (a repeated header); supertest types arrays for Cookie only.
  for (const [name, values] of draft.headers) call = call.set(name, (values.length === 1 ? values[0] : values) as string);
  return call;
}

/** The request in a few lines, for a failure message. */
export function describeDraft(draft: Draft): string {
  const body = bodyText(draft.body);
  const headers = draft.headers.map(([name, values]) => `${name}: ${values.map((value) => value.slice(0, 80)).join(' | ')}`);
  return [
    `${draft.entry.method.toUpperCase()} ${urlOf(draft).slice(0, 300)} as ${draft.caller}`,
    ...headers,
    body ? `${body.contentType}: ${body.text.slice(0, 300)}` : '(no body)',
  ].join('\n');
}
