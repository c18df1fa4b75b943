/**
 * The built server's start as an image runs it: `node packages/server/dist/main.js` on an empty
 * SQLite data directory (no demo, so the first start migrates), then restarted on it as an image is
 * on its volume, each timed from the spawn to the first `200` of `/readyz`; and its resident memory
 * once idle. Goals: under 2 s and under 150 MB.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const repositoryRoot = path.resolve(__dirname, '..', '..');
const builtServer = path.join(repositoryRoot, 'packages', 'server', 'dist', 'main.js');

export interface StartFigures {
  /** The first start, which migrates the empty database. */
  readonly firstMs: number;
  /** Spawn to the first `200` of `/readyz` on a migrated database, in ms (median of the restarts, and each). */
  readonly readyMs: number;
  readonly runsMs: readonly number[];
  /** VmRSS of the idle server a second after it was ready, in MB (the largest of the runs). */
  readonly rssMb: number;
}

const rssMbOf = (pid: number): number => {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
};

async function oneStart(dataDir: string): Promise<{ readyMs: number; rssMb: number }> {
  const started = performance.now();
  const child = spawn(process.execPath, ['--enable-source-maps', builtServer], {
    env: { PATH: process.env.PATH ?? '', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    let output = '';
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const found = /localhost:(\d+)\//.exec(output);
        if (found) resolve(Number(found[1]));
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
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return { readyMs, rssMb: rssMbOf(child.pid as number) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
  }
}

/** A first start on an empty data directory, then `restarts` starts on it. */
export async function measureStart(restarts = 5): Promise<StartFigures> {
  if (!fs.existsSync(builtServer)) throw new Error(`${builtServer} is missing: run pnpm build first`);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-start-'));
  try {
    const first = await oneStart(dataDir);
    const results: Array<{ readyMs: number; rssMb: number }> = [];
    for (let run = 0; run < restarts; run++) results.push(await oneStart(dataDir));
    return figuresOf(first, results);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

function figuresOf(first: { readyMs: number; rssMb: number }, results: Array<{ readyMs: number; rssMb: number }>): StartFigures {
  const sorted = results.map((result) => result.readyMs).sort((a, b) => a - b);
  return {
    firstMs: first.readyMs,
    readyMs: sorted[Math.floor(sorted.length / 2)] as number,
    runsMs: results.map((result) => result.readyMs),
    rssMb: Math.max(first.rssMb, ...results.map((result) => result.rssMb)),
  };
}

if (require.main === module) {
  void measureStart().then((figures) => {
    console.log(
      `start to ready (built server, SQLite): first start ${figures.firstMs.toFixed(0)} ms (migrates), restarts median ${figures.readyMs.toFixed(0)} ms (${figures.runsMs.map((ms) => ms.toFixed(0)).join(', ')}), idle RSS ${figures.rssMb.toFixed(0)} MB (goals: < 2000 ms, < 150 MB)`,
    );
  });
}
