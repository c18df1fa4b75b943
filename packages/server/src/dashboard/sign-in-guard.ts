import { createHash } from 'node:crypto';
import type { RateLimiterRes, RateLimiterStoreAbstract } from 'rate-limiter-flexible';
import { clientNetworkOf } from '../core/networks';
import type { Deps } from '../services/container';
import type { ExpiryRule } from '../services/housekeeping';

const MINUTE_S = 60;
const HOUR_S = 60 * MINUTE_S;
const DAY_S = 24 * HOUR_S;

/**
 * Wrong passwords in a row for one e-mail from one address before that pair is blocked: room for
 * typos and a half-remembered password, far too few to guess one. A correct password ends the run.
 */
export const FAILURES_IN_A_ROW = 10;
/** A run of failures that no success ends is forgotten this long after its first failure. */
export const FAILURE_RUN_MEMORY_S = 90 * DAY_S;
/** The first block of a pair; each further block in the same run lasts twice as long as the last. */
export const FIRST_PAIR_BLOCK_S = 15 * MINUTE_S;
/** The longest a pair is blocked: growing further would only lock out its owner for longer. */
export const LONGEST_PAIR_BLOCK_S = DAY_S;
/**
 * Failures from one address in a day, whatever the e-mails, before the address is blocked for a
 * day: a person never gets near it; someone trying many accounts slowly does. A success does not
 * reset it, or a caller could clear it by signing in to an account of its own between guesses.
 */
export const FAILURES_PER_ADDRESS_PER_DAY = 100;
export const ADDRESS_BLOCK_S = DAY_S;

/** The table of `005_sign_in_limits`, shared by the three counters (their keys carry a prefix). */
export const SIGN_IN_LIMITS_TABLE = 'sign_in_limits';
/** Counters are deleted only an hour after they expire, so instances whose clocks differ a little agree. */
const KEPT_AFTER_EXPIRY_MS = HOUR_S * 1000;

/** The housekeeping job's rule for the counters: rows past their `expire` (null: never) by an hour. */
export const signInLimitsExpiry: ExpiryRule = {
  table: SIGN_IN_LIMITS_TABLE,
  key: 'key',
  expired: (rows, now) => rows.where('expire', '<', now - KEPT_AFTER_EXPIRY_MS),
};

export interface SignInAttempt {
  /** As the owner would type it again: trimmed and lower-cased. */
  email: string;
  /** The client address (`req.ip`). */
  address: string;
}

export interface SignInRefusal {
  retryAfterSeconds: number;
}

/**
 * Sign-in protection for the dashboard: only failures count, per (e-mail, address) pair and per
 * address, in the database so that every instance shares them. A flood of wrong passwords for an
 * e-mail from one address blocks that pair and that address, never the owner elsewhere.
 */
export interface SignInGuard {
  /** Before the password is checked: why this caller may not try now, if its pair or address is blocked. */
  refusal(attempt: SignInAttempt): Promise<SignInRefusal | undefined>;
  /** Counts a wrong e-mail or password; the refusal if this failure blocks the caller. */
  failed(attempt: SignInAttempt): Promise<SignInRefusal | undefined>;
  /** A correct password: the pair's run of failures, and with it the growth of its blocks, ends. */
  succeeded(attempt: SignInAttempt): Promise<void>;
}

interface Counter {
  keyPrefix: string;
  points: number;
  duration: number;
}

/** rate-limiter-flexible's store for the service's database, on the table the migration made (the guard sweeps it). */
const storedCounter = ({ db, engine }: Deps, counter: Counter): RateLimiterStoreAbstract =>
  engine.quotas.storedLimiter(db, { ...counter, tableName: SIGN_IN_LIMITS_TABLE });

/** A blocked key holds more points than its counter allows (rate-limiter-flexible's `block`). */
const blockedMs = (counter: RateLimiterStoreAbstract, state: RateLimiterRes | null): number =>
  state !== null && state.consumedPoints > counter.points ? state.msBeforeNext : 0;

const refusalFor = (blockMs: number): SignInRefusal | undefined => (blockMs > 0 ? { retryAfterSeconds: Math.max(1, Math.ceil(blockMs / 1000)) } : undefined);

/** The n-th block of a run (from 1): doubling from the first, up to the longest. */
export const pairBlockSeconds = (blocksInRun: number): number => Math.min(FIRST_PAIR_BLOCK_S * 2 ** (blocksInRun - 1), LONGEST_PAIR_BLOCK_S);

/** Counters are keyed by a hash of the e-mail: it keeps keys short and leaves no e-mail in the table. */
const pairKey = ({ email, address }: SignInAttempt): string => `${createHash('sha256').update(email).digest('base64url')}:${clientNetworkOf(address)}`;

/** Builds the guard once per app: the counters are objects over the database, not per request. */
export function createSignInGuard(deps: Deps): SignInGuard {
  const pairFailures = storedCounter(deps, { keyPrefix: 'sign_in_pair', points: FAILURES_IN_A_ROW, duration: FAILURE_RUN_MEMORY_S });
  // Only counts the blocks of a run (the library's "dynamic block duration" recipe); it never blocks itself.
  const pairBlocks = storedCounter(deps, { keyPrefix: 'sign_in_pair_blocks', points: Number.MAX_SAFE_INTEGER, duration: FAILURE_RUN_MEMORY_S });
  const addressFailures = storedCounter(deps, { keyPrefix: 'sign_in_address', points: FAILURES_PER_ADDRESS_PER_DAY, duration: DAY_S });

  /** Blocks the pair for longer with each block of its run; the seconds it is blocked. */
  async function blockPair(key: string): Promise<number> {
    const { consumedPoints: blocksInRun } = await pairBlocks.penalty(key);
    const seconds = pairBlockSeconds(blocksInRun);
    await pairFailures.block(key, seconds);
    return seconds;
  }

  return {
    async refusal(attempt) {
      const [pair, address] = await Promise.all([pairFailures.get(pairKey(attempt)), addressFailures.get(clientNetworkOf(attempt.address))]);
      return refusalFor(Math.max(blockedMs(pairFailures, pair), blockedMs(addressFailures, address)));
    },

    async failed(attempt) {
      const key = pairKey(attempt);
      const network = clientNetworkOf(attempt.address);
      const [pair, address] = await Promise.all([pairFailures.penalty(key), addressFailures.penalty(network)]);
      const [pairBlockS, addressBlockS] = await Promise.all([
        pair.consumedPoints >= FAILURES_IN_A_ROW ? blockPair(key) : 0,
        address.consumedPoints >= FAILURES_PER_ADDRESS_PER_DAY ? addressFailures.block(network, ADDRESS_BLOCK_S).then(() => ADDRESS_BLOCK_S) : 0,
      ]);
      return refusalFor(Math.max(pairBlockS, addressBlockS) * 1000);
    },

    async succeeded(attempt) {
      const key = pairKey(attempt);
      await Promise.all([pairFailures.delete(key), pairBlocks.delete(key)]);
    },
  };
}
