import request from 'supertest';
import { createApp } from '../../../src/app';
import { engineOfHandle } from '../../../src/db/engine';
import { createServices } from '../../../src/services/container';
import { expectError } from '../../support/auth-steps';
import { testDatabases } from '../../support/databases';
import { createTestStore, type StoreFixture, suiteHarness, UUID } from '../../support/harness';
import {
  deleteSubscription,
  installSubscriber,
  listSubscriptionsCall,
  patchSubscription,
  postAction,
  postSubscription,
  type Subscriber,
  subscribe,
} from '../../support/webhooks';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;
const HOOK = 'https://app.example.com/webhooks/store-events';

describe.each(testDatabases())('webhook subscriptions on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);

  async function storeWithSubscriber(scopes = ['orders:read', 'products:read']): Promise<{ store: StoreFixture; storeId: string; subscriber: Subscriber }> {
    const store = await createTestStore(h);
    return { store, storeId: store.store.id, subscriber: await installSubscriber(h, store, scopes) };
  }

  const subscriptionRows = (storeId: string) => h.db('webhook_subscriptions').where({ store_id: storeId });

  describe('webhooks.create', () => {
    it('creates an active subscription at secret generation 1, records the scopes that allowed its types and shows the secret once', async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const response = await postSubscription(h.app, storeId, subscriber.token, {
        endpoint_url: HOOK,
        event_types: ['product.updated', 'order.created', 'app.uninstalled'],
      });
      expect(response.status).toBe(201);
      const at = new Date(h.clock.now()).toISOString();
      expect(response.body.data).toEqual({
        id: expect.stringMatching(UUID),
        endpoint_url: HOOK,
        event_types: ['product.updated', 'order.created', 'app.uninstalled'],
        payload_version: 1,
        api_version: '2026-10-15',
        state: 'active',
        secret_generation: 1,
        issued_scopes: ['orders:read', 'products:read'],
        paused_reason: null,
        created_at: at,
        updated_at: at,
        secret: expect.stringMatching(SECRET),
      });
      const listed = await listSubscriptionsCall(h.app, storeId, subscriber.token);
      expect(listed.status).toBe(200);
      const { secret, ...withoutSecret } = response.body.data;
      expect(listed.body.data).toEqual([withoutSecret]);
      expect(JSON.stringify(listed.body)).not.toContain(secret);
    });

    it('stores the secret sealed, and the idempotent answer that holds it sealed too: neither is readable in the database', async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const { id, secret } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['app.uninstalled'] });
      const [row] = await subscriptionRows(storeId);
      expect(row.secret_sealed).not.toContain(secret);
      expect(row.secret_sealed).not.toContain(secret.slice('whsec_'.length));
      const keys = await h.db('idempotency_keys').where({ installation_id: subscriber.installationId, operation_id: 'webhooks.create' });
      expect(keys).toHaveLength(1);
      expect(keys[0].response_body).not.toContain(secret.slice('whsec_'.length));
      expect(keys[0].response_body).not.toContain(id);
    });

    it('answers a repeated Idempotency-Key with the same subscription and the same secret, creating nothing', async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const body = { endpoint_url: HOOK, event_types: ['order.paid'] };
      const first = await postSubscription(h.app, storeId, subscriber.token, body, 'create-once');
      const again = await postSubscription(h.app, storeId, subscriber.token, body, 'create-once');
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(first.body.data);
      expect(await subscriptionRows(storeId)).toHaveLength(1);
      const otherBody = await postSubscription(h.app, storeId, subscriber.token, { ...body, event_types: ['order.created'] }, 'create-once');
      expectError(otherBody, 422, 'IDEMPOTENCY_KEY_REUSED');
    });

    it('refuses an event type whose scope the installation does not hold: 422 EVENT_TYPE_NOT_ALLOWED naming it, nothing stored', async () => {
      const { storeId, subscriber } = await storeWithSubscriber(['products:read']);
      const response = await postSubscription(h.app, storeId, subscriber.token, { endpoint_url: HOOK, event_types: ['product.created', 'review.created'] });
      expectError(response, 422, 'EVENT_TYPE_NOT_ALLOWED');
      expect(response.body.error.details).toEqual([{ location: 'body', field: '/event_types/1', message: 'needs the scope reviews:read' }]);
      expect(await subscriptionRows(storeId)).toHaveLength(0);
    });

    it.each([
      ['order.created', 'orders:read'],
      ['inventory.adjusted', 'inventory:read'],
      ['abandoned_cart.created', 'carts:read'],
      ['review.created', 'reviews:read'],
      ['product.updated', 'products:read'],
    ])('allows %s with %s and only with it', async (type, scope) => {
      const { storeId, subscriber } = await storeWithSubscriber([scope]);
      const allowed = await postSubscription(h.app, storeId, subscriber.token, { endpoint_url: HOOK, event_types: [type] });
      expect(allowed.status).toBe(201);
      expect(allowed.body.data.issued_scopes).toEqual([scope]);
      const other = await installSubscriber(h, await createTestStore(h), ['categories:read']);
      const refused = await postSubscription(h.app, (await createTestStore(h)).store.id, other.token, { endpoint_url: HOOK, event_types: [type] });
      expect(refused.status).toBe(404); // another store's token
      const { storeId: narrowStore, subscriber: narrow } = await storeWithSubscriber(['categories:read']);
      expectError(await postSubscription(h.app, narrowStore, narrow.token, { endpoint_url: HOOK, event_types: [type] }), 422, 'EVENT_TYPE_NOT_ALLOWED');
    });

    it('needs no scope: an installation with none of the event scopes may subscribe to app.uninstalled and webhook.test', async () => {
      const { storeId, subscriber } = await storeWithSubscriber(['categories:read']);
      const response = await postSubscription(h.app, storeId, subscriber.token, { endpoint_url: HOOK, event_types: ['app.uninstalled', 'webhook.test'] });
      expect(response.status).toBe(201);
      expect(response.body.data.issued_scopes).toEqual([]);
    });

    it('needs an Idempotency-Key and a valid token', async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const withoutKey = await listSubscriptionsCall(h.app, storeId, 'svc_at_not-a-token');
      expectError(withoutKey, 401, 'UNAUTHENTICATED');
      const response = await postSubscription(h.app, storeId, subscriber.token, { endpoint_url: HOOK, event_types: ['order.paid'] }).unset('Idempotency-Key');
      expect(response.status).toBe(400);
    });
  });

  describe('endpoint URLs', () => {
    const refusedEverywhere = [
      'http://app.example.com/hook', // http beyond this machine
      'https://169.254.169.254/latest/meta-data', // the cloud metadata address
      'https://0xa9.0xfe.0xa9.0xfe/', // the same, in hex
      'https://2852039166/', // the same, as one decimal number
      'https://0251.0376.0251.0376/', // the same, in octal
      'https://169.254.169.254./', // the same, with a trailing dot
      'https://10.1/', // short form of 10.0.0.1
      'https://10.0.0.1/',
      'https://172.16.5.4/',
      'https://192.168.1.10/',
      'https://100.64.0.1/', // carrier-grade NAT
      'https://0/', // 0.0.0.0
      'https://0.0.0.0/',
      'https://224.0.0.1/', // multicast
      'https://255.255.255.255/',
      'https://[::]/',
      'https://[fe80::1]/',
      'https://[fd12:3456::1]/',
      'https://[ff02::1]/',
      'https://[::ffff:169.254.169.254]/', // IPv4-mapped
      'https://[::ffff:127.0.0.1]/', // IPv4-mapped loopback: refused even where loopback is allowed
      'https://[64:ff9b::a9fe:a9fe]/', // NAT64 of the metadata address
      'https://user:secret@app.example.com/hook',
    ];

    let refusals: Promise<{ storeId: string; subscriber: Subscriber; id: string }> | undefined;
    /** One store and subscription for the refusals: each checks that its own URL was stored nowhere. */
    const refusalStore = () =>
      (refusals ??= storeWithSubscriber().then(async ({ storeId, subscriber }) => ({
        storeId,
        subscriber,
        id: (await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.paid'] })).id,
      })));

    it.each(refusedEverywhere)('refuses %s with 400 VALIDATION_FAILED on /endpoint_url, at create and update, storing nothing', async (url) => {
      const { storeId, subscriber, id } = await refusalStore();
      const created = await postSubscription(h.app, storeId, subscriber.token, { endpoint_url: url, event_types: ['order.paid'] });
      expectError(created, 400, 'VALIDATION_FAILED');
      expect(created.body.error.details).toEqual([expect.objectContaining({ location: 'body', field: '/endpoint_url' })]);
      expectError(await patchSubscription(h.app, storeId, subscriber.token, id, { endpoint_url: url }), 400, 'VALIDATION_FAILED');
      expect(await subscriptionRows(storeId)).toEqual([expect.objectContaining({ id, endpoint_url: HOOK })]);
    });

    it.each([
      'http://127.0.0.1:8787/hook',
      'http://localhost:8787/hook',
      'https://127.0.0.1/hook',
      'https://app.example.com/hook',
      'https://93.184.216.34/hook',
      'https://[2606:2800:220:1::]/hook',
    ])('accepts %s outside production', async (url) => {
      const { storeId, subscriber } = await storeWithSubscriber();
      expect((await postSubscription(h.app, storeId, subscriber.token, { endpoint_url: url, event_types: ['order.paid'] })).status).toBe(201);
    });

    it('in production takes https to public addresses only: no http, no loopback, no localhost', async () => {
      const production = createApp({
        config: { validateResponses: true, exposeInternalErrors: false },
        services: createServices({
          db: h.db,
          engine: engineOfHandle(h.db),
          clock: h.clock,
          rateLimits: { perInstallation: 1000, perClient: 1000 },
          webhooks: { environment: 'production' },
        }),
      });
      const { storeId, subscriber } = await storeWithSubscriber();
      for (const url of [
        'http://127.0.0.1:8787/hook',
        'http://localhost:8787/hook',
        'https://127.0.0.1/hook',
        'https://localhost/hook',
        'https://0x7f.1/hook',
        'https://[::1]/hook',
      ]) {
        expectError(
          await postSubscription(production, storeId, subscriber.token, { endpoint_url: url, event_types: ['order.paid'] }),
          400,
          'VALIDATION_FAILED',
        );
      }
      expect((await postSubscription(production, storeId, subscriber.token, { endpoint_url: HOOK, event_types: ['order.paid'] })).status).toBe(201);
    });
  });

  describe('webhooks.update', () => {
    it('changes the endpoint and the event types, recomputing issued_scopes', async () => {
      const { storeId, subscriber } = await storeWithSubscriber(['orders:read', 'products:read']);
      const { id } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.created'] });
      h.clock.advance(60_000);
      const response = await patchSubscription(h.app, storeId, subscriber.token, id, {
        endpoint_url: 'https://app.example.com/v2',
        event_types: ['product.created', 'app.uninstalled'],
      });
      expect(response.status).toBe(200);
      expect(response.body.data).toMatchObject({
        endpoint_url: 'https://app.example.com/v2',
        event_types: ['product.created', 'app.uninstalled'],
        issued_scopes: ['products:read'],
        updated_at: new Date(h.clock.now()).toISOString(),
      });
      expect(response.body.data).not.toHaveProperty('secret');
    });

    it('pauses with paused_reason null (the app paused it) and resumes', async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const { id } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.created'] });
      const paused = await patchSubscription(h.app, storeId, subscriber.token, id, { state: 'paused' });
      expect(paused.body.data).toMatchObject({ state: 'paused', paused_reason: null });
      const resumed = await patchSubscription(h.app, storeId, subscriber.token, id, { state: 'active' });
      expect(resumed.body.data).toMatchObject({ state: 'active', paused_reason: null });
    });

    it('resumes a subscription that delivery paused, clearing paused_reason', async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const { id } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.created'] });
      await h.db('webhook_subscriptions').where({ id }).update({ state: 'paused', paused_reason: 'The retry schedule was spent.' });
      expect((await listSubscriptionsCall(h.app, storeId, subscriber.token)).body.data[0]).toMatchObject({
        state: 'paused',
        paused_reason: 'The retry schedule was spent.',
      });
      const resumed = await patchSubscription(h.app, storeId, subscriber.token, id, { state: 'active' });
      expect(resumed.body.data).toMatchObject({ state: 'active', paused_reason: null });
    });

    it('refuses event types the installation cannot receive (422) and an empty change (400), changing nothing', async () => {
      const { storeId, subscriber } = await storeWithSubscriber(['orders:read']);
      const { id } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.created'] });
      expectError(
        await patchSubscription(h.app, storeId, subscriber.token, id, { event_types: ['order.paid', 'product.updated'] }),
        422,
        'EVENT_TYPE_NOT_ALLOWED',
      );
      expectError(await patchSubscription(h.app, storeId, subscriber.token, id, {}), 400, 'VALIDATION_FAILED');
      expectError(await patchSubscription(h.app, storeId, subscriber.token, id, { state: 'revoked' }), 400, 'VALIDATION_FAILED');
      expect((await subscriptionRows(storeId))[0]).toMatchObject({ event_types: '["order.created"]', state: 'active' });
    });
  });

  describe('webhooks.delete', () => {
    it('revokes the subscription; deleting again answers the same record; a revoked one cannot change or rotate (409 SUBSCRIPTION_REVOKED)', async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const { id } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.created'] });
      const deleted = await deleteSubscription(h.app, storeId, subscriber.token, id);
      expect(deleted.status).toBe(200);
      expect(deleted.body.data).toMatchObject({ id, state: 'revoked' });
      h.clock.advance(1000);
      const again = await deleteSubscription(h.app, storeId, subscriber.token, id);
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual(deleted.body.data);
      expectError(await patchSubscription(h.app, storeId, subscriber.token, id, { state: 'active' }), 409, 'SUBSCRIPTION_REVOKED');
      expectError(await postAction(h.app, storeId, subscriber.token, id, 'rotate-secret'), 409, 'SUBSCRIPTION_REVOKED');
      expect((await listSubscriptionsCall(h.app, storeId, subscriber.token)).body.data).toEqual([deleted.body.data]);
    });
  });

  describe('webhooks.rotate_secret', () => {
    it('issues a new secret at the next generation, shown once; a repeated key answers the same secret', async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const { id, secret } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.created'] });
      const rotated = await postAction(h.app, storeId, subscriber.token, id, 'rotate-secret', 'rotate-once');
      expect(rotated.status).toBe(200);
      expect(rotated.body.data).toMatchObject({ id, secret_generation: 2, secret: expect.stringMatching(SECRET) });
      expect(rotated.body.data.secret).not.toBe(secret);
      const again = await postAction(h.app, storeId, subscriber.token, id, 'rotate-secret', 'rotate-once');
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(rotated.body.data);
      const [row] = await subscriptionRows(storeId);
      expect(row.secret_generation).toBe(2);
      expect(row.previous_secret_until).toBe(h.clock.now() + 24 * 60 * 60 * 1000);
      expect(`${row.secret_sealed} ${row.previous_secret_sealed}`).not.toContain(rotated.body.data.secret.slice('whsec_'.length));
    });
  });

  describe('webhooks.list with updated_since', () => {
    const listSince = (storeId: string, token: string, query: Record<string, string>) =>
      request(h.app).get(`/stores/${storeId}/v1/webhook-subscriptions`).query(query).set('Authorization', `Bearer ${token}`);
    const idsOf = (response: request.Response) => (response.body.data as Array<{ id: string }>).map((subscription) => subscription.id);

    it('keeps the subscriptions changed strictly after the instant (an update, a rotation, a revocation), still by creation', async () => {
      const { store, storeId, subscriber } = await storeWithSubscriber();
      const made: string[] = [];
      for (const path of ['a', 'b', 'c']) {
        h.clock.advance(1000);
        made.push((await subscribe(h, storeId, subscriber, { endpoint_url: `${HOOK}/${path}`, event_types: ['product.updated'] })).id);
      }
      const [first, second, third] = made as [string, string, string];
      const since = new Date(h.clock.now()).toISOString();
      expect(idsOf(await listSince(storeId, subscriber.token, { updated_since: since }))).toEqual([]);

      h.clock.advance(1000);
      expect((await patchSubscription(h.app, storeId, subscriber.token, third, { state: 'paused' })).status).toBe(200);
      const pausedAt = new Date(h.clock.now()).toISOString();
      h.clock.advance(1000);
      expect((await postAction(h.app, storeId, subscriber.token, first, 'rotate-secret')).status).toBe(200);
      const changed = await listSince(storeId, subscriber.token, { updated_since: since });
      expect(changed.status).toBe(200);
      // Unpaged: the filter keeps the list's own order, by creation.
      expect(idsOf(changed)).toEqual([first, third]);
      expect(changed.body.data[1]).toMatchObject({ state: 'paused', updated_at: pausedAt });
      expect(idsOf(await listSince(storeId, subscriber.token, { updated_since: pausedAt }))).toEqual([first]);

      h.clock.advance(1000);
      expect((await deleteSubscription(h.app, storeId, subscriber.token, second)).status).toBe(200);
      expect(idsOf(await listSince(storeId, subscriber.token, { updated_since: pausedAt }))).toEqual([first, second]);
      expect(idsOf(await listSince(storeId, subscriber.token, { updated_since: new Date(h.clock.now()).toISOString() }))).toEqual([]);
      // Another installation's subscriptions in the store, however new, are never listed.
      const neighbour = await installSubscriber(h, store, ['orders:read']);
      await subscribe(h, storeId, neighbour, { endpoint_url: HOOK, event_types: ['order.created'] });
      expect(idsOf(await listSince(storeId, subscriber.token, { updated_since: since }))).toEqual([first, second, third]);
    });

    it.each([
      ['not a date-time', { updated_since: 'yesterday' }, 400, 'INVALID_FILTER'],
      ['without an offset', { updated_since: '2026-11-22T09:00:00' }, 400, 'INVALID_FILTER'],
      ['a day that does not exist', { updated_since: '2026-02-30T00:00:00Z' }, 400, 'INVALID_FILTER'],
      ['an unknown filter beside it', { updated_since: '2026-11-22T09:00:00Z', state: 'active' }, 422, 'UNKNOWN_FIELD'],
    ])('refuses %s', async (_case, query, status, code) => {
      const { storeId, subscriber } = await storeWithSubscriber();
      expectError(await listSince(storeId, subscriber.token, query), status, code);
    });
  });

  describe('isolation', () => {
    it("another installation's subscription is 404 NOT_FOUND to every operation, and lists show only the caller's", async () => {
      const { store, storeId, subscriber } = await storeWithSubscriber();
      const other = await installSubscriber(h, store, ['orders:read']);
      const { id } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.created'] });
      expectError(await patchSubscription(h.app, storeId, other.token, id, { state: 'paused' }), 404, 'NOT_FOUND');
      expectError(await deleteSubscription(h.app, storeId, other.token, id), 404, 'NOT_FOUND');
      expectError(await postAction(h.app, storeId, other.token, id, 'rotate-secret'), 404, 'NOT_FOUND');
      expect((await listSubscriptionsCall(h.app, storeId, other.token)).body.data).toEqual([]);
      expect((await subscriptionRows(storeId))[0]).toMatchObject({ state: 'active', secret_generation: 1 });
    });

    it("another store's token is 404 STORE_NOT_FOUND; an unknown id is 404 NOT_FOUND; a malformed id 400", async () => {
      const { storeId, subscriber } = await storeWithSubscriber();
      const elsewhere = await storeWithSubscriber();
      const { id } = await subscribe(h, storeId, subscriber, { endpoint_url: HOOK, event_types: ['order.created'] });
      expectError(await listSubscriptionsCall(h.app, storeId, elsewhere.subscriber.token), 404, 'STORE_NOT_FOUND');
      expectError(await patchSubscription(h.app, storeId, elsewhere.subscriber.token, id, { state: 'paused' }), 404, 'STORE_NOT_FOUND');
      expectError(await patchSubscription(h.app, elsewhere.storeId, elsewhere.subscriber.token, id, { state: 'paused' }), 404, 'NOT_FOUND');
      expectError(await deleteSubscription(h.app, storeId, subscriber.token, '2b7d9e1f-4c3a-4e8b-9d6f-0a1b2c3d4e5f'), 404, 'NOT_FOUND');
      expectError(await deleteSubscription(h.app, storeId, subscriber.token, 'not-a-uuid'), 400, 'VALIDATION_FAILED');
    });
  });
});
