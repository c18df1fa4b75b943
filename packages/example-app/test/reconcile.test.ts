import fs from 'node:fs';
import type { RequestListener } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { FetchFunction } from '@svc/client';
import { createDispatcher, type Dispatcher } from '@svc/server/src/delivery/dispatcher';
import { placeOrder } from '@svc/server/src/domain/storefront/orders/changes';
import { approveAsOwner } from '@svc/server/src/oauth/direct-install';
import { addVersion, registerApp } from '@svc/server/src/platform/apps';
import { testDatabases } from '@svc/server/test/support/databases';
import { suiteHarness } from '@svc/server/test/support/harness';
import { type Listening, listen } from '@svc/server/test/support/listen';
import { forSale, openShop, type Shop } from '@svc/server/test/support/storefront-fixtures';
import { createExampleApp, EVENT_TYPES, type ExampleApp, SCOPES } from '../src/app';
import { JsonStorage } from '../src/storage';

/**
 * The example app's reconciliation with the events feed, without a browser: installed through its
 * own /install and /callback (the owner's consent given through the domain), webhooks delivered by
 * the server's dispatcher, run step by step. An event whose webhook failed while the app was not
 * listening is found in the feed and recorded once, also when its retry arrives afterwards; a
 * delivered event is not recorded again; the mark moves to the newest event when a walk ends, and
 * only then; a subscription that delivery paused is resumed; the timer runs it when asked.
 */
