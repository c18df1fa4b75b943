import type { OperationEntry } from '@svc/contract';
import { isApiError } from '../core/errors';
import type { ReadRoute } from '../db/read-routing';
import type { Services } from '../services/container';

/**
 * Which operations may be read on a replica, and how such a read runs
 * (docs/decisions/0078-read-replicas.md).
 */

/**
 * The store API's lists and analytics reports: reads an app makes to sync or to report, which may
 * lag behind the primary by `DATABASE_REPLICA_MAX_LAG_MS` (never behind the caller's own writes).
 * A single resource read (`GET …/{id}`) stays on the primary: it rides with the token's statement
 * there at no extra round trip, and an app reading one record right after a webhook expects it.
 */
export const readsMayLag = (entry: OperationEntry): boolean => entry.auth === 'bearer' && entry.method === 'get' && (entry.paged || entry.tag === 'Analytics');

/** The operations that may write for an installation: after each, its position is recorded for its later reads. */
export const mayWrite = (entry: OperationEntry): boolean => entry.auth === 'bearer' && entry.method !== 'get';

/**
 * Runs a read on its route. A replica that fails it (stopped, cut off, a query cancelled by
 * recovery) or does not answer it within the replica deadline (`DATABASE_REPLICA_TIMEOUT_MS`: a
 * frozen host, a partition) is skipped from then on until it answers its polls again, and the
 * primary serves the same read at once, so the caller sees no error and waits at most the deadline
 * more: a list or report changes nothing, so it can run twice. An error the service means to
 * answer (a bad cursor) is answered as it is.
 */
export async function readOnRoute<T>(services: Services, route: ReadRoute, read: (route: ReadRoute) => Promise<T>): Promise<T> {
  if (route.servedBy === 'primary') {
    services.metrics.routedRead('primary', route.reason);
    return read(route);
  }
  try {
    const answer = await services.replicas.withinDeadline(() => read(route));
    services.metrics.routedRead('replica', route.reason);
    return answer;
  } catch (error) {
    if (isApiError(error)) throw error;
    services.replicas.failed(route, error);
    services.metrics.routedRead('primary', 'failed');
    return read({ db: services.db, servedBy: 'primary', reason: 'failed' });
  }
}
