import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..', '..');
/** Runs TypeScript entry points in processes of their own, as `pnpm svc` and the start do from sources. */
export const TSX = path.join(REPO_ROOT, 'node_modules', '.bin', 'tsx');
const SERVER_SCRIPT = path.resolve(__dirname, 'server-process.ts');
/** How long a server process may take to listen (tsx compiles the app first; slow on a busy machine). */
export const SERVER_START_MS = 60_000;

export interface ServerProcess {
  origin: string;
  stop(): Promise<void>;
}

/** Ends the process group a test started (tsx runs the script in a child of its own). */
export async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = once(child, 'exit');
  process.kill(-child.pid, 'SIGTERM');
  const timer = setTimeout(() => child.pid !== undefined && process.kill(-child.pid, 'SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** Starts `server-process.ts` with `env` (its database: see there) and waits for its `LISTENING <port>` line. */
export function startServerProcess(env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  const child = spawn(TSX, [SERVER_SCRIPT], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const fail = (message: string) => settle(() => void stopGroup(child).finally(() => reject(new Error(`${message}\n${output}`))));
    const timer = setTimeout(() => fail(`The server process printed no LISTENING line within ${SERVER_START_MS / 1000} s`), SERVER_START_MS);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const port = /LISTENING (\d+)/.exec(output)?.[1];
      if (port) settle(() => resolve({ origin: `http://127.0.0.1:${port}`, stop: () => stopGroup(child) }));
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
    });
    child.once('error', (error) => fail(`The server process did not start: ${error.message}`));
    child.once('exit', (code, signal) => fail(`The server process ended (${code ?? signal}) before listening`));
  });
}
