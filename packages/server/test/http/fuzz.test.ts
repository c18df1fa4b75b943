import { type OperationEntry, operationTable } from '@svc/contract';
import fc from 'fast-check';
import type { Knex } from 'knex';
import request from 'supertest';
import { fanOut } from '../../src/delivery/fan-out';
import { createCategory } from '../../src/domain/catalog/categories/changes';
import { createPage } from '../../src/domain/content/pages/changes';
import { abandonCart } from '../../src/domain/storefront/carts/changes';
import { createCoupon } from '../../src/domain/storefront/coupons/changes';
import { createCustomer } from '../../src/domain/storefront/customers/changes';
import { failPayment, fulfilOrder, payOrder, placeOrder } from '../../src/domain/storefront/orders/changes';
import { writeReview } from '../../src/domain/storefront/reviews/changes';
import { createSubscription } from '../../src/domain/webhooks/subscriptions/changes';
import { handlers } from '../../src/generated/registry';
import { isNotImplemented } from '../../src/http/handler';
import { findInstallationOf } from '../../src/platform/installations';
import { ALL_SCOPES } from '../../src/platform/scopes';
import { authorizeQuery } from '../support/browser';
import { insertDigitalUnits, insertProduct, tokenWithScopes } from '../support/catalog-fixtures';
import { testDatabases } from '../support/databases';
import { documentedParameters, exampleBody } from '../support/example-requests';
import { type Caller, type Draft, describeDraft, mutate, mutations, send, singleMutations } from '../support/fuzz-requests';
import {
  type AppFixture,
  basicHeader,
  createTestApp,
  createTestStore,
  fullAccess,
  installWithTokens,
  type StoreFixture,
  suiteHarness,
} from '../support/harness';

/**
 * Requests built from the spec for every built operation, then mutated (wrong types, prototype
 * keys, odd Unicode, overflowing numbers, extra and missing fields, bodies where none belongs, odd
 * headers, path ids and credentials). Whatever arrives: never a 5xx; every 4xx in the error format
 * with the answer's request id; nothing stored by a refused request. Response validation is on, so
 * an answer outside the spec, or with a status its operation does not document, is a 500 here too.
 * Seeded, so a run is repeatable; FUZZ_SEED and FUZZ_RUNS explore further.
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261101);
const RUNS_PER_OPERATION = Number(process.env.FUZZ_RUNS ?? 30);

const built = (Object.values(operationTable) as OperationEntry[]).filter((entry) => !isNotImplemented(handlers[entry.operationId as keyof typeof handlers]));

/** What a refused request must leave as it was: the catalog's, pages', coupons' and reviews' rows and versions, and the outbox. */
const SNAPSHOT_SQL = {
  products: 'select count(*) as n, coalesce(sum(resource_version), 0) as v from products',
  categories: 'select count(*) as n, coalesce(sum(resource_version), 0) as v from categories',
  pages: 'select count(*) as n, coalesce(sum(resource_version), 0) as v from pages',
  inventory_adjustments: 'select count(*) as n, 0 as v from inventory_adjustments',
  digital_units: 'select count(*) as n, count(delivered_at) as v from digital_units',
  coupons: 'select count(*) as n, coalesce(sum(resource_version), 0) as v from coupons',
  outbox_events: 'select count(*) as n, 0 as v from outbox_events',
  reviews: 'select count(*) as n, coalesce(sum(resource_version), 0) as v from reviews',
  webhook_subscriptions: 'select count(*) as n, coalesce(sum(secret_generation), 0) as v from webhook_subscriptions',
};

async function snapshot(db: Knex): Promise<Record<string, [number, number]>> {
  const counts: Record<string, [number, number]> = {};
  for (const [table, sql] of Object.entries(SNAPSHOT_SQL)) {
    const result = (await db.raw(sql)) as { rows?: { n: unknown; v: unknown }[] } | { n: unknown; v: unknown }[];
    const [row] = Array.isArray(result) ? result : (result.rows ?? []);
    counts[table] = [Number(row?.n), Number(row?.v)];
  }
  return counts;
}

