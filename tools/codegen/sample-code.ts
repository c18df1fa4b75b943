import type { OpenApiDocument } from './bundle';
import { filledPath, JSON_MEDIA_TYPE, queryText, SAMPLE_BASE_URL, SAMPLE_VARIABLES, type SampleRequest, sampleRequests } from './samples';

/**
 * Every operation's code samples, written from its sample request (samples.ts) in the five
 * languages app developers use: curl, TypeScript with the SDK, Python with requests, PHP with its
 * curl extension and Go with net/http. Each reads the service's base URL from `SVC_URL`
 * (`http://localhost:3000` when unset) and the store, token and client credentials from the
 * environment the first start prints, makes a fresh `Idempotency-Key` where one is needed, reads
 * the `ETag` an update needs before sending it, and prints the answer's status and body.
 * packages/server/test/docs-samples.test.ts runs every one against a seeded store.
 */

/** The languages, in the order the reference shows their tabs. */
export const SAMPLE_LANGUAGES = ['curl', 'TypeScript', 'Python', 'PHP', 'Go'] as const;
export type SampleLanguage = (typeof SAMPLE_LANGUAGES)[number];

/** How each language's tab is labelled and highlighted in the reference (`x-codeSamples`). */
const CODE_SAMPLE_LANG: Readonly<Record<SampleLanguage, string>> = { curl: 'Shell', TypeScript: 'TypeScript', Python: 'Python', PHP: 'PHP', Go: 'Go' };

const { baseUrl: BASE_URL, storeId: STORE_ID, accessToken: ACCESS_TOKEN, clientId: CLIENT_ID, clientSecret: CLIENT_SECRET } = SAMPLE_VARIABLES;
/** The store id as the filled path carries it, a shell variable: each language puts its own in its place. */
const STORE_PLACEHOLDER = `$${STORE_ID}`;

/** A path with the store id written the language's way: `literal` writes the text around it, `store` is the variable, `join` joins them. */
function pathIn(path: string, literal: (text: string) => string, store: string, join: string): string {
  return path
    .split(STORE_PLACEHOLDER)
    .map((text) => (text === '' ? undefined : literal(text)))
    .flatMap((text, index) => (index === 0 ? [text] : [store, text]))
    .filter((part): part is string => part !== undefined)
    .join(join);
}

// ---------------------------------------------------------------- values as literals

type Style = {
  string: (text: string) => string;
  key: (name: string) => string;
  null: string;
  boolean: (value: boolean) => string;
  object: [string, string];
  emptyObject: string;
  pair: string;
  /** One level of indentation. */
  unit: string;
};

/** A JSON value as a literal of a language: flat when it fits in the line, one item a line otherwise. */
function literalOf(value: unknown, style: Style, indent: string, width = 100): string {
  if (typeof value === 'string') return style.string(value);
  if (typeof value === 'boolean') return style.boolean(value);
  if (value === null || value === undefined) return style.null;
  if (typeof value !== 'object') return JSON.stringify(value);
  const inner = `${indent}${style.unit}`;
  const isList = Array.isArray(value);
  const items = isList
    ? value.map((item) => literalOf(item, style, inner, width))
    : Object.entries(value).map(([name, item]) => `${style.key(name)}${style.pair}${literalOf(item, style, inner, width)}`);
  if (items.length === 0) return isList ? '[]' : style.emptyObject;
  const [open, close] = isList ? ['[', ']'] : style.object;
  const flat = `${open}${items.join(', ')}${close}`;
  if (flat.length + indent.length <= width) return flat;
  return `${open.trim()}\n${items.map((item) => `${inner}${item},`).join('\n')}\n${indent}${close.trim()}`;
}

const doubleQuoted = (text: string) => JSON.stringify(text);
const singleQuoted = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

const PYTHON: Style = {
  string: doubleQuoted,
  key: doubleQuoted,
  null: 'None',
  boolean: (value) => (value ? 'True' : 'False'),
  object: ['{', '}'],
  emptyObject: '{}',
  pair: ': ',
  unit: '    ',
};
const PHP: Style = {
  string: singleQuoted,
  key: singleQuoted,
  null: 'null',
  boolean: (value) => String(value),
  object: ['[', ']'],
  // An empty PHP array is a JSON list: an empty object has to be one.
  emptyObject: 'new stdClass()',
  pair: ' => ',
  unit: '    ',
};

