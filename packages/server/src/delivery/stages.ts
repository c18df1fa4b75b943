import type { WebhookAttemptOutcome } from '../services/metrics';
import { type AttemptMade, attemptDelivery } from './attempt';
import { type Claim, type ClaimedDelivery, claimDeliveries } from './claim';
import { FAN_OUT_BATCH, fanOut } from './fan-out';
import { recordAndClaim, recordAttempts, releaseClaims } from './record';
import { signal, takeAll, untilSignalled, type WorkerSettings, type WorkerState } from './worker-state';

/**
 * The stages of a worker's turn, each a plain function of the worker's settings and state: the
 * fan-out, the claim (with the record of what was answered), the hold, the attempt and the record.
 * The loop (dispatcher.ts) only runs them in turn, waits for news and stops.
 */

/**
 * How long an answer waits for others to be recorded with, at most. Half of what was held answered
 * starts a turn sooner; but deliveries held for a hanging endpoint may never be answered, and
 * without this bound the answers of every other subscription would wait for the poll.
 */
const ANSWER_WAIT_MS = 25;

/** Fans out the whole backlog, a batch per transaction, so a burst does not wait a poll per batch: answers the deliveries written. */
export async function fanOutAll({ deps }: WorkerSettings, state: WorkerState): Promise<number> {
  let deliveries = 0;
  state.outboxUnread = false;
  state.fannedOutAt = performance.now();
  for (;;) {
    const fanned = await fanOut(deps);
    deliveries += fanned.deliveries;
    if (fanned.events < FAN_OUT_BATCH || !state.running) return deliveries;
  }
}

/** The claim: records what was answered and claims up to the free room, in one turn; answers the deliveries claimed. */
export async function recordAndClaimDue(settings: WorkerSettings, state: WorkerState, room: number): Promise<Claim> {
  const settled = takeAll(state.answered);
  state.answersWaited = false;
  state.answerBatch += 1;
  try {
    const claim = await recordAndClaim(
      settings.deps,
      settled.map((entry) => entry.made),
      { ...settings.limits, take: Math.max(0, room) },
      settings.random,
    );
    settings.metrics.webhookClaim(claim.deliveries.length);
    return claim;
  } catch (error) {
    if (settled.length > 0) settings.logError(recordingFailedLine(settled.length, error));
    throw error;
  } finally {
    for (const entry of settled) entry.done();
  }
}

/** The claim alone, of as many as the worker has slots for (`runOnce`). */
export async function claimForSlots(settings: WorkerSettings): Promise<ClaimedDelivery[]> {
  const { deliveries } = await claimDeliveries(settings.deps, { ...settings.limits, take: settings.concurrency });
  settings.metrics.webhookClaim(deliveries.length);
  return deliveries;
}

/** The hold: keeps what was claimed, and starts what there are slots for. */
export function hold(settings: WorkerSettings, state: WorkerState, deliveries: readonly ClaimedDelivery[]): void {
  state.held.add(deliveries);
  startHeld(settings, state);
}

/** Starts the held deliveries there are slots for (each subscription's and the worker's). */
export function startHeld(settings: WorkerSettings, state: WorkerState): void {
  if (state.stopping) return;
  const { start, release } = state.held.startable(settings.deps.clock.now());
  state.unsendable.push(...release);
  for (const delivery of start) {
    const work = attempt(settings, state, delivery).finally(() => state.inFlight.delete(work));
    state.inFlight.add(work);
  }
}

/** The attempt: sends one; its outcome waits in `answered` for the next turn, which records it. Its slot goes to the next held delivery at once. */
function attempt(settings: WorkerSettings, state: WorkerState, claimed: ClaimedDelivery): Promise<void> {
  return attemptDelivery(settings.deps, claimed).then(
    (made) => {
      state.held.ended(claimed);
      startHeld(settings, state);
      if (!made) return signal(state);
      settings.metrics.webhookAttempt(attemptOutcomeOf(made), made.record.latency_ms / 1000);
      if (made.detail !== undefined) settings.logWarning(attemptFailureLine(made));
      return untilRecorded(state, made);
    },
    (error: unknown) => {
      state.held.ended(claimed);
      startHeld(settings, state);
      settings.logError(`Webhook delivery ${claimed.id} failed (its lease lets it be attempted again): ${describe(error)}`);
      signal(state);
    },
  );
}

/** Leaves an answer for the next turn to record, and resolves once it is recorded (or failed to be). */
function untilRecorded(state: WorkerState, made: AttemptMade): Promise<void> {
  return new Promise<void>((resolve) => {
    if (state.answered.length === 0) {
      const batch = state.answerBatch;
      setTimeout(() => {
        if (batch !== state.answerBatch) return;
        state.answersWaited = true;
        signal(state);
      }, ANSWER_WAIT_MS).unref();
    }
    state.answered.push({ made, done: resolve });
    signal(state);
  });
}

/** The record alone: the answers still waiting, without claiming (the stop, `runOnce`). */
async function recordAnswered(settings: WorkerSettings, state: WorkerState): Promise<void> {
  while (state.answered.length > 0) {
    const settled = takeAll(state.answered);
    try {
      await recordAttempts(
        settings.deps,
        settled.map((entry) => entry.made),
        settings.random,
      );
    } catch (error) {
      settings.logError(recordingFailedLine(settled.length, error));
    } finally {
      for (const entry of settled) entry.done();
    }
  }
}

/** Waits for the attempts on the wire (each ends within its 15 s), and for the held ones they make room for, and records every answer. */
export async function settle(settings: WorkerSettings, state: WorkerState): Promise<void> {
  for (;;) {
    await recordAnswered(settings, state);
    if (state.held.held === 0 && state.answered.length === 0) return;
    if (state.answered.length === 0) await untilSignalled(state);
  }
}

/** Lets go of deliveries this worker will not send: their queues are due for any worker at once. */
export async function letGo({ deps, logError }: WorkerSettings, deliveries: ClaimedDelivery[]): Promise<void> {
  try {
    await releaseClaims(deps, deliveries);
  } catch (error) {
    logError(`Letting ${deliveries.length} webhook deliveries go failed (their leases lapse): ${describe(error)}`);
  }
}

/** Waits for what is on the wire, records it, and lets go of what will not be sent (with `unsent`): the end of `runOnce` and of the stop. */
export async function drainAndLetGo(settings: WorkerSettings, state: WorkerState, unsent: readonly ClaimedDelivery[] = []): Promise<void> {
  await settle(settings, state);
  await Promise.all([...state.inFlight]);
  await letGo(settings, [...unsent, ...takeAll(state.unsendable)]);
}

export const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

const recordingFailedLine = (count: number, error: unknown) =>
  `Recording ${count} webhook attempts failed (their leases let them be attempted again): ${describe(error)}`;

/** A 2xx, another answer, or none (no status: refused address, timeout, connection failed). */
const attemptOutcomeOf = (made: AttemptMade): WebhookAttemptOutcome =>
  made.record.outcome === 'succeeded' ? 'succeeded' : made.status === null ? 'unreachable' : 'rejected';

/** The operator's line for an attempt that got no answer: which delivery, where, and what Node said (the app sees only its class). */
const attemptFailureLine = (made: AttemptMade): string =>
  `Webhook attempt ${made.record.attempt} of delivery ${made.claimed.id} (subscription ${made.claimed.subscription.id}, store ${made.claimed.subscription.store_id}) got no answer: ${made.detail}`;
