import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { seedProducts } from '@svc/server/test/support/catalog-products';
import { testDatabases } from '@svc/server/test/support/databases';
import { createTestStore, fullAccess, suiteHarness } from '@svc/server/test/support/harness';
import type { Listening } from '@svc/server/test/support/listen';
import { whilePacking } from '@svc/server/test/support/pack-lock';
import { serve } from './support';

/**
 * The packages as a consumer gets them: `pnpm pack` (which builds them), `npm install` of the two
 * tarballs into a project outside the workspace, a consumer compiled with `tsc --strict` as an ES
 * module and as CommonJS, run against a real server.
 */

const run = promisify(execFile);
const packagesDir = path.resolve(__dirname, '..', '..');
/** The TypeScript the consumer compiles with, installed from the registry like the packages' dependencies. */
const TYPESCRIPT = '5.9.3';

const CONSUMER = `import { createStoreClient, StoreApiError, type Product, verifyWebhook, WebhookVerificationError } from '@svc/client';
import { operationTable } from '@svc/contract';
import { bundledSpecPath } from '@svc/contract/node';

declare const process: { argv: string[] };

async function main(): Promise<void> {
  const [baseUrl, storeId, accessToken] = process.argv.slice(2) as [string, string, string];
  const client = createStoreClient({ baseUrl, accessToken });
  const products: Product[] = [];
  for await (const product of client.paginate('/stores/{storeId}/v1/products', { params: { path: { storeId }, query: { limit: 2 } } })) {
    products.push(product);
  }
  const { data } = await client.GET('/stores/{storeId}/v1/me', { params: { path: { storeId } } });
  let missing = '';
  try {
    await client.GET('/stores/{storeId}/v1/products/{id}', { params: { path: { storeId, id: '999999' } } });
  } catch (error) {
    if (error instanceof StoreApiError) missing = \`\${error.status} \${error.code}\`;
  }
  let refusedWebhook = '';
  try {
    verifyWebhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', '{}', { 'webhook-id': 'msg_1', 'webhook-timestamp': '1', 'webhook-signature': 'v1,x' });
  } catch (error) {
    if (error instanceof WebhookVerificationError) refusedWebhook = error.reason;
  }
  console.log(JSON.stringify({
    names: products.map((product) => product.name),
    store: data.data.store.id,
    missing,
    refusedWebhook,
    createTakesKey: operationTable['products.create'].requiresIdempotencyKey,
    spec: bundledSpecPath,
  }));
}

void main();
`;

/** A consumer that gets the types wrong must not compile: the packages' types reach it. */
const MISTYPED = `import { createStoreClient } from '@svc/client';
const client = createStoreClient({ baseUrl: 'http://localhost:3000' });
void client.GET('/stores/{storeId}/v1/products', { params: { path: { storeId: 'x' }, query: { limit: 'ten' } } });
`;

const TSCONFIG = {
  compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'dom'], types: [], outDir: 'dist' },
  include: ['*.ts'],
};

let project = '';
/** What tsc said about the mistyped consumer (empty if it compiled). */
let mistyped: Promise<string>;
const CONSUMER_KINDS = ['module', 'commonjs'] as const;

function writeConsumer(kind: 'module' | 'commonjs', source: string, folder: string = kind): string {
  const dir = path.join(project, folder);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: kind }));
  fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
  fs.writeFileSync(path.join(dir, 'consumer.ts'), source);
  return dir;
}

const tsc = (dir: string) => run(path.join(project, 'node_modules', '.bin', 'tsc'), ['-p', dir], { cwd: project });

