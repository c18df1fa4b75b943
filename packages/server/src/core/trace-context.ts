import { randomFillSync } from 'node:crypto';

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` a caller sends, read
 * by the rules of version 00, and the ids this service puts on its log lines, its outbox events and
 * the webhook deliveries they cause. OpenTelemetry is not needed for any of it: when it is loaded
 * (runtime/tracing), it installs hooks here so that its spans and these ids are the same.
 * docs/decisions/0060-request-ids-and-trace-context.md.
 */

export interface TraceParent {
  /** 32 lower-case hex digits, not all zero. */
  readonly traceId: string;
  /** 16 lower-case hex digits, not all zero: the caller's span, the parent of ours. */
  readonly spanId: string;
  /** Two hex digits; bit 0 is `sampled`. */
  readonly flags: string;
}

const VERSION_00 = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** A later version: the same four fields first, then perhaps more after a `-` (the spec's rule for versions it does not know). */
const LATER_VERSION = /^([0-9a-e][0-9a-f]|f[0-9a-e])-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_SPAN = '0'.repeat(16);

/** The `traceparent` header's context, or undefined when it is absent or invalid (then a new trace starts). */
export function parseTraceparent(header: string | undefined): TraceParent | undefined {
  if (header === undefined || header.length > 512) return undefined;
  const text = header.trim();
  const exact = VERSION_00.exec(text);
  const fields = exact ? exact.slice(1, 4) : text.startsWith('00-') ? undefined : LATER_VERSION.exec(text)?.slice(2, 5);
  if (!fields) return undefined;
  const [traceId = '', spanId = '', flags = ''] = fields;
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return undefined;
  return { traceId, spanId, flags };
}

/** `tracestate` as received, when it is of a sane size (the spec's 32 members fit in 512 characters); passed on, never read. */
export function keptTracestate(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  return text.length > 0 && text.length <= 512 && /^[\x20-\x7e]*$/.test(text) ? text : undefined;
}

/**
 * Random bytes drawn 4 KiB at a time: every request takes 24 for its ids, and `randomBytes` per id
 * cost tens of microseconds a request on a loaded machine, where slicing a filled pool costs well
 * under one (Node's `randomUUID` keeps a pool the same way).
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomHex(bytes: number): string {
  if (poolOffset + bytes > pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const hex = pool.toString('hex', poolOffset, poolOffset + bytes);
  poolOffset += bytes;
  return hex;
}

export const newTraceId = (): string => randomHex(16);
export const newSpanId = (): string => randomHex(8);

export const formatTraceparent = (context: TraceParent): string => `00-${context.traceId}-${context.spanId}-${context.flags}`;

/** What a request's lines and events are joined by: its trace, and the span this service acts in. */
export interface RequestTrace {
  readonly traceId: string;
  /** This service's span (OpenTelemetry's server span when loaded; otherwise an id made for the request). */
  readonly spanId: string;
  readonly flags: string;
  readonly tracestate: string | undefined;
}

/** What an outbox event keeps of the request that caused it, to send with each delivery. */
export interface EventTrace {
  /** The request's own span as a `traceparent`: a delivery is its child. */
  readonly traceparent: string;
  readonly tracestate?: string;
}

export const eventTraceOf = (trace: RequestTrace): EventTrace => {
  const traceparent = formatTraceparent(trace);
  return trace.tracestate === undefined ? { traceparent } : { traceparent, tracestate: trace.tracestate };
};

/**
 * The `traceparent` (and `tracestate`) of one webhook attempt: the event's trace, a new span of
 * its own (the attempt is a child of the request's span); none for an event no request caused.
 */
export function deliveryTraceHeaders(traceparent: string | null | undefined, tracestate: string | null | undefined): Record<string, string> {
  const parent = parseTraceparent(traceparent ?? undefined);
  if (!parent) return {};
  const headers: Record<string, string> = { traceparent: formatTraceparent({ ...parent, spanId: newSpanId() }) };
  if (tracestate) headers.tracestate = tracestate;
  return headers;
}

/**
 * Set by runtime/tracing when OpenTelemetry runs, and only then: the span the instrumentation
 * started for the request, and a way to run work (a webhook attempt) as a child of a stored
 * context. Process-wide because OpenTelemetry's context is.
 */
export interface TraceHooks {
  activeSpan(): TraceParent | undefined;
  within<T>(traceparent: string, tracestate: string | undefined, work: () => T): T;
}

let hooks: TraceHooks | undefined;

export function installTraceHooks(installed: TraceHooks | undefined): void {
  hooks = installed;
}

/** The request's trace: OpenTelemetry's span when it runs; else the caller's trace (or a new one) and an id for our span. */
export function traceOfRequest(traceparent: string | undefined, tracestate: string | undefined): RequestTrace {
  const state = keptTracestate(tracestate);
  const active = hooks?.activeSpan();
  if (active) return { ...active, tracestate: state };
  const caller = parseTraceparent(traceparent);
  if (caller) return { traceId: caller.traceId, spanId: newSpanId(), flags: caller.flags, tracestate: state };
  return { traceId: newTraceId(), spanId: newSpanId(), flags: '00', tracestate: undefined };
}

/** Runs `work` as a child of a stored context when OpenTelemetry runs (its HTTP client then sends the `traceparent`); else just runs it. */
export function withinTrace<T>(traceparent: string | null | undefined, tracestate: string | null | undefined, work: () => T): T {
  if (!hooks || !traceparent) return work();
  return hooks.within(traceparent, tracestate ?? undefined, work);
}
