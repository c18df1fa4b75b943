import { ApiError } from '../../core/errors';
import { UNAVAILABLE_RETRY_SECONDS } from '../../http/error-mapper';
import type { Handler } from '../../http/handler';

/** `health.ready`: GET /readyz: 200 when the database answers, migrations are current and the instance is not stopping. */
const healthReady: Handler<'health.ready'> = async ({ services }) => {
  const reason = await services.readiness.notReadyBecause();
  if (reason !== undefined) throw new ApiError('SERVICE_UNAVAILABLE', `Not ready: ${reason}.`, { retry_after_seconds: UNAVAILABLE_RETRY_SECONDS });
  return { status: 200, body: { status: 'ok' } };
};

export default healthReady;
