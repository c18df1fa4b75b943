/**
 * The code of the guides and the package READMEs, run as written: every block marked runnable
 * (tools/runnable-docs/blocks.ts has the marks; docs/development.md, "Code that runs as written",
 * the rules) against the built service started as `pnpm start` starts it, with its demo store, from
 * what its banner prints. Shell runs with bash; TypeScript with tsx in an app's folder outside the
 * workspace made as the SDK's README says (its `setup` block, run as written). Every answer a block
 * gets passes a recording proxy, so a block fails, named by its file and line, when it exits
 * non-zero, is answered a 4xx or 5xx it does not show on purpose, misses a refusal it shows, or
 * leaves a promise undone (CHECKS). Then every TypeScript block is compiled with `tsc --strict` in
 * that folder. One server and one folder serve every block: a block costs its own run only.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type CodeBlock, placeholdersIn, type Runnable, readBlocks, runnablesOf, sourceLineOf } from '../../../tools/runnable-docs/blocks';
import { freePort } from '../../../tools/testbed/ports';
import { builtCli, repositoryRoot } from '../../../tools/testbed/repository';
import { until } from '../../../tools/testbed/until';
import { type AppProject, makeAppProject, plainEnvironment, SDK_README } from './support/app-project';
import { ensureBuilt, type ServerRun, startBuiltServer, tempDataDir } from './support/built-server';
import { type RecordedAnswer, type RecordingProxy, recordingProxy } from './support/recording-proxy';

const run = promisify(execFile);

/** The files whose blocks run, in the order a reader meets them: the SDK's README first, since its setup makes the app's folder. */
const DOCUMENTS = [
  SDK_README,
  ...fs
    .readdirSync(path.join(repositoryRoot, 'docs', 'guides'))
    .filter((name) => /^\d\d-.+\.md$/.test(name))
    .sort()
    .map((name) => path.join(repositoryRoot, 'docs', 'guides', name)),
  path.join(repositoryRoot, 'packages', 'contract', 'README.md'),
  path.join(repositoryRoot, 'packages', 'example-app', 'README.md'),
  path.join(repositoryRoot, 'README.md'),
];

/** A block's run may take this long (tsx compiles first; a receiver starts, is sent a delivery and stops). */
const BLOCK_MS = 90_000;
/** How tsx ends when the test stops a receiver: 128 + SIGTERM's 15. */
const SIGTERM_EXIT = 143;

/**
 * What a reader has in their environment by the time they run a block, each from where the guides
 * say to get it (docs/development.md lists them): a block may read these and no other.
 */
type ReaderVariable =
  | 'SVC_URL'
  | 'STORE_ID'
  | 'SVC_TOKEN'
  | 'CLIENT_ID'
  | 'CLIENT_SECRET'
  | 'SVC_REPO'
  | 'PRODUCT_ID'
  | 'SUBSCRIPTION_ID'
  | 'WEBHOOK_SECRET'
  | 'SVC_REFRESH_TOKEN'
  | 'PORT';
const READER_VARIABLES: ReadonlySet<string> = new Set<ReaderVariable>([
  'SVC_URL', // the start's export line
  'STORE_ID',
  'SVC_TOKEN',
  'CLIENT_ID',
  'CLIENT_SECRET',
  'SVC_REPO', // where the service's repository is: the SDK's README
  'PRODUCT_ID', // one of the store's products: products.list
  'SUBSCRIPTION_ID', // webhooks.create's answer
  'WEBHOOK_SECRET',
  'SVC_REFRESH_TOKEN', // svc installation create's pair
  'PORT', // where a receiver listens
]);
/** Variables of the shell itself, which a block may read too. */
const SHELL_VARIABLES = new Set(['PWD', 'HOME', 'PATH']);

