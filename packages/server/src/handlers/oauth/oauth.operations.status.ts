import { clientOf, type Handler } from '../../http/handler';
import { operationStatus } from '../../oauth/operations';
import { NO_STORE } from './oauth.token';

/** `oauth.operations.status`: POST /oauth/operations/status with `{operation_id}`. */
const oauthOperationsStatus: Handler<'oauth.operations.status'> = async (context) => ({
  status: 200,
  body: await operationStatus(context.services, clientOf(context).id, context.body.operation_id),
  headers: NO_STORE,
});

export default oauthOperationsStatus;
