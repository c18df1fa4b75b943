/**
 * The README's start command, as written there, run as a user or a supervisor runs it: a Ctrl-C
 * reaches every process of its group; a supervisor's SIGTERM (or `kill $!`) reaches only the process
 * it started. Either way the server drains (readiness turns 503 first) and exits 0, every process
 * the command started is gone, and the port is free.
 */

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { until as poll } from '../../testbed/until';

jest.setTimeout(240_000);

const repositoryRoot = path.resolve(__dirname, '..', '..', '..');

/** The quick start's lines, as .ci/run reads them: the first runs the service, the second the tests. */
function quickStartCommands(): string[] {
  const readme = fs.readFileSync(path.join(repositoryRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Quick start'));
  const block = /```[^\n]*\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block.split('\n').filter((line) => line.trim() !== '');
}

/** Every live process of a process group (a zombie has ended: it is only waiting to be reaped). */
function processesOfGroup(pgid: number): number[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,pgid=,stat='], { encoding: 'utf8' });
  return ps.stdout
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter(([, group, state]) => Number(group) === pgid && !state?.startsWith('Z'))
    .map(([pid]) => Number(pid));
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    const stat = fs.existsSync(`/proc/${pid}/stat`) ? fs.readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
    return !/\) Z /.test(stat);
  } catch {
    return false;
  }
};

const until = (condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 180_000) => poll(condition, { what, timeoutMs, rethrow: true });

const statusOf = async (url: string): Promise<number | 'refused'> => {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(2000) })).status;
  } catch {
    return 'refused';
  }
};

const portIsFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = net.createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, () => probe.close(() => resolve(true)));
  });

interface StartRun {
  readonly child: ChildProcess;
  output(): string;
  readonly exited: Promise<number | null>;
}

/** The command in a process group of its own (as a terminal's job control gives it), with its data in a directory of its own. */
function startCommand(command: string, dataDir: string): StartRun {
  const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info', SHUTDOWN_DELAY_MS: '2000' };
  for (const variable of ['NODE_ENV', 'DATABASE_URL', 'TEST_DATABASE_URL', 'SVC_TEST_SKIPS', 'JEST_WORKER_ID']) delete env[variable];
  const child = spawn('bash', ['-c', command], { cwd: repositoryRoot, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  return { child, output: () => output, exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))) };
}

describe("the README's start command stops as one", () => {
  const [command = ''] = quickStartCommands();
  const runs: StartRun[] = [];
  const dirs: string[] = [];

  afterAll(() => {
    // A failed case leaves nothing behind for the rest of the run.
    for (const run of runs) if (run.child.pid && processesOfGroup(run.child.pid).length > 0) process.kill(-run.child.pid, 'SIGKILL');
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is the README quick start line that runs the service', () => {
    expect(command).toMatch(/ start$/);
  });

  it.each([
    ['Ctrl-C: SIGINT to the whole process group', (run: StartRun) => process.kill(-(run.child.pid as number), 'SIGINT')],
    ["a supervisor's SIGTERM to the process it started", (run: StartRun) => process.kill(run.child.pid as number, 'SIGTERM')],
  ])('%s: the server drains and exits 0, every process is gone, the port is free', async (_case, signal) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-start-'));
    dirs.push(dataDir);
    const run = startCommand(command, dataDir);
    runs.push(run);
    const pgid = run.child.pid as number;
    await until(() => /Store API {2}http:\/\/localhost:\d+/.test(run.output()), 'the banner');
    const port = Number(/Store API {2}http:\/\/localhost:(\d+)/.exec(run.output())?.[1]);
    const base = `http://127.0.0.1:${port}`;
    await until(async () => (await statusOf(`${base}/readyz`)) === 200, 'readiness');
    const started = processesOfGroup(pgid);
    expect(started.length).toBeGreaterThanOrEqual(3);

    signal(run);
    const seen = new Set<number | 'refused'>();
    await until(async () => {
      const status = await statusOf(`${base}/readyz`);
      seen.add(status);
      return status === 'refused';
    }, 'the listener to close');
    // Readiness turned 503 before the listener closed: the stop sequence ran, not an exit at once.
    expect(seen).toContain(503);
    await run.exited;
    await until(() => started.every((pid) => !isAlive(pid)), 'every process of the command to end', 30_000);
    expect(await portIsFree(port)).toBe(true);
    const output = run.output();
    expect(output).toContain('Server     stopped (exit code 0)');
    expect(output.match(/SIG(INT|TERM) received: stopping/g)).toHaveLength(1);
    expect(output).not.toMatch(/second SIG|ELIFECYCLE/);
  });
});
