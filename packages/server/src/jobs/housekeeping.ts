import { signInLimitsExpiry } from '../dashboard/sign-in-guard';
import { type Leadership, LeadershipLost } from '../db/locks';
import { repairWebhookQueues } from '../domain/webhooks/enqueue/queues';
import { webhookAttemptsExpiry, webhookDeliveriesExpiry } from '../domain/webhooks/log/expiry';
import { idempotencyKeysExpiry } from '../http/idempotency';
import { authorizationRequestsExpiry } from '../oauth/consent';
import { launchTokensExpiry } from '../oauth/launch';
import { tokenOperationsExpiry } from '../oauth/operations';
import { authorizationCodesExpiry } from '../oauth/token-endpoint';
import type { Deps } from '../services/container';
import { deleteExpired, type ExpiryRule, expiresAtRule, SWEEP_LIMITS, type SweepLimits, type TableSweep } from '../services/housekeeping';
import { outboxEventsExpiry } from '../services/outbox';
import { apiQuotaCountersExpiry } from '../services/rate-limit';

/** Every table whose rows expire, with the rule that says when (beside the code that writes it). */
export const EXPIRY_RULES: readonly ExpiryRule[] = [
  idempotencyKeysExpiry,
  // A session is refused from its `expires_at` on (`currentSession`), and nothing else reads it.
  expiresAtRule('dashboard_sessions', 'session_hash'),
  authorizationRequestsExpiry,
  authorizationCodesExpiry,
  launchTokensExpiry,
  tokenOperationsExpiry,
  apiQuotaCountersExpiry,
  signInLimitsExpiry,
  outboxEventsExpiry,
  // Attempts before their deliveries: they are found through the delivery's event.
  webhookAttemptsExpiry,
  webhookDeliveriesExpiry,
];

/** The rounds of the fleet-wide jobs, as the leadership runs them (db/locks.ts `Leadership.round`). */
export type Rounds = Pick<Leadership, 'round'>;

/**
 * One housekeeping run: deletes what has expired in every table, in bounded batches (on PostgreSQL
 * the partitions' upkeep first: db/partitions.ts), then makes due any webhook queue that pending
 * deliveries wait in unseen (domain/webhooks/enqueue/queues.ts: the safety net). Under a leadership each of the
 * two is a round of its own, asked for anew, and run on the leader's session: answers undefined
 * when this process does not lead, and fails with `LeadershipLost` when it lost the lead midway.
 * Without one (a test, a single process) both run on `deps.db`.
 */
export function runHousekeeping(deps: Deps, limits?: SweepLimits): Promise<TableSweep[]>;
export function runHousekeeping(deps: Deps, limits: SweepLimits, leadership: Rounds): Promise<TableSweep[] | undefined>;
export async function runHousekeeping(deps: Deps, limits: SweepLimits = SWEEP_LIMITS, leadership?: Rounds): Promise<TableSweep[] | undefined> {
  const rounds: Rounds = leadership ?? { round: (work) => work(deps.db) };
  const sweeps = await rounds.round((db) => deleteExpired({ db, engine: deps.engine, clock: deps.clock }, EXPIRY_RULES, limits));
  if (sweeps === undefined) return undefined;
  await rounds.round((db) => repairWebhookQueues(db, deps.clock.now()));
  return sweeps;
}

/** How often the server runs housekeeping. */
export const HOUSEKEEPING_EVERY_MS = 10 * 60 * 1000;

/**
 * `deleted 3 idempotency_keys, 1 dashboard_sessions (more remain in idempotency_keys)` (with `and
 * 2 of its partitions` after a table whose whole days were dropped), or undefined when nothing was deleted.
 */
export function describeSweeps(sweeps: readonly TableSweep[]): string | undefined {
  const deleted = sweeps.filter((sweep) => sweep.deleted > 0 || (sweep.partitionsDropped ?? 0) > 0);
  if (deleted.length === 0) return undefined;
  const capped = sweeps.filter((sweep) => sweep.capped).map((sweep) => sweep.table);
  const counts = deleted
    .map((sweep) => `${sweep.deleted} ${sweep.table}${sweep.partitionsDropped ? ` and ${sweep.partitionsDropped} of its partitions` : ''}`)
    .join(', ');
  return `deleted ${counts}${capped.length > 0 ? ` (more remain in ${capped.join(', ')})` : ''}`;
}

export interface HousekeepingSchedule {
  /** Stops the timer and waits for a run under way, so the database can be closed after it. */
  stop(): Promise<void>;
}

export interface ScheduleOptions {
  readonly everyMs?: number;
  /**
   * The leadership among the instances on the database (db/locks.ts): a run is due only in the
   * process that holds it, so a fleet sweeps once, not once per process. Unset: every tick runs.
   */
  readonly leader?: { readonly held: boolean };
  readonly log: (line: string) => void;
  readonly logError: (line: string) => void;
}

/**
 * Runs `run` every `everyMs` in this process. The timer does not keep the process alive; a run that
 * fails is logged and the next one tries again; a run still going when the next is due (a large
 * backlog) is not doubled. A run that answers nothing found this process not leading; one cut short
 * because the process lost the lead is said as such, at info: the new leader runs it.
 */
export function scheduleHousekeeping(
  run: () => Promise<readonly TableSweep[] | undefined>,
  { everyMs = HOUSEKEEPING_EVERY_MS, leader, log, logError }: ScheduleOptions,
): HousekeepingSchedule {
  let running: Promise<void> | undefined;
  const tick = () => {
    if (running || (leader && !leader.held)) return;
    running = run()
      .then(
        (sweeps) => {
          const summary = sweeps && describeSweeps(sweeps);
          if (summary) log(`Housekeeping ${summary}`);
        },
        (error: unknown) => {
          if (error instanceof LeadershipLost) log(`Housekeeping stopped: ${error.message}; the next leader runs it`);
          else logError(`Housekeeping failed (next run in ${Math.round(everyMs / 1000)} s): ${error instanceof Error ? error.message : String(error)}`);
        },
      )
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