/** A query value as it is sent: a boolean as the word the service reads (`true`), never a language's own spelling of it. */
const queryValue = (value: string | number | boolean) => (typeof value === 'boolean' ? String(value) : value);

// ---------------------------------------------------------------- curl

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;
const shellUrl = (path: string) => `"\${${BASE_URL}:-${SAMPLE_BASE_URL}}${path}"`;
const SHELL_IDEMPOTENCY_KEY = `$(node -p 'crypto.randomUUID()')`;

export function curlSample(request: SampleRequest): string {
  const { operation } = request;
  const query = queryText(request);
  const lines: string[] = [];
  const authorization = operation.auth === 'bearer' ? `-H "Authorization: Bearer $${ACCESS_TOKEN}"` : undefined;
  if (request.etagFrom) {
    // The ETag of what the update changes, read first: the update applies to that version only.
    const read = ['curl -s -o /dev/null -D -', shellUrl(filledPath(request, request.etagFrom)), authorization].filter(Boolean).join(' ');
    lines.push(`ETAG=$(${read} | sed -n 's/^[Ee][Tt]ag: //p' | tr -d '\\r')`);
  }
  const command = [`curl -X ${operation.method.toUpperCase()} ${shellUrl(query ? `${filledPath(request)}?${query}` : filledPath(request))}`];
  if (authorization) command.push(authorization);
  if (operation.auth === 'client') command.push(`-u "$${CLIENT_ID}:$${CLIENT_SECRET}"`);
  if (operation.requiresIdempotencyKey) command.push(`-H "Idempotency-Key: ${SHELL_IDEMPOTENCY_KEY}"`);
  if (request.etagFrom) command.push('-H "If-Match: $ETAG"');
  for (const [name, value] of Object.entries(request.headers)) command.push(`-H ${shellQuote(`${name}: ${value}`)}`);
  if (request.body !== undefined) command.push(`-H 'Content-Type: ${JSON_MEDIA_TYPE}'`, `--data ${shellQuote(JSON.stringify(request.body))}`);
  lines.push(command.join(' \\\n  '));
  return lines.join('\n');
}

// ---------------------------------------------------------------- TypeScript (the SDK)

const tsQuoted = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
const tsKey = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : tsQuoted(name));
const TYPESCRIPT: Style = { string: tsQuoted, key: tsKey, null: 'null', boolean: String, object: ['{ ', ' }'], emptyObject: '{}', pair: ': ', unit: '  ' };

/** The `params` of a typed call: the template's path parameters, the query when given, and headers (as code). */
function tsParams(request: SampleRequest, template: string, query: SampleRequest['query'] = {}, headers: Record<string, string> = {}): string | undefined {
  const names = [...template.matchAll(/\{(\w+)\}/g)].map((match) => match[1] as string);
  const path = names.map((name) =>
    name === 'storeId' ? `storeId: process.env.${STORE_ID} ?? ''` : `${tsKey(name)}: ${tsQuoted(request.pathParameters[name] ?? '')}`,
  );
  const params = [
    path.length > 0 ? `path: { ${path.join(', ')} }` : undefined,
    Object.keys(query).length > 0 ? `query: ${literalOf(query, TYPESCRIPT, '', 1000)}` : undefined,
    Object.keys(headers).length > 0
      ? `header: { ${Object.entries(headers)
          .map(([name, value]) => `${tsKey(name)}: ${value}`)
          .join(', ')} }`
      : undefined,
  ].filter((entry): entry is string => entry !== undefined);
  return params.length > 0 ? `params: { ${params.join(', ')} }` : undefined;
}

