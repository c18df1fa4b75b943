import type { OperationId } from '@svc/contract';
import type { EventReader } from '../../domain/webhooks/events/feed';
import { type HandlerContext, principalOf } from '../../http/handler';

/** Who reads events: the token's store, installation and scopes, the date version the request is served under, and when. */
export function readerOf<K extends OperationId>(context: HandlerContext<K>): EventReader {
  const { storeId, installationId, scopes } = principalOf(context);
  return { storeId, installationId, scopes, apiVersion: context.apiVersion, now: context.services.clock.now() };
}
