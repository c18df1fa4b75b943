import pg from 'pg';
import { type DdlSettings, observeSteps, type StepStart } from '../../src/db/postgres/online-ddl';

/**
 * Cuts a migration's steps (db/postgres/online-ddl.ts) from another session, the way an operator's
 * bad day does, one step per run: each run fails at the first step no earlier run was cut at, until
 * a run passes every step. What cuts it:
 *
 * - `lock`: another session holds the table's ACCESS EXCLUSIVE lock until the step's lock timeout
 *   and retries are spent (short steps only: long ones wait for their locks without a timeout);
 * - `cancel`: the step's statement, waiting on a lock the other session holds, is cancelled
 *   (`pg_cancel_backend`), as a `statement_timeout` or an operator would;
 * - `terminate`: its session is ended (`pg_terminate_backend`), as a lost connection or a
 *   restarted server would.
 *
 * A concurrent index build is held by an open transaction that wrote to the table instead (the
 * build waits for it after making its INVALID index, so a cut then leaves that index behind).
 */
export type Cut = 'lock' | 'cancel' | 'terminate';

/** Short steps give up quickly under `lock`; under the other cuts they wait long enough to be cut. */
export const settingsFor = (cut: Cut): DdlSettings =>
  cut === 'lock' ? { lockTimeoutMs: 200, attempts: 2, backoffMs: 20 } : { lockTimeoutMs: 30_000, attempts: 1, backoffMs: 0 };

export interface CutRun {
  /** The step cut (`table: step`), or undefined when the run passed every step. */
  readonly cut: string | undefined;
  readonly error: unknown;
}

/** Steps never cut: the cleanup a failed run does on its way out (cutting it is the rerun's job to mend). */
const isCleanup = (start: StepStart) => start.step.startsWith('drop the range proof of a failed run');

const isConcurrentBuild = (start: StepStart) => start.kind === 'long' && /^(build|drop) the (invalid )?index/.test(start.step);

/** A session that holds what makes a step wait, until released. */
export async function hold(url: string, schema: string, start: StepStart): Promise<() => Promise<void>> {
  const client = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await client.connect();
  await client.query('begin');
  if (isConcurrentBuild(start)) {
    // Another writer's open transaction, which a concurrent build waits for after its first phase.
    await client.query(`lock table "${start.table}" in row exclusive mode`);
  } else {
    await client.query(`lock table "${start.table}" in access exclusive mode`);
  }
  return async () => {
    await client.query('rollback').catch(() => undefined);
    await client.end().catch(() => undefined);
  };
}

/** Waits until the session `pid` waits on a lock, then cuts it. */
async function cutWhenWaiting(url: string, pid: number, how: 'cancel' | 'terminate'): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    for (let tries = 0; tries < 2000; tries += 1) {
      const { rows } = await client.query<{ waiting: string | null }>('select wait_event_type as waiting from pg_stat_activity where pid = $1', [pid]);
      if (rows[0]?.waiting === 'Lock') {
        await client.query(how === 'cancel' ? 'select pg_cancel_backend($1)' : 'select pg_terminate_backend($1)', [pid]);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    throw new Error(`session ${pid} never waited on a lock`);
  } finally {
    await client.end();
  }
}

/**
 * Runs `migrate` once, cutting the first step not in `cutBefore` (and adding it there). A `lock`
 * cut passes over long steps.
 */
export async function runCutting(
  { url, schema, cut, cutBefore }: { url: string; schema: string; cut: Cut; cutBefore: Set<string> },
  migrate: () => Promise<unknown>,
): Promise<CutRun> {
  let release: (() => Promise<void>) | undefined;
  let cutting: Promise<void> | undefined;
  let chosen: string | undefined;
  const stop = observeSteps(async (start) => {
    const name = `${start.table}: ${start.step}`;
    if (name === chosen && cut === 'lock') return; // held through every retry of the step
    await release?.();
    release = undefined;
    if (chosen || isCleanup(start) || cutBefore.has(name) || (cut === 'lock' && start.kind === 'long')) return;
    chosen = name;
    cutBefore.add(name);
    release = await hold(url, schema, start);
    if (cut !== 'lock') {
      const releaseAfter = release;
      cutting = cutWhenWaiting(url, start.pid, cut).finally(() => releaseAfter());
    }
  }, settingsFor(cut));
  try {
    await migrate();
    return { cut: chosen, error: undefined };
  } catch (error) {
    return { cut: chosen, error };
  } finally {
    stop();
    await cutting;
    await release?.();
  }
}
