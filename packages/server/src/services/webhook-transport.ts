import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Clock } from '../core/clock';

/**
 * Which addresses a webhook may reach. Only ordinary public unicast addresses, judged after parsing
 * (ipaddr.js), so no spelling of an address slips through: link-local (the cloud metadata address
 * 169.254.169.254), unspecified, broadcast, multicast, private, carrier-grade NAT, reserved and
 * documentation ranges, IPv6 link-local, unique-local and unspecified, and every IPv6 form that
 * embeds an IPv4 address (IPv4-mapped, NAT64, 6to4, Teredo) are refused. Loopback is allowed only
 * outside production, for a receiver on the developer's machine.
 */
export interface AddressPolicy {
  readonly allowLoopback: boolean;
}

/** Why an address is refused, or undefined when a webhook may reach it. Input that is not an IP address is refused. */
export function refusedAddress(address: string, policy: AddressPolicy): string | undefined {
  const bare = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  if (!ipaddr.isValid(bare)) return 'is not an IP address';
  const parsed = ipaddr.parse(bare);
  const range = parsed.range();
  if (range === 'unicast') return undefined;
  if (range === 'loopback' && policy.allowLoopback) return undefined;
  return `is in a range webhooks may not reach (${range})`;
}

/** An IP address written as the URL parser leaves a host (IPv6 in brackets), or undefined for a name. */
export function ipLiteralOf(hostname: string): string | undefined {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return ipaddr.isValid(bare) && (bare.includes(':') || ipaddr.IPv4.isValidFourPartDecimal(bare)) ? bare : undefined;
}

/** Every address a name resolves to; injected so tests decide what a name resolves to. */
export type Resolver = (hostname: string) => Promise<readonly string[]>;

export const systemResolver: Resolver = async (hostname) => (await dns.promises.lookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);

