import type { components } from '@svc/contract';
import { ApiError } from '../../../core/errors';

export type Review = components['schemas']['Review'];
export type ReviewStatus = components['schemas']['ReviewStatus'];
/** What moderation may make of a review: never `pending` again. */
export type ModerationDecision = components['schemas']['ReviewModeration']['status'];

/** A `reviews` row: a shopper's review of a product they received. */
export interface ReviewRow {
  id: number;
  store_id: string;
  product_id: number;
  order_id: number;
  customer_id: number;
  rating: number;
  content: string;
  status: ReviewStatus;
  moderated_at: number | null;
  resource_version: number;
  created_at: number;
  updated_at: number;
}

export const reviewNotFound = () => new ApiError('NOT_FOUND', 'No review with that id in this store.');

export const reviewNotAllowed = (reason: string) => new ApiError('REVIEW_NOT_ALLOWED', `The review is not allowed: ${reason}.`);
