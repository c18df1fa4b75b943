import { type ChildProcess, execFileSync, fork } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { type LoadResult, pacedLoad } from './paced-load';
import type { ChildMessage, ParentMessage, ReadyMessage } from './protocol';

/**
 * What the bench's scripts share: settings read from the environment, and the server processes
 * they fork (tools/bench/server.ts and the others), which answer over the fork IPC channel
 * (tools/bench/protocol.ts).
 */

/** A number from the environment, or the fallback when unset; positive unless `zero` is allowed. */
export function numberFromEnv(name: string, fallback: number, { zero = false } = {}): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !zero))
    throw new Error(`${name} must be a ${zero ? 'non-negative' : 'positive'} number, not "${text}"`);
  return value;
}

/**
 * BENCH_SERVER_CPUS: the CPUs (a `taskset` list such as `0` or `0-3`) the servers are kept on, and
 * this process with its load generator on the others, so that what a server costs is not mixed with
 * the client's and the database's work on the same cores (pin PostgreSQL too: `taskset -a -p -c 1
 * <postmaster pid>` before its backends start, docs/performance.md).
 */
export const SERVER_CPUS = process.env.BENCH_SERVER_CPUS || undefined;

/** Keeps a process (every thread) on these CPUs. */
function pin(pid: number, cpus: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
}

/** The CPUs not in a `taskset` list, as one (`0-3,6` of 8 → `4,5,7`); empty when it names them all. */
function otherCpus(cpus: string): string {
  const named = new Set<number>();
  for (const part of cpus.split(',')) {
    const [from, to = from] = part.split('-').map(Number);
    if (from === undefined || to === undefined || !Number.isInteger(from) || !Number.isInteger(to))
      throw new Error(`BENCH_SERVER_CPUS must be a CPU list such as 0 or 0-3, not "${cpus}"`);
    for (let cpu = from; cpu <= to; cpu += 1) named.add(cpu);
  }
  return os
    .cpus()
    .map((_cpu, index) => index)
    .filter((index) => !named.has(index))
    .join(',');
}

export interface Child<Ready extends ReadyMessage> {
  process: ChildProcess;
  ready: Ready;
  base: string;
}

/** The next message of this type from the child; rejects if it fails or exits first. */
export function nextMessage<T extends ChildMessage['type']>(child: ChildProcess, type: T): Promise<Extract<ChildMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (message: ChildMessage) => {
      if (message.type === type) {
        cleanup();
        resolve(message as Extract<ChildMessage, { type: T }>);
      } else if (message.type === 'failed') {
        cleanup();
        reject(new Error(message.message));
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`The server process exited (code ${code}) before answering "${type}"`));
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

export const tell = (child: ChildProcess, message: ParentMessage) => child.send(message);

/**
 * Forks a server script (a name in tools/bench, or an absolute path: another worktree's). It inherits
 * this process's `--import`/`--require` flags, which is how tsx loads TypeScript; NODE_ENV=production
 * as in a deployment.
 */
export async function startChild<Ready extends ReadyMessage>(script: string, env: NodeJS.ProcessEnv = {}): Promise<Child<Ready>> {
  const execArgv = process.execArgv.some((flag) => flag.includes('tsx')) ? process.execArgv : [...process.execArgv, '--import', 'tsx'];
  const child = fork(path.isAbsolute(script) ? script : path.join(__dirname, script), [], {
    execArgv,
    env: { ...process.env, ...env, NODE_ENV: 'production' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  if (SERVER_CPUS && child.pid !== undefined) pin(child.pid, SERVER_CPUS);
  const ready = (await nextMessage(child, 'ready')) as Ready;
  return { process: child, ready, base: `http://127.0.0.1:${ready.port}` };
}

export async function stopChild(child: Child<ReadyMessage> | undefined): Promise<void> {
  if (!child || child.process.exitCode !== null || !child.process.connected) return;
  const exited = new Promise<void>((resolve) => child.process.once('exit', () => resolve()));
  tell(child.process, { type: 'stop' });
  const timer = setTimeout(() => child.process.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/** The server process's CPU time in µs, all of it and the kernel's part. */
export async function serverCpu(server: Child<ReadyMessage>): Promise<{ total: number; system: number }> {
  const answered = nextMessage(server.process, 'cpu');
  tell(server.process, { type: 'cpu' });
  const { user, system } = await answered;
  return { total: user + system, system };
}

/** With BENCH_SERVER_CPUS, keeps this process (the load generator) on the other CPUs. */
export function keepClientOffServerCpus(): void {
  if (!SERVER_CPUS) return;
  const clientCpus = otherCpus(SERVER_CPUS);
  if (clientCpus) pin(process.pid, clientCpus);
}

/**
 * GET requests to a server for some seconds: `rate` requests/s arriving evenly over at most
 * `connections` (tools/bench/paced-load.ts), or (0) as many as it answers over `connections` kept
 * busy (autocannon).
 */
export async function offerLoad(
  base: string,
  nextPath: () => string,
  seconds: number,
  options: { connections: number; rate: number; headers: Record<string, string> },
): Promise<LoadResult> {
  if (options.rate > 0) return pacedLoad(base, nextPath, seconds, options);
  const result = await autocannon({
    url: base,
    connections: options.connections,
    duration: seconds,
    headers: options.headers,
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: nextPath() }) }],
  });
  return { requests: result.requests, latency: result.latency, non2xx: result.non2xx, errors: result.errors + result.timeouts };
}

/** 1,000 product ids spread over the whole store, in a scattered order: products.get reads no one hot row. */
export function spreadProductIds(productIds: { first: number; last: number }): number[] {
  const span = productIds.last - productIds.first + 1;
  return Array.from({ length: 1000 }, (_, index) => productIds.first + Math.floor(((index * 7919) % 1000) * (span / 1000)));
}
