import { toIso } from '../../../core/clock';
import { fromJsonList } from '../../../db/json-lists';
import type { SubscriptionRow, WebhookSubscription, WebhookSubscriptionWithSecret } from './row';

/** A subscription as the spec shows it: never its secrets. */
export const viewOfSubscription = (row: SubscriptionRow): WebhookSubscription => ({
  id: row.id,
  endpoint_url: row.endpoint_url,
  event_types: fromJsonList(row.event_types) as WebhookSubscription['event_types'],
  payload_version: 1,
  api_version: row.api_version,
  state: row.state,
  secret_generation: row.secret_generation,
  issued_scopes: fromJsonList(row.issued_scopes),
  paused_reason: row.paused_reason,
  created_at: toIso(row.created_at),
  updated_at: toIso(row.updated_at),
});

/** The create and rotate-secret answer: the subscription and the secret of its current generation, shown this once. */
export const viewWithSecret = (row: SubscriptionRow, secret: string): WebhookSubscriptionWithSecret => ({ ...viewOfSubscription(row), secret });
