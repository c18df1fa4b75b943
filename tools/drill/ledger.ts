import { percentile } from '../bench/stats';

/**
 * What a fault's load sent and got back, and the drill's judgement of it: pure, so that the rules
 * (what counts as lost, which 5xx is allowed) are tested without a server (tools/drill/test).
 */

/** One request's outcome: an answer's status (with whether a 503 said when to retry), or no answer at all. */
export type Outcome = { readonly status: number; readonly retryAfter: boolean; readonly ms: number } | { readonly error: string; readonly ms: number };

export interface WriteRecord {
  /** The product's name: unique per write, how it is found afterwards. */
  readonly name: string;
  readonly outcome: Outcome;
}

export class Ledger {
  readonly writes: WriteRecord[] = [];
  readonly reads: Outcome[] = [];

  wrote(name: string, outcome: Outcome): void {
    this.writes.push({ name, outcome });
  }

  read(outcome: Outcome): void {
    this.reads.push(outcome);
  }
}

const answered = (outcome: Outcome): outcome is Extract<Outcome, { status: number }> => 'status' in outcome;
const acknowledged = (outcome: Outcome) => answered(outcome) && outcome.status >= 200 && outcome.status < 300;

/** The figures of one fault's load. */
export interface LoadFigures {
  readonly writes: { readonly sent: number; readonly acknowledged: number; readonly found: number; readonly lost: readonly string[] };
  readonly reads: { readonly sent: number; readonly ok: number; readonly p50: number; readonly p99: number; readonly max: number };
  /** 5xx answers: 503 with Retry-After (allowed: the client is told when to retry), and every other one by status. */
  readonly serverErrors: { readonly unavailableWithRetryAfter: number; readonly others: Readonly<Record<string, number>> };
  /** Other answers that were not 2xx (4xx), by status: none is expected. */
  readonly refusals: Readonly<Record<string, number>>;
  /** Requests that got no answer (a connection refused or reset, a timeout): never acknowledged, so never counted lost. */
  readonly unanswered: number;
}

const countBy = (statuses: readonly number[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
};

/** The figures, given the names of the writes found in the database afterwards. */
export function figuresOf(ledger: Ledger, found: ReadonlySet<string>): LoadFigures {
  const all = [...ledger.writes.map((write) => write.outcome), ...ledger.reads];
  const answers = all.filter(answered);
  const acknowledgedWrites = ledger.writes.filter((write) => acknowledged(write.outcome));
  const readTimes = ledger.reads.filter(acknowledged).map((read) => read.ms);
  readTimes.sort((a, b) => a - b);
  return {
    writes: {
      sent: ledger.writes.length,
      acknowledged: acknowledgedWrites.length,
      found: acknowledgedWrites.filter((write) => found.has(write.name)).length,
      lost: acknowledgedWrites.filter((write) => !found.has(write.name)).map((write) => write.name),
    },
    reads: {
      sent: ledger.reads.length,
      ok: readTimes.length,
      p50: Math.round(percentile(readTimes, 0.5)),
      p99: Math.round(percentile(readTimes, 0.99)),
      max: Math.round(readTimes.at(-1) ?? Number.NaN),
    },
    serverErrors: {
      unavailableWithRetryAfter: answers.filter((answer) => answer.status === 503 && answer.retryAfter).length,
      others: countBy(answers.filter((answer) => answer.status >= 500 && !(answer.status === 503 && answer.retryAfter)).map((answer) => answer.status)),
    },
    refusals: countBy(answers.filter((answer) => answer.status < 200 || (answer.status >= 300 && answer.status < 500)).map((answer) => answer.status)),
    unanswered: all.length - answers.length,
  };
}

/** Whether each event recorded for the fault's writes reached the receiver (at least once). */
export interface EventFigures {
  readonly recorded: number;
  readonly delivered: number;
  readonly missing: readonly string[];
  /** From the fault's end until the last was delivered, in ms (undefined when some never were). */
  readonly deliveredWithinMs: number | undefined;
}

export function eventsOf(recorded: readonly string[], received: ReadonlySet<string>, deliveredWithinMs: number | undefined): EventFigures {
  const missing = recorded.filter((id) => !received.has(id));
  return {
    recorded: recorded.length,
    delivered: recorded.length - missing.length,
    missing,
    deliveredWithinMs: missing.length === 0 ? deliveredWithinMs : undefined,
  };
}

/**
 * What the drill holds each fault to: no acknowledged write lost, no 5xx but a 503 with
 * Retry-After, no other refusal, every event delivered. An empty list: the fault passed.
 */
export function problemsOf(load: LoadFigures, events: EventFigures | undefined): string[] {
  const problems: string[] = [];
  if (load.writes.lost.length > 0) problems.push(`${load.writes.lost.length} acknowledged writes lost (${load.writes.lost.slice(0, 3).join(', ')}…)`);
  const others = Object.entries(load.serverErrors.others);
  if (others.length > 0) problems.push(`5xx other than 503 with Retry-After: ${others.map(([status, count]) => `${count} × ${status}`).join(', ')}`);
  const refusals = Object.entries(load.refusals);
  if (refusals.length > 0) problems.push(`refused: ${refusals.map(([status, count]) => `${count} × ${status}`).join(', ')}`);
  if (events && events.missing.length > 0) problems.push(`${events.missing.length} of ${events.recorded} events never delivered`);
  return problems;
}

const counts = (byStatus: Readonly<Record<string, number>>) =>
  Object.entries(byStatus)
    .map(([status, count]) => `${count} × ${status}`)
    .join(', ') || 'none';

/** The report's lines for one fault's load and events. */
export function describeFigures(load: LoadFigures, events: EventFigures | undefined): string[] {
  const lines = [
    `writes     sent ${load.writes.sent}, acknowledged (2xx) ${load.writes.acknowledged}, found afterwards ${load.writes.found}, lost ${load.writes.lost.length}`,
    `reads      sent ${load.reads.sent}, answered 200 ${load.reads.ok}, p50 ${load.reads.p50} ms, p99 ${load.reads.p99} ms, max ${load.reads.max} ms`,
    `5xx        503 with Retry-After ${load.serverErrors.unavailableWithRetryAfter}, others ${counts(load.serverErrors.others)}; 4xx ${counts(load.refusals)}`,
    `no answer  ${load.unanswered} (connection refused or reset: never acknowledged)`,
  ];
  if (events) {
    lines.push(
      `events     recorded ${events.recorded}, delivered ${events.delivered}, missing ${events.missing.length}${
        events.deliveredWithinMs === undefined ? '' : `, the last ${(events.deliveredWithinMs / 1000).toFixed(1)} s after the fault ended`
      }`,
    );
  }
  return lines;
}
