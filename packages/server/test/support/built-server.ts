import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { builtCli, builtServer, repositoryRoot } from '../../../../tools/testbed/repository';

/** Builds the server once if a developer runs jest without `pnpm test` (which builds first). */
export function ensureBuilt(): void {
  if (fs.existsSync(builtServer) && fs.existsSync(builtCli)) return;
  execFileSync('npx', ['tsup'], { cwd: path.join(repositoryRoot, 'packages', 'server'), stdio: 'ignore' });
}

/** A running `node dist/main.js`, with what it wrote so far. */
export interface ServerRun {
  readonly child: ChildProcess;
  stdout: string;
  stderr: string;
  /** Resolves with the exit code (null when killed by a signal). */
  readonly exited: Promise<number | null>;
  /** The port named by the start line (`Store API  http://localhost:<port>/...`, or the JSON line's `port`). */
  port(): Promise<number>;
}

/** A fresh data directory, removed after the test. */
export const tempDataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'svc-run-'));

/**
 * Starts the built server with exactly these settings (plus PATH), the way an image or a unit file
 * would; `entry` and `cwd` name another build's (the previous release's: support/previous-release).
 */
export function startBuiltServer(settings: Record<string, string>, { entry = builtServer, cwd = repositoryRoot } = {}): ServerRun {
  const child = spawn(process.execPath, [entry], {
    cwd,
    env: { PATH: process.env.PATH ?? '', PORT: '0', LOG_LEVEL: 'warn', ...settings },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run: ServerRun = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
    port: () =>
      new Promise((resolve, reject) => {
        const look = () => {
          const plain = /Store API {2}http:\/\/localhost:(\d+)\//.exec(run.stdout);
          const json = /"port":(\d+)/.exec(run.stdout);
          const found = plain ?? json;
          if (found) resolve(Number(found[1]));
          return found !== null;
        };
        if (look()) return;
        const onData = () => {
          if (look()) child.stdout?.off('data', onData);
        };
        child.stdout?.on('data', onData);
        void run.exited.then((code) => reject(new Error(`the server exited (${code}) before listening: ${run.stderr}${run.stdout}`)));
      }),
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    run.stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    run.stderr += chunk.toString();
  });
  return run;
}

/**
 * For a test file that starts built servers: builds them first, and after each test kills any
 * still running, so that a failed expectation never leaves a server holding its port, its data
 * directory or its database. Answers the file's `start`, with `defaults` under each test's settings.
 */
export function builtServersPerTest(defaults: () => Record<string, string> = () => ({})): (settings: Record<string, string>) => ServerRun {
  const running: ServerRun[] = [];
  beforeAll(() => ensureBuilt());
  afterEach(async () => {
    for (const run of running.splice(0)) {
      if (run.child.exitCode === null && run.child.signalCode === null) {
        run.child.kill('SIGKILL');
        await run.exited;
      }
    }
  });
  return (settings) => {
    const run = startBuiltServer({ ...defaults(), ...settings });
    running.push(run);
    return run;
  };
}

/** The start was refused: exit 1 with exactly this one line on stderr (what it did before, such as migrating, may be on stdout). */
export async function expectRefusedStart(run: ServerRun, line: string): Promise<void> {
  expect(await run.exited).toBe(1);
  expect(run.stderr).toBe(`${line}\n`);
}

export const statusOf = (url: string) => fetch(url).then((response) => response.status);
