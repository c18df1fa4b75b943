import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { createDatabase } from '../../packages/server/src/db/connection';
import { engineOfHandle } from '../../packages/server/src/db/engine';
import { migrateToLatest, rollbackLatest } from '../../packages/server/src/db/migrate';
import { createServices, TOOLS_KEY } from '../../packages/server/src/services/container';
import { createBenchStore } from '../bench/fixtures';
import { freshPostgresDatabase } from '../testbed/postgres-database';
import { repositoryRoot } from '../testbed/repository';
import { type DrillCluster, quiet } from './cluster';
import { sleep } from './faults';

/**
 * Migration 019 cut and run again, as an operator's release job meets it: `svc migrate` (the built
 * CLI) on a database rolled back to before 019 and holding rows (enough events that 019 takes its
 * concurrent path), killed with SIGKILL half-way through (half the time a clean run of the same
 * database took), then run again to its end. Meanwhile the previous release keeps writing events
 * (one dated now and one three days ahead every 50 ms) and reading a page of them. Judged: the
 * rerun ends well, the schema is the clean run's (`pg_dump --schema-only`), no write of the
 * previous release failed, and an event dated three days later is still accepted afterwards.
 * It runs against whatever 019 the tree holds.
 */

const NINETEEN = '019_partitions';
const DAY_MS = 86_400_000;
const svcPath = path.join(repositoryRoot, 'packages/server/dist/svc.js');

interface Prepared {
  readonly name: string;
  readonly url: string;
  readonly storeId: string;
  readonly drop: () => Promise<void>;
}

/** A database at the latest migration rolled back to before 019, with `rows` fanned-out events over the last 20 days. */
async function beforeNineteen(cluster: DrillCluster, rows: number): Promise<Prepared> {
  const database = await freshPostgresDatabase(cluster.primaryUrl);
  const db = createDatabase({ databaseUrl: database.url, dataDir: '' }, { log: quiet });
  try {
    await migrateToLatest(db);
    const applied = async () => (await db('knex_migrations').pluck('name')) as string[];
    while ((await applied()).includes(NINETEEN)) await rollbackLatest(db);
    const services = createServices({ db, engine: engineOfHandle(db), rateLimits: { perInstallation: 1000, perClient: 1000 } });
    const { store } = await createBenchStore(services, `Migration drill ${path.basename(database.url)}`);
    const now = Date.now();
    await db.raw(
      `insert into outbox_events (id, store_id, type, payload, occurred_at, dispatched_at)
       select gen_random_uuid(), ?, 'product.created', '{}', ?::bigint - g * ?::bigint, ?::bigint - g * ?::bigint
       from generate_series(1, ?) g`,
      [store.id, now, Math.floor((20 * DAY_MS) / Math.max(1, rows)), now, Math.floor((20 * DAY_MS) / Math.max(1, rows)), rows],
    );
    await db.raw('analyze outbox_events');
    return { name: new URL(database.url).pathname.slice(1), url: database.url, storeId: store.id, drop: database.drop };
  } finally {
    await db.destroy();
  }
}

interface MigrateRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly ms: number;
  readonly output: string;
}

/** `svc migrate` on the database, killed with SIGKILL after `killAfterMs` if it is still running then. */
function svcMigrate(url: string, killAfterMs?: number): Promise<MigrateRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [svcPath, 'migrate'], {
    cwd: repositoryRoot,
    env: { PATH: process.env.PATH ?? '', DATABASE_URL: url, SECRET_KEY: TOOLS_KEY.toString('hex') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  return new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, ms: performance.now() - started, output: output.trim() });
    });
  });
}

/** The previous release's events and reads on the database while `work` runs: how many of each failed, and the first failures. */
async function withPreviousRelease<T>(prepared: Prepared, work: () => Promise<T>): Promise<{ result: T; sent: number; failed: string[] }> {
  const db = createDatabase({ databaseUrl: prepared.url, dataDir: '' }, { log: quiet });
  let running = true;
  let sent = 0;
  const failed: string[] = [];
  const loop = (async () => {
    while (running) {
      const now = Date.now();
      for (const at of [now, now + 3 * DAY_MS]) {
        sent += 1;
        await db('outbox_events')
          .insert({ id: randomUUID(), store_id: prepared.storeId, type: 'product.created', payload: '{}', occurred_at: at })
          .catch((error: unknown) => failed.push(`insert at ${new Date(at).toISOString()}: ${error instanceof Error ? error.message : String(error)}`));
      }
      sent += 1;
      await db('outbox_events')
        .where({ store_id: prepared.storeId })
        .orderBy('occurred_at', 'desc')
        .limit(25)
        .catch((error: unknown) => failed.push(`read: ${error instanceof Error ? error.message : String(error)}`));
      await sleep(50);
    }
  })();
  try {
    const result = await work();
    return { result, sent, failed };
  } finally {
    running = false;
    await loop;
    await db.destroy();
  }
}

