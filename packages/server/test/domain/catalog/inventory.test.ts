import { randomUUID } from 'node:crypto';
import { toIso } from '../../../src/core/clock';
import { IDEMPOTENCY_TTL_MS, requestHashOf } from '../../../src/http/idempotency';
import { endStoreMigration, startStoreMigration } from '../../../src/platform/stores';
import { expectError } from '../../support/auth-steps';
import {
  countRows,
  FIXTURE_TIME,
  HUGE_ID,
  insertDigitalUnits,
  insertProduct,
  MALFORMED_IDS,
  OVERSIZED_TEXT,
  productEvents,
  productRow,
  productState,
  type StoreApi,
  storeWithFullAccess,
  tokenWithScopes,
} from '../../support/catalog-fixtures';
import { testDatabases } from '../../support/databases';
import { type StoreFixture, suiteHarness, UUID } from '../../support/harness';
import { walkList, withCursor } from '../../support/list-walk';

interface AdjustmentBody {
  delta: unknown;
  reason?: unknown;
  note?: unknown;
  codes?: unknown;
  [field: string]: unknown;
}

const adjustmentsPath = (productId: number | string) => `products/${productId}/inventory-adjustments`;
const adjust = (api: StoreApi, productId: number | string, body: AdjustmentBody, key: string = randomUUID()) => api.post(adjustmentsPath(productId), body, key);

