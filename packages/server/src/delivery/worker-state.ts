import type { ClaimLimits } from '../db/webhook-claims';
import type { Metrics } from '../services/metrics';
import type { AttemptMade, DeliveryDeps } from './attempt';
import type { ClaimedDelivery } from './claim';
import type { HeldDeliveries } from './hold';

/** What a worker is given once and keeps: its dependencies, its limits and where it reports. */
export interface WorkerSettings {
  readonly deps: DeliveryDeps;
  /** The limits of every claim but its `take`; the worker's own token for its leases (claim.ts). */
  readonly limits: Omit<ClaimLimits, 'take'>;
  /** Attempts this worker has on the wire at once. */
  readonly concurrency: number;
  /** Deliveries this worker holds at most, on the wire or waiting to be sent. */
  readonly heldMost: number;
  readonly pollMs: number;
  readonly random: () => number;
  readonly logError: (line: string) => void;
  readonly logWarning: (line: string) => void;
  readonly metrics: Metrics;
}

/** An attempt answered, waiting for the turn that records it; `done` tells its sender it was recorded. */
export interface Answer {
  readonly made: AttemptMade;
  readonly done: () => void;
}

/**
 * What a worker keeps between its turns. One object, passed to each stage, so that what a stage
 * reads and changes is said in its signature.
 */
export interface WorkerState {
  /** The worker loops (`start`, or the fan-out of `runOnce`) until it is stopped. */
  running: boolean;
  /** The worker is stopping: no held delivery is started any more. */
  stopping: boolean;
  /** The deliveries claimed and not yet answered: on the wire or waiting for a slot. */
  readonly held: HeldDeliveries;
  /** Held deliveries whose lease became too short to send them: let go at the next turn. */
  readonly unsendable: ClaimedDelivery[];
  /** The attempts on the wire, until each is recorded (the stop waits for them). */
  readonly inFlight: Set<Promise<void>>;
  /**
   * Attempts answered and not recorded yet. Their slots are free once recorded, and the claim that
   * takes the next deliveries records them (`recordAndClaim`: one round trip on PostgreSQL), so that
   * a subscription's next attempt follows an answer after one round trip, not two.
   */
  readonly answered: Answer[];
  /** The oldest answer not recorded yet has waited `ANSWER_WAIT_MS`. */
  answersWaited: boolean;
  /** Counts the turns that took answers, so that a batch's timer does not speak for the next batch. */
  answerBatch: number;
  /**
   * Whether the outbox may hold events not fanned out: a commit announced some since the last
   * fan-out. Otherwise the loop claims without a fan-out first (an empty one is a transaction of
   * its own, a good part of a claim's cost on PostgreSQL), except once a poll: a write nobody
   * announced (another process, on SQLite) is fanned out within a poll even while a backlog keeps
   * the loop busy.
   */
  outboxUnread: boolean;
  fannedOutAt: number;
  /**
   * Something may have become claimable since this turn of the loop began to look (an attempt
   * ended, a commit announced work). Kept until the next turn begins, so that news arriving while
   * the loop awaits the database is not lost: the loop would otherwise decide to sleep on what it
   * read before, and sleep a whole poll with work waiting.
   */
  signalled: boolean;
  /** Wakes the loop's wait, when it waits, to judge again whether it may go on. */
  wake: (() => void) | undefined;
  /** One-shot waiters for the next signal, whether or not the loop runs (the stop waits for answers so). */
  readonly nextSignal: Set<() => void>;
}

export const newWorkerState = (held: HeldDeliveries): WorkerState => ({
  running: false,
  stopping: false,
  held,
  unsendable: [],
  inFlight: new Set(),
  answered: [],
  answersWaited: false,
  answerBatch: 0,
  outboxUnread: true,
  fannedOutAt: Number.NEGATIVE_INFINITY,
  signalled: false,
  wake: undefined,
  nextSignal: new Set(),
});

/** News: something may be claimable, or an answer waits to be recorded. */
export function signal(state: WorkerState): void {
  state.signalled = true;
  state.wake?.();
  for (const resolve of state.nextSignal) resolve();
  state.nextSignal.clear();
}

export const untilSignalled = (state: WorkerState): Promise<void> => new Promise<void>((resolve) => state.nextSignal.add(resolve));

/** A commit announced webhook work: the outbox may hold events to fan out. */
export function announced(state: WorkerState): void {
  state.outboxUnread = true;
  signal(state);
}

/**
 * Waits until `ready` holds (judged now and at every signal), the loop is stopped, or `ms` pass.
 * Judging before waiting is what keeps news from being lost between a look and the wait.
 */
export function waitUntil(state: WorkerState, ms: number, ready: () => boolean): Promise<void> {
  if (ready() || !state.running) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    timer.unref();
    state.wake = () => {
      if (ready() || !state.running) {
        clearTimeout(timer);
        resolve();
      }
    };
  }).finally(() => {
    state.wake = undefined;
  });
}

/** Takes every element of `list` out of it, in order. */
export const takeAll = <T>(list: T[]): T[] => list.splice(0, list.length);
