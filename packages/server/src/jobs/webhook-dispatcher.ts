import { randomUUID } from 'node:crypto';
import { POLICY_LEASE_MS } from '../core/limits';
import type { StopListening } from '../db/engine';
import { type AttemptMade, attemptDelivery, type DeliveryDeps, recordAndClaim, recordAttempts, releaseClaims } from '../domain/webhooks/delivery/attempts';
import { type ClaimedDelivery, claimDeliveries } from '../domain/webhooks/delivery/claims';
import { FAN_OUT_BATCH, fanOut } from '../domain/webhooks/delivery/fan-out';
import { type Metrics, noMetrics, type WebhookAttemptOutcome } from '../services/metrics';
import { ATTEMPT_TIMEOUT_MS } from '../services/webhook-transport';
import { HeldDeliveries } from './held-deliveries';

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
   * it resolved to, Node's message. The app is shown only its class (services/webhook-transport).
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
/**
 * How long an answer waits for others to be recorded with, at most. Half of what was held answered
 * starts a turn sooner; but deliveries held for a hanging endpoint may never be answered, and
 * without this bound the answers of every other subscription would wait for the poll.
 */
const ANSWER_WAIT_MS = 25;
/** What an attempt needs of its lease beyond its own longest time: its recording, and the clocks' drift. */
const LEASE_MARGIN_MS = 5_000;

/**
 * The webhook dispatcher: a loop over the database, run inside the server (`WEBHOOK_WORKERS`) and
 * as `svc worker`. Any number of them share the work through the claims' leases.
 */
