import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { OpenApiDocument } from '../bundle';
import { locations, repoRoot } from '../paths';
import { codeSamplesOf, goSample, phpSample, pythonSample } from '../sample-code';
import { type SampleRequest, sampleRequests } from '../samples';

const document = JSON.parse(fs.readFileSync(locations.bundledSpec, 'utf8')) as OpenApiDocument;
const requests = sampleRequests(document);

type CodeSample = { lang: string; label: string; source: string };
const samplesOf = (method: string, route: string): CodeSample[] =>
  (document.paths[route]?.[method] as { 'x-codeSamples'?: CodeSample[] } | undefined)?.['x-codeSamples'] ?? [];

describe('the code samples of the bundled spec', () => {
  it('are on every path operation, in curl, TypeScript, Python, PHP and Go, written from the operation’s sample request', () => {
    expect(requests.length).toBeGreaterThan(0);
    for (const request of requests) {
      const { method, path: route } = request.operation;
      expect(samplesOf(method, route)).toEqual(codeSamplesOf(request));
      expect(samplesOf(method, route).map((sample) => [sample.lang, sample.label])).toEqual([
        ['Shell', 'curl'],
        ['TypeScript', 'TypeScript'],
        ['Python', 'Python'],
        ['PHP', 'PHP'],
        ['Go', 'Go'],
      ]);
    }
  });

  it('send what each operation requires: its token or client credentials, an Idempotency-Key, an If-Match read first, a JSON body', () => {
    for (const { operation } of requests) {
      const [curl, typeScript, python, php, go] = samplesOf(operation.method, operation.path).map((sample) => sample.source) as [
        string,
        string,
        string,
        string,
        string,
      ];
      const bearer = operation.auth === 'bearer';
      const client = operation.auth === 'client';
      const json = operation.requestMediaTypes.length > 0;
      expect(curl).toContain(`curl -X ${operation.method.toUpperCase()} "\${SVC_URL:-http://localhost:3000}/`);
      expect(curl.includes('Authorization: Bearer $SVC_TOKEN')).toBe(bearer);
      expect(curl.includes('-u "$CLIENT_ID:$CLIENT_SECRET"')).toBe(client);
      expect(curl.includes(`Idempotency-Key: $(node -p 'crypto.randomUUID()')`)).toBe(operation.requiresIdempotencyKey);
      expect(curl).not.toContain('uuidgen');
      expect(curl.includes('-H "If-Match: $ETAG"')).toBe(operation.requiresIfMatch);
      expect(curl.includes("-H 'Content-Type: application/json'")).toBe(json);
      expect(typeScript).toContain(`await client.${operation.method.toUpperCase()}('${operation.path}'`);
      expect(typeScript).toContain("baseUrl: process.env.SVC_URL ?? 'http://localhost:3000'");
      expect(typeScript.includes("'If-Match': current.headers.get('ETag')")).toBe(operation.requiresIfMatch);
      // The client makes the key: a sample that wrote one would teach reusing it.
      expect(typeScript).not.toContain('Idempotency-Key');
      expect(python).toContain('base_url = os.environ.get("SVC_URL", "http://localhost:3000")');
      expect(python).toContain(`response = requests.${operation.method}(`);
      expect(python.includes("Bearer {os.environ['SVC_TOKEN']}")).toBe(bearer);
      expect(python.includes('auth=(os.environ["CLIENT_ID"], os.environ["CLIENT_SECRET"])')).toBe(client);
      expect(python.includes('"Idempotency-Key": str(uuid.uuid4())')).toBe(operation.requiresIdempotencyKey);
      expect(python.includes('"If-Match": etag')).toBe(operation.requiresIfMatch);
      expect(python.includes('json=')).toBe(json);
      expect(php).toContain("$baseUrl = getenv('SVC_URL') ?: 'http://localhost:3000';");
      expect(php).toContain(`CURLOPT_CUSTOMREQUEST => '${operation.method.toUpperCase()}'`);
      expect(php.includes("getenv('SVC_TOKEN')")).toBe(bearer);
      expect(php.includes("CURLOPT_USERPWD => getenv('CLIENT_ID') . ':' . getenv('CLIENT_SECRET')")).toBe(client);
      expect(php.includes("'Idempotency-Key: ' . bin2hex(random_bytes(16))")).toBe(operation.requiresIdempotencyKey);
      expect(php.includes("'If-Match: ' . $etag")).toBe(operation.requiresIfMatch);
      expect(php.includes("'Content-Type: application/json'")).toBe(json);
      expect(go).toContain(`http.NewRequest("${operation.method.toUpperCase()}", baseURL+`);
      expect(go.includes('"Bearer "+os.Getenv("SVC_TOKEN")')).toBe(bearer);
      expect(go.includes('req.SetBasicAuth(os.Getenv("CLIENT_ID"), os.Getenv("CLIENT_SECRET"))')).toBe(client);
      expect(go.includes('req.Header.Set("Idempotency-Key", hex.EncodeToString(key))')).toBe(operation.requiresIdempotencyKey);
      expect(go.includes('req.Header.Set("If-Match", current.Header.Get("ETag"))')).toBe(operation.requiresIfMatch);
      expect(go.includes('req.Header.Set("Content-Type", "application/json")')).toBe(json);
    }
  });

  it('of an update read its ETag first, from the resource or the one it is part of', () => {
    const etagOf = (operationId: string) => requests.find((request) => request.operation.operationId === operationId)?.etagFrom;
    expect(etagOf('products.content')).toBe('/stores/{storeId}/v1/products/{id}');
    expect(etagOf('categories.update')).toBe('/stores/{storeId}/v1/categories/{id}');
    expect(etagOf('products.get')).toBeUndefined();
  });

  it('write a JSON body as each language’s literal: booleans, null, nested objects and lists, quotes', () => {
    const request = { ...(requests.find((candidate) => candidate.operation.operationId === 'products.create') as SampleRequest) };
    const body = { n: 'O\'s "b"', a: true, g: null, t: ['x'], e: {} };
    expect(pythonSample({ ...request, body })).toContain('json={"n": "O\'s \\"b\\"", "a": True, "g": None, "t": ["x"], "e": {}},');
    expect(phpSample({ ...request, body })).toContain("json_encode(['n' => 'O\\'s \"b\"', 'a' => true, 'g' => null, 't' => ['x'], 'e' => new stdClass()])");
    expect(goSample({ ...request, body })).toContain('strings.NewReader(`{"n":"O\'s \\"b\\"","a":true,"g":null,"t":["x"],"e":{}}`)');
  });

  it('refuse to be made from an operation without examples: the generator names what is missing', () => {
    const route = '/stores/{storeId}/v1/products/{id}';
    const pathItem = document.paths[route] as Record<string, unknown>;
    const withoutExample = {
      ...document,
      paths: { [route]: { ...pathItem, parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }] } },
    };
    expect(() => sampleRequests(withoutExample)).toThrow(
      'GET /stores/{storeId}/v1/products/{id}: the path parameter id has no example to make a code sample from.',
    );
  });
});

