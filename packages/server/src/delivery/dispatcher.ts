import { randomUUID } from 'node:crypto';
import { POLICY_LEASE_MS } from '../core/limits';
import type { StopListening } from '../db/engine';
import { type Metrics, noMetrics } from '../services/metrics';
import { ATTEMPT_TIMEOUT_MS } from '../services/webhook-transport';
import type { DeliveryDeps } from './attempt';
import { HeldDeliveries } from './hold';
import { claimForSlots, describe, drainAndLetGo, fanOutAll, hold, letGo, recordAndClaimDue } from './stages';
import { announced, newWorkerState, takeAll, type WorkerSettings, type WorkerState, waitUntil } from './worker-state';

export interface DispatcherOptions {
  /** Attempts this worker has on the wire at once. */
  readonly concurrency?: number;
  /**
   * Attempts of one subscription on the wire at once, across workers: one slow or dead endpoint
   * holds up only itself. The services' setting (`WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION`) when left out.
   */
  readonly perSubscription?: number;
  /**
   * How long the worker waits, when nothing is due, before it looks again unasked: the fallback for
   * work no commit announced (retries coming due, a write from another process on SQLite, a
   * listening connection that was lost).
   */
  readonly pollMs?: number;
  readonly leaseMs?: number;
  readonly random?: () => number;
  readonly logError?: (line: string) => void;
  /**
   * Where an attempt that got no answer is told in full, for the operator: the name, the addresses
   * it resolved to, Node's message. The app is shown only its class (services/webhook-transport.ts).
   */
  readonly logWarning?: (line: string) => void;
  /** Attempts by outcome and latency, claims (`/metrics`); nothing when left out. */
  readonly metrics?: Metrics;
}

export interface Dispatcher {
  /** Fans out what the outbox holds, then claims and attempts what is due, once; answers the attempts made (tests and benches drive it). */
  runOnce(): Promise<number>;
  /** Runs until `stop`: woken by the commits that leave it work, and polling for the rest. */
  start(): void;
  /** Stops claiming, and waits for the attempts on the wire (each ends within its 15 s) to be recorded. */
  stop(): Promise<void>;
}

export const DISPATCHER_DEFAULTS = { concurrency: 32, pollMs: 1000 } as const;

/** Deliveries a worker holds (on the wire or waiting to be sent), as a multiple of its attempts at once. */
const HELD_PER_SLOT = 2;
/** What an attempt needs of its lease beyond its own longest time: its recording, and the clocks' drift. */
const LEASE_MARGIN_MS = 5_000;

/**
 * The webhook dispatcher: a loop over the database, run inside the server (`WEBHOOK_WORKERS`) and
 * as `svc worker`. Any number of them share the work through the claims' leases. The loop only
 * wakes, runs a turn and stops; the turn's stages are stages.ts, and what they keep between turns
 * is one {@link WorkerState}.
 */
export function createDispatcher(deps: DeliveryDeps, options: DispatcherOptions = {}): Dispatcher {
  const settings = workerSettingsOf(deps, options);
  const state = newWorkerState(
    new HeldDeliveries({
      concurrency: settings.concurrency,
      perSubscription: settings.limits.perSubscription,
      leaseNeededMs: Math.min(ATTEMPT_TIMEOUT_MS + LEASE_MARGIN_MS, settings.limits.leaseMs / 2),
    }),
  );
  // The running loop and its listening, from `start` to `stop`.
  let loop: Promise<void> | undefined;
  let stopListening: StopListening | undefined;
  return {
    async runOnce() {
      state.running = true;
      try {
        await fanOutAll(settings, state);
      } finally {
        state.running = false;
      }
      const deliveries = await claimForSlots(settings);
      hold(settings, state, deliveries);
      await drainAndLetGo(settings, state);
      return deliveries.length;
    },
    start() {
      if (state.running) return;
      state.running = true;
      stopListening = deps.engine.webhookWork.listen(() => announced(state), { logError: settings.logError });
      loop = cycle(settings, state);
    },
    async stop() {
      state.running = false;
      state.stopping = true;
      state.wake?.();
      await loop;
      await stopListening?.();
      stopListening = undefined;
      // What waits unsent goes back to its queue at once, for the next worker, rather than when its lease lapses.
      await drainAndLetGo(settings, state, state.held.takeWaiting());
      state.stopping = false;
    },
  };
}

/** The worker's settings: the options given, the defaults for the rest. */
function workerSettingsOf(deps: DeliveryDeps, options: DispatcherOptions): WorkerSettings {
  const concurrency = options.concurrency ?? DISPATCHER_DEFAULTS.concurrency;
  return {
    deps,
    // The token of every lease this worker takes: a subscription's leases are one worker's at a time (claim.ts).
    limits: {
      perSubscription: options.perSubscription ?? deps.webhooks.attemptsPerSubscription,
      leaseMs: options.leaseMs ?? POLICY_LEASE_MS,
      worker: randomUUID(),
    },
    concurrency,
    heldMost: concurrency * HELD_PER_SLOT,
    pollMs: options.pollMs ?? DISPATCHER_DEFAULTS.pollMs,
    random: options.random ?? Math.random,
    logError: options.logError ?? (() => undefined),
    logWarning: options.logWarning ?? (() => undefined),
    metrics: options.metrics ?? noMetrics,
  };
}

/** Runs turns until the worker stops; a turn that fails waits a poll, not the pace of news: the database is failing. */
async function cycle(settings: WorkerSettings, state: WorkerState): Promise<void> {
  while (state.running) {
    state.signalled = false;
    try {
      await turn(settings, state);
    } catch (error) {
      settings.logError(`Webhook dispatch failed (next try in ${settings.pollMs} ms): ${describe(error)}`);
      state.outboxUnread = true;
      await waitUntil(state, settings.pollMs, () => false);
    }
  }
}

/**
 * One turn: fan out what commits announced, let go of what cannot be sent, record what was
 * answered and claim as much as there is room for, start the attempts there are slots for (the
 * rest are held, and sent as answers free slots). Then, unless the claim filled the room, wait for
 * news: answers to record (their subscriptions have room to claim again), a commit's
 * announcement, or the poll, which finds what nobody announces (a retry coming due).
 */
async function turn(settings: WorkerSettings, state: WorkerState): Promise<void> {
  const { held } = state;
  const fanned = state.outboxUnread || performance.now() - state.fannedOutAt >= settings.pollMs ? await fanOutAll(settings, state) : 0;
  if (state.unsendable.length > 0) await letGo(settings, takeAll(state.unsendable));
  const claim = await recordAndClaimDue(settings, state, settings.heldMost - held.held);
  hold(settings, state, claim.deliveries);
  const roomLeft = held.held < settings.heldMost;
  // A turn for every answer would be a commit for every delivery: the next waits until half
  // of what was held has been answered or the oldest answer has waited ANSWER_WAIT_MS, so that
  // each turn records and claims several (or until nothing is held, for news alone), while
  // the held deliveries keep the wire busy.
  const mark = held.held;
  const halfAnswered = () => held.held <= Math.floor(mark / 2) || state.answersWaited;
  if (!(claim.full && roomLeft) && fanned === 0)
    await waitUntil(
      state,
      settings.pollMs,
      () => state.outboxUnread || (state.answered.length > 0 && halfAnswered()) || (state.signalled && held.held === 0) || state.unsendable.length > 0,
    );
}
