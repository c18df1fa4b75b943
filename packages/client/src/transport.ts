import { type AccessTokenSource, providerOf } from './credentials';
import { errorFromResponse, StoreApiError } from './errors';
import { delayBeforeRetry, type RetryOptions, type RetryPolicy, retryAfterMs, retryPolicy } from './retry';
import { type AppInfo, userAgentHeader } from './user-agent';

/** The fetch the SDK sends through: the runtime's `fetch` by default. It should honour `request.signal`. */
export type FetchFunction = (request: Request) => Promise<Response>;

/** How requests are sent, for the store client and the OAuth client alike. */
export interface TransportOptions {
  /** Another fetch (a test's, a proxy's); the runtime's global `fetch` when left out. */
  fetch?: FetchFunction;
  retry?: RetryOptions;
  /**
   * How long one attempt may take, from sending to the last byte of the answer, in ms; default
   * 60,000, 0 for none. An attempt that runs out (before the answer, or while its body comes) is
   * aborted and counts as lost: it is sent again only when that is safe (a GET, or a request with
   * an `Idempotency-Key`), else it throws a `StoreApiError` with code `TIMEOUT`. A caller's own
   * `signal` still aborts at any time.
   */
  timeoutMs?: number;
  /** Names your app before the SDK in the `User-Agent` (`X-Client-User-Agent` in a browser). */
  appInfo?: AppInfo;
}

/** Longer than the service's slowest documented answer, short enough that a hung connection is noticed. */
export const DEFAULT_TIMEOUT_MS = 60_000;

/** Failing answers that say nothing was done and the same request may simply come again later. */
const TRY_LATER = new Set([429, 503]);
/** Failing answers after which the work may or may not have been done: repeated only when a repeat cannot do it twice. */
const MAYBE_DONE = new Set([500, 502, 504]);
/** Statuses whose answer has no body (a `Response` with one cannot be built). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** A request that may have done its work: repeat it only when a repeat cannot do it twice. */
const safeToRepeat = (request: Request): boolean => request.method === 'GET' || request.method === 'HEAD' || request.headers.has('Idempotency-Key');

async function askedToRetry(request: Request, response: Response): Promise<boolean> {
  if (TRY_LATER.has(response.status)) return true;
  if (MAYBE_DONE.has(response.status)) return safeToRepeat(request);
  if (response.status !== 409) return false;
  const error = await errorFromResponse(response.clone());
  return error.code === 'IDEMPOTENCY_KEY_IN_PROGRESS';
}

/** Node keeps running while a timer is armed: the attempt's deadline must not hold a finished program open. */
const unref = (timer: ReturnType<typeof setTimeout>): void => (timer as { unref?: () => void }).unref?.();

/**
 * One attempt under a deadline, its answer read to the last byte: the copy sent carries a signal
 * that the deadline and the caller's own signal abort, and the race stops waiting even for a fetch
 * that ignores its signal. The body is read inside the attempt (the service answers JSON documents,
 * which the client reads whole anyway), so a server that stalls mid-body fails the attempt, and
 * the attempt is retried when that is safe, as one that never answered is.
 */
async function attempt(baseFetch: FetchFunction, request: Request, timeoutMs: number): Promise<Response> {
  const caller = request.signal;
  if (caller.aborted) throw caller.reason;
  const controller = new AbortController();
  const abortedByCaller = () => controller.abort(caller.reason);
  caller.addEventListener('abort', abortedByCaller, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (timeoutMs > 0) {
    timer = setTimeout(() => controller.abort(StoreApiError.timeout(timeoutMs)), timeoutMs);
    unref(timer);
  }
  const aborted = new Promise<never>((_, reject) => {
    const fail = () => reject(controller.signal.reason);
    if (controller.signal.aborted) fail();
    else controller.signal.addEventListener('abort', fail, { once: true });
  });
  aborted.catch(() => {}); // raced below; unobserved once the answer wins
  try {
    const response = await Promise.race([baseFetch(new Request(request.clone(), { signal: controller.signal })), aborted]);
    if (response.body === null || NULL_BODY.has(response.status)) return response;
    const reading = response.arrayBuffer();
    reading.catch(() => {}); // raced below; a body cut by the abort rejects here too
    const body = await Promise.race([reading, aborted]);
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  } finally {
    clearTimeout(timer);
    caller.removeEventListener('abort', abortedByCaller);
  }
}

/**
 * Sends a request as the service's rules want it sent: signed with the current access token (and
 * once more with a refreshed one after a 401), named by the `User-Agent`, each attempt under the
 * timeout, retried with the same headers (so the same `Idempotency-Key`) when the service asks for
 * it (429, 503, `IDEMPOTENCY_KEY_IN_PROGRESS`), and after a 500, 502, 504, a timeout or a lost
 * connection when a repeat is safe, within the retry policy's bounds; every failure thrown as a
 * `StoreApiError` (a caller's abort as the signal's reason).
 */
export function sendingFetch(options: TransportOptions, credentials: AccessTokenSource | undefined): FetchFunction {
  const provider = credentials === undefined ? undefined : providerOf(credentials);
  const policy: RetryPolicy = retryPolicy(options.retry);
  const baseFetch: FetchFunction = options.fetch ?? ((request) => fetch(request));
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const [agentHeader, agent] = userAgentHeader(options.appInfo);
  return async (request) => {
    if (!request.headers.has(agentHeader)) request.headers.set(agentHeader, agent);
    let refreshed = false;
    for (let retry = 0; ; ) {
      const token = provider ? await provider.accessToken() : undefined;
      if (token !== undefined) request.headers.set('Authorization', `Bearer ${token}`);
      let response: Response;
      try {
        response = await attempt(baseFetch, request, timeoutMs);
      } catch (cause) {
        if (request.signal.aborted) throw request.signal.reason;
        const wait = retry < policy.maxRetries && safeToRepeat(request) ? delayBeforeRetry(policy, retry, undefined) : undefined;
        if (wait === undefined) throw cause instanceof StoreApiError ? cause : StoreApiError.network(cause);
        await policy.sleep(wait);
        retry += 1;
        continue;
      }
      if (response.ok) return response;
      if (response.status === 401 && token !== undefined && provider?.refresh && !refreshed) {
        refreshed = true;
        await response.body?.cancel();
        await provider.refresh(token);
        continue;
      }
      if (retry < policy.maxRetries && (await askedToRetry(request, response))) {
        const wait = delayBeforeRetry(policy, retry, retryAfterMs(response.headers.get('retry-after')));
        if (wait !== undefined) {
          await response.body?.cancel();
          await policy.sleep(wait);
          retry += 1;
          continue;
        }
      }
      throw await errorFromResponse(response);
    }
  };
}
