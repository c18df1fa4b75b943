import { POLICY_LEASE_MS } from '../core/limits';
import { listenForWebhookWork, type StopListening } from '../db/notifications';
import { type AttemptMade, attemptDelivery, type DeliveryDeps, recordAttempts } from '../domain/webhooks/delivery/attempts';
import { type ClaimedDelivery, claimDeliveries } from '../domain/webhooks/delivery/claims';
import { FAN_OUT_BATCH, fanOut } from '../domain/webhooks/delivery/fan-out';
import { type Metrics, noMetrics, type WebhookAttemptOutcome } from '../services/metrics';

export interface DispatcherOptions {
  /** Attempts this worker has on the wire at once. */
  readonly concurrency?: number;
  /** Attempts of one subscription under lease at once, across workers: one slow or dead endpoint holds up only itself. */
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

export const DISPATCHER_DEFAULTS = { concurrency: 32, perSubscription: 4, pollMs: 1000 } as const;

/**
 * The webhook dispatcher: a loop over the database, run inside the server (`WEBHOOK_WORKERS`) and
 * as `svc worker`. Any number of them share the work through the claims' leases.
 */
export function createDispatcher(deps: DeliveryDeps, options: DispatcherOptions = {}): Dispatcher {
  const concurrency = options.concurrency ?? DISPATCHER_DEFAULTS.concurrency;
  const limits = { perSubscription: options.perSubscription ?? DISPATCHER_DEFAULTS.perSubscription, leaseMs: options.leaseMs ?? POLICY_LEASE_MS };
  const pollMs = options.pollMs ?? DISPATCHER_DEFAULTS.pollMs;
  const random = options.random ?? Math.random;
  const logError = options.logError ?? (() => undefined);
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
  const signal = () => {
    signalled = true;
    wake?.();
  };
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
   * Attempts made wait here to be recorded: one transaction records all that finished meanwhile,
   * so the commits (each a disk sync on SQLite) do not bound the deliveries per second.
   */
  const unrecorded: Array<{ made: AttemptMade; done: () => void }> = [];
  let recording: Promise<void> | undefined;
  const recordPending = (): void => {
    if (recording) return;
    recording = (async () => {
      while (unrecorded.length > 0) {
        const batch = unrecorded.splice(0, 500);
        try {
          await recordAttempts(
            deps,
            batch.map((entry) => entry.made),
            random,
          );
        } catch (error) {
          logError(`Recording ${batch.length} webhook attempts failed (their leases let them be attempted again): ${describe(error)}`);
        }
        for (const entry of batch) entry.done();
      }
    })().finally(() => {
      recording = undefined;
      if (unrecorded.length > 0) recordPending();
    });
  };

  /** Sends one attempt and resolves once its outcome is recorded (or could not be). */
  const attempt = (claimed: ClaimedDelivery): Promise<void> =>
    attemptDelivery(deps, claimed).then(
      (made) =>
        made &&
        new Promise<void>((resolve) => {
          metrics.webhookAttempt(attemptOutcomeOf(made), made.record.latency_ms / 1000);
          unrecorded.push({ made, done: resolve });
          recordPending();
        }),
      (error: unknown) => logError(`Webhook delivery ${claimed.id} failed (its lease lets it be attempted again): ${describe(error)}`),
    );

  const claimDue = async (take: number) => {
    const claim = await claimDeliveries(deps, { ...limits, take });
    metrics.webhookClaim(claim.deliveries.length);
    return claim;
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
  const hasRoom = () => inFlight.size <= concurrency / 2;

  const cycle = async (): Promise<void> => {
    while (running) {
      signalled = false;
      try {
        const fanned = outboxUnread || performance.now() - fannedOutAt >= pollMs ? await fanOutAll() : 0;
        const room = concurrency - inFlight.size;
        const claim = room > 0 ? await claimDue(room) : { deliveries: [], full: false };
        for (const delivery of claim.deliveries) {
          const work = attempt(delivery).finally(() => {
            inFlight.delete(work);
            signal();
          });
          inFlight.add(work);
        }
        // Claim again once half the room is free, not after every attempt: a claim is a commit too.
        // A claim that found less than it asked for took all that was claimable: more becomes so
        // when attempts end (freeing their subscriptions' slots) or when a commit announces work.
        // So it waits for half of those on the wire to end, or for the news; with none on the wire,
        // for the news alone. The poll finds what nobody announces (a retry coming due).
        if (!hasRoom()) await waitUntil(pollMs, hasRoom);
        else if (!claim.full && fanned === 0) {
          const halfEnded = Math.floor(inFlight.size / 2);
          await waitUntil(pollMs, () => outboxUnread || (signalled && inFlight.size <= halfEnded));
        }
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
      const { deliveries } = await claimDue(concurrency);
      await Promise.all(deliveries.map(attempt));
      return deliveries.length;
    },
    start() {
      if (running) return;
      running = true;
      stopListening = listenForWebhookWork(deps.db, announced, { logError });
      loop = cycle();
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
      await stopListening?.();
      stopListening = undefined;
      await Promise.all([...inFlight]);
    },
  };
}

/** A 2xx, another answer, or none (no status: refused address, timeout, connection failed). */
const attemptOutcomeOf = (made: AttemptMade): WebhookAttemptOutcome =>
  made.record.outcome === 'succeeded' ? 'succeeded' : made.status === null ? 'unreachable' : 'rejected';

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
