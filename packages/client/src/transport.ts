import { type AccessTokenSource, providerOf } from './credentials';
import { errorFromResponse, StoreApiError } from './errors';
import { delayBeforeRetry, type RetryPolicy, retryAfterMs } from './retry';

export type FetchFunction = (request: Request) => Promise<Response>;

/** Answers that say "the work was not done, come back later": the same request may be sent again. */
async function askedToRetry(response: Response): Promise<boolean> {
  if (response.status === 429 || response.status === 503) return true;
  if (response.status !== 409) return false;
  const error = await errorFromResponse(response.clone());
  return error.code === 'IDEMPOTENCY_KEY_IN_PROGRESS';
}

/** A request that did not complete may have done its work: repeat it only when a repeat cannot do it twice. */
const safeToRepeat = (request: Request): boolean => request.method === 'GET' || request.method === 'HEAD' || request.headers.has('Idempotency-Key');

/**
 * Sends a request as the service's rules want it sent: signed with the current access token (and
 * once more with a refreshed one after a 401), retried with the same headers (so the same
 * `Idempotency-Key`) when the service asks for it or the connection failed, within the policy's
 * bounds; every failure thrown as a `StoreApiError`.
 */
export function sendingFetch(baseFetch: FetchFunction, policy: RetryPolicy, credentials: AccessTokenSource | undefined): FetchFunction {
  const provider = credentials === undefined ? undefined : providerOf(credentials);
  return async (request) => {
    let refreshed = false;
    for (let retry = 0; ; ) {
      const token = provider ? await provider.accessToken() : undefined;
      if (token !== undefined) request.headers.set('Authorization', `Bearer ${token}`);
      let response: Response;
      try {
        response = await baseFetch(request.clone());
      } catch (cause) {
        const wait = retry < policy.maxRetries && safeToRepeat(request) ? delayBeforeRetry(policy, retry, undefined) : undefined;
        if (wait === undefined) throw StoreApiError.network(cause);
        await policy.sleep(wait);
        retry += 1;
        continue;
      }
      if (response.ok) return response;
      if (response.status === 401 && token !== undefined && provider?.refresh && !refreshed) {
        refreshed = true;
        await provider.refresh(token);
        continue;
      }
      if (retry < policy.maxRetries && (await askedToRetry(response))) {
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