export function createDispatcher(deps: DeliveryDeps, options: DispatcherOptions = {}): Dispatcher {
  const concurrency = options.concurrency ?? DISPATCHER_DEFAULTS.concurrency;
  const perSubscription = options.perSubscription ?? deps.webhooks.attemptsPerSubscription;
  const leaseMs = options.leaseMs ?? POLICY_LEASE_MS;
  // The token of every lease this worker takes: a subscription's leases are one worker's at a time (claims.ts).
  const limits = { perSubscription, leaseMs, worker: randomUUID() };
  const heldMost = concurrency * HELD_PER_SLOT;
  const held = new HeldDeliveries({ concurrency, perSubscription, leaseNeededMs: Math.min(ATTEMPT_TIMEOUT_MS + LEASE_MARGIN_MS, leaseMs / 2) });
  /** Held deliveries whose lease became too short to send them: let go at the next turn. */
  const unsendable: ClaimedDelivery[] = [];
  const pollMs = options.pollMs ?? DISPATCHER_DEFAULTS.pollMs;
  const random = options.random ?? Math.random;
  const logError = options.logError ?? (() => undefined);
  const logWarning = options.logWarning ?? (() => undefined);
  const metrics = options.metrics ?? noMetrics;
  const inFlight = new Set<Promise<void>>();
  let running = false;
  let loop: Promise<void> | undefined;
  let stopListening: StopListening | undefined;
  let wake: (() => void) | undefined;
  /**
   * Something may have become claimable since this turn of the loop began to look (an attempt
   * ended, a commit announced work). Kept until the next turn begins, so that news arriving while
   * the loop awaits the database is not lost: the loop would otherwise decide to sleep on what it
   * read before, and sleep a whole poll with work waiting.
   */
  let signalled = false;
  /** One-shot waiters for the next signal, whether or not the loop runs (the stop waits for answers so). */
  const nextSignal = new Set<() => void>();
  const signal = () => {
    signalled = true;
    wake?.();
    for (const resolve of nextSignal) resolve();
    nextSignal.clear();
  };
  const untilSignalled = () => new Promise<void>((resolve) => nextSignal.add(resolve));
  /**
   * Whether the outbox may hold events not fanned out: a commit announced some since the last
   * fan-out. Otherwise the loop claims without a fan-out first (an empty one is a transaction of
   * its own, a good part of a claim's cost on PostgreSQL), except once a poll: a write nobody
   * announced (another process, on SQLite) is fanned out within a poll even while a backlog keeps
   * the loop busy.
   */
  let outboxUnread = true;
  let fannedOutAt = Number.NEGATIVE_INFINITY;
  const announced = () => {
    outboxUnread = true;
    signal();
  };

  /**
   * Attempts answered and not recorded yet. Their slots are free once recorded, and the claim that
   * takes the next deliveries records them (`recordAndClaim`: one round trip on PostgreSQL), so that
   * a subscription's next attempt follows an answer after one round trip, not two.
   */
  const answered: Array<{ made: AttemptMade; done: () => void }> = [];
  /** The oldest answer not recorded yet has waited `ANSWER_WAIT_MS`. */
  let answersWaited = false;
  /** Counts the turns that took answers, so that a batch's timer does not speak for the next batch. */
  let answerBatch = 0;

  /** The worker is stopping: no held delivery is started any more. */
  let stopping = false;

  /** Starts the held deliveries there are slots for (each subscription's and the worker's). */
  const pump = () => {
    if (stopping) return;
    const { start, release } = held.startable(deps.clock.now());
    unsendable.push(...release);
    for (const delivery of start) {
      const work = attempt(delivery).finally(() => inFlight.delete(work));
      inFlight.add(work);
    }
  };

  /** Sends one attempt; its outcome waits in `answered` for the next turn, which records it. Its slot goes to the next held delivery at once. */
  const attempt = (claimed: ClaimedDelivery): Promise<void> =>
    attemptDelivery(deps, claimed).then(
      (made) => {
        held.ended(claimed);
        pump();
        if (!made) return signal();
        metrics.webhookAttempt(attemptOutcomeOf(made), made.record.latency_ms / 1000);
        if (made.detail !== undefined) logWarning(attemptFailureLine(made));
        return new Promise<void>((resolve) => {
          if (answered.length === 0) {
            const batch = answerBatch;
            setTimeout(() => {
              if (batch !== answerBatch) return;
              answersWaited = true;
              signal();
            }, ANSWER_WAIT_MS).unref();
          }
          answered.push({ made, done: resolve });
          signal();
        });
      },
      (error: unknown) => {
        held.ended(claimed);
        pump();
        logError(`Webhook delivery ${claimed.id} failed (its lease lets it be attempted again): ${describe(error)}`);
        signal();
      },
    );

  /** Lets go of deliveries this worker will not send: their queues are due for any worker at once. */
  const release = async (deliveries: ClaimedDelivery[]) => {
    try {
      await releaseClaims(deps, deliveries);
    } catch (error) {
      logError(`Letting ${deliveries.length} webhook deliveries go failed (their leases lapse): ${describe(error)}`);
    }
  };

  /** Records what was answered and claims up to the free room, in one turn; answers the deliveries claimed. */
  const recordAndClaimDue = async (room: number) => {
    const settled = answered.splice(0, answered.length);
    answersWaited = false;
    answerBatch += 1;
    try {
      const claim = await recordAndClaim(
        deps,
        settled.map((entry) => entry.made),
        { ...limits, take: Math.max(0, room) },
        random,
      );
      metrics.webhookClaim(claim.deliveries.length);
      return claim;
    } catch (error) {
      if (settled.length > 0) logError(`Recording ${settled.length} webhook attempts failed (their leases let them be attempted again): ${describe(error)}`);
      throw error;
    } finally {
      for (const entry of settled) entry.done();
    }
  };

  /** Records the answers still waiting, without claiming (the stop, `runOnce`). */
  const recordAnswered = async () => {
    while (answered.length > 0) {
      const settled = answered.splice(0, answered.length);
      try {
        await recordAttempts(
          deps,
          settled.map((entry) => entry.made),
          random,
        );
      } catch (error) {
        logError(`Recording ${settled.length} webhook attempts failed (their leases let them be attempted again): ${describe(error)}`);
      } finally {
        for (const entry of settled) entry.done();
      }
    }
  };

  /** Waits for the attempts on the wire (each ends within its 15 s), and for the held ones they make room for, and records every answer. */
  const settle = async () => {
    for (;;) {
      await recordAnswered();
      if (held.held === 0 && answered.length === 0) return;
      if (answered.length === 0) await untilSignalled();
    }
  };

  /** Fans out the whole backlog, a batch per transaction, so a burst does not wait a poll per batch: answers the deliveries written. */
  const fanOutAll = async (): Promise<number> => {
    let deliveries = 0;
    outboxUnread = false;
    fannedOutAt = performance.now();
    for (;;) {
      const fanned = await fanOut(deps);
      deliveries += fanned.deliveries;
      if (fanned.events < FAN_OUT_BATCH || !running) return deliveries;
    }
  };

  /**
   * Waits until `ready` holds (judged now and at every signal), the loop is stopped, or `ms` pass.
   * Judging before waiting is what keeps news from being lost between a look and the wait.
   */
  const waitUntil = (ms: number, ready: () => boolean) => {
    if (ready() || !running) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      wake = () => {
        if (ready() || !running) {
          clearTimeout(timer);
          resolve();
        }
      };
    }).finally(() => {
      wake = undefined;
    });
  };

  /**
   * One turn: fan out what commits announced, let go of what cannot be sent, record what was
   * answered and claim as much as there is room for, start the attempts there are slots for (the
   * rest are held, and sent as answers free slots). Then, unless the claim filled the room, wait for
   * news: answers to record (their subscriptions have room to claim again), a commit's
   * announcement, or the poll, which finds what nobody announces (a retry coming due).
   */
  const cycle = async (): Promise<void> => {
    while (running) {
      signalled = false;
      try {
        const fanned = outboxUnread || performance.now() - fannedOutAt >= pollMs ? await fanOutAll() : 0;
        if (unsendable.length > 0) await release(unsendable.splice(0, unsendable.length));
        const claim = await recordAndClaimDue(heldMost - held.held);
        held.add(claim.deliveries);
        pump();
        const roomLeft = held.held < heldMost;
        // A turn for every answer would be a commit for every delivery: the next waits until half
        // of what was held has been answered or the oldest answer has waited ANSWER_WAIT_MS, so that
        // each turn records and claims several (or until nothing is held, for news alone), while
        // the held deliveries keep the wire busy.
        const mark = held.held;
        const halfAnswered = () => held.held <= Math.floor(mark / 2) || answersWaited;
        if (!(claim.full && roomLeft) && fanned === 0)
          await waitUntil(pollMs, () => outboxUnread || (answered.length > 0 && halfAnswered()) || (signalled && held.held === 0) || unsendable.length > 0);
      } catch (error) {
        logError(`Webhook dispatch failed (next try in ${pollMs} ms): ${describe(error)}`);
        outboxUnread = true;
        // Not at the pace of news: the database is failing.
        await waitUntil(pollMs, () => false);
      }
    }
  };

  return {
    async runOnce() {
      running = true;
      try {
        await fanOutAll();
      } finally {
        running = false;
      }
      const { deliveries } = await claimDeliveries(deps, { ...limits, take: concurrency });
      metrics.webhookClaim(deliveries.length);
      held.add(deliveries);
      pump();
      await settle();
      await Promise.all([...inFlight]);
      await release(unsendable.splice(0, unsendable.length));
      return deliveries.length;
    },
    start() {
      if (running) return;
      running = true;
      stopListening = deps.engine.webhookWork.listen(announced, { logError });
      loop = cycle();
    },
    async stop() {
      running = false;
      stopping = true;
      wake?.();
      await loop;
      await stopListening?.();
      stopListening = undefined;
      // What waits unsent goes back to its queue at once, for the next worker, rather than when its lease lapses.
      const unsent = held.takeWaiting();
      await settle();
      await Promise.all([...inFlight]);
      await release([...unsent, ...unsendable.splice(0, unsendable.length)]);
      stopping = false;
    },
  };
}

/** A 2xx, another answer, or none (no status: refused address, timeout, connection failed). */
const attemptOutcomeOf = (made: AttemptMade): WebhookAttemptOutcome =>
  made.record.outcome === 'succeeded' ? 'succeeded' : made.status === null ? 'unreachable' : 'rejected';

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The operator's line for an attempt that got no answer: which delivery, where, and what Node said (the app sees only its class). */
const attemptFailureLine = (made: AttemptMade): string =>
  `Webhook attempt ${made.record.attempt} of delivery ${made.claimed.id} (subscription ${made.claimed.subscription.id}, store ${made.claimed.subscription.store_id}) got no answer: ${made.detail}`;
