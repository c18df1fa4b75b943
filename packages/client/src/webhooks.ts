import type { webhooks } from '@svc/contract';
import { WebhookVerificationError as PackageVerificationError, Webhook } from 'standardwebhooks';

type BodyOf<Event> = Event extends { post: { requestBody: { content: { 'application/json': infer Body } } } } ? Body : never;

/**
 * Every event the service sends, told apart by `type`: the body schemas of the spec's `webhooks`
 * section, so a new event type in the contract joins the union without a change here.
 */
export type WebhookEvent = { [Name in keyof webhooks]: BodyOf<webhooks[Name]> }[keyof webhooks];
export type WebhookEventType = WebhookEvent['type'];
/** The event of one type: `WebhookEventOf<'order.created'>['data']['order']`. */
export type WebhookEventOf<Type extends WebhookEventType> = Extract<WebhookEvent, { type: Type }>;

/**
 * Why a request was refused. Answer it with a 4xx (the service then retries it, and a forged one
 * is ignored); never act on its body.
 */
export type WebhookRefusal = 'MISSING_HEADER' | 'INVALID_TIMESTAMP' | 'STALE_TIMESTAMP' | 'FUTURE_TIMESTAMP' | 'BAD_SIGNATURE' | 'INVALID_BODY';

/**
 * A webhook request that is not a genuine, fresh delivery of the service. Its own class rather than
 * a `StoreApiError`: nothing was asked of the service, so there is no status, code or request id
 * of the service's to carry (docs/decisions/0042-client-sdk.md).
 */
export class WebhookVerificationError extends Error {
  override readonly name: string = 'WebhookVerificationError';
  readonly reason: WebhookRefusal;

  constructor(reason: WebhookRefusal, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/** The three headers as they arrive: a fetch `Headers`, or Node's and Express's `req.headers`. */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

const SIGNED_HEADERS = ['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const;

function headerOf(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1];
  return typeof entry === 'string' ? entry : entry?.join(' ');
}

/** The package's refusals (its messages are its only distinction, pinned with its version) in the SDK's words. */
function refusalOf(error: PackageVerificationError): WebhookVerificationError {
  if (/too old/.test(error.message))
    return new WebhookVerificationError('STALE_TIMESTAMP', 'The webhook-timestamp is more than 5 minutes old.', { cause: error });
  if (/too new/.test(error.message))
    return new WebhookVerificationError('FUTURE_TIMESTAMP', 'The webhook-timestamp is more than 5 minutes ahead.', { cause: error });
  if (/Invalid Signature Headers/.test(error.message)) {
    return new WebhookVerificationError('INVALID_TIMESTAMP', 'The webhook-timestamp is not a number of seconds.', { cause: error });
  }
  return new WebhookVerificationError('BAD_SIGNATURE', 'No webhook-signature matches the body with this secret.', { cause: error });
}

/**
 * Checks one webhook request with the Standard Webhooks scheme and answers its event, typed by its
 * `type`. `body` must be the raw body as received (a re-serialised object would not match its
 * signature). Pass the subscription's secret, or both secrets while a rotation is under way (the
 * service signs with both for 24 hours): either one matching is enough. Throws a
 * `WebhookVerificationError` when a header is missing, the timestamp is not within 5 minutes of this
 * machine's clock, no signature matches, or the signed body is not an event; throws a `TypeError`
 * naming the fix when `body` is not raw (a parsed object, a stream, nothing).
 */
export function verifyWebhook(secrets: string | readonly string[], body: string | Uint8Array | ArrayBuffer, headers: WebhookHeaders): WebhookEvent {
  const keys = typeof secrets === 'string' ? [secrets] : secrets;
  if (keys.length === 0) throw new TypeError('verifyWebhook needs at least one secret');
  const values = SIGNED_HEADERS.map((name) => [name, headerOf(headers, name)] as const);
  const missing = values.filter(([, value]) => !value).map(([name]) => name);
  if (missing.length > 0) throw new WebhookVerificationError('MISSING_HEADER', `The request has no ${missing.join(', ')} header.`);
  const signed = Object.fromEntries(values) as Record<(typeof SIGNED_HEADERS)[number], string>;
  const payload = rawBodyOf(body);
  let refusal: WebhookVerificationError | undefined;
  for (const key of keys) {
    try {
      new Webhook(key).verify(payload, signed, { jsonParse: false });
      return eventOf(payload);
    } catch (error) {
      if (!(error instanceof PackageVerificationError)) throw error;
      refusal = refusalOf(error);
    }
  }
  throw refusal;
}

/** What a value is, in the words of the refusal below. */
function kindOf(value: unknown): string {
  if (value === undefined) return 'undefined (no body was read: nothing parsed the request on this route)';
  if (value === null) return 'null';
  if (typeof value !== 'object') return `a ${typeof value}`;
  if (typeof (value as { pipe?: unknown }).pipe === 'function') return 'a stream (the request itself)';
  return 'an object (a body already parsed as JSON)';
}

/**
 * The body as the signature covers it: the text as received, from a string or its bytes (a
 * `Uint8Array`, which Node's `Buffer` is, or an `ArrayBuffer`). Anything else is the caller's
 * mistake and no verification could pass: a parsed object re-serialised differs from what was signed
 * (key order, spacing, number forms). The refusal names the fix, since the usual cause is a JSON body
 * parser in front of the webhook route.
 */
function rawBodyOf(body: unknown): string {
  if (typeof body === 'string') return body;
  if (body instanceof Uint8Array) return new TextDecoder().decode(body);
  if (body instanceof ArrayBuffer) return new TextDecoder().decode(new Uint8Array(body));
  throw new TypeError(
    `verifyWebhook needs the raw body as received (a string, a Buffer or a Uint8Array), not ${kindOf(body)}. ` +
      "With Express, read the webhook route's body with express.raw({ type: 'application/json' }) instead of express.json(); " +
      'with fetch-style handlers (Next.js, Hono, workers), pass await request.text().',
  );
}

function eventOf(payload: string): WebhookEvent {
  let event: unknown;
  try {
    event = JSON.parse(payload);
  } catch (error) {
    throw new WebhookVerificationError('INVALID_BODY', 'The signed body is not JSON.', { cause: error });
  }
  if (typeof event !== 'object' || event === null || typeof (event as { type?: unknown }).type !== 'string') {
    throw new WebhookVerificationError('INVALID_BODY', 'The signed body is not an event (no type).');
  }
  return event as WebhookEvent;
}