beforeAll(async () => {
  project = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-consumer-'));
  const tarballs = path.join(project, 'tarballs');
  // One pack of a package at a time across test files: another test packs them too (support/pack-lock).
  await whilePacking(() =>
    Promise.all(
      ['contract', 'client'].map((name) => run('npx', ['-y', 'pnpm@10', 'pack', '--pack-destination', tarballs], { cwd: path.join(packagesDir, name) })),
    ),
  );
  const tarball = (name: string) => `file:tarballs/${fs.readdirSync(tarballs).find((file) => file.startsWith(`svc-${name}-`))}`;
  fs.writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({
      name: 'svc-consumer',
      private: true,
      dependencies: { '@svc/client': tarball('client'), '@svc/contract': tarball('contract') },
      devDependencies: { typescript: TYPESCRIPT },
      // The client's dependency on @svc/contract is a version range: it must be met by the tarball, never the registry.
      overrides: { '@svc/contract': '$@svc/contract' },
    }),
  );
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: project });
  // Compiled once, together (each tsc is one process): the suites below run what was compiled.
  mistyped = tsc(writeConsumer('module', MISTYPED, 'mistyped')).then(
    () => '',
    (failure: { stdout?: string }) => failure.stdout ?? String(failure),
  );
  await Promise.all(CONSUMER_KINDS.map((kind) => tsc(writeConsumer(kind, CONSUMER))));
}, 300_000);

afterAll(() => {
  if (project) fs.rmSync(project, { recursive: true, force: true });
});

describe('the packed packages', () => {
  const installed = (name: string) => JSON.parse(fs.readFileSync(path.join(project, 'node_modules', '@svc', name, 'package.json'), 'utf8'));

  it('are public, name their built files, and the client depends on the contract by version', () => {
    for (const name of ['contract', 'client']) {
      const manifest = installed(name);
      expect(manifest.private).toBeUndefined();
      expect(manifest.main).toBe('./dist/index.js');
      expect(manifest.exports['.']).toEqual({
        import: { types: './dist/index.d.mts', default: './dist/index.mjs' },
        require: { types: './dist/index.d.ts', default: './dist/index.js' },
      });
      for (const file of ['dist/index.js', 'dist/index.mjs', 'dist/index.d.ts', 'dist/index.d.mts', 'README.md', 'CHANGELOG.md']) {
        expect(fs.existsSync(path.join(project, 'node_modules', '@svc', name, file))).toBe(true);
      }
      expect(fs.existsSync(path.join(project, 'node_modules', '@svc', name, 'src'))).toBe(false);
    }
    expect(installed('client').dependencies['@svc/contract']).toBe(`^${installed('contract').version}`);
    expect(fs.existsSync(path.join(project, 'node_modules', '@svc', 'contract', 'openapi.json'))).toBe(true);
  });

  it('refuse a consumer that gets the types wrong', async () => {
    expect(await mistyped).toContain("Type 'string' is not assignable to type 'number'");
  });
});

describe.each(testDatabases())('a consumer of the packed packages against a real server ($name)', (database) => {
  const h = suiteHarness(database);
  let server: Listening;
  let storeId = '';
  let accessToken = '';
  let names: string[] = [];

  beforeAll(async () => {
    server = await serve(h);
    const store = await createTestStore(h, 'Packed Perfumes');
    storeId = store.store.id;
    accessToken = (await fullAccess(h, store)).tokens.access_token;
    names = Array.from({ length: 5 }, (_, index) => `Packed product ${index}`);
    await seedProducts(
      h,
      storeId,
      names.map((name) => ({ name })),
    );
  });

  it.each(CONSUMER_KINDS)('compiled with tsc --strict as %s, lists the products and refuses a stale webhook', async (kind) => {
    const compiled = path.join(project, kind, 'dist', 'consumer.js');
    expect(fs.readFileSync(compiled, 'utf8')).toContain(kind === 'module' ? "from '@svc/client'" : 'require("@svc/client")');
    const { stdout } = await run('node', [compiled, server.origin, storeId, accessToken], { cwd: project });
    const answer = JSON.parse(stdout);
    expect(answer).toEqual({
      names,
      store: storeId,
      missing: '404 NOT_FOUND',
      refusedWebhook: 'STALE_TIMESTAMP',
      createTakesKey: true,
      spec: expect.any(String),
    });
    expect(fs.realpathSync(answer.spec)).toBe(fs.realpathSync(path.join(project, 'node_modules', '@svc', 'contract', 'openapi.json')));
  });
});
