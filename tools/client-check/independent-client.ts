/**
 * A TypeScript client from an independent generator (@hey-api/openapi-ts) for the document a server
 * serves at `/openapi.json`, compiled under `strict` with ./template/scenario.ts beside it
 * (docs/decisions/0063-independent-client-generator.md). Everything is written to a
 * temporary directory: the generated client is never committed.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { repoRoot } from '../codegen/paths';

const run = promisify(execFile);
const bin = (name: string) => path.join(repoRoot, 'node_modules', '.bin', name);
const SCENARIO = path.join(__dirname, 'template', 'scenario.ts');

/** The generator's configuration: the fetch client, types and SDK, with its input check strict (it refuses what it finds wrong). */
const generatorConfig = (input: string, output: string) =>
  `export default ${JSON.stringify(
    {
      input,
      output,
      parser: { validate_EXPERIMENTAL: 'strict' },
      plugins: ['@hey-api/client-fetch', '@hey-api/typescript', '@hey-api/sdk'],
    },
    null,
    2,
  )};\n`;

/** `strict` and the checks a consumer's project commonly adds; CommonJS so that jest can load the result. */
const compilerConfig = {
  compilerOptions: {
    strict: true,
    noUncheckedIndexedAccess: true,
    noImplicitOverride: true,
    target: 'ES2022',
    module: 'commonjs',
    moduleResolution: 'node10',
    lib: ['ES2022', 'DOM', 'DOM.Iterable'],
    types: [],
    skipLibCheck: false,
    outDir: 'dist',
    rootDir: '.',
  },
  include: ['scenario.ts', 'client/**/*.ts'],
};

/** One answer the scenario's client received (template/scenario.ts, `SeenAnswer`). */
export interface SeenAnswer {
  readonly method: string;
  /** The operation's path template, as the generated SDK names it. */
  readonly path: string;
  readonly status: number;
  /** Header names, lower-case. */
  readonly headers: readonly string[];
}

/**
 * What the compiled scenario returns, as its caller reads it. The scenario is typed by the generated
 * client, which the repository's own compile never sees; this is the same shape in plain types.
 */
export interface ScenarioResult {
  readonly answers: readonly SeenAnswer[];
  readonly productPages: readonly (readonly number[])[];
  readonly product: { readonly id: number };
  readonly created: { readonly id: number; readonly title: string; readonly status: string };
  readonly replayed: { readonly id: number; readonly header: string | null };
  readonly updated: { readonly id: number; readonly excerpt?: string | null };
  readonly staleUpdate: { readonly status: number; readonly error: { readonly error: { readonly code: string; readonly current_etag?: string } } };
  readonly adjustment: { readonly product_id: number; readonly delta: number; readonly reason: string };
  readonly order: { readonly id: number };
  readonly listedOrders: readonly number[];
}

export interface ScenarioModule {
  runScenario(input: { baseUrl: string; accessToken: string; storeId: string; orderId: number; productId: number }): Promise<ScenarioResult>;
}

export interface GeneratedClient {
  /** The temporary directory: client/ (generated), scenario.ts, dist/ (compiled). */
  readonly dir: string;
  /** What the generator printed. */
  readonly generatorOutput: string;
  /** The compiled scenario module. */
  readonly scenarioModule: string;
  remove(): void;
}

const outputOf = (error: unknown): string => {
  const failed = error as { stdout?: string; stderr?: string; message?: string };
  return `${failed.stdout ?? ''}${failed.stderr ?? ''}` || String(failed.message);
};

/** Fetches the served document, generates the client from it, and compiles it with the scenario. */
export async function generateAndCompile(origin: string): Promise<GeneratedClient> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-independent-client-'));
  const remove = () => fs.rmSync(dir, { recursive: true, force: true });
  try {
    const served = await fetch(`${origin}/openapi.json`);
    if (!served.ok) throw new Error(`GET /openapi.json answered ${served.status}`);
    const document = path.join(dir, 'openapi.json');
    fs.writeFileSync(document, await served.text());
    fs.writeFileSync(path.join(dir, 'openapi-ts.config.mjs'), generatorConfig(document, path.join(dir, 'client')));
    const env = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };
    let generatorOutput: string;
    try {
      const generated = await run(bin('openapi-ts'), ['-f', 'openapi-ts.config.mjs', '--no-log-file'], { cwd: dir, env });
      generatorOutput = `${generated.stdout}${generated.stderr}`;
    } catch (error) {
      throw new Error(`@hey-api/openapi-ts failed on the served document:\n${outputOf(error)}`);
    }
    fs.copyFileSync(SCENARIO, path.join(dir, 'scenario.ts'));
    fs.writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify(compilerConfig, null, 2));
    try {
      await run(bin('tsc'), ['-p', dir], { cwd: dir, env });
    } catch (error) {
      throw new Error(`tsc --strict refused the generated client or the scenario:\n${outputOf(error)}`);
    }
    return { dir, generatorOutput, scenarioModule: path.join(dir, 'dist', 'scenario.js'), remove };
  } catch (error) {
    remove();
    throw error;
  }
}
