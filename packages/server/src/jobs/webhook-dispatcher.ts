import { POLICY_LEASE_MS } from '../core/limits';
import {
  type AttemptMade,
  attemptDelivery,
  type ClaimedDelivery,
  claimDeliveries,
  type DeliveryDeps,
  FAN_OUT_BATCH,
  fanOut,
  recordAttempts,
} from '../domain/webhooks/delivery';

export interface DispatcherOptions {
  /** Attempts this worker has on the wire at once. */
  readonly concurrency?: number;
  /** Attempts of one subscription under lease at once, across workers: one slow or dead endpoint holds up only itself. */
  readonly perSubscription?: number;
  /** How long the worker sleeps when nothing is due: an event written by another process waits at most this (plus its fan-out). */
  readonly pollMs?: number;
  readonly leaseMs?: number;
  readonly random?: () => number;
  readonly logError?: (line: string) => void;
}

export interface Dispatcher {
  /** Fans out what the outbox holds, then claims and attempts what is due, once; answers the attempts made (tests and benches drive it). */
  runOnce(): Promise<number>;
  /** Runs until `stop`: polls the database, so events written by any process are delivered. */
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
  const inFlight = new Set<Promise<void>>();
  let running = false;
  let loop: Promise<void> | undefined;
  let wake: (() => void) | undefined;

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
          unrecorded.push({ made, done: resolve });
          recordPending();
        }),
      (error: unknown) => logError(`Webhook delivery ${claimed.id} failed (its lease lets it be attempted again): ${describe(error)}`),
    );

  /** Fans out the whole backlog, a batch per transaction, so a burst does not wait a poll per batch. */
  const fanOutAll = async (): Promise<number> => {
    let total = 0;
    for (;;) {
      const taken = await fanOut(deps);
      total += taken;
      if (taken < FAN_OUT_BATCH || !running) return total;
    }
  };

  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref();
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      wake = undefined;
    });

  const cycle = async (): Promise<void> => {
    while (running) {
      try {
        const fanned = await fanOutAll();
        const room = concurrency - inFlight.size;
        const claimed = room > 0 ? await claimDeliveries(deps, { ...limits, take: room }) : [];
        for (const delivery of claimed) {
          const work = attempt(delivery).finally(() => {
            inFlight.delete(work);
            // Claim again once half the room is free, not after every attempt: a claim is a commit too.
            if (inFlight.size <= concurrency / 2) wake?.();
          });
          inFlight.add(work);
        }
        if ((claimed.length === 0 && fanned === 0) || inFlight.size > concurrency / 2) await pause(pollMs);
      } catch (error) {
        logError(`Webhook dispatch failed (next try in ${pollMs} ms): ${describe(error)}`);
        await pause(pollMs);
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
      const claimed = await claimDeliveries(deps, { ...limits, take: concurrency });
      await Promise.all(claimed.map(attempt));
      return claimed.length;
    },
    start() {
      if (running) return;
      running = true;
      loop = cycle();
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
      await Promise.all([...inFlight]);
    },
  };
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));
