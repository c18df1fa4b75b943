import type { components } from '@svc/contract';
import { ApiError } from '../../../core/errors';

export type WebhookSubscription = components['schemas']['WebhookSubscription'];
export type WebhookSubscriptionWithSecret = components['schemas']['WebhookSubscriptionWithSecret'];
export type SubscriptionState = components['schemas']['WebhookSubscriptionState'];

/** A `webhook_subscriptions` row as both databases return it. */
export interface SubscriptionRow {
  id: string;
  store_id: string;
  installation_id: string;
  endpoint_url: string;
  event_types: string;
  payload_version: number;
  /** The date version its events are built for (payloads.ts). */
  api_version: string;
  state: SubscriptionState;
  secret_generation: number;
  secret_sealed: string;
  previous_secret_sealed: string | null;
  previous_secret_until: number | null;
  issued_scopes: string;
  paused_reason: string | null;
  created_at: number;
  updated_at: number;
}

/** Another installation's subscription is not found either (no existence oracle). */
export const subscriptionNotFound = () => new ApiError('NOT_FOUND', 'No webhook subscription with this id.');

export const subscriptionRevoked = () => new ApiError('SUBSCRIPTION_REVOKED', 'The webhook subscription was deleted (revoked) and cannot change.');

/** What a sealed secret is bound to: its subscription and generation, so it cannot be moved to another. */
export const secretPurpose = (subscriptionId: string, generation: number) => `webhook-secret:${subscriptionId}:${generation}`;
