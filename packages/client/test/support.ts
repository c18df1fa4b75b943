import type { SuiteHarness } from '@svc/server/test/support/harness';
import { type Listening, listen } from '@svc/server/test/support/listen';
import { StoreApiError } from '../src';

/** The harness's app on a real port of this machine, closed with the suite: what a client app reaches. */
export async function serve(h: SuiteHarness): Promise<Listening> {
  const listening = await listen(h.app);
  h.atEnd(() => listening.close());
  return listening;
}

/** One request as the client sent it. */
export interface SentRequest {
  method: string;
  path: string;
  headers: Headers;
  body: string;
}

/**
 * A fetch that records what the client sends and then does what `around` says with the real
 * request (`send` reaches the server): drop the answer, fake one, or pass it on.
 */
export function recordingFetch(around: (sent: SentRequest, send: () => Promise<Response>, index: number) => Promise<Response> = (_sent, send) => send()) {
  const sent: SentRequest[] = [];
  const fetchImpl = async (request: Request): Promise<Response> => {
    const body = request.body ? await request.clone().text() : '';
    const record = { method: request.method, path: new URL(request.url).pathname, headers: new Headers(request.headers), body };
    sent.push(record);
    return around(record, () => fetch(request), sent.length - 1);
  };
  return { sent, fetch: fetchImpl };
}

/** What a fetch throws when the connection breaks after the server did the work (the answer never arrives). */
export const connectionReset = () =>
  Object.assign(new TypeError('fetch failed'), { cause: Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }) });

/** A sleep that returns at once and keeps the waits asked for. */
export function recordingSleep(then: (ms: number) => Promise<void> | void = () => {}) {
  const waits: number[] = [];
  return {
    waits,
    sleep: async (ms: number) => {
      waits.push(ms);
      await then(ms);
    },
  };
}

/** Runs `call` and returns what it threw, which must be a StoreApiError (a success or another error fails the test). */
export async function failureOf(call: () => Promise<unknown>): Promise<StoreApiError> {
  try {
    await call();
  } catch (error) {
    if (error instanceof StoreApiError) return error;
    throw error;
  }
  throw new Error('The call succeeded: a StoreApiError was expected');
}
