/**
 * The image's runtime stage, outside a container: tools/image/runtime-tree.sh (the script the
 * Dockerfile runs) lays out the production tree in a temporary directory, and the built server runs
 * from it as in the image: NODE_ENV=production, a SECRET_KEY, not root (uid 65534 when the test runs
 * as root), on SQLite and on PostgreSQL (a fresh database on TEST_DATABASE_URL's server; skipped
 * when that is unset, unless REQUIRE_POSTGRES=1).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { isMet, POSTGRES } from '../../../packages/server/test/support/requirements';

const root = path.resolve(__dirname, '..', '..', '..');
const script = path.join(root, 'tools', 'image', 'runtime-tree.sh');
const DEV_TOOLS = ['tsx', 'typescript', 'jest', 'ts-jest', 'tsup', '@biomejs/biome'];
const DEV_BINS = ['tsx', 'tsc', 'jest', 'ts-jest', 'tsup', 'biome'];
/** The build (when dist/ is missing) and the production install: minutes on a busy machine. */
const PREPARE_MS = 15 * 60_000;
const SHUTDOWN_DELAY_MS = 1500;
const SHUTDOWN_TIMEOUT_MS = 5000;

/** As root, the service runs as nobody, as it runs as a non-root user in the image. */
const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      file,
      args,
      { cwd: options.cwd ?? root, env: options.env ?? process.env, timeout: options.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

function described(what: string, result: Run): string {
  return `${what} exited ${result.code}\n--- stdout\n${result.stdout.slice(-4000)}\n--- stderr\n${result.stderr.slice(-4000)}`;
}

/** `node <args>` as the image runs it: as nobody when the test is root. */
function nodeCommand(args: string[]): [string, string[]] {
  return asRoot ? ['setpriv', [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', process.execPath, ...args]] : [process.execPath, args];
}

let tree = '';

/** The environment the image gives the service, and no more (jest's NODE_ENV=test stays out). */
function imageEnv(settings: Record<string, string>): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    HOME: tree,
    NODE_ENV: 'production',
    SECRET_KEY: randomBytes(32).toString('hex'),
    // The operator's: production refuses to start the server without its issuer.
    PUBLIC_URL: 'https://api.example.com',
    ...settings,
  };
}

function svc(args: string[], settings: Record<string, string>): Promise<Run> {
  const [file, argv] = nodeCommand(['--enable-source-maps', 'packages/server/dist/svc.js', ...args]);
  return run(file, argv, { cwd: tree, env: imageEnv(settings) });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The status of a GET, or 0 when nothing answers. */
async function status(url: string): Promise<number> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return 0;
  }
}

interface ServerProcess {
  readonly child: ChildProcess;
  readonly base: string;
  output(): string;
  stdout(): string;
  /** Resolves with the exit code, or rejects after `ms`. */
  exited(ms: number): Promise<number | null>;
}

const started: ChildProcess[] = [];