export interface WebhookRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * What the endpoint answered, or why nothing was answered; `latencyMs` is from sending to the end of
 * the answer or the failure. `retryAfterMs`: how long a 429 or 503 asked us to wait (`Retry-After`).
 * `error` is what the app is told (the attempt's stored reason: {@link noAnswerText}); `detail`, what
 * the operator's log gets: the name, the addresses it resolved to, Node's own message.
 */
export type WebhookOutcome =
  | { readonly status: number; readonly latencyMs: number; readonly retryAfterMs?: number }
  | { readonly error: string; readonly detail?: string; readonly latencyMs: number };

/** Why an attempt got no answer, in the words an app is shown: no address, DNS answer or library message in them. */
export const NO_ANSWER = {
  invalidUrl: 'The endpoint URL is not valid.',
  nonPublic: 'The endpoint resolves to a non-public address.',
  timeout: (timeoutMs: number) => `The endpoint did not answer within ${timeoutMs % 1000 === 0 ? `${timeoutMs / 1000} seconds` : `${timeoutMs} ms`}.`,
} as const;

/** Node's error codes, by what the app is told of them (the code is added in parentheses). */
const CODE_WORDS: ReadonlyArray<readonly [RegExp, string]> = [
  [/^EREFUSEDADDRESS$/, NO_ANSWER.nonPublic],
  [/^(ENOTFOUND|EAI_NONAME|EAI_NODATA|EAI_FAIL)$/, "The endpoint's host name has no address"],
  [/^EAI_AGAIN$/, "The endpoint's host name could not be resolved for now"],
  [/^ECONNREFUSED$/, 'The endpoint refused the connection'],
  [/^(ECONNRESET|EPIPE|ECONNABORTED)$/, 'The endpoint closed the connection before answering'],
  [/^(ETIMEDOUT|ESOCKETTIMEDOUT)$/, 'The connection to the endpoint timed out'],
  [/^(EHOSTUNREACH|ENETUNREACH|EHOSTDOWN|ENETDOWN)$/, 'The endpoint could not be reached'],
  [/^(ERR_TLS_|ERR_SSL_)|CERT|SELF_SIGNED|UNABLE_TO_|HOSTNAME_MISMATCH|^EPROTO$/, 'The TLS handshake with the endpoint failed'],
  [/^HPE_/, "The endpoint's answer is not valid HTTP"],
];

/** A code that is only a code (Node's are upper-case words), so it can be said as it is. */
const PLAIN_CODE = /^[A-Z][A-Z0-9_]{1,62}$/;

/**
 * What the app is told of a failure with this Node error code: its class in plain words, and the
 * code, never the error's message (which quotes the addresses connected to: `connect ECONNREFUSED
 * 10.0.0.7:443`).
 */
export function noAnswerText(code: string | undefined): string {
  const plain = code !== undefined && PLAIN_CODE.test(code) ? code : undefined;
  const words = plain === undefined ? undefined : CODE_WORDS.find(([pattern]) => pattern.test(plain))?.[1];
  if (words === NO_ANSWER.nonPublic) return words;
  if (plain === undefined) return 'The request to the endpoint failed.';
  return `${words ?? 'The request to the endpoint failed'} (${plain}).`;
}

/** The statuses whose `Retry-After` is heeded: the receiver is overloaded or down for a known while (RFC 9110, 10.2.3). */
const ASKS_TO_WAIT = new Set([429, 503]);

/**
 * A `Retry-After` value as a wait from `now`: delay-seconds or an HTTP-date (a date already past is
 * no wait). Anything else (a negative or fractional number, a text no date parser reads) is undefined:
 * a malformed header does not move the schedule.
 */
export function retryAfterMs(value: string | undefined, now: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  if (!/[a-z]/i.test(text)) return undefined;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Sends one delivery attempt; never throws (a failure is an outcome). */
export type WebhookTransport = (request: WebhookRequest) => Promise<WebhookOutcome>;

export interface TransportOptions {
  readonly policy: AddressPolicy;
  readonly resolve?: Resolver;
  readonly clock: Clock;
  /** The design's 15 seconds per attempt. */
  readonly timeoutMs?: number;
}

export const ATTEMPT_TIMEOUT_MS = 15_000;
/** Only the status counts; a receiver's body is read (so the connection can be reused) up to this and dropped. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * The HTTP client of deliveries (node:http/https, keep-alive). The name is resolved by `resolve` and
 * every address it gives is judged before the connection is made to one of them, in the socket's
 * own lookup, so the address checked is the address called (no second resolution a rebinding DNS
 * server could answer differently).
 */
export function httpTransport({ policy, resolve = systemResolver, clock, timeoutMs = ATTEMPT_TIMEOUT_MS }: TransportOptions): WebhookTransport {
  const agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };
  const lookup: LookupFunction = (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        const usable = addresses.filter(
          (address) => options.family === undefined || options.family === 0 || ipaddr.parse(address).kind() === (options.family === 6 ? 'ipv6' : 'ipv4'),
        );
        const refused = addresses.map((address) => ({ address, why: refusedAddress(address, policy) })).find((entry) => entry.why);
        // The DNS answer goes to the operator's log only (`detail`): the app is told the class.
        if (refused)
          return callback(Object.assign(new Error(`${hostname} resolves to ${refused.address}, which ${refused.why}`), { code: 'EREFUSEDADDRESS' }), '', 0);
        if (usable.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
        const entries = usable.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
        if (options.all) return (callback as unknown as (error: null, entries: { address: string; family: number }[]) => void)(null, entries);
        const [first] = entries as [{ address: string; family: number }];
        return callback(null, first.address, first.family);
      },
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), '', 0),
    );
  };
  return (request) =>
    new Promise((resolvePromise) => {
      const started = clock.now();
      let settled = false;
      // A response can end, close and fail: the first of them is the outcome.
      const finish = (outcome: { status: number; retryAfterMs?: number } | { error: string; detail?: string }) => {
        if (settled) return;
        settled = true;
        resolvePromise({ ...outcome, latencyMs: Math.max(0, clock.now() - started) });
      };
      let url: URL;
      try {
        url = new URL(request.url);
      } catch {
        return finish({ error: NO_ANSWER.invalidUrl });
      }
      const literal = ipLiteralOf(url.hostname);
      const refused = literal === undefined ? undefined : refusedAddress(literal, policy);
      if (refused) return finish({ error: NO_ANSWER.nonPublic, detail: `The endpoint's address ${literal} ${refused}.` });
      const secure = url.protocol === 'https:';
      const timer = setTimeout(() => current?.destroy(new TimeoutError()), timeoutMs);
      let current: http.ClientRequest | undefined;
      const send = (isRetry: boolean): void => {
        const outgoing = (secure ? https : http).request(url, {
          method: 'POST',
          headers: { ...request.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(request.body)) },
          // The second try gets a connection of its own: the pool may hold more connections the
          // receiver closed at the same idle timeout.
          agent: isRetry ? false : secure ? agents.https : agents.http,
          lookup,
        });
        current = outgoing;
        outgoing.on('response', (response) => {
          let read = 0;
          response.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_RESPONSE_BYTES) response.destroy();
          });
          const status = response.statusCode ?? 0;
          const wait = ASKS_TO_WAIT.has(status) ? retryAfterMs(response.headers['retry-after'], clock.now()) : undefined;
          const done = () => {
            clearTimeout(timer);
            finish(wait === undefined ? { status } : { status, retryAfterMs: wait });
          };
          response.on('end', done);
          response.on('close', done);
          response.on('error', done);
        });
        outgoing.on('error', (error) => {
          // A kept-alive connection the receiver closed as it was reused (its idle timeout, often 5 s,
          // met our request): the request never reached it, so it is sent once more on a new connection
          // (the remedy Node's http docs give) instead of spending a retry of the schedule.
          if (!isRetry && outgoing.reusedSocket && (error as NodeJS.ErrnoException).code === 'ECONNRESET') return send(true);
          clearTimeout(timer);
          finish(error instanceof TimeoutError ? { error: NO_ANSWER.timeout(timeoutMs) } : failureOf(error));
        });
        outgoing.end(request.body);
      };
      send(false);
    });
}

class TimeoutError extends Error {}

/** A failure as the app is told it (its class and code) and as the operator's log keeps it (Node's message, which names addresses). */
function failureOf(error: Error): { error: string; detail: string } {
  const code = (error as NodeJS.ErrnoException).code;
  const detail = code && !error.message.includes(code) ? `${code}: ${error.message}` : error.message;
  return { error: noAnswerText(code), detail: detail.slice(0, 500) };
}