/** Lines of a schema dump that differ: those only in one, then only in the other. */
export function schemaDifference(clean: string, other: string): string[] {
  const lines = (text: string) => text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('--') && !line.startsWith('\\'));
  const a = lines(clean);
  const b = lines(other);
  const inA = new Set(a);
  const inB = new Set(b);
  return [...a.filter((line) => !inB.has(line)).map((line) => `- ${line}`), ...b.filter((line) => !inA.has(line)).map((line) => `+ ${line}`)];
}

const describeRun = (run: MigrateRun) =>
  `${run.signal ? `killed (${run.signal})` : `exit ${run.code}`} after ${(run.ms / 1000).toFixed(1)} s${
    run.output ? `: ${run.output.split('\n').slice(-3).join(' / ')}` : ''
  }`;

/** The drill of 019: its report's lines, and what went wrong (none: it passed). */
export async function drillMigration(cluster: DrillCluster, rows: number, say: (line: string) => void): Promise<{ lines: string[]; problems: string[] }> {
  const lines: string[] = [];
  const problems: string[] = [];
  say(`two databases rolled back to before 019, each with ${rows} events …`);
  const clean = await beforeNineteen(cluster, rows);
  const cut = await beforeNineteen(cluster, rows);
  try {
    const cleanRun = await svcMigrate(clean.url);
    lines.push(`clean run        ${describeRun(cleanRun)}`);
    if (cleanRun.code !== 0) problems.push('svc migrate failed on a database nobody had touched');
    const killAfterMs = Math.max(200, Math.round(cleanRun.ms / 2));
    const {
      result: runs,
      sent,
      failed,
    } = await withPreviousRelease(cut, async () => {
      const first = await svcMigrate(cut.url, killAfterMs);
      say(`svc migrate killed after ${(killAfterMs / 1000).toFixed(1)} s (half the clean run): ${describeRun(first)}`);
      const again = await svcMigrate(cut.url);
      say(`run again: ${describeRun(again)}`);
      return [first, again] as const;
    });
    const [first, again] = runs;
    lines.push(`cut run          ${describeRun(first)}`, `run again        ${describeRun(again)}`);
    if (first.signal === null) lines.push('  (the first run ended before the kill: this database migrates faster than the clean one did)');
    if (again.code !== 0) problems.push('the run after the kill did not complete the migration');
    const difference = schemaDifference(await cluster.schemaOf(clean.name), await cluster.schemaOf(cut.name));
    lines.push(
      `schema           ${difference.length === 0 ? "the same as the clean run's (pg_dump --schema-only)" : `${difference.length} lines differ from the clean run's`}`,
    );
    for (const line of difference.slice(0, 6)) lines.push(`                 ${line}`);
    if (difference.length > 0) problems.push("the schema after the cut and the rerun is not the clean run's");
    lines.push(`previous release ${sent} writes and reads during the runs, ${failed.length} failed`);
    for (const failure of [...new Set(failed)].slice(0, 3)) lines.push(`                 ${failure}`);
    if (failed.length > 0) problems.push(`${failed.length} of the previous release's statements failed during the migration`);
    const afterwards = createDatabase({ databaseUrl: cut.url, dataDir: '' }, { log: quiet });
    try {
      for (const [when, at] of [
        ['now', Date.now()],
        ['three days later', Date.now() + 3 * DAY_MS],
      ] as const) {
        await afterwards('outbox_events')
          .insert({ id: randomUUID(), store_id: cut.storeId, type: 'product.created', payload: '{}', occurred_at: at })
          .then(
            () => lines.push(`afterwards       an event dated ${when} is accepted`),
            (error: unknown) => {
              lines.push(`afterwards       an event dated ${when} is refused: ${error instanceof Error ? error.message : String(error)}`);
              problems.push(`an event dated ${when} is refused after the migration`);
            },
          );
      }
    } finally {
      await afterwards.destroy();
    }
  } finally {
    await clean.drop();
    await cut.drop();
  }
  return { lines, problems };
}