export function typeScriptSample(request: SampleRequest): string {
  const { operation } = request;
  const lines = [`import { createStoreClient } from '@svc/client';`, ''];
  const token = operation.auth === 'bearer' ? `, accessToken: process.env.${ACCESS_TOKEN}` : '';
  lines.push(`const client = createStoreClient({ baseUrl: process.env.${BASE_URL} ?? '${SAMPLE_BASE_URL}'${token} });`);
  const headers: Record<string, string> = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name, tsQuoted(value)]));
  if (request.etagFrom) {
    lines.push(
      '// The ETag of what the update changes, read first: the update applies to that version only.',
      `const { response: current } = await client.GET('${request.etagFrom}', { ${tsParams(request, request.etagFrom)} });`,
    );
    headers['If-Match'] = `current.headers.get('ETag') ?? ''`;
  }
  const basic = `\`Basic \${btoa(\`\${process.env.${CLIENT_ID}}:\${process.env.${CLIENT_SECRET}}\`)}\``;
  const init = [
    tsParams(request, operation.path, request.query, headers),
    request.body !== undefined ? `body: ${literalOf(request.body, TYPESCRIPT, '  ')}` : undefined,
    operation.auth === 'client' ? `headers: { Authorization: ${basic} }` : undefined,
  ].filter((entry): entry is string => entry !== undefined);
  const call = `await client.${operation.method.toUpperCase()}('${operation.path}'${init.length > 0 ? `, {\n  ${init.join(',\n  ')},\n}` : ''})`;
  // A failure throws a StoreApiError, so what returns is the operation's documented success.
  lines.push(`const { data, response } = ${call};`, 'console.log(response.status, data);');
  return lines.join('\n');
}

// ---------------------------------------------------------------- Python (requests)

export function pythonSample(request: SampleRequest): string {
  const { operation } = request;
  const usesStore = operation.path.includes('{storeId}');
  const url = (path: string) => `f"{base_url}${path.replace(STORE_PLACEHOLDER, '{store_id}')}"`;
  const lines = ['import os'];
  if (operation.requiresIdempotencyKey) lines.push('import uuid');
  lines.push('', 'import requests', '', `base_url = os.environ.get("${BASE_URL}", "${SAMPLE_BASE_URL}")`);
  if (usesStore) lines.push(`store_id = os.environ["${STORE_ID}"]`);
  const headers: string[] = [];
  if (operation.auth === 'bearer') {
    lines.push(`authorization = {"Authorization": f"Bearer {os.environ['${ACCESS_TOKEN}']}"}`);
    headers.push('**authorization');
  }
  if (request.etagFrom) {
    lines.push(
      '',
      '# The ETag of what the update changes, read first: the update applies to that version only.',
      `etag = requests.get(${url(filledPath(request, request.etagFrom))}, headers=authorization, timeout=30).headers["ETag"]`,
    );
  }
  if (operation.requiresIdempotencyKey) headers.push('"Idempotency-Key": str(uuid.uuid4())');
  if (request.etagFrom) headers.push('"If-Match": etag');
  for (const [name, value] of Object.entries(request.headers)) headers.push(`${doubleQuoted(name)}: ${doubleQuoted(value)}`);
  const query = Object.fromEntries(Object.entries(request.query).map(([name, value]) => [name, queryValue(value)]));
  const args = [
    url(filledPath(request)),
    Object.keys(query).length > 0 ? `params=${literalOf(query, PYTHON, '    ')}` : undefined,
    headers.length > 0 ? `headers={${headers.join(', ')}}` : undefined,
    operation.auth === 'client' ? `auth=(os.environ["${CLIENT_ID}"], os.environ["${CLIENT_SECRET}"])` : undefined,
    request.body !== undefined ? `json=${literalOf(request.body, PYTHON, '    ')}` : undefined,
    'timeout=30',
  ].filter((arg): arg is string => arg !== undefined);
  lines.push('', `response = requests.${operation.method}(`, ...args.map((arg) => `    ${arg},`), ')', 'print(response.status_code, response.text)');
  return lines.join('\n');
}

// ---------------------------------------------------------------- PHP (its curl extension)

