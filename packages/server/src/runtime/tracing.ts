import { context, propagation, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { KnexInstrumentation } from '@opentelemetry/instrumentation-knex';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { installTraceHooks } from '../core/trace-context';

/**
 * OpenTelemetry, started by main.ts only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, and before the
 * server's modules are loaded (the instrumentations patch Express, pg and Knex as they load). This
 * module is the only one that imports `@opentelemetry/*`, and only main.ts's dynamic import reaches
 * it. Spans of HTTP (server and client: webhook attempts), Express, pg and Knex go over OTLP/HTTP to
 * the endpoint; the SDK reads the other `OTEL_*` variables itself (service name, sampler, headers).
 * W3C `traceparent`/`tracestate` are extracted from requests and injected into outgoing calls by
 * the SDK's default propagator. docs/decisions/0061-metrics-and-traces.md.
 */
export function startTracing(): { shutdown(): Promise<void> } {
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME || 'svc-store-api',
    traceExporter: new OTLPTraceExporter(),
    instrumentations: [
      // The probes are polled every few seconds by orchestrators: no trace for them.
      new HttpInstrumentation({ ignoreIncomingRequestHook: (request) => /^\/(livez|readyz)(\?|$)/.test(request.url ?? '') }),
      new ExpressInstrumentation(),
      new PgInstrumentation(),
      new KnexInstrumentation(),
    ],
  });
  sdk.start();
  // The service's own ids (its log lines, its events' traceparent) are the spans' ids.
  installTraceHooks({
    activeSpan() {
      const span = trace.getActiveSpan()?.spanContext();
      if (!span || !trace.isSpanContextValid(span)) return undefined;
      return { traceId: span.traceId, spanId: span.spanId, flags: span.traceFlags.toString(16).padStart(2, '0') };
    },
    within(traceparent, tracestate, work) {
      const carrier: Record<string, string> = tracestate === undefined ? { traceparent } : { traceparent, tracestate };
      return context.with(propagation.extract(context.active(), carrier), work);
    },
  });
  return {
    async shutdown() {
      installTraceHooks(undefined);
      await sdk.shutdown();
    },
  };
}