describe.each(testDatabases())('the example app reconciling with the events feed on $name', (database) => {
  const h = suiteHarness(database);
  let service: Listening;
  let example: Listening;
  let storage: JsonStorage;
  let app: ExampleApp;
  let appId: string;
  let dispatcher: Dispatcher;
  let shop: Shop;
  let product: number;
  const logged: string[] = [];
  /** When set, the app's requests to the feed get pages of one event, and the request numbered `failAt` a 400 CURSOR_EXPIRED. */
  let feedTrouble: { failAt: number; requests: number } | undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'example-app-reconcile-'));
  h.atEnd(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  h.atEnd(() => service?.close());
  h.atEnd(() => (example.server.listening ? example.close() : undefined));

  const appFetch: FetchFunction = async (request) => {
    const url = new URL(request.url);
    if (feedTrouble === undefined || !url.pathname.endsWith('/v1/events')) return fetch(request);
    feedTrouble.requests += 1;
    if (feedTrouble.requests === feedTrouble.failAt) {
      const error = { code: 'CURSOR_EXPIRED', message: 'The cursor has expired: start again from the first page.' };
      return Response.json({ error, meta: { request_id: 'test' } }, { status: 400 });
    }
    url.searchParams.set('limit', '1');
    return fetch(new Request(url, request));
  };

  beforeAll(async () => {
    // The store was set up ten minutes before the install: its own events are older than the first walk's reach.
    h.clock.set(Date.now() - 10 * 60_000);
    service = await listen(h.app);
    let handler: RequestListener | undefined;
    example = await listen((req, res) => handler?.(req, res));
    const registered = await registerApp(h.services, { name: 'Example App' });
    appId = registered.app.id;
    await addVersion(h.services, appId, {
      redirectUrls: [`${example.origin}/callback`],
      launchUrl: `${example.origin}/launch`,
      requiredScopes: [...SCOPES],
      optionalScopes: [],
    });
    storage = await JsonStorage.open(dataDir);
    app = createExampleApp({
      serviceUrl: service.origin,
      publicUrl: example.origin,
      clientId: appId,
      clientSecret: registered.clientSecret,
      storage,
      fetch: appFetch,
      log: (line) => void logged.push(line),
    });
    handler = app;
    dispatcher = createDispatcher(h.services, { random: () => 0.5 });
    shop = await openShop(h);
    product = await forSale(h, shop, 34900, { name: 'Royal Oud Perfume', quantity: 100 });
    await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: product, quantity: 1 }], reference: 'ORD-BEFORE' });
  });

  /** The service's clock at this machine's time, and later than before: webhook timestamps are checked against the app's clock. */
  const tick = () => h.clock.set(Math.max(h.clock.now() + 1000, Date.now()));

  /** Delivers what is due, as the server's dispatcher does, until nothing is. */
  async function drain(): Promise<number> {
    let attempts = 0;
    for (let made = await dispatcher.runOnce(); made > 0; made = await dispatcher.runOnce()) attempts += made;
    return attempts;
  }

  /** The ids of the store's events the app subscribes to, as the service stored them. */
  async function storedEventIds(): Promise<string[]> {
    const rows: Array<{ id: string }> = await h.db('outbox_events').where({ store_id: shop.storeId }).whereIn('type', EVENT_TYPES).select('id');
    return rows.map((row) => row.id);
  }

  /** A new order, and the ids of the events it made (order.created, and product.updated for its stock). */
  async function order(reference: string): Promise<string[]> {
    const before = new Set(await storedEventIds());
    tick();
    await placeOrder(h.db, shop.actor(), { customerId: shop.customer.id, items: [{ productId: product, quantity: 1 }], reference });
    return (await storedEventIds()).filter((id) => !before.has(id));
  }

  const recordedIds = () => storage.recentEvents(shop.storeId).map((event) => event.id);
  const timesRecorded = (id: string) => recordedIds().filter((recorded) => recorded === id).length;
  const mark = () => storage.installation(shop.storeId)?.feed;

  /** The owner installs the app: its /install, the consent, its /callback (which subscribes to webhooks). */
  async function install(): Promise<void> {
    const start = await fetch(`${example.origin}/install?store_id=${shop.storeId}`, { redirect: 'manual' });
    const authorize = new URL(start.headers.get('location') ?? '');
    const cookie = (start.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const code = await approveAsOwner(h.services, {
      storeId: shop.storeId,
      appId,
      scopes: [...SCOPES],
      redirectUri: authorize.searchParams.get('redirect_uri') ?? '',
      codeChallenge: authorize.searchParams.get('code_challenge') ?? '',
    });
    const state = authorize.searchParams.get('state') ?? '';
    const callback = await fetch(`${example.origin}/callback?code=${code}&state=${state}`, { headers: { cookie }, redirect: 'manual' });
    expect(callback.status).toBe(302);
  }

  it('starts its mark at the install and walks from there: the store’s earlier events are not recorded', async () => {
    tick();
    const installedAt = Date.now();
    await install();
    expect(storage.installation(shop.storeId)?.webhooks?.subscriptionId).toEqual(expect.any(String));
    const first = mark();
    expect(Date.parse(first?.newest ?? '')).toBeGreaterThanOrEqual(installedAt - 1000);
    expect(await storedEventIds()).not.toHaveLength(0);

    const walk = await app.reconcile(shop.storeId);
    expect(walk).toMatchObject({ recorded: 0, gap: false });
    expect(recordedIds()).toEqual([]);
    // No event since: the mark stays, and the walk's time is kept.
    expect(mark()?.newest).toBe(first?.newest);
    expect(Date.parse(mark()?.walkedAt ?? '')).toBeGreaterThanOrEqual(Date.parse(first?.walkedAt ?? ''));
  });

  it('records a delivered webhook once: the reconciliation after it records nothing again and moves the mark to it', async () => {
    const ids = await order('ORD-SYNC-1');
    expect(ids.length).toBeGreaterThan(0);
    expect(await drain()).toBeGreaterThan(0);
    for (const id of ids) expect(timesRecorded(id)).toBe(1);
    const delivered = storage.recentEvents(shop.storeId).find((event) => event.summary.startsWith('Order ORD-SYNC-1:'));
    expect(delivered?.type).toBe('order.created');

    const walk = await app.reconcile(shop.storeId);
    expect(walk.recorded).toBe(0);
    for (const id of ids) expect(timesRecorded(id)).toBe(1);
    expect(mark()?.newest).toBe(delivered?.occurredAt);
    expect(walk.mark).toEqual(mark());
  });

  it('finds an event whose webhook failed while the app was not listening, records it once, and drops the retry that arrives later', async () => {
    const before = mark();
    await example.close();
    const ids = await order('ORD-SYNC-2');
    expect(await drain()).toBeGreaterThan(0);
    const attempts: Array<{ outcome: string }> = await h.db('webhook_attempts').whereIn('event_id', ids).select('outcome');
    expect(attempts.length).toBe(ids.length);
    expect(attempts.every((attempt) => attempt.outcome === 'failed')).toBe(true);
    for (const id of ids) expect(timesRecorded(id)).toBe(0);

    // The app's reconciliation reads the feed; it needs no endpoint of its own.
    const walk = await app.reconcile(shop.storeId);
    expect(walk.recorded).toBe(ids.length);
    for (const id of ids) expect(timesRecorded(id)).toBe(1);
    const missed = storage.recentEvents(shop.storeId).find((event) => event.summary.startsWith('Order ORD-SYNC-2:'));
    // The same record a webhook would have made: the summary made from the same body.
    expect(missed).toMatchObject({ type: 'order.created', summary: expect.stringMatching(/^Order ORD-SYNC-2: pending, unpaid, \d+\.\d{2} SAR$/) });
    expect(ids).toContain(missed?.id);
    expect(Date.parse(mark()?.newest ?? '')).toBeGreaterThan(Date.parse(before?.newest ?? ''));
    expect(mark()?.newest).toBe(storage.recentEvents(shop.storeId)[0]?.occurredAt);

    // Listening again, the retries come (same ids) and are acknowledged without a second record.
    await new Promise<void>((resolve) => example.server.listen(example.port, '127.0.0.1', resolve));
    h.clock.advance(60_000);
    expect(await drain()).toBe(ids.length);
    const retried: Array<{ outcome: string }> = await h.db('webhook_attempts').whereIn('event_id', ids).where({ outcome: 'succeeded' }).select('outcome');
    expect(retried).toHaveLength(ids.length);
    for (const id of ids) expect(timesRecorded(id)).toBe(1);
    expect((await app.reconcile(shop.storeId)).recorded).toBe(0);
  });

  it('keeps the mark when a walk stops halfway, and the next walk records what the first had not reached', async () => {
    const first = await order('ORD-SYNC-3');
    const second = await order('ORD-SYNC-4');
    const before = mark();
    // Pages of one event, newest first; the second page fails as a cursor expired 15 minutes on would.
    feedTrouble = { failAt: 2, requests: 0 };
    await expect(app.reconcile(shop.storeId)).rejects.toMatchObject({ code: 'CURSOR_EXPIRED' });
    feedTrouble = undefined;
    expect(mark()).toEqual(before);
    const reached = [...first, ...second].filter((id) => timesRecorded(id) === 1);
    expect(reached).toHaveLength(1);
    expect(second).toContain(reached[0]);

    const walk = await app.reconcile(shop.storeId);
    expect(walk.recorded).toBe(first.length + second.length - 1);
    for (const id of [...first, ...second]) expect(timesRecorded(id)).toBe(1);
    expect(Date.parse(mark()?.newest ?? '')).toBeGreaterThan(Date.parse(before?.newest ?? ''));

    // Their webhooks, late, record nothing more.
    expect(await drain()).toBe(first.length + second.length);
    for (const id of [...first, ...second]) expect(timesRecorded(id)).toBe(1);
  });

  it('resumes the webhooks when delivery has paused the subscription (its retries spent)', async () => {
    const id = storage.installation(shop.storeId)?.webhooks?.subscriptionId;
    await h.db('webhook_subscriptions').where({ id }).update({ state: 'paused', paused_reason: 'The endpoint failed 8 times in a row.' });
    await app.reconcile(shop.storeId);
    expect(await h.db('webhook_subscriptions').where({ id }).first('state', 'paused_reason')).toEqual({ state: 'active', paused_reason: null });
    expect(logged).toContain(`Store ${shop.storeId}: webhooks resumed`);
  });

  it('reconciles every installation at once and then on its timer, when asked to', async () => {
    const ids = await order('ORD-SYNC-5');
    const stop = app.reconcileEvery(100);
    try {
      const deadline = Date.now() + 10_000;
      while (!ids.every((id) => timesRecorded(id) === 1)) {
        if (Date.now() > deadline) throw new Error('The timer did not reconcile in 10 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      stop();
    }
    // The timer's walk, if one still runs, is awaited (not run twice at once): nothing is left running.
    await app.reconcile(shop.storeId);
    expect(logged.some((line) => line.startsWith(`Store ${shop.storeId}: events no webhook brought, recorded from the events feed:`))).toBe(true);
    for (const id of ids) expect(timesRecorded(id)).toBe(1);
  });
});
