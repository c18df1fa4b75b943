import type { WebhookEventData, WebhookEventType } from '@svc/contract';
import type { EventTrace } from '../../core/trace-context';
import type { TypedEvent } from '../../services/outbox';

/**
 * Who changes a store's data, and when: built once per request from the access token (the HTTP
 * edge's `actorOf`), or by a job for the store itself (`installationId` null). Every change is
 * stamped with `now` and every event it writes names the store and the installation.
 */
export interface Actor {
  readonly storeId: string;
  readonly installationId: string | null;
  readonly now: number;
  /** The trace of the request that acts (core/trace-context): its events carry it to their webhook deliveries. */
  readonly trace?: EventTrace;
}

/**
 * Called with the current row before a change, and throws to refuse it: the HTTP edge builds one
 * from `If-Match` (412 when stale, 428 when missing) for the operations whose spec takes it.
 */
export type Precondition<Row> = (current: Row) => void;

/** The precondition of an operation whose spec takes no `If-Match`: any version may be changed. */
export const anyVersion: Precondition<unknown> = () => undefined;

/** An outbox event of this actor's change: its store, its installation, its time. */
export const eventBy = <T extends WebhookEventType>(actor: Actor, type: T, data: WebhookEventData<T>): TypedEvent<T> => ({
  type,
  storeId: actor.storeId,
  installationId: actor.installationId,
  occurredAt: actor.now,
  data,
  ...(actor.trace ? { trace: actor.trace } : {}),
});
