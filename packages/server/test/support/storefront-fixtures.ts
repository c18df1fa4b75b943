import fs from 'node:fs';
import { webhookEventCatalogue } from '@svc/contract';
import { bundledSpecPath } from '@svc/contract/node';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Knex } from 'knex';
import type { Actor } from '../../src/domain/common/actor';
import { createCustomer } from '../../src/domain/storefront/customers/changes';
import type { CustomerRow } from '../../src/domain/storefront/customers/row';
import { fulfilOrder, payOrder, placeOrder } from '../../src/domain/storefront/orders/changes';
import type { OrderRow } from '../../src/domain/storefront/orders/row';
import { insertDigitalUnits, insertProduct, type ProductOverrides } from './catalog-fixtures';
import { createTestStore, type Harness, type StoreFixture } from './harness';

/** A shopper's actor: no installation acts for them. */
export const shopperOf = (h: Harness, storeId: string): Actor => ({ storeId, installationId: null, now: h.clock.now() });

export interface Shop {
  /** The store with its owner, to install apps on it. */
  store: StoreFixture;
  storeId: string;
  customer: CustomerRow;
  /** Another customer of the same store. */
  other: CustomerRow;
  actor(): Actor;
}

/** A fresh store with two customers. */
export async function openShop(h: Harness): Promise<Shop> {
  const fixture = await createTestStore(h, 'Oud House');
  const { store } = fixture;
  const actor = () => shopperOf(h, store.id);
  const customer = await createCustomer(h.db, actor(), { name: 'Noura Al-Harbi', email: 'noura@example.com', mobile: '+966501234567' });
  const other = await createCustomer(h.db, actor(), { name: 'Abdullah Al-Qahtani' });
  return { store: fixture, storeId: store.id, customer, other, actor };
}

/** An active product at `priceHalalas` with `quantity` in stock (physical unless told). */
export function forSale(h: Harness, shop: Shop, priceHalalas: number, overrides: ProductOverrides = {}): Promise<number> {
  return insertProduct(h.db, shop.storeId, { status: 'active', price_state: 'ready', price_halalas: priceHalalas, quantity: 10, ...overrides });
}

/** An active digital product with these unsold codes. */
export async function digitalForSale(h: Harness, shop: Shop, priceHalalas: number, codes: string[]): Promise<number> {
  const id = await forSale(h, shop, priceHalalas, { product_kind: 'digital', quantity: 0 });
  await insertDigitalUnits(h.db, shop.storeId, id, codes);
  return id;
}

/** The customer's order of one of each physical product, paid, shipped and delivered: what a review needs. */
export async function deliveredOrder(h: Harness, shop: Shop, productIds: readonly number[], customerId = shop.customer.id): Promise<OrderRow> {
  const order = await placeOrder(h.db, shop.actor(), { customerId, items: productIds.map((productId) => ({ productId, quantity: 1 })) });
  await payOrder(h.db, shop.actor(), order.id, { method: 'cod' });
  await fulfilOrder(h.db, shop.actor(), order.id, 'shipped');
  return await fulfilOrder(h.db, shop.actor(), order.id, 'delivered');
}

export interface CouponOverrides {
  type?: 'percentage' | 'fixed';
  amount_halalas?: number;
  status?: 'active' | 'inactive';
  starts_at?: number | null;
  expires_at?: number | null;
  usage_limit?: number | null;
  usage_count?: number;
  minimum_order_halalas?: number | null;
  free_shipping?: boolean;
}

/** Inserts a coupon row directly, for states `createCoupon` cannot make (already used, odd timestamps). */
export async function insertCoupon(db: Knex, storeId: string, code: string, overrides: CouponOverrides = {}): Promise<number> {
  const [inserted] = (await db('coupons')
    .insert({
      store_id: storeId,
      code,
      code_key: code.toLowerCase(),
      type: 'percentage',
      amount_halalas: 1000,
      created_at: 0,
      updated_at: 0,
      ...overrides,
    })
    .returning('id')) as Array<number | { id: number }>;
  if (inserted === undefined) throw new Error('No coupon inserted');
  return typeof inserted === 'number' ? inserted : inserted.id;
}

export interface StoredEvent {
  type: string;
  installation_id: string | null;
  payload: { type: string; store_id: string; occurred_at: string; data: Record<string, unknown> };
}

/** The store's outbox events in the order they were written. */
export async function eventsOf(db: Knex, storeId: string): Promise<StoredEvent[]> {
  const rows = (await db('outbox_events').where({ store_id: storeId }).orderBy('occurred_at').select('type', 'installation_id', 'payload')) as Array<{
    type: string;
    installation_id: string | null;
    payload: string;
  }>;
  return rows.map((row) => ({ ...row, payload: JSON.parse(row.payload) as StoredEvent['payload'] }));
}

const spec = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as { webhooks: Record<string, unknown> };
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(spec, 'spec');

/** What is wrong with a stored event against its webhook's body schema in the spec (none: []). */
export function eventSchemaErrors(event: StoredEvent): string[] {
  const schemaName = webhookEventCatalogue.find((definition) => definition.type === event.type)?.schema ?? `(no event ${event.type})`;
  const check = ajv.getSchema(`spec#/components/schemas/${schemaName}`);
  if (!check) return [`no schema ${schemaName}`];
  return check(event.payload) ? [] : (check.errors ?? []).map((error) => `${event.type} ${error.instancePath} ${error.message ?? ''}`);
}
