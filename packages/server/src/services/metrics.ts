/**
 * What the service counts and times for Prometheus (runtime/metrics keeps them with prom-client and
 * serves them on `METRICS_PORT`). The layers below the runtime call this interface only; without
 * `METRICS_PORT` they are given `noMetrics`, and the request path does no work for metrics at all.
 * docs/decisions/0061-metrics-and-traces.md.
 */

import type { ReadReason, ServedBy } from '../db/read-routing';

/** What an `Idempotency-Key` request met that is not a first run: a stored answer, or a refusal. */
export type IdempotencyOutcome = 'replayed' | 'in_progress' | 'key_reused';

/** A webhook attempt: a 2xx, another answer, or none at all (refused address, timeout, connection failed). */
export type WebhookAttemptOutcome = 'succeeded' | 'rejected' | 'unreachable';

export interface Metrics {
  /** Whether anything is kept: the HTTP edge adds its per-request measure only then. */
  readonly enabled: boolean;
  /** One answered (or abandoned) request; `operation` is an operationId, a route template or `unmatched`, never a raw path. */
  request(operation: string, method: string, status: number, seconds: number): void;
  /** A request refused by a quota (`installation` or `client`). */
  rateLimited(policy: string): void;
  idempotency(outcome: IdempotencyOutcome): void;
  webhookAttempt(outcome: WebhookAttemptOutcome, seconds: number): void;
  /** A dispatcher's claim statement and the deliveries it took. */
  webhookClaim(deliveries: number): void;
  /** A list or report routed among the read replicas: who served it and why (db/read-routing.ts). */
  routedRead(servedBy: ServedBy, reason: ReadReason): void;
}

const nothing = (): void => undefined;

export const noMetrics: Metrics = {
  enabled: false,
  request: nothing,
  rateLimited: nothing,
  idempotency: nothing,
  webhookAttempt: nothing,
  webhookClaim: nothing,
  routedRead: nothing,
};

/** The HTTP methods a label may name; any other is `_OTHER` (OpenTelemetry's rule), so a client cannot add label values. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'CONNECT', 'TRACE']);

export const methodLabel = (method: string): string => (KNOWN_METHODS.has(method) ? method : '_OTHER');