interface ErrorEnvelope {
  error?: { code?: unknown; message?: unknown };
  meta?: { request_id?: unknown };
}

function failure(draft: Draft, response: request.Response, why: string): Error {
  return new Error(`${why}\n--- request\n${describeDraft(draft)}\n--- answer ${response.status}\n${JSON.stringify(response.body).slice(0, 600)}`);
}

describe.each(testDatabases())('fuzz: requests from the spec, mutated, on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase, { rateLimits: { perInstallation: 1_000_000, perClient: 1_000_000 } });
  let store: StoreFixture;
  let ownClient: AppFixture;
  let oauthClient: AppFixture;
  const tokens = { own: '', otherStore: '', narrow: '', refresh: '' };
  const ids = { product: 0, category: 0, order: 0, payment: 0, review: 0, page: 0, deletablePage: 0, cart: 0, coupon: 0, subscription: '', event: '' };
  let requestCounter = 0;

  beforeAll(async () => {
    store = await createTestStore(h);
    const access = await fullAccess(h, store);
    ownClient = access.client;
    tokens.own = access.tokens.access_token;
    tokens.otherStore = (await fullAccess(h, await createTestStore(h, 'Amber House'))).tokens.access_token;
    tokens.narrow = await tokenWithScopes(h, store, ['orders:read']);
    oauthClient = await createTestApp(h, { required: ['products:read'], optional: [], name: 'Token Fuzz' });
    tokens.refresh = (await installWithTokens(h, store, oauthClient, ['products:read'])).refresh_token;
    const category = await createCategory(h.db, { storeId: store.store.id, installationId: null, now: h.clock.now() }, { name: 'Perfumes' });
    ids.category = category.id;
    ids.product = await insertProduct(h.db, store.store.id, {
      name: 'Royal Oud',
      category_id: category.id,
      quantity: 10,
      price_halalas: 34900,
      price_state: 'ready',
    });
    const digital = await insertProduct(h.db, store.store.id, { name: 'Gift card', product_kind: 'digital' });
    await insertDigitalUnits(h.db, store.store.id, digital, ['CODE-1', 'CODE-2']);
    // A paid order with a delivered code, so order ids reach the handlers (and their digital items are not empty).
    const shopper = { storeId: store.store.id, installationId: null, now: h.clock.now() };
    const orderedCard = await insertProduct(h.db, store.store.id, {
      name: 'Ordered gift card',
      product_kind: 'digital',
      status: 'active',
      price_halalas: 10000,
      price_state: 'ready',
    });
    await insertDigitalUnits(h.db, store.store.id, orderedCard, ['ORDERED-1']);
    const customer = await createCustomer(h.db, shopper, { name: 'Noura Al-Harbi', email: 'noura@example.com' });
    // The same shopper's earlier checkout of it, left unfinished, so cart ids reach the handlers.
    ids.cart = (await abandonCart(h.db, shopper, { customerId: customer.id, items: [{ productId: orderedCard, quantity: 1 }] })).id;
    const order = await placeOrder(h.db, shopper, { customerId: customer.id, items: [{ productId: orderedCard, quantity: 1 }] });
    // A declined attempt first (the order stays pending), so payment ids reach the handlers too.
    ids.payment = (await failPayment(h.db, shopper, order.id, { method: 'cod' })).id;
    ids.order = (await payOrder(h.db, shopper, order.id, { method: 'mada', card: { brand: 'mada', last4: '4821' } })).id;
    // Delivered (nothing physical: straight from processing) and reviewed, so review ids reach the handlers.
    await fulfilOrder(h.db, shopper, order.id, 'delivered');
    ids.review = (
      await writeReview(h.db, shopper, { customerId: customer.id, orderId: order.id, productId: orderedCard, rating: 5, content: 'Arrived at once.' })
    ).id;
    // Two pages: one that pages.delete may delete, so the other keeps reaching the other page handlers.
    ids.page = (await createPage(h.db, shopper, { title: 'Shipping policy', slug: 'shipping-policy', body: '<p>Fast.</p>' })).id;
    ids.deletablePage = (await createPage(h.db, shopper, { title: 'Old page' })).id;
    ids.coupon = (await createCoupon(h.db, shopper, { code: 'FUZZ10', type: 'percentage', amountHalalas: 1000 })).id;
    // A subscription of the full-access installation, on a local port nothing listens on, so webhooks.test fails at once.
    const subscriber = {
      storeId: store.store.id,
      installationId: (await findInstallationOf(h.db, store.store.id, ownClient.app.id))?.id as string,
      scopes: new Set<string>(ALL_SCOPES),
      now: h.clock.now(),
    };
    ids.subscription = (
      await createSubscription(h.db, h.services, subscriber, { endpoint_url: 'http://127.0.0.1:9/hooks', event_types: ['order.created'] })
    ).row.id;
    // The order's event, queued to that subscription, so event ids reach the events and delivery log handlers.
    await fanOut(h.services);
    ids.event = (await h.db('webhook_deliveries').where({ subscription_id: ids.subscription }).first<{ event_id: string }>('event_id'))?.event_id as string;
  });

  /** The `Authorization` header each caller sends, by the operation's kind of authentication. */
  function authorizationOf(entry: OperationEntry, caller: Caller): string | undefined {
    const bearer = (token: string) => `Bearer ${token}`;
    const byCaller: Record<Caller, string | undefined> =
      entry.auth === 'client'
        ? {
            own: oauthClient.basic,
            none: undefined,
            garbage: 'Basic !!!',
            'other-store': ownClient.basic,
            'narrow-scope': oauthClient.basic,
            'other-scheme': bearer(tokens.own),
            'wrong-secret': basicHeader(oauthClient.app.id, `svc_cs_${'A'.repeat(43)}`),
          }
        : {
            own: bearer(tokens.own),
            none: undefined,
            garbage: 'Bearer svc_at_garbage',
            'other-store': bearer(tokens.otherStore),
            'narrow-scope': bearer(tokens.narrow),
            'other-scheme': ownClient.basic,
            'wrong-secret': bearer(tokens.refresh),
          };
    return byCaller[caller];
  }

  /** The seeded record an operation's `{id}` names. */
  function seededIdOf(entry: OperationEntry): number | string {
    if (entry.path.includes('/webhook-subscriptions/')) return ids.subscription;
    if (entry.path.includes('/events/')) return ids.event;
    if (entry.path.includes('/categories/')) return ids.category;
    if (entry.path.includes('/orders/')) return ids.order;
    if (entry.path.includes('/payments/')) return ids.payment;
    if (entry.path.includes('/reviews/')) return ids.review;
    if (entry.path.includes('/pages/')) return entry.operationId === 'pages.delete' ? ids.deletablePage : ids.page;
    if (entry.path.includes('/abandoned-carts/')) return ids.cart;
    if (entry.path.includes('/coupons/')) return ids.coupon;
    return ids.product;
  }

  /** The resource's current ETag, so that an update built from the spec gets past If-Match. */
  async function currentEtag(entry: OperationEntry): Promise<string> {
    const resource = entry.path.includes('/categories/') ? `categories/${ids.category}` : `products/${ids.product}`;
    const response = await request(h.app).get(`/stores/${store.store.id}/v1/${resource}`).set('Authorization', `Bearer ${tokens.own}`);
    return String(response.headers.etag);
  }

  /** The request the spec describes, with this test's store, ids and credentials, so that it reaches the handler. */
  async function baseDraft(entry: OperationEntry): Promise<Draft> {
    const pathValues: Record<string, string> = { storeId: store.store.id };
    if (entry.path.includes('{id}')) pathValues.id = String(seededIdOf(entry));
    if (entry.path.includes('{eventId}')) pathValues.eventId = ids.event;
    const headers: [string, string[]][] = [];
    for (const parameter of documentedParameters(entry).filter((candidate) => candidate.in === 'header' && candidate.required === true)) {
      requestCounter += 1;
      headers.push([parameter.name, [parameter.name === 'If-Match' ? await currentEtag(entry) : `fuzz-${requestCounter}`]]);
    }
    // Required query parameters (the analytics range) take their spec example, so the request reaches the handler.
    const requiredQuery = documentedParameters(entry)
      .filter((parameter) => parameter.in === 'query' && parameter.required === true)
      .map((parameter): [string, string] => [parameter.name, String(parameter.example)]);
    const query = entry.operationId === 'oauth.authorize' ? Object.entries(authorizeQuery(store, oauthClient, ['products:read'])) : requiredQuery;
    const example = exampleBody(entry);
    const body: Draft['body'] =
      entry.operationId === 'oauth.token'
        ? {
            kind: 'form',
            pairs: [
              ['grant_type', 'refresh_token'],
              ['refresh_token', tokens.refresh],
            ],
          }
        : example === undefined
          ? { kind: 'none' }
          : example.contentType === 'application/x-www-form-urlencoded'
            ? { kind: 'form', pairs: Object.entries(example.body as Record<string, string>) }
            : { kind: 'json', value: example.body };
    return { entry, pathValues, query, rawQuery: [], headers, caller: 'own', body };
  }

  it('fuzzes every built operation (a stub is skipped until it is built)', () => {
    expect(built.map((entry) => entry.operationId)).toEqual(
      expect.arrayContaining(['me', 'products.create', 'products.list', 'categories.update', 'inventory.adjust', 'oauth.token', 'oauth.authorize']),
    );
  });

  /** Sends the draft and holds its answer to the rules: no 5xx; a refusal in the error format with its request id, having stored nothing. */
  async function expectSoundAnswer(draft: Draft): Promise<void> {
    const before = await snapshot(h.db);
    const response = await send(h.app, draft, authorizationOf(draft.entry, draft.caller));
    if (response.status >= 500) throw failure(draft, response, `A ${response.status} answer`);
    if (response.status < 400) return;
    const body = response.body as ErrorEnvelope;
    if (typeof body.error?.code !== 'string' || typeof body.error.message !== 'string') throw failure(draft, response, 'A refusal outside the error format');
    if (body.meta?.request_id !== response.headers['x-request-id']) throw failure(draft, response, 'meta.request_id is not the X-Request-Id header');
    const after = await snapshot(h.db);
    if (JSON.stringify(after) !== JSON.stringify(before))
      throw failure(draft, response, `A refused request changed what is stored: ${JSON.stringify(before)} → ${JSON.stringify(after)}`);
  }

  const cases = built.map((entry, index) => [entry.operationId, entry, index] as const);

  it.each(cases)('%s: each odd input on its own gets a sound answer', async (_operationId, entry) => {
    const base = await baseDraft(entry);
    const fields =
      base.body.kind === 'json' && base.body.value !== null && typeof base.body.value === 'object'
        ? Object.keys(base.body.value)
        : base.body.kind === 'form'
          ? base.body.pairs.map(([name]) => name)
          : [];
    for (const change of singleMutations(entry, fields)) await expectSoundAnswer(mutate(await baseDraft(entry), change));
  });

  it.each(cases)('%s: random combinations of odd inputs get sound answers', async (_operationId, entry, index) => {
    await fc.assert(
      fc.asyncProperty(mutations, async (changes) => expectSoundAnswer(changes.reduce(mutate, await baseDraft(entry)))),
      { seed: SEED + index, numRuns: RUNS_PER_OPERATION },
    );
  });
});