describe.each(testDatabases())('inventory on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let shop: { store: StoreFixture; api: StoreApi };
  let other: { store: StoreFixture; api: StoreApi };

  beforeAll(async () => {
    shop = await storeWithFullAccess(h, 'Royal Oud');
    other = await storeWithFullAccess(h, 'Desert Rose');
  });

  const product = (overrides: Parameters<typeof insertProduct>[2] = {}, storeId = shop.store.store.id) => insertProduct(h.db, storeId, overrides);
  const digitalProduct = async (unsold: string[], sold: string[] = []) => {
    const id = await product({ product_kind: 'digital' });
    await insertDigitalUnits(h.db, shop.store.store.id, id, unsold);
    if (sold.length > 0) await insertDigitalUnits(h.db, shop.store.store.id, id, sold, true);
    return id;
  };
  const unsoldCodes = async (productId: number) =>
    ((await h.db('digital_units').where({ product_id: productId }).whereNull('delivered_at').orderBy('id').select('code')) as Array<{ code: string }>).map(
      (unit) => unit.code,
    );

  describe('inventory.get', () => {
    it('shows a physical or service product as a manual item with its quantity, resource_version and the product’s updated_at', async () => {
      const physical = await product({ product_kind: 'physical', quantity: 37, resource_version: 8, updated_at: FIXTURE_TIME + 5_000 });
      const service = await product({ product_kind: 'service', quantity: 4 });

      const first = await shop.api.get(`products/${physical}/inventory`);
      expect(first.status).toBe(200);
      expect(first.body.data).toEqual({
        product_id: physical,
        product_kind: 'physical',
        mode: 'manual',
        quantity: 37,
        resource_version: 8,
        updated_at: toIso(FIXTURE_TIME + 5_000),
      });
      expect(first.body.meta.request_id).toMatch(UUID);
      const second = await shop.api.get(`products/${service}/inventory`);
      expect(second.body.data).toEqual({
        product_id: service,
        product_kind: 'service',
        mode: 'manual',
        quantity: 4,
        resource_version: 1,
        updated_at: toIso(FIXTURE_TIME),
      });
    });

    it('counts only the unsold units of a digital product as available_units (digital_aggregate)', async () => {
      const digital = await digitalProduct(['GC-1', 'GC-2', 'GC-3'], ['GC-SOLD-1', 'GC-SOLD-2']);
      const response = await shop.api.get(`products/${digital}/inventory`);
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({
        product_id: digital,
        product_kind: 'digital',
        mode: 'digital_aggregate',
        available_units: 3,
        resource_version: 1,
        updated_at: toIso(FIXTURE_TIME),
      });
    });

    it('is NOT_FOUND for an unknown id, an id beyond any row and another store’s product; VALIDATION_FAILED for malformed ids', async () => {
      const theirs = await product({}, other.store.store.id);
      for (const id of [String(theirs + 1000), HUGE_ID, String(theirs)]) expectError(await shop.api.get(`products/${id}/inventory`), 404, 'NOT_FOUND');
      for (const id of MALFORMED_IDS) expectError(await shop.api.get(`products/${id}/inventory`), 400, 'VALIDATION_FAILED');
    });

    it('needs inventory:read, for the item and the list alike', async () => {
      const id = await product();
      const productsOnly = shop.api.as(await tokenWithScopes(h, shop.store, ['products:read']));
      for (const path of [`products/${id}/inventory`, 'inventory']) {
        const refused = await productsOnly.get(path);
        expectError(refused, 403, 'INSUFFICIENT_SCOPE');
        expect(refused.body.error.required_scopes).toEqual(['inventory:read']);
      }
      const reader = shop.api.as(await tokenWithScopes(h, shop.store, ['inventory:read']));
      expect((await reader.get(`products/${id}/inventory`)).status).toBe(200);
      expect((await reader.get('inventory')).status).toBe(200);
    });
  });

  describe('inventory.list', () => {
    it('pages every product’s stock by ascending id with keyset cursors, none twice, none of another store', async () => {
      const fresh = await storeWithFullAccess(h, 'Amber House');
      const storeId = fresh.store.store.id;
      const ids = [
        await insertProduct(h.db, storeId, { quantity: 5 }),
        await insertProduct(h.db, storeId, { product_kind: 'digital' }),
        await insertProduct(h.db, storeId, { product_kind: 'service', quantity: 2 }),
        await insertProduct(h.db, storeId, { quantity: 0 }),
        await insertProduct(h.db, storeId, { quantity: 9 }),
      ];
      await insertDigitalUnits(h.db, storeId, ids[1] as number, ['A', 'B']);
      await product({ quantity: 1 }, other.store.store.id);

      const { pages } = await walkList((cursor) => fresh.api.get('inventory').query(withCursor({ limit: 2 }, cursor)));

      expect(pages.map((page) => page.meta)).toEqual([
        { request_id: expect.stringMatching(UUID), has_more: true, limit: 2, next_cursor: expect.any(String), consistency: 'live_keyset' },
        { request_id: expect.stringMatching(UUID), has_more: true, limit: 2, next_cursor: expect.any(String), consistency: 'live_keyset' },
        { request_id: expect.stringMatching(UUID), has_more: false, limit: 2, next_cursor: null, consistency: 'live_keyset' },
      ]);
      const updated_at = toIso(FIXTURE_TIME);
      expect(pages.flatMap((page) => page.data)).toEqual([
        { product_id: ids[0], product_kind: 'physical', mode: 'manual', quantity: 5, resource_version: 1, updated_at },
        { product_id: ids[1], product_kind: 'digital', mode: 'digital_aggregate', available_units: 2, resource_version: 1, updated_at },
        { product_id: ids[2], product_kind: 'service', mode: 'manual', quantity: 2, resource_version: 1, updated_at },
        { product_id: ids[3], product_kind: 'physical', mode: 'manual', quantity: 0, resource_version: 1, updated_at },
        { product_id: ids[4], product_kind: 'physical', mode: 'manual', quantity: 9, resource_version: 1, updated_at },
      ]);

      const all = await fresh.api.get('inventory');
      expect(all.body.meta).toMatchObject({ limit: 25, has_more: false, next_cursor: null });
      expect(all.body.data.map((item: { product_id: number }) => item.product_id)).toEqual(ids);
    });

    it('refuses a cursor from another store or a tampered one with INVALID_CURSOR', async () => {
      await product();
      await product();
      const first = await shop.api.get('inventory').query({ limit: 1 });
      const cursor: string = first.body.meta.next_cursor;
      expect(cursor).toEqual(expect.any(String));

      expectError(await other.api.get('inventory').query({ limit: 1, cursor }), 400, 'INVALID_CURSOR');
      const tampered = `${cursor.slice(0, 5)}${cursor[5] === 'A' ? 'B' : 'A'}${cursor.slice(6)}`;
      expectError(await shop.api.get('inventory').query({ limit: 1, cursor: tampered }), 400, 'INVALID_CURSOR');
    });

    it('refuses an unknown query parameter with UNKNOWN_FIELD and a bad limit with VALIDATION_FAILED', async () => {
      expectError(await shop.api.get('inventory').query({ product_kind: 'digital' }), 422, 'UNKNOWN_FIELD');
      for (const limit of ['0', '101', 'ten', '1.5']) expectError(await shop.api.get('inventory').query({ limit }), 400, 'VALIDATION_FAILED');
    });
  });

  describe('inventory.adjust', () => {
    it('restocks a physical product: quantity_before/after, a raised resource_version and updated_at, inventory.adjusted and product.updated in the outbox', async () => {
      const id = await product({ quantity: 13, resource_version: 7, name: 'Royal Oud Perfume 100 ml' });
      h.clock.advance(60_000);

      const response = await adjust(shop.api, id, { delta: 24, reason: 'restock', note: 'Shipment from the Jeddah warehouse' });
      expect(response.status).toBe(201);
      const adjustment = {
        id: expect.any(Number),
        product_id: id,
        mode: 'manual',
        delta: 24,
        reason: 'restock',
        note: 'Shipment from the Jeddah warehouse',
        quantity_before: 13,
        quantity_after: 37,
        resource_version: 8,
        created_at: toIso(h.clock.now()),
      };
      expect(response.body.data).toEqual(adjustment);
      expect(response.headers['idempotent-replayed']).toBeUndefined();

      expect(await productRow(h.db, id)).toMatchObject({ quantity: 37, resource_version: 8, updated_at: h.clock.now() });
      const stored = await h.db('inventory_adjustments').where({ id: response.body.data.id }).first();
      expect(stored).toMatchObject({ store_id: shop.store.store.id, product_id: id, delta: 24, reason: 'restock', quantity_before: 13, quantity_after: 37 });
      expect((await shop.api.get(`products/${id}/inventory`)).body.data).toEqual({
        product_id: id,
        product_kind: 'physical',
        mode: 'manual',
        quantity: 37,
        resource_version: 8,
        updated_at: toIso(h.clock.now()),
      });

      const events = await productEvents(h.db, shop.store.store.id, id);
      expect(events.map((event) => event.type).sort()).toEqual(['inventory.adjusted', 'product.updated']);
      const envelopeOf = (type: string) => ({
        id: expect.stringMatching(UUID),
        type,
        api_version: '2026-10-15',
        store_id: shop.store.store.id,
        occurred_at: toIso(h.clock.now()),
        data: expect.any(Object),
      });
      const adjusted = events.find((event) => event.type === 'inventory.adjusted');
      expect(adjusted?.payload).toEqual(envelopeOf('inventory.adjusted'));
      expect(adjusted?.payload.data).toEqual({ adjustment: response.body.data });
      expect(adjusted?.installation_id).toBe(response.body.execution.installationId);
      const updated = events.find((event) => event.type === 'product.updated');
      expect(updated?.payload).toEqual(envelopeOf('product.updated'));
      expect(updated?.payload.data).toEqual({
        product: expect.objectContaining({
          id,
          name: 'Royal Oud Perfume 100 ml',
          resource_version: 8,
          updated_at: toIso(h.clock.now()),
          product_kind: 'physical',
        }),
      });
    });

    it('takes a stock down to exactly zero with a negative delta', async () => {
      const id = await product({ quantity: 5, product_kind: 'service' });
      const response = await adjust(shop.api, id, { delta: -5, reason: 'damage', note: null });
      expect(response.status).toBe(201);
      expect(response.body.data).toMatchObject({
        mode: 'manual',
        delta: -5,
        reason: 'damage',
        note: null,
        quantity_before: 5,
        quantity_after: 0,
        resource_version: 2,
      });
      expect((await productRow(h.db, id)).quantity).toBe(0);
    });

    it('never takes stock below zero: 409 INSUFFICIENT_STOCK, and nothing changes', async () => {
      const id = await product({ quantity: 3 });
      const before = await productState(h.db, shop.store.store.id, id);
      const refused = await adjust(shop.api, id, { delta: -5, reason: 'sale' });
      expectError(refused, 409, 'INSUFFICIENT_STOCK');
      expect(refused.body.error.details).toEqual([{ location: 'body', field: '/delta', message: expect.any(String) }]);
      expect(await productState(h.db, shop.store.store.id, id)).toEqual(before);
    });

    it('lets 100 concurrent −1 adjustments of a stock of 60 take it to exactly 0 and refuses exactly 40 with INSUFFICIENT_STOCK', async () => {
      const { store, api } = await storeWithFullAccess(h, 'Busy Store');
      const id = await insertProduct(h.db, store.store.id, { quantity: 60 });

      const responses = await Promise.all(Array.from({ length: 100 }, () => adjust(api, id, { delta: -1, reason: 'sale' })));

      const accepted = responses.filter((response) => response.status === 201);
      const refused = responses.filter((response) => response.status === 409);
      expect(accepted).toHaveLength(60);
      expect(refused).toHaveLength(40);
      for (const response of refused) expectError(response, 409, 'INSUFFICIENT_STOCK');
      expect(await productRow(h.db, id)).toMatchObject({ quantity: 0, resource_version: 61 });
      const afters = accepted.map((response) => response.body.data.quantity_after as number).sort((a, b) => a - b);
      expect(afters).toEqual(Array.from({ length: 60 }, (_, index) => index));
      expect(accepted.every((response) => response.body.data.quantity_before === response.body.data.quantity_after + 1)).toBe(true);
      expect(await countRows(h.db, 'inventory_adjustments', store.store.id)).toBe(60);
      const events = await productEvents(h.db, store.store.id, id);
      expect(events.filter((event) => event.type === 'inventory.adjusted')).toHaveLength(60);
      expect(events.filter((event) => event.type === 'product.updated')).toHaveLength(60);
    });

    it('replays the first response for the same Idempotency-Key and body without adjusting again', async () => {
      const id = await product({ quantity: 10 });
      const key = randomUUID();
      const first = await adjust(shop.api, id, { delta: 4, reason: 'return' }, key);
      expect(first.status).toBe(201);
      const afterFirst = await productState(h.db, shop.store.store.id, id);

      const again = await adjust(shop.api, id, { reason: 'return', delta: 4 }, key);
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      expect(again.body.meta.request_id).not.toBe(first.body.meta.request_id);
      expect(await productState(h.db, shop.store.store.id, id)).toEqual(afterFirst);
      expect(afterFirst.row.quantity).toBe(14);
      expect(afterFirst.adjustments).toHaveLength(1);
    });

    it('refuses the same Idempotency-Key with another body (422 IDEMPOTENCY_KEY_REUSED) and changes nothing', async () => {
      const id = await product({ quantity: 10 });
      const key = randomUUID();
      expect((await adjust(shop.api, id, { delta: 4, reason: 'return' }, key)).status).toBe(201);
      const before = await productState(h.db, shop.store.store.id, id);
      expectError(await adjust(shop.api, id, { delta: 5, reason: 'return' }, key), 422, 'IDEMPOTENCY_KEY_REUSED');
      expect(await productState(h.db, shop.store.store.id, id)).toEqual(before);
    });

    it('replays a refusal for its key even after the stock would allow it', async () => {
      const id = await product({ quantity: 1 });
      const key = randomUUID();
      expectError(await adjust(shop.api, id, { delta: -2, reason: 'sale' }, key), 409, 'INSUFFICIENT_STOCK');
      expect((await adjust(shop.api, id, { delta: 5, reason: 'restock' })).status).toBe(201);

      const replayed = await adjust(shop.api, id, { delta: -2, reason: 'sale' }, key);
      expectError(replayed, 409, 'INSUFFICIENT_STOCK');
      expect(replayed.headers['idempotent-replayed']).toBe('true');
      expect((await productRow(h.db, id)).quantity).toBe(6);
    });

    it('needs an Idempotency-Key (400 IDEMPOTENCY_KEY_REQUIRED)', async () => {
      const id = await product({ quantity: 1 });
      const before = await productState(h.db, shop.store.store.id, id);
      expectError(await shop.api.post(adjustmentsPath(id), { delta: 1, reason: 'restock' }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
      expect(await productState(h.db, shop.store.store.id, id)).toEqual(before);
    });

    it('adds a digital product’s codes as units: available_units rises by delta', async () => {
      const id = await digitalProduct(['GC-OLD-1', 'GC-OLD-2'], ['GC-SOLD']);
      const response = await adjust(shop.api, id, { delta: 2, reason: 'restock', codes: ['GC-7Q4K-93XA-PL2M', 'GC-8R5L-04YB-QM3N'] });
      expect(response.status).toBe(201);
      expect(response.body.data).toEqual({
        id: expect.any(Number),
        product_id: id,
        mode: 'digital_aggregate',
        delta: 2,
        reason: 'restock',
        note: null,
        quantity_before: 2,
        quantity_after: 4,
        resource_version: 2,
        created_at: toIso(h.clock.now()),
      });
      expect(await unsoldCodes(id)).toEqual(['GC-OLD-1', 'GC-OLD-2', 'GC-7Q4K-93XA-PL2M', 'GC-8R5L-04YB-QM3N']);
      const added = await h.db('digital_units').where({ product_id: id, adjustment_id: response.body.data.id }).count({ n: '*' });
      expect(Number(added[0]?.n)).toBe(2);
      expect((await shop.api.get(`products/${id}/inventory`)).body.data).toMatchObject({ mode: 'digital_aggregate', available_units: 4, resource_version: 2 });
      expect((await productEvents(h.db, shop.store.store.id, id)).map((event) => event.type).sort()).toEqual(['inventory.adjusted', 'product.updated']);
    });

    it('withdraws the oldest unsold units of a digital product on a negative delta', async () => {
      const id = await digitalProduct(['GC-A', 'GC-B', 'GC-C'], ['GC-SOLD']);
      const response = await adjust(shop.api, id, { delta: -2, reason: 'correction' });
      expect(response.status).toBe(201);
      expect(response.body.data).toMatchObject({ mode: 'digital_aggregate', delta: -2, quantity_before: 3, quantity_after: 1, resource_version: 2 });
      expect(await unsoldCodes(id)).toEqual(['GC-C']);
      expect((await shop.api.get(`products/${id}/inventory`)).body.data.available_units).toBe(1);
    });

    it('refuses to withdraw more digital units than are unsold (409 INSUFFICIENT_STOCK) and changes nothing', async () => {
      const id = await digitalProduct(['GC-A'], ['GC-SOLD-1', 'GC-SOLD-2']);
      const before = await productState(h.db, shop.store.store.id, id);
      expectError(await adjust(shop.api, id, { delta: -2, reason: 'damage' }), 409, 'INSUFFICIENT_STOCK');
      expect(await productState(h.db, shop.store.store.id, id)).toEqual(before);
    });

    it('refuses codes that break the rules (count not delta, missing, with a negative delta, on a physical product) with VALIDATION_FAILED, storing nothing', async () => {
      const digital = await digitalProduct(['GC-A']);
      const physical = await product({ quantity: 3 });
      const cases: Array<[number, AdjustmentBody]> = [
        [digital, { delta: 3, reason: 'restock', codes: ['X-1', 'X-2'] }],
        [digital, { delta: 1, reason: 'restock', codes: ['X-1', 'X-2'] }],
        [digital, { delta: 1, reason: 'restock' }],
        [digital, { delta: -1, reason: 'correction', codes: ['GC-A'] }],
        [physical, { delta: 1, reason: 'restock', codes: ['X-1'] }],
      ];
      for (const [id, body] of cases) {
        const before = await productState(h.db, shop.store.store.id, id);
        const refused = await adjust(shop.api, id, body);
        expectError(refused, 400, 'VALIDATION_FAILED');
        expect(refused.body.error.details).toEqual([{ location: 'body', field: '/codes', message: expect.any(String) }]);
        expect(await productState(h.db, shop.store.store.id, id)).toEqual(before);
      }
    });

    it('refuses malformed bodies (VALIDATION_FAILED) and unknown fields (UNKNOWN_FIELD), storing nothing', async () => {
      const id = await product({ quantity: 3, product_kind: 'digital' });
      const before = await productState(h.db, shop.store.store.id, id);
      const malformed: AdjustmentBody[] = [
        { delta: 0, reason: 'restock' },
        { delta: 1_000_001, reason: 'restock' },
        { delta: -1_000_001, reason: 'sale' },
        { delta: '5', reason: 'restock' },
        { delta: 1.5, reason: 'restock' },
        { delta: 1, reason: 'theft' },
        { delta: 1 },
        { reason: 'restock', delta: undefined },
        { delta: 1, reason: 'restock', note: 'n'.repeat(501) },
        { delta: 1, reason: 'restock', note: 7 },
        { delta: 1, reason: 'restock', codes: [] },
        { delta: 2, reason: 'restock', codes: ['SAME', 'SAME'] },
        { delta: 1, reason: 'restock', codes: ['c'.repeat(256)] },
        { delta: 1, reason: 'restock', codes: [''] },
        { delta: 101, reason: 'restock', codes: Array.from({ length: 101 }, (_, index) => `C-${index}`) },
      ];
      for (const body of malformed) expectError(await adjust(shop.api, id, body), 400, 'VALIDATION_FAILED');
      expectError(await adjust(shop.api, id, { delta: 1, reason: 'restock', codes: ['C-1'], warehouse: 'Jeddah' }), 422, 'UNKNOWN_FIELD');
      expect(await productState(h.db, shop.store.store.id, id)).toEqual(before);
    });

    it('is NOT_FOUND for an unknown id or an id beyond any row, VALIDATION_FAILED for malformed ids', async () => {
      const last = await product();
      for (const id of [String(last + 1000), HUGE_ID]) expectError(await adjust(shop.api, id, { delta: 1, reason: 'restock' }), 404, 'NOT_FOUND');
      for (const id of MALFORMED_IDS) expectError(await adjust(shop.api, id, { delta: 1, reason: 'restock' }), 400, 'VALIDATION_FAILED');
    });

    it('keeps stores apart: another store’s product id is NOT_FOUND and nothing changes; a token of another store is STORE_NOT_FOUND', async () => {
      const id = await product({ quantity: 8 });
      const before = await productState(h.db, shop.store.store.id, id);
      expectError(await adjust(other.api, id, { delta: -1, reason: 'sale' }), 404, 'NOT_FOUND');
      expectError(await other.api.get(`products/${id}/inventory`), 404, 'NOT_FOUND');
      const foreignToken = shop.api.as(other.api.accessToken);
      expectError(await adjust(foreignToken, id, { delta: -1, reason: 'sale' }), 404, 'STORE_NOT_FOUND');
      expect(await productState(h.db, shop.store.store.id, id)).toEqual(before);
    });

    it('needs inventory:write: inventory:read alone is INSUFFICIENT_SCOPE', async () => {
      const id = await product({ quantity: 2 });
      const reader = shop.api.as(await tokenWithScopes(h, shop.store, ['inventory:read']));
      const refused = await adjust(reader, id, { delta: 1, reason: 'restock' });
      expectError(refused, 403, 'INSUFFICIENT_SCOPE');
      expect(refused.headers['www-authenticate']).toContain('scope="inventory:write"');
      expect((await productRow(h.db, id)).quantity).toBe(2);

      const writer = shop.api.as(await tokenWithScopes(h, shop.store, ['inventory:read', 'inventory:write']));
      expect((await adjust(writer, id, { delta: 1, reason: 'restock' })).status).toBe(201);
    });
  });

  describe('errors the request machinery answers, as documented', () => {
    it('is 409 IDEMPOTENCY_KEY_IN_PROGRESS while a request with the same key is still running, adjusting nothing', async () => {
      const id = await product({ quantity: 5 });
      const body = { delta: -1, reason: 'sale' };
      const key = randomUUID();
      const installationId: string = (await shop.api.get('me')).body.data.installation.id;
      const now = h.clock.now();
      await h.db('idempotency_keys').insert({
        store_id: shop.store.store.id,
        id: randomUUID(),
        installation_id: installationId,
        operation_id: 'inventory.adjust',
        idempotency_key: key,
        request_hash: requestHashOf('POST', `/stores/${shop.store.store.id}/v1/${adjustmentsPath(id)}`, body),
        state: 'in_progress',
        lease_until: now + 60_000,
        created_at: now,
        expires_at: now + IDEMPOTENCY_TTL_MS,
      });
      const before = await productState(h.db, shop.store.store.id, id);
      expectError(await adjust(shop.api, id, body, key), 409, 'IDEMPOTENCY_KEY_IN_PROGRESS');
      expect(await productState(h.db, shop.store.store.id, id)).toEqual(before);
    });

    it('is 401 without a token, 415 for a body that is not JSON, 413 over 64 KiB and 503 while the store migrates', async () => {
      const { store, api } = await storeWithFullAccess(h, 'Moving Store');
      const id = await insertProduct(h.db, store.store.id, { quantity: 5 });
      const before = await productState(h.db, store.store.id, id);
      const reads = [`products/${id}/inventory`, 'inventory'];

      for (const path of reads) expectError(await api.anonymous('get', path), 401, 'UNAUTHENTICATED');
      expectError(
        await api.anonymous('post', adjustmentsPath(id)).set('Idempotency-Key', randomUUID()).send({ delta: 1, reason: 'restock' }),
        401,
        'UNAUTHENTICATED',
      );
      expectError(
        await api.call('post', adjustmentsPath(id)).set('Idempotency-Key', randomUUID()).type('text/plain').send('delta=1'),
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      );
      expectError(await adjust(api, id, { delta: 1, reason: 'restock', note: OVERSIZED_TEXT }), 413, 'PAYLOAD_TOO_LARGE');

      await startStoreMigration(h.services, store.store.id);
      for (const path of reads) expectError(await api.get(path), 503, 'STORE_MIGRATING');
      expectError(await adjust(api, id, { delta: 1, reason: 'restock' }), 503, 'STORE_MIGRATING');
      await endStoreMigration(h.services, store.store.id);
      expect(await productState(h.db, store.store.id, id)).toEqual(before);
    });
  });
});
