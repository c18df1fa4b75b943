import type { components } from '@svc/contract';
import { ApiError } from '../../../core/errors';

export type CustomerSummary = components['schemas']['CustomerSummary'];

/** A `customers` row: a shopper of one store. */
export interface CustomerRow {
  id: number;
  store_id: string;
  name: string;
  email: string | null;
  mobile: string | null;
  created_at: number;
}

export const customerNotFound = () => new ApiError('CUSTOMER_NOT_FOUND', 'No customer with that id in this store.');
