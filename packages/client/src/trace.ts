import type { Middleware } from 'openapi-fetch';

/**
 * The W3C trace context of the caller's current work (https://www.w3.org/TR/trace-context/): sent
 * as `traceparent` (and `tracestate`) so that the service's log lines, spans and the webhook
 * deliveries its change causes join the caller's trace.
 */
export interface TraceContext {
  readonly traceparent: string;
  readonly tracestate?: string;
}

/**
 * Asked before every request; undefined sends no trace header. With OpenTelemetry's API:
 * `() => { const carrier: Record<string, string> = {}; propagation.inject(context.active(), carrier); return carrier.traceparent ? { traceparent: carrier.traceparent, tracestate: carrier.tracestate } : undefined; }`
 */
export type TraceContextSource = () => TraceContext | undefined;

/**
 * Sets `traceparent`/`tracestate` from the source on each request that has none of its own (a
 * request's `headers: { traceparent }` wins). Headers are set once, before the transport, so a
 * retry sends the same ones.
 */
export function traceHeaders(source: TraceContextSource): Middleware {
  return {
    onRequest({ request }) {
      if (request.headers.has('traceparent')) return request;
      const context = source();
      if (!context) return request;
      request.headers.set('traceparent', context.traceparent);
      if (context.tracestate) request.headers.set('tracestate', context.tracestate);
      return request;
    },
  };
}