export function phpSample(request: SampleRequest): string {
  const { operation } = request;
  const url = (path: string) => `"$baseUrl${path.replace(STORE_PLACEHOLDER, '$storeId')}"`;
  const lines = ['<?php', '', `$baseUrl = getenv('${BASE_URL}') ?: '${SAMPLE_BASE_URL}';`];
  if (operation.path.includes('{storeId}')) lines.push(`$storeId = getenv('${STORE_ID}');`);
  if (operation.auth === 'bearer') lines.push(`$authorization = 'Authorization: Bearer ' . getenv('${ACCESS_TOKEN}');`);
  if (request.etagFrom) {
    lines.push(
      '',
      '// The ETag of what the update changes, read first: the update applies to that version only.',
      "$etag = '';",
      `$read = curl_init(${url(filledPath(request, request.etagFrom))});`,
      'curl_setopt_array($read, [',
      '    CURLOPT_HTTPHEADER => [$authorization],',
      '    CURLOPT_RETURNTRANSFER => true,',
      '    CURLOPT_HEADERFUNCTION => function ($curl, string $line) use (&$etag): int {',
      "        if (stripos($line, 'ETag:') === 0) {",
      '            $etag = trim(substr($line, 5));',
      '        }',
      '        return strlen($line);',
      '    },',
      ']);',
      'curl_exec($read);',
    );
  }
  const query = Object.fromEntries(Object.entries(request.query).map(([name, value]) => [name, queryValue(value)]));
  const target =
    Object.keys(query).length > 0 ? `${url(filledPath(request))} . '?' . http_build_query(${literalOf(query, PHP, '', 1000)})` : url(filledPath(request));
  const headers = [
    operation.auth === 'bearer' ? '$authorization' : undefined,
    operation.requiresIdempotencyKey ? "'Idempotency-Key: ' . bin2hex(random_bytes(16))" : undefined,
    request.etagFrom ? "'If-Match: ' . $etag" : undefined,
    ...Object.entries(request.headers).map(([name, value]) => singleQuoted(`${name}: ${value}`)),
    request.body !== undefined ? `'Content-Type: ${JSON_MEDIA_TYPE}'` : undefined,
  ].filter((header): header is string => header !== undefined);
  const options = [
    `CURLOPT_CUSTOMREQUEST => '${operation.method.toUpperCase()}'`,
    headers.length > 0 ? `CURLOPT_HTTPHEADER => [\n        ${headers.join(',\n        ')},\n    ]` : undefined,
    operation.auth === 'client' ? `CURLOPT_USERPWD => getenv('${CLIENT_ID}') . ':' . getenv('${CLIENT_SECRET}')` : undefined,
    request.body !== undefined ? `CURLOPT_POSTFIELDS => json_encode(${literalOf(request.body, PHP, '    ')})` : undefined,
    'CURLOPT_RETURNTRANSFER => true',
  ].filter((option): option is string => option !== undefined);
  lines.push(
    '',
    `$curl = curl_init(${target});`,
    'curl_setopt_array($curl, [',
    ...options.map((option) => `    ${option},`),
    ']);',
    '$body = curl_exec($curl);',
    'if ($body === false) {',
    "    fwrite(STDERR, 'The request failed: ' . curl_error($curl) . PHP_EOL);",
    '    exit(1);',
    '}',
    "echo curl_getinfo($curl, CURLINFO_RESPONSE_CODE), ' ', $body, PHP_EOL;",
  );
  return lines.join('\n');
}

// ---------------------------------------------------------------- Go (net/http)

/** A Go sample as its imports and the body of its `main`: the reference shows the program, the test's runner calls every body in one binary. */
export interface GoSample {
  readonly imports: readonly string[];
  readonly body: string;
}

const goString = (text: string) => JSON.stringify(text);
const goUrl = (path: string) => `baseURL+${pathIn(path, goString, `os.Getenv("${STORE_ID}")`, '+')}`;
const goRequestCheck = ['if err != nil {', '\tpanic(err)', '}'];

