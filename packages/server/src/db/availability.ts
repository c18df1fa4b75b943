import type { Knex } from 'knex';

/**
 * Connection-level failures: the database is down, restarting, unreachable or out of connections,
 * as opposed to a statement it refused. Requests that meet one answer 503 with `Retry-After`
 * (the client's retry is right), never 500. PostgreSQL's class 08 (connection exception), 57P01–03
 * (shutdown, cannot connect now), 53300 (too many connections); Node's socket errors; Knex's pool
 * acquire timeout; SQLite's busy after its wait.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'EPIPE',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  'SQLITE_BUSY',
]);
const UNAVAILABLE_MESSAGES = [
  /Connection terminated/i,
  /Knex: Timeout acquiring a connection/i,
  /connection is closed/i,
  /Client has encountered a connection error/i,
];

export function isDatabaseUnavailable(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const { code, name, message } = error as { code?: unknown; name?: unknown; message?: unknown };
  if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
  if (name === 'KnexTimeoutError') return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((pattern) => pattern.test(message))) return true;
  // pg wraps some socket failures; AggregateError carries one per address tried.
  const nested = (error as { cause?: unknown; errors?: unknown }).errors;
  if (Array.isArray(nested) && nested.some(isDatabaseUnavailable)) return true;
  const cause = (error as { cause?: unknown }).cause;
  return cause !== undefined && cause !== error && isDatabaseUnavailable(cause);
}

/** One `select 1`, answered within `timeoutMs` or counted as down: what readiness asks. */
export async function databaseAnswers(db: Knex, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([db.raw('select 1').then(() => true as const), timedOut]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

export interface WaitOptions {
  /** Give up after this long (the start then exits 1 with the last error). */
  readonly timeoutMs: number;
  readonly log: (message: string) => void;
  /** The database as the operator knows it, for the final refusal: the setting that names it and where it points. */
  readonly named: string;
  readonly signal?: AbortSignal;
  /** First wait, doubled after each failure up to `maxDelayMs` (with jitter, so replicas spread out). */
  readonly firstDelayMs?: number;
  readonly maxDelayMs?: number;
}

/**
 * Waits for the database to answer, retrying with backoff: in compose or Kubernetes the service
 * often starts before its database. Each wait is logged; a failure that is not about reaching the
 * database (a wrong password, a missing database) is thrown at once, since waiting will not mend it.
 */
export async function waitForDatabase(db: Knex, { timeoutMs, log, named, signal, firstDelayMs = 250, maxDelayMs = 5000 }: WaitOptions): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let delay = firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      await db.raw('select 1');
      return;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      if (!isDatabaseUnavailable(error) || Date.now() + delay > deadline || signal?.aborted) {
        throw new Error(`${named} does not answer: ${reason}`);
      }
      const wait = Math.round(delay * (0.5 + Math.random() / 2));
      log(`the database does not answer yet (${reason}); attempt ${attempt}, retrying in ${wait} ms`);
      await new Promise((resolve) => setTimeout(resolve, wait));
      delay = Math.min(delay * 2, maxDelayMs);
    }
  }
}
