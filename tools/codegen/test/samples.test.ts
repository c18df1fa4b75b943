import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { OpenApiDocument } from '../bundle';
import { locations, repoRoot } from '../paths';
import { curlSample, sampleRequests, typeScriptSample } from '../samples';

const document = JSON.parse(fs.readFileSync(locations.bundledSpec, 'utf8')) as OpenApiDocument;
const requests = sampleRequests(document);

type CodeSample = { lang: string; label: string; source: string };
const samplesOf = (method: string, route: string): CodeSample[] =>
  (document.paths[route]?.[method] as { 'x-codeSamples'?: CodeSample[] } | undefined)?.['x-codeSamples'] ?? [];

describe('the code samples of the bundled spec', () => {
  it('are on every path operation, a curl and a TypeScript one, written from the operation’s sample request', () => {
    expect(requests.length).toBeGreaterThan(0);
    for (const request of requests) {
      const { method, path: route } = request.operation;
      expect(samplesOf(method, route)).toEqual([
        { lang: 'Shell', label: 'curl', source: curlSample(request) },
        { lang: 'TypeScript', label: '@svc/client', source: typeScriptSample(request) },
      ]);
    }
  });

  it('send what each operation requires: its token or client credentials, an Idempotency-Key, If-Match, a JSON body', () => {
    for (const { operation } of requests) {
      const [curl, typeScript] = samplesOf(operation.method, operation.path).map((sample) => sample.source) as [string, string];
      expect(curl.startsWith(`curl -X ${operation.method.toUpperCase()} "\${SVC_URL:-http://localhost:3000}/`)).toBe(true);
      expect(curl.includes('Authorization: Bearer $SVC_TOKEN')).toBe(operation.auth === 'bearer');
      expect(curl.includes('-u "$CLIENT_ID:$CLIENT_SECRET"')).toBe(operation.auth === 'client');
      expect(curl.includes(`Idempotency-Key: $(node -p 'crypto.randomUUID()')`)).toBe(operation.requiresIdempotencyKey);
      expect(curl).not.toContain('uuidgen');
      expect(curl.includes('-H \'If-Match: "p1.')).toBe(operation.requiresIfMatch);
      expect(curl.includes("-H 'Content-Type: application/json'")).toBe(operation.requestMediaTypes.length > 0);
      expect(typeScript).toContain(`await client.${operation.method.toUpperCase()}('${operation.path}'`);
      expect(typeScript).toContain("baseUrl: process.env.SVC_URL ?? 'http://localhost:3000'");
      // The client makes the key: a sample that wrote one would teach reusing it.
      expect(typeScript).not.toContain('Idempotency-Key');
    }
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
