import type { RequestHandler } from 'express';
import type { Metrics } from '../services/metrics';
import { routeOf } from './request-log';

/**
 * Times every request for `http_server_request_duration_seconds` when its response finishes (or its
 * connection closes first). The operation label is the operationId, else the route template or mount
 * the request log names, else `unmatched`: never the path, so a client sending random paths adds no
 * series. Only installed when metrics are kept (`METRICS_PORT`).
 */
export function requestMetrics(metrics: Metrics): RequestHandler {
  return (req, res, next) => {
    const started = performance.now();
    res.once('close', () => {
      const route = routeOf(req);
      const operation = 'operation_id' in route ? route.operation_id : (route.route ?? 'unmatched');
      metrics.request(operation, req.method, res.statusCode, (performance.now() - started) / 1000);
    });
    next();
  };
}
