import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { residentMb } from './proc';
import { runScript } from './report';
import { startServer } from './servers';
import { median } from './stats';

/**
 * The built server's start as an image runs it: `node packages/server/dist/main.js` on an empty
 * SQLite data directory (no demo, so the first start migrates), then restarted on it as an image is
 * on its volume, each timed from the spawn to the first `200` of `/readyz`; and its resident memory
 * once idle. Goals: under 2 s and under 150 MB. Measured as the image runs it (`NODE_ENV=production`:
 * JSON logs, no response validation) and as a developer's `pnpm start` does (development, which
 * also validates every answer against the spec); each start's CPU time (user + system, read from
 * /proc at readiness) is printed beside its wall time, since it barely moves with the machine's load.
 */

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

interface OneStart {
  readonly readyMs: number;
  readonly cpuMs: number;
  readonly rssMb: number;
}

const modeEnvironment = (mode: StartMode, secretKey: string): Record<string, string> =>
  mode === 'production' ? { NODE_ENV: 'production', SECRET_KEY: secretKey, PUBLIC_URL: 'http://localhost', LOG_LEVEL: 'info' } : { LOG_LEVEL: 'warn' };

async function oneStart(dataDir: string, mode: StartMode, secretKey: string): Promise<OneStart> {
  const server = await startServer({ built: { env: { DATA_DIR: dataDir, ...modeEnvironment(mode, secretKey) }, sourceMaps: true } });
  try {
    const cpuMs = (await server.cpu()).total / 1000;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return { readyMs: server.startMs, cpuMs, rssMb: residentMb(server.pid) };
  } finally {
    await server.stop();
  }
}

/** A first start on an empty data directory, then `restarts` starts on it. */
export async function measureStart(mode: StartMode, restarts = 5): Promise<StartFigures> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-start-'));
  const secretKey = crypto.randomBytes(32).toString('hex');
  try {
    const first = await oneStart(dataDir, mode, secretKey);
    const results: OneStart[] = [];
    for (let run = 0; run < restarts; run++) results.push(await oneStart(dataDir, mode, secretKey));
    return {
      mode,
      firstMs: first.readyMs,
      readyMs: median(results.map((result) => result.readyMs)),
      cpuMs: median(results.map((result) => result.cpuMs)),
      runsMs: results.map((result) => result.readyMs),
      rssMb: Math.max(first.rssMb, ...results.map((result) => result.rssMb)),
    };
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Both modes, each in one line, as `pnpm bench` and this file's own run print them. */
export async function measureStarts(): Promise<StartFigures[]> {
  console.log('Start to ready (node packages/server/dist/main.js, SQLite; goals: under 2000 ms, under 150 MB):');
  const all: StartFigures[] = [];
  for (const mode of ['production', 'development'] as const) {
    const figures = await measureStart(mode);
    all.push(figures);
    console.log(
      `  ${figures.mode.padEnd(11)} first start ${figures.firstMs.toFixed(0)} ms (migrates), restarts median ${figures.readyMs.toFixed(0)} ms (${figures.runsMs.map((ms) => ms.toFixed(0)).join(', ')}) using ${figures.cpuMs.toFixed(0)} ms of CPU, idle RSS ${figures.rssMb.toFixed(0)} MB`,
    );
  }
  return all;
}

if (require.main === module) runScript(async () => void (await measureStarts()));