/** The variables a block reads from its environment (in shell, less those it sets itself). */
function variablesRead(runnable: Runnable): string[] {
  const source = runnable.source;
  if (runnable.language === 'ts') return [...new Set([...source.matchAll(/process\.env\.([A-Za-z_]\w*)/g)].map((match) => match[1] as string))];
  const set = new Set([...source.matchAll(/(?:^|[\s;&|(])([A-Za-z_]\w*)=/gm)].map((match) => match[1] as string));
  const read = [...source.matchAll(/\$\{?([A-Za-z_]\w*)/g)].map((match) => match[1] as string);
  return [...new Set(read)].filter((name) => !set.has(name) && !SHELL_VARIABLES.has(name));
}

interface Parsed {
  readonly blocks: CodeBlock[];
  readonly runnables: Runnable[];
}
let parsed: Parsed = { blocks: [], runnables: [] };
let parseFailure: Error | undefined;
try {
  const blocks = DOCUMENTS.flatMap((file) => readBlocks(repositoryRoot, file));
  parsed = { blocks, runnables: DOCUMENTS.flatMap((file) => runnablesOf(blocks.filter((block) => block.file === path.relative(repositoryRoot, file)))) };
} catch (error) {
  parseFailure = error as Error;
}

/** What the test keeps while the blocks run: the server, the proxy the blocks reach it through, the app's folder. */
interface Stage {
  server: ServerRun;
  dataDir: string;
  proxy: RecordingProxy;
  project: AppProject;
  /** The banner's export line: what step 1 of Getting started has the reader paste. */
  banner: Record<string, string>;
  productId: string;
}
let stage: Stage | undefined;
/** Where the blocks' scripts are written (the TypeScript ones go in the app's folder, to find its packages). */
let scratch = '';

const given = (): Stage => {
  if (!stage) throw new Error('the service or the app’s folder did not start: see beforeAll');
  return stage;
};

/** The service's own answer, not through the proxy: what the test does to prepare a block is not the block's. */
async function direct(method: string, route: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const { server, banner } = given();
  const response = await fetch(`http://127.0.0.1:${await server.port()}${route.replace('{storeId}', banner.STORE_ID as string)}`, {
    method,
    headers: {
      Authorization: `Bearer ${banner.SVC_TOKEN}`,
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...(method === 'POST' ? { 'Idempotency-Key': crypto.randomUUID() } : {}),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

/** A new subscription of the demo app, as webhooks.create answers it: its id and secret. */
async function subscribe(endpoint: string): Promise<{ id: string; secret: string }> {
  const created = await direct('POST', '/stores/{storeId}/v1/webhook-subscriptions', {
    endpoint_url: endpoint,
    event_types: ['order.created', 'product.updated'],
  });
  expect(created.status).toBe(201);
  const data = created.json.data as { id: string; secret: string };
  return { id: data.id, secret: data.secret };
}

/** A pair of its own, as Getting started says to get one (`svc installation create`): revoking its refresh token ends no other block's token. */
async function freshRefreshToken(): Promise<string> {
  const { banner, dataDir } = given();
  const { stdout } = await run(process.execPath, [builtCli, 'installation', 'create', banner.CLIENT_ID as string, banner.STORE_ID as string, '--json'], {
    cwd: repositoryRoot,
    env: { ...plainEnvironment(), DATA_DIR: dataDir },
  });
  return (JSON.parse(stdout) as { refresh_token: string }).refresh_token;
}

/** The environment a block runs with: a plain machine's, and the reader's variables it reads. */
async function environmentFor(runnable: Runnable, receiver?: { port: number; subscription: { id: string; secret: string } }): Promise<Record<string, string>> {
  const { banner, proxy, productId, dataDir } = given();
  const env: Record<string, string> = { ...plainEnvironment() };
  const subscription =
    receiver?.subscription ??
    (variablesRead(runnable).some((name) => name === 'SUBSCRIPTION_ID' || name === 'WEBHOOK_SECRET')
      ? await subscribe('https://app.example.com/webhooks/store-events')
      : undefined);
  for (const name of variablesRead(runnable)) {
    if (name === 'SVC_URL') env.SVC_URL = proxy.origin;
    else if (name === 'SVC_REPO') env.SVC_REPO = repositoryRoot;
    else if (name === 'PRODUCT_ID') env.PRODUCT_ID = productId;
    else if (name === 'SUBSCRIPTION_ID') env.SUBSCRIPTION_ID = subscription?.id as string;
    else if (name === 'WEBHOOK_SECRET') env.WEBHOOK_SECRET = subscription?.secret as string;
    else if (name === 'SVC_REFRESH_TOKEN') env.SVC_REFRESH_TOKEN = await freshRefreshToken();
    else if (name === 'PORT') env.PORT = String(receiver?.port ?? (await freePort()));
    else if (banner[name] !== undefined) env[name] = banner[name] as string;
  }
  // The admin CLI works on the service's database: the reader's is ./data, the test's its own.
  if (runnable.marks.repo) env.DATA_DIR = dataDir;
  return env;
}

/** Promises a block makes that no status shows, checked after it ran, by the name its `check=` mark gives. */
const CHECKS: Record<string, (env: Record<string, string>) => Promise<string | undefined>> = {
  /** Revocation answers 200 for any token (RFC 7009), so only a refresh with the token shows it was revoked. */
  'refresh-token-revoked': async (env) => {
    const { server, banner } = given();
    const response = await fetch(`http://127.0.0.1:${await server.port()}/oauth/token`, {
      method: 'POST',
      headers: { Authorization: `Basic ${btoa(`${banner.CLIENT_ID}:${banner.CLIENT_SECRET}`)}`, 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: env.SVC_REFRESH_TOKEN ?? '' }),
    });
    const code = ((await response.json()) as { error?: { code?: string } }).error?.code;
    return code === 'INVALID_REFRESH_TOKEN' ? undefined : `the refresh token still refreshes (answered ${response.status} ${code ?? ''})`;
  },
};

interface Finished {
  code: number | null;
  output: string;
}

/** Runs a child to its end, or kills it (and its group) after BLOCK_MS. */
function finish(child: ChildProcess): Promise<Finished> {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      output += `\n(killed after ${BLOCK_MS / 1000} s)`;
      if (child.pid) process.kill(-child.pid, 'SIGKILL');
    }, BLOCK_MS);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** The file a runnable is written to: TypeScript in the app's folder (its imports resolve there), shell beside it. */
const scriptOf = (runnable: Runnable, index: number) =>
  runnable.language === 'ts' ? path.join(given().project.dir, `block-${index}.ts`) : path.join(scratch, `block-${index}.sh`);

function start(runnable: Runnable, script: string, env: Record<string, string>): ChildProcess {
  const { project } = given();
  const [command, args] =
    runnable.language === 'ts' ? [path.join(project.dir, 'node_modules', '.bin', 'tsx'), [script]] : ['bash', ['-euo', 'pipefail', script]];
  return spawn(command, args, { cwd: runnable.marks.repo ? repositoryRoot : project.dir, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
}

/** Lines of the runnable's script in what it printed (a stack, tsc's errors) as the guide's lines. */
function inGuideLines(text: string, runnable: Runnable, script: string, offset = 0): string {
  const name = path.basename(script).replace(/\./g, '\\.');
  const at = (line: string) => {
    const where = sourceLineOf(runnable, Number(line) - offset);
    return `${where.file}:${where.line}`;
  };
  return text
    .replace(new RegExp(`${name}\\((\\d+),(\\d+)\\)`, 'g'), (_, line: string, column: string) => `${at(line)}:${column}`)
    .replace(new RegExp(`(?:file://)?[^\\s(]*${name}:(\\d+)`, 'g'), (_, line: string) => at(line));
}

/** Waits for the receiver to listen on its port, or for it to end (then it never will). */
async function listening(port: number, child: ChildProcess): Promise<boolean> {
  const ended = new Promise<false>((resolve) => child.once('close', () => resolve(false)));
  const connects = until(
    () =>
      new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.end();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
      }),
    { everyMs: 100 },
  ).then(() => true);
  return Promise.race([connects, ended]);
}

/**
 * A receiver, run: started with PORT and the secret of a subscription to it; once it listens, the
 * service sends it a test event (webhooks.test), which it must acknowledge, and a delivery that is
 * not signed, which it must refuse; then it is stopped.
 */
async function runReceiver(runnable: Runnable, script: string): Promise<string[]> {
  const port = await freePort();
  const subscription = await subscribe(`http://localhost:${port}${runnable.marks.receiver}`);
  const child = start(runnable, script, await environmentFor(runnable, { port, subscription }));
  const finished = finish(child);
  const problems: string[] = [];
  if (await listening(port, child)) {
    const tested = await direct('POST', `/stores/{storeId}/v1/webhook-subscriptions/${subscription.id}/test`);
    const attempt = tested.json.data as { outcome?: string; response_status?: number } | undefined;
    if (attempt?.outcome !== 'succeeded') problems.push(`did not acknowledge a signed test delivery: ${JSON.stringify(attempt ?? tested.json)}`);
    const forged = await fetch(`http://127.0.0.1:${port}${runnable.marks.receiver}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'webhook-id': 'msg_forged',
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': 'v1,Zm9yZ2Vk',
      },
      body: JSON.stringify({ id: 'forged', type: 'webhook.test' }),
    });
    if (forged.status !== 400) problems.push(`answered ${forged.status} to a delivery with a forged signature, not 400`);
    if (child.pid) process.kill(-child.pid, 'SIGTERM');
  } else problems.push(`never listened on PORT (${port})`);
  const { code, output } = await finished;
  // Stopped by the test's SIGTERM (tsx ends with the signal's 143): anything else is the program's own end.
  if (code !== null && code !== SIGTERM_EXIT) problems.push(`ended by itself (exit ${code}) instead of serving:\n${inGuideLines(output, runnable, script)}`);
  await direct('DELETE', `/stores/{storeId}/v1/webhook-subscriptions/${subscription.id}`);
  return problems;
}

/** What a block's answers show against its marks: unexpected refusals, and refusals it shows that never came. */
function answerProblems(runnable: Runnable, answers: readonly RecordedAnswer[]): string[] {
  const shown = new Set(runnable.marks.statuses);
  const unexpected = answers.filter((answer) => answer.status >= 400 && !shown.has(answer.status));
  return [
    ...unexpected.map((answer) => `was answered ${answer.status} ${answer.code ?? ''} to ${answer.method} ${answer.path}`),
    ...[...shown].filter((status) => !answers.some((answer) => answer.status === status)).map((status) => `shows a ${status} but was never answered one`),
  ];
}

let scriptIndex = 0;
/** Runs one runnable; answers what went wrong, each as a sentence (empty when it did what it says). */
async function runRunnable(runnable: Runnable): Promise<string[]> {
  const { proxy } = given();
  const script = scriptOf(runnable, scriptIndex++);
  fs.writeFileSync(script, runnable.source);
  proxy.take();
  if (runnable.marks.receiver) return [...(await runReceiver(runnable, script)), ...answerProblems(runnable, proxy.take())];
  const env = await environmentFor(runnable);
  const { code, output } = await finish(start(runnable, script, env));
  const problems = code === 0 ? [] : [`exited ${code}:\n${inGuideLines(output, runnable, script)}`];
  problems.push(...answerProblems(runnable, proxy.take()));
  for (const check of runnable.marks.checks) {
    const promise = CHECKS[check];
    const failed = promise ? await promise(env) : `has check=${check}, which the test does not know (CHECKS)`;
    if (failed) problems.push(failed);
  }
  return problems;
}

beforeAll(async () => {
  if (parseFailure) return;
  ensureBuilt();
  scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-guides-'));
  const dataDir = tempDataDir();
  // As `pnpm start` starts it (SEED_DEMO), with a quota no reader's pace reaches (the blocks run back
  // to back) and the short retries the webhooks guide's walk-through starts it with.
  const server = startBuiltServer({
    DATA_DIR: dataDir,
    SEED_DEMO: 'true',
    RATE_LIMIT_PER_INSTALLATION: '100000',
    RATE_LIMIT_PER_CLIENT: '100000',
    WEBHOOK_RETRY_SCHEDULE: '1000,2000',
  });
  const [project] = await Promise.all([
    makeAppProject(),
    // The demo's history is simulated after the banner: the guides read its orders.
    until(async () => /^Demo {7}\d+ orders/m.test(server.stdout) || server.child.exitCode !== null, { everyMs: 100 }),
  ]);
  const exportLine = /^Samples {4}export (.+)$/m.exec(server.stdout)?.[1];
  if (!exportLine) throw new Error(`the start printed no export line:\n${server.stdout}${server.stderr}`);
  const banner = Object.fromEntries(exportLine.split(' ').map((pair) => pair.split('=', 2) as [string, string]));
  const proxy = await recordingProxy(`http://127.0.0.1:${await server.port()}`);
  stage = { server, dataDir, proxy, project, banner, productId: '' };
  // A product that keeps a counted stock: the idempotency guide adjusts one's inventory.
  const inventory = await direct('GET', '/stores/{storeId}/v1/inventory?limit=100');
  stage.productId = String((inventory.json.data as Array<{ product_id: number; mode: string }>).find((item) => item.mode === 'manual')?.product_id ?? '');
}, 300_000);

afterAll(async () => {
  await stage?.proxy.close();
  if (stage?.server.child.exitCode === null) {
    stage.server.child.kill('SIGTERM');
    await stage.server.exited;
  }
  stage?.project.remove();
  if (stage) fs.rmSync(stage.dataDir, { recursive: true, force: true });
  if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
});

describe('the guides’ and READMEs’ code blocks', () => {
  it('each say whether they run (run, program=<name> or no-run), in ts or sh', () => {
    if (parseFailure) throw parseFailure;
    expect(parsed.runnables.length).toBeGreaterThan(0);
  });

  it('that run have no placeholder to fill in, and read only what a reader has in their environment', () => {
    const problems = parsed.runnables.flatMap((runnable) => [
      ...placeholdersIn(runnable.language, runnable.source).map(
        (placeholder) => `${runnable.name}: has the placeholder ${placeholder}: it cannot run as written`,
      ),
      ...variablesRead(runnable)
        .filter((name) => !READER_VARIABLES.has(name))
        .map((name) => `${runnable.name}: reads ${name}, which no guide gives the reader (the test's READER_VARIABLES)`),
    ]);
    expect(problems).toEqual([]);
  });

  it('made the app’s folder, as the SDK’s README says', () => {
    const { project } = given();
    const manifest = JSON.parse(fs.readFileSync(path.join(project.dir, 'package.json'), 'utf8')) as { type?: string; dependencies?: Record<string, string> };
    expect(manifest.type).toBe('module');
    expect(Object.keys(manifest.dependencies ?? {})).toEqual(expect.arrayContaining(['@svc/client', '@svc/contract']));
    expect(fs.existsSync(path.join(project.dir, 'node_modules', '.bin', 'tsx'))).toBe(true);
  });

  // Every runnable but the setup, which beforeAll ran to make the folder the others run in.
  const runnables = parsed.runnables.filter((runnable) => !runnable.marks.setup);
  it.each(runnables.map((runnable) => [runnable.name, runnable] as const))(
    '%s runs as written',
    async (_, runnable) => {
      const problems = await runRunnable(runnable);
      if (problems.length > 0) throw new Error(`${runnable.name} ${problems.join('\n')}`);
    },
    BLOCK_MS + 30_000,
  );

  it('compile, every TypeScript block, with tsc --strict in the app’s folder', async () => {
    const { project } = given();
    const files = typeScriptModules(project.dir);
    fs.writeFileSync(
      path.join(project.dir, 'tsconfig.guides.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          types: ['node'],
          skipLibCheck: true,
        },
        files: files.map((file) => file.path),
      }),
    );
    const said = await run(path.join(project.dir, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.guides.json'], { cwd: project.dir }).then(
      () => '',
      (failure: { stdout?: string }) => failure.stdout ?? String(failure),
    );
    const located = files.reduce((text, file) => inGuideLines(text, file.runnable, file.path, file.offset), said);
    expect(located).toBe('');
  }, 120_000);
});

/** The runner itself, on blocks that fail as the issue's did: each must be caught, with its line. */
describe('a block that fails', () => {
  const failing = (name: string, ...lines: string[]): Runnable => {
    const file = path.join(scratch, name);
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    return runnablesOf(readBlocks(scratch, file))[0] as Runnable;
  };

  it('with an error is caught at its guide’s line', async () => {
    const problems = await runRunnable(failing('reference.md', '# R', '```ts run', "console.log('first');", 'console.log(clientId);', '```'));
    expect(problems).toEqual([expect.stringMatching(/^exited 1:[\s\S]*ReferenceError: clientId is not defined[\s\S]*reference\.md:4/)]);
  });

  it('answered a refusal it does not show, or not answered the one it shows, is caught', async () => {
    const unshown = failing(
      'unshown.md',
      '```sh run',
      'curl -s "$SVC_URL/stores/$STORE_ID/v1/products/999999999" -H "Authorization: Bearer $SVC_TOKEN"',
      '```',
    );
    expect(await runRunnable(unshown)).toEqual([expect.stringMatching(/^was answered 404 NOT_FOUND to GET \/stores\/.+\/v1\/products\/999999999$/)]);
    const missed = failing('missed.md', '```sh run status=404', 'curl -s "$SVC_URL/stores/$STORE_ID/v1/me" -H "Authorization: Bearer $SVC_TOKEN"', '```');
    expect(await runRunnable(missed)).toEqual(['shows a 404 but was never answered one']);
  });

  it('that revokes something else than the token it names (200 all the same) is caught', async () => {
    const revokesPlaceholder = failing(
      'placeholder.md',
      '```sh run check=refresh-token-revoked',
      'echo "$SVC_REFRESH_TOKEN" >/dev/null',
      'curl -s -u "$CLIENT_ID:$CLIENT_SECRET" -d token=svc_rt_x -d token_type_hint=refresh_token "$SVC_URL/oauth/revoke"',
      '```',
    );
    expect(await runRunnable(revokesPlaceholder)).toEqual([expect.stringMatching(/^the refresh token still refreshes \(answered 200/)]);
  });

  it('as a receiver that takes a forged delivery is caught', async () => {
    const credulous = failing(
      'credulous.md',
      '```ts run receiver=/hooks',
      "import { createServer } from 'node:http';",
      'createServer((_, res) => void res.writeHead(204).end()).listen(Number(process.env.PORT));',
      '```',
    );
    expect(await runRunnable(credulous)).toEqual(['answered 204 to a delivery with a forged signature, not 400']);
  });
});

/**
 * Every TypeScript block as a module of the app's folder: a runnable as it ran; a no-run block
 * after declarations of what it leaves to the reader (their store, their storage, the pair the
 * flow before it answered), so that it is held to the SDK's types too.
 */
function typeScriptModules(dir: string): Array<{ path: string; runnable: Runnable; offset: number }> {
  const readerOwns: Record<string, string> = {
    storeId: 'string',
    clientId: 'string',
    clientSecret: 'string',
    installationId: 'string',
    code: 'string',
    requestUrl: 'string',
    callbackUrl: 'string',
    redirectUri: 'string',
    baseUrl: 'string',
    state: 'string',
    oauth: 'OAuthClient',
    pkce: 'PkcePair',
    pair: 'TokenResponse',
    metadata: 'AuthorizationServerMetadata',
    session: '{ accessToken: string }',
    db: '{ saveTokens(installationId: string, tokens: StoredTokens): Promise<void>; loadTokens(installationId: string): Promise<StoredTokens | undefined> }',
  };
  const modules: Array<{ path: string; runnable: Runnable; offset: number }> = [];
  parsed.runnables
    .filter((runnable) => runnable.language === 'ts')
    .forEach((runnable, index) => {
      const file = path.join(dir, `checked-${index}.ts`);
      fs.writeFileSync(file, `${runnable.source}export {};\n`);
      modules.push({ path: file, runnable, offset: 0 });
    });
  parsed.blocks
    .filter((block) => block.language === 'ts' && block.marks.runs === 'never')
    .forEach((block, index) => {
      const declared = Object.entries(readerOwns)
        .filter(([name]) => !new RegExp(`\\b(?:const|let|function)\\s+(?:\\{[^}]*\\b)?${name}\\b`).test(block.source))
        .map(([name, type]) => `declare const ${name}: ${type};`);
      const prelude = ["import type { AuthorizationServerMetadata, OAuthClient, PkcePair, StoredTokens, TokenResponse } from '@svc/client';", ...declared];
      const file = path.join(dir, `fragment-${index}.ts`);
      fs.writeFileSync(file, `${prelude.join('\n')}\n${block.source}export {};\n`);
      const [runnable] = runnablesOf([{ ...block, marks: { ...block.marks, runs: 'alone' } }]);
      modules.push({ path: file, runnable: runnable as Runnable, offset: prelude.length });
    });
  return modules;
}
