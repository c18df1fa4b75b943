import { clientOf, type Handler } from '../../http/handler';
import { recoverOperation } from '../../oauth/operations';
import { NO_STORE } from './oauth.token';

/** `oauth.operations.recover`: POST /oauth/operations/recover with `{operation_id}`. */
const oauthOperationsRecover: Handler<'oauth.operations.recover'> = async (context) => ({
  status: 200,
  body: await recoverOperation(context.services, clientOf(context).id, context.body.operation_id),
  headers: NO_STORE,
});

export default oauthOperationsRecover;