const exec = promisify(execFile);

describe('the TypeScript samples', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-samples-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  // The guides' TypeScript is compiled, and run, by packages/server/test/docs-guides.test.ts.
  it('compile with tsc --strict against the client’s types, each as a module of its own', async () => {
    const modules = requests.map(({ operation }) => ({
      name: operation.operationId,
      source: `${samplesOf(operation.method, operation.path)[1]?.source ?? ''}\n`,
    }));
    const files = modules.map(({ name, source }) => {
      const file = path.join(dir, `${name}.ts`);
      fs.writeFileSync(file, source);
      return file;
    });
    const tsconfig = {
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'Bundler',
        lib: ['ES2022', 'DOM'],
        types: ['node'],
        typeRoots: [path.join(repoRoot, 'node_modules', '@types')],
        skipLibCheck: true,
        // The workspace's sources, as the packed packages' declarations describe them.
        paths: {
          '@svc/client': [path.join(repoRoot, 'packages', 'client', 'src', 'index.ts')],
          '@svc/contract': [path.join(repoRoot, 'packages', 'contract', 'src', 'index.ts')],
        },
      },
      files,
    };
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const tsc = path.join(repoRoot, 'node_modules', '.bin', 'tsc');
    const result = await exec(tsc, ['-p', dir], { cwd: dir }).then(
      () => '',
      (failure: { stdout?: string }) => failure.stdout ?? String(failure),
    );
    expect(result).toBe('');
  }, 120_000);
});