async function startServer(settings: Record<string, string>): Promise<ServerProcess> {
  const port = await freePort();
  const [file, argv] = nodeCommand(['--enable-source-maps', 'packages/server/dist/main.js']);
  const child = spawn(file, argv, { cwd: tree, env: imageEnv({ ...settings, PORT: String(port) }), stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const server: ServerProcess = {
    child,
    base: `http://127.0.0.1:${port}`,
    output: () => `--- stdout\n${stdout.slice(-4000)}\n--- stderr\n${stderr.slice(-4000)}`,
    stdout: () => stdout,
    exited: (ms) =>
      Promise.race([
        exit,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still running after ${ms} ms\n${server.output()}`)), ms).unref()),
      ]),
  };
  const deadline = Date.now() + 60_000;
  for (let readiness = 0; readiness !== 200; readiness = await status(`${server.base}/readyz`)) {
    if (readiness === 404) throw new Error(`/readyz answers 404: is the build current?\n${server.output()}`);
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode} before it was ready\n${server.output()}`);
    if (Date.now() > deadline) throw new Error(`/readyz did not answer 200 within 60 s\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return server;
}

interface TestDatabase {
  readonly name: 'sqlite' | 'postgres';
  /** `svc migrate` as a release step before the server starts, or the server migrating at start. */
  readonly migrations: 'release step' | 'at start';
  /** The settings that name the database. */
  create(): Promise<Record<string, string>>;
  drop(): Promise<void>;
}

function sqlite(): TestDatabase {
  return {
    name: 'sqlite',
    migrations: 'at start',
    async create() {
      const dataDir = path.join(tree, 'data');
      fs.mkdirSync(dataDir, { recursive: true });
      // The image's DATA_DIR: the one directory the service may write.
      if (asRoot) fs.chownSync(dataDir, NOBODY, NOBODY);
      return { DATA_DIR: dataDir };
    },
    async drop() {},
  };
}

interface PgClient {
  connect(): Promise<void>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

function postgres(url: string): TestDatabase {
  const name = `svc_image_${randomBytes(6).toString('hex')}`;
  // pg is the server's dependency, not the tools' one.
  const { Client } = createRequire(path.join(root, 'packages', 'server', 'package.json'))('pg') as {
    Client: new (options: { connectionString: string }) => PgClient;
  };
  const admin = async (sql: string) => {
    const client = new Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  return {
    name: 'postgres',
    migrations: 'release step',
    async create() {
      await admin(`create database "${name}"`);
      const databaseUrl = new URL(url);
      databaseUrl.pathname = `/${name}`;
      // Never created: on PostgreSQL the service writes nothing to disk (a read-only root filesystem).
      return { DATABASE_URL: databaseUrl.toString(), DATA_DIR: path.join(tree, 'no-data') };
    },
    async drop() {
      await admin(`drop database if exists "${name}" with (force)`);
    },
  };
}

function testDatabases(): TestDatabase[] {
  const databases = [sqlite()];
  if (isMet(POSTGRES, 'the service from the runtime tree on PostgreSQL')) databases.push(postgres(process.env.TEST_DATABASE_URL as string));
  return databases;
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(root, 'packages', 'server', 'dist', 'main.js'))) {
    const build = await run('npx', ['-y', 'pnpm@10', 'build'], { timeoutMs: PREPARE_MS });
    if (build.code !== 0) throw new Error(described('npx -y pnpm@10 build', build));
  }
  tree = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-runtime-tree-'));
  // Readable by the service's user, writable by root only (as in the image).
  fs.chmodSync(tree, 0o755);
  // --offline: from the local pnpm store, which the workspace's own install has filled.
  const layout = await run('bash', [script, 'all', root, tree, '--offline'], { timeoutMs: PREPARE_MS });
  if (layout.code !== 0) throw new Error(described('runtime-tree.sh all', layout));
}, PREPARE_MS);

afterAll(() => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  if (tree) fs.rmSync(tree, { recursive: true, force: true });
});

describe('the runtime tree', () => {
  it('holds the built server, the docs site and the contract where the server looks for them', async () => {
    for (const file of ['packages/server/dist/main.js', 'packages/server/dist/svc.js', 'docs/site/index.html', 'packages/contract/openapi.json']) {
      expect(fs.existsSync(path.join(tree, file))).toBe(true);
    }
    expect(fs.readdirSync(path.join(tree, 'packages', 'server', 'dist')).filter((file) => file.endsWith('.js.map'))).not.toEqual([]);
    // As the server resolves it at run time: through packages/server's node_modules, a workspace link.
    const resolved = await run(process.execPath, ['-p', "require.resolve('@svc/contract/openapi.json')"], {
      cwd: path.join(tree, 'packages', 'server', 'dist'),
    });
    expect(resolved.code).toBe(0);
    expect(fs.realpathSync(resolved.stdout.trim())).toBe(fs.realpathSync(path.join(tree, 'packages', 'contract', 'openapi.json')));
  });

  it('holds no devDependency', () => {
    const store = fs.readdirSync(path.join(tree, 'node_modules', '.pnpm'));
    for (const tool of DEV_TOOLS) expect(store.filter((entry) => entry.startsWith(`${tool.replace('/', '+')}@`))).toEqual([]);
    for (const project of projects()) {
      const manifest = JSON.parse(fs.readFileSync(path.join(tree, project, 'package.json'), 'utf8')) as {
        dependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
      };
      const devOnly = Object.keys(manifest.devDependencies ?? {}).filter((name) => !(name in (manifest.dependencies ?? {})));
      const linked = devOnly.filter((name) => fs.existsSync(path.join(tree, project, 'node_modules', name)));
      expect({ project, linked }).toEqual({ project, linked: [] });
      const binDir = path.join(tree, project, 'node_modules', '.bin');
      const bins = fs.existsSync(binDir) ? fs.readdirSync(binDir) : [];
      expect({ project, bins: bins.filter((bin) => DEV_BINS.includes(bin)) }).toEqual({ project, bins: [] });
    }
  });
});

describe.each(testDatabases())('the service from the runtime tree on $name', (database) => {
  let settings: Record<string, string> = {};

  beforeAll(async () => {
    settings = await database.create();
  }, 60_000);
  afterAll(() => database.drop(), 60_000);

  it('runs `svc help`', async () => {
    const help = await svc(['help'], settings);
    expect(help.code).toBe(0);
    expect(help.stdout + help.stderr).toMatch(/migrate/);
  });

  it(`migrates (${database.migrations}), answers the health checks, the contract and the docs, and stops with 0 on SIGTERM`, async () => {
    if (database.migrations === 'release step') {
      const migrate = await svc(['migrate'], settings);
      if (migrate.code !== 0) throw new Error(described('svc migrate', migrate));
    }
    const server = await startServer({
      ...settings,
      MIGRATE_ON_START: database.migrations === 'at start' ? 'true' : 'false',
      SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    });
    try {
      expect(await status(`${server.base}/livez`)).toBe(200);
      const openapi = await fetch(`${server.base}/openapi.json`);
      expect(openapi.status).toBe(200);
      expect(((await openapi.json()) as { openapi?: string }).openapi).toMatch(/^3\./);
      const docs = await fetch(`${server.base}/docs/`);
      expect(docs.status).toBe(200);
      expect(docs.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await docs.text()).toBe(fs.readFileSync(path.join(tree, 'docs', 'site', 'index.html'), 'utf8'));

      // Another replica's, or a release job's, `svc migrate` while the service runs: nothing to do, exit 0.
      const migrate = await svc(['migrate'], settings);
      if (migrate.code !== 0) throw new Error(described('svc migrate beside the server', migrate));
      expect(await status(`${server.base}/readyz`)).toBe(200);

      server.child.kill('SIGTERM');
      // Not ready at once, while the listener still accepts for SHUTDOWN_DELAY_MS.
      let readiness = 200;
      const until = Date.now() + SHUTDOWN_DELAY_MS;
      while (readiness === 200 && Date.now() < until) readiness = await status(`${server.base}/readyz`);
      expect(readiness).toBe(503);
      expect(await server.exited(SHUTDOWN_DELAY_MS + SHUTDOWN_TIMEOUT_MS + 5000)).toBe(0);
    } catch (error) {
      if (error instanceof Error) error.message += `\n${server.output()}`;
      throw error;
    } finally {
      if (server.child.exitCode === null) server.child.kill('SIGKILL');
    }

    // Production logs are JSON lines on stdout, for a collector.
    const lines = server
      .stdout()
      .split('\n')
      .filter((line) => line.trim() !== '');
    expect(lines.filter((line) => !isJsonObject(line))).toEqual([]);
    if (database.name === 'postgres') expect(fs.existsSync(settings.DATA_DIR as string)).toBe(false);
  }, 120_000);
});

/** The workspace projects, as the lockfile names them (`.`, `packages/server`, ...). */
function projects(): string[] {
  const lockfile = fs.readFileSync(path.join(tree, 'pnpm-lock.yaml'), 'utf8');
  const importers = lockfile.split(/^importers:\n/m)[1]?.split(/^\S/m)[0] ?? '';
  return [...importers.matchAll(/^ {2}'?([^\s':]+)'?:/gm)].map((match) => match[1] as string);
}

function isJsonObject(line: string): boolean {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null;
  } catch {
    return false;
  }
}
