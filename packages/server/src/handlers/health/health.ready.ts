import { ApiError } from '../../core/errors';
import { UNAVAILABLE_RETRY_SECONDS } from '../../http/error-mapper';
import type { Handler } from '../../http/handler';

/**
 * `health.ready`: GET /readyz: 200 when the database answers, migrations are current and the
 * instance is not stopping, with how it reaches the database (a pooler, the replicas' states).
 */
const healthReady: Handler<'health.ready'> = async ({ services }) => {
  const reason = await services.readiness.notReadyBecause();
  if (reason !== undefined) throw new ApiError('SERVICE_UNAVAILABLE', `Not ready: ${reason}.`, { retry_after_seconds: UNAVAILABLE_RETRY_SECONDS });
  const database = services.readiness.database();
  const replicas = database.replicas.map((replica) => ({ name: replica.name, state: replica.state, lag_ms: replica.lagMs }));
  return { status: 200, body: { status: 'ok', database: { pooled: database.pooled, replicas } } };
};

export default healthReady;
