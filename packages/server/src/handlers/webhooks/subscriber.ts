import type { OperationId } from '@svc/contract';
import type { Subscriber } from '../../domain/webhooks/subscriptions/changes';
import { type HandlerContext, principalOf } from '../../http/handler';

/** The installation acting on its subscriptions, with the scopes its token holds now, when, and under which date version. */
export function subscriberOf<K extends OperationId>(context: HandlerContext<K>): Subscriber {
  const { storeId, installationId, scopes } = principalOf(context);
  return { storeId, installationId, scopes, now: context.services.clock.now(), apiVersion: context.apiVersion };
}
