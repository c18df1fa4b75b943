/**
 * The built server's start as an image runs it: `node packages/server/dist/main.js` on an empty
 * SQLite data directory (no demo, so the first start migrates), then restarted on it as an image is
 * on its volume, each timed from the spawn to the first `200` of `/readyz`; and its resident memory
 * once idle. Goals: under 2 s and under 150 MB. Measured as the image runs it (`NODE_ENV=production`:
 * JSON logs, no response validation) and as a developer's `pnpm start` does (development, which
 * also validates every answer against the spec); each start's CPU time (user + system, read from
 * /proc at readiness) is printed beside its wall time, since it barely moves with the machine's load.
 */

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median } from './stats';

const repositoryRoot = path.resolve(__dirname, '..', '..');
const builtServer = path.join(repositoryRoot, 'packages', 'server', 'dist', 'main.js');

export type StartMode = 'production' | 'development';

export interface StartFigures {
  readonly mode: StartMode;
  /** The first start, which migrates the empty database. */
  readonly firstMs: number;
  /** Spawn to the first `200` of `/readyz` on a migrated database, in ms (median of the restarts, and each). */
  readonly readyMs: number;
  readonly runsMs: readonly number[];
  /** CPU time of the server process from its spawn to readiness, in ms (median of the restarts). */
  readonly cpuMs: number;
  /** VmRSS of the idle server a second after it was ready, in MB (the largest of the runs). */
  readonly rssMb: number;
}

const rssMbOf = (pid: number): number => {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
};

/** user + system CPU time of a running process, in ms (/proc/<pid>/stat fields 14 and 15, in clock ticks of 10 ms). */
const cpuMsOf = (pid: number): number => {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

interface OneStart {
  readonly readyMs: number;
  readonly cpuMs: number;
  readonly rssMb: number;
}

const modeEnvironment = (mode: StartMode, secretKey: string): NodeJS.ProcessEnv =>
  mode === 'production' ? { NODE_ENV: 'production', SECRET_KEY: secretKey, LOG_LEVEL: 'info' } : { LOG_LEVEL: 'warn' };

async function oneStart(dataDir: string, mode: StartMode, secretKey: string): Promise<OneStart> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--enable-source-maps', builtServer], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', ...modeEnvironment(mode, secretKey) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    let output = '';
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        // The banner: a plain line in development, a JSON line with its port in production.
        const found = /localhost:(\d+)\/|"port":(\d+)/.exec(output);
        if (found) resolve(Number(found[1] ?? found[2]));
      });
      child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening`)));
    });
    for (;;) {
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
        (response) => response.status === 200,
        () => false,
      );
      if (ready) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const readyMs = performance.now() - started;
    const cpuMs = cpuMsOf(child.pid as number);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return { readyMs, cpuMs, rssMb: rssMbOf(child.pid as number) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

/** A first start on an empty data directory, then `restarts` starts on it. */
export async function measureStart(mode: StartMode, restarts = 5): Promise<StartFigures> {
  if (!fs.existsSync(builtServer)) throw new Error(`${builtServer} is missing: run pnpm build first`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-start-'));
  const secretKey = crypto.randomBytes(32).toString('hex');
  try {
    const first = await oneStart(dataDir, mode, secretKey);
    const results: OneStart[] = [];
    for (let run = 0; run < restarts; run++) results.push(await oneStart(dataDir, mode, secretKey));
    return figuresOf(mode, first, results);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

function figuresOf(mode: StartMode, first: OneStart, results: readonly OneStart[]): StartFigures {
  return {
    mode,
    firstMs: first.readyMs,
    readyMs: median(results.map((result) => result.readyMs)),
    cpuMs: median(results.map((result) => result.cpuMs)),
    runsMs: results.map((result) => result.readyMs),
    rssMb: Math.max(first.rssMb, ...results.map((result) => result.rssMb)),
  };
}

/** One line of figures, as `pnpm bench` and this file's own run print it. */
export const describeStart = (figures: StartFigures): string =>
  `${figures.mode.padEnd(11)} first start ${figures.firstMs.toFixed(0)} ms (migrates), restarts median ${figures.readyMs.toFixed(0)} ms (${figures.runsMs.map((ms) => ms.toFixed(0)).join(', ')}) using ${figures.cpuMs.toFixed(0)} ms of CPU, idle RSS ${figures.rssMb.toFixed(0)} MB`;

if (require.main === module) {
  void (async () => {
    console.log('Start to ready (node packages/server/dist/main.js, SQLite; goals: under 2000 ms, under 150 MB):');
    for (const mode of ['production', 'development'] as const) console.log(`  ${describeStart(await measureStart(mode))}`);
  })();
}