export function goSampleParts(request: SampleRequest): GoSample {
  const { operation } = request;
  const imports = new Set(['fmt', 'io', 'net/http', 'os']);
  const body: string[] = [`baseURL := os.Getenv("${BASE_URL}")`, 'if baseURL == "" {', `\tbaseURL = "${SAMPLE_BASE_URL}"`, '}'];
  if (request.etagFrom) {
    body.push(
      '',
      '// The ETag of what the update changes, read first: the update applies to that version only.',
      `read, err := http.NewRequest("GET", ${goUrl(filledPath(request, request.etagFrom))}, nil)`,
      ...goRequestCheck,
      `read.Header.Set("Authorization", "Bearer "+os.Getenv("${ACCESS_TOKEN}"))`,
      'current, err := http.DefaultClient.Do(read)',
      ...goRequestCheck,
      'current.Body.Close()',
    );
  }
  const query = queryText(request);
  const url = `${goUrl(filledPath(request))}${query ? `+${goString(`?${query}`)}` : ''}`;
  let payload = 'nil';
  if (request.body !== undefined) {
    imports.add('strings');
    const json = JSON.stringify(request.body);
    payload = `strings.NewReader(${json.includes('`') ? goString(json) : `\`${json}\``})`;
  }
  body.push('', `req, err := http.NewRequest("${operation.method.toUpperCase()}", ${url}, ${payload})`, ...goRequestCheck);
  if (operation.auth === 'bearer') body.push(`req.Header.Set("Authorization", "Bearer "+os.Getenv("${ACCESS_TOKEN}"))`);
  if (operation.auth === 'client') body.push(`req.SetBasicAuth(os.Getenv("${CLIENT_ID}"), os.Getenv("${CLIENT_SECRET}"))`);
  if (operation.requiresIdempotencyKey) {
    imports.add('crypto/rand');
    imports.add('encoding/hex');
    body.push(
      'key := make([]byte, 16)',
      'if _, err := rand.Read(key); err != nil {',
      '\tpanic(err)',
      '}',
      'req.Header.Set("Idempotency-Key", hex.EncodeToString(key))',
    );
  }
  if (request.etagFrom) body.push('req.Header.Set("If-Match", current.Header.Get("ETag"))');
  for (const [name, value] of Object.entries(request.headers)) body.push(`req.Header.Set(${goString(name)}, ${goString(value)})`);
  if (request.body !== undefined) body.push(`req.Header.Set("Content-Type", "${JSON_MEDIA_TYPE}")`);
  body.push(
    'res, err := http.DefaultClient.Do(req)',
    ...goRequestCheck,
    'defer res.Body.Close()',
    'answer, err := io.ReadAll(res.Body)',
    ...goRequestCheck,
    'fmt.Println(res.StatusCode, string(answer))',
  );
  return { imports: [...imports].sort(), body: body.join('\n') };
}

const goIndent = (body: string) =>
  body
    .split('\n')
    .map((line) => (line === '' ? '' : `\t${line}`))
    .join('\n');

/** The Go sample as a program of its own: what the reference shows. */
export function goSample(request: SampleRequest): string {
  const { imports, body } = goSampleParts(request);
  return ['package main', '', 'import (', ...imports.map((name) => `\t"${name}"`), ')', '', 'func main() {', goIndent(body), '}'].join('\n');
}

/**
 * One Go program that runs the samples in turn (compiled once: a build per sample costs a second
 * each): every sample's `main` body as a function, called after `before(name)`; a sample that
 * panics is reported on stderr and the next one runs.
 */
export function goRunner(samples: ReadonlyArray<{ name: string; sample: GoSample }>, before: (name: string) => string): string {
  const imports = new Set(['fmt', 'os', ...samples.flatMap(({ sample }) => sample.imports)]);
  const functions = samples.map(({ sample }, index) => `func sample${index}() {\n${goIndent(sample.body)}\n}`);
  const calls = samples.map(({ name }, index) => `\trun(${goString(name)}, sample${index})`);
  return [
    'package main',
    '',
    'import (',
    ...[...imports].sort().map((name) => `\t"${name}"`),
    ')',
    '',
    'func run(name string, sample func()) {',
    '\tdefer func() {',
    '\t\tif failure := recover(); failure != nil {',
    '\t\t\tfmt.Fprintln(os.Stderr, name, "panicked:", failure)',
    '\t\t}',
    '\t}()',
    goIndent(before('name')),
    '\tsample()',
    '}',
    '',
    ...functions.flatMap((fn) => [fn, '']),
    'func main() {',
    ...calls,
    '}',
  ].join('\n');
}

// ---------------------------------------------------------------- the reference

/** One operation's samples, in the order of SAMPLE_LANGUAGES. */
export function codeSamplesOf(request: SampleRequest): Array<{ lang: string; label: SampleLanguage; source: string }> {
  const sources: Record<SampleLanguage, string> = {
    curl: curlSample(request),
    TypeScript: typeScriptSample(request),
    Python: pythonSample(request),
    PHP: phpSample(request),
    Go: goSample(request),
  };
  return SAMPLE_LANGUAGES.map((language) => ({ lang: CODE_SAMPLE_LANG[language], label: language, source: sources[language] }));
}

/** The bundled document with every path operation's samples in the five languages (`x-codeSamples`, which Redoc shows as tabs). */
export function withCodeSamples(document: OpenApiDocument): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = { ...document.paths };
  for (const request of sampleRequests(document)) {
    const { path, method } = request.operation;
    const pathItem = { ...paths[path] };
    pathItem[method] = { ...(pathItem[method] as Record<string, unknown>), 'x-codeSamples': codeSamplesOf(request) };
    paths[path] = pathItem;
  }
  return { ...document, paths };
}
