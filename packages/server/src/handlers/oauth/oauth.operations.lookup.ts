import { clientOf, type Handler } from '../../http/handler';
import { lookupOperation, type TokenRequestBody } from '../../oauth/operations';
import { NO_STORE } from './oauth.token';

/** `oauth.operations.lookup`: POST /oauth/operations/lookup, with the body of the lost token request. */
const oauthOperationsLookup: Handler<'oauth.operations.lookup'> = async (context) => ({
  status: 200,
  body: await lookupOperation(context.services, clientOf(context).id, context.body as TokenRequestBody),
  headers: NO_STORE,
});

export default oauthOperationsLookup;
