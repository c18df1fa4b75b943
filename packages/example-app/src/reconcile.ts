import type { StoreClient, WebhookEvent, WebhookEventType } from '@svc/client';
import type { FeedMark } from './storage';

/** The service keeps events 30 days: the feed cannot bring back anything older. */
export const RETENTION_MS = 30 * 24 * 60 * 60_000;
/**
 * How far before the mark each walk starts. An event is listed once the change it records commits,
 * a moment after its `occurred_at`, so one that a walk just missed is in the next; the ids already
 * handled drop the rest. It also covers a few minutes between this app's clock and the service's.
 */
export const OVERLAP_MS = 5 * 60_000;

export interface Reconciliation {
  /** Events the walk found that had not been handled: webhooks that never arrived. */
  recorded: number;
  /** The mark to keep, now that the walk has ended. */
  mark: FeedMark;
  /** The last complete walk was more than 30 days ago: events of the time between may be gone for good. */
  gap: boolean;
}

/**
 * Walks the store's events feed from a little before the mark to its end and gives every event to
 * `handle`, which acts on those whose id it has not handled and answers whether it did. The feed is
 * newest first, so a walk that stops halfway (a crash, a cursor expired after 15 minutes) has seen
 * the newest events and not the older ones: answer the new mark only once the walk has ended, and
 * keep the old one otherwise. No mark (an installation of an older version of the app): the 30 days
 * the feed keeps.
 */
export async function walkEventsFeed(options: {
  client: StoreClient;
  storeId: string;
  types: readonly WebhookEventType[];
  mark: FeedMark | undefined;
  handle: (event: WebhookEvent) => Promise<boolean>;
}): Promise<Reconciliation> {
  const { client, storeId, mark } = options;
  const walkedAt = new Date().toISOString();
  const since = mark === undefined ? {} : { created_since: new Date(Date.parse(mark.newest) - OVERLAP_MS).toISOString() };
  let newest = mark?.newest;
  let recorded = 0;
  for await (const event of client.paginate('/stores/{storeId}/v1/events', {
    params: { path: { storeId }, query: { type: [...options.types], limit: 100, ...since } },
  })) {
    if (await options.handle(event)) recorded += 1;
    if (newest === undefined || Date.parse(event.occurred_at) > Date.parse(newest)) newest = event.occurred_at;
  }
  return {
    recorded,
    mark: { newest: newest ?? walkedAt, walkedAt },
    gap: mark !== undefined && Date.parse(walkedAt) - Date.parse(mark.walkedAt) > RETENTION_MS,
  };
}
