import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { createDispatcher, type Dispatcher } from '@svc/server/src/delivery/dispatcher';
import { testDatabases } from '@svc/server/test/support/databases';
import { createTestStore, suiteHarness } from '@svc/server/test/support/harness';
import type { Listening } from '@svc/server/test/support/listen';
import { type Received, type Receiver, startReceiver } from '@svc/server/test/support/webhook-receiver';
import { installSubscriber } from '@svc/server/test/support/webhooks';
import { createStoreClient, type StoreClient, verifyWebhook, type WebhookEvent, type WebhookRefusal, WebhookVerificationError } from '../src';
import { serve } from './support';

const MINUTE_MS = 60_000;

const someSecret = () => `whsec_${randomBytes(24).toString('base64')}`;

function refusalOf(verify: () => unknown): WebhookRefusal {
  try {
    verify();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.reason;
    throw error;
  }
  throw new Error('The webhook was accepted');
}

describe.each(testDatabases())('verifyWebhook on the service’s real deliveries ($name)', (database) => {
  const h = suiteHarness(database);
  let server: Listening;
  let receiver: Receiver;
  let dispatcher: Dispatcher;
  let storeId: string;
  let writer: StoreClient;
  let subscriber: StoreClient;
  let path: string;
  let subscription: { id: string; secret: string };

  beforeAll(async () => {
    server = await serve(h);
    receiver = await startReceiver();
    h.atEnd(() => receiver.close());
    dispatcher = createDispatcher(h.services);
    const store = await createTestStore(h);
    storeId = store.store.id;
    const clientOf = (token: string) => createStoreClient({ baseUrl: server.origin, accessToken: token, retry: { sleep: async () => {} } });
    writer = clientOf((await installSubscriber(h, store, ['products:read', 'products:write'])).token);
    subscriber = clientOf((await installSubscriber(h, store, ['products:read'])).token);
    path = '/hooks/catalog';
    const { data } = await subscriber.POST('/stores/{storeId}/v1/webhook-subscriptions', {
      params: { path: { storeId } },
      body: { endpoint_url: receiver.url(path), event_types: ['product.created'], payload_version: 1 },
    });
    subscription = { id: data.data.id, secret: data.data.secret };
  });

  /** The receiver's machine reads the service's (manual) clock, plus `skewMs`: the package checks the timestamp against Date.now. */
  function atServiceTime<T>(verify: () => T, skewMs = 0): T {
    const now = jest.spyOn(Date, 'now').mockReturnValue(h.clock.now() + skewMs);
    try {
      return verify();
    } finally {
      now.mockRestore();
    }
  }

  /** Creates a product through the API, lets the dispatcher deliver, and answers the delivery that arrived. */
  async function deliveryOfNewProduct(name: string): Promise<Received & { product: { id: number; name: string } }> {
    const { data } = await writer.POST('/stores/{storeId}/v1/products', { params: { path: { storeId } }, body: { name, product_kind: 'physical' } });
    while ((await dispatcher.runOnce()) > 0);
    const delivery = receiver.receivedAt(path).find((request) => request.body.includes(`"id":${data.data.id},`));
    if (!delivery) throw new Error(`no delivery of product ${data.data.id} arrived`);
    return { ...delivery, product: data.data };
  }

  const nameOf = (event: WebhookEvent) => (event.type === 'product.created' ? event.data.product.name : undefined);

  it('answers a genuine delivery’s event, typed by its type, from Node’s headers or a fetch Headers', async () => {
    const delivery = await deliveryOfNewProduct('Royal Oud');
    const event = atServiceTime(() => verifyWebhook(subscription.secret, delivery.body, delivery.headers));
    expect(event).toEqual(JSON.parse(delivery.body));
    expect(event).toMatchObject({ type: 'product.created', store_id: storeId, data: { product: { id: delivery.product.id } } });
    expect(nameOf(event)).toBe('Royal Oud');
    const fetchHeaders = new Headers(Object.entries(delivery.headers).map(([name, value]): [string, string] => [name, String(value)]));
    expect(atServiceTime(() => verifyWebhook([subscription.secret], Buffer.from(delivery.body), fetchHeaders))).toEqual(event);
  });

  it('refuses a changed body, a changed id or timestamp header, a wrong secret and a missing header', async () => {
    const delivery = await deliveryOfNewProduct('Musk');
    const { secret } = subscription;
    const verifyWith = (change: { body?: string; headers?: Record<string, string | undefined>; secrets?: string | string[] }) =>
      refusalOf(() => atServiceTime(() => verifyWebhook(change.secrets ?? secret, change.body ?? delivery.body, { ...delivery.headers, ...change.headers })));
    expect(verifyWith({ body: delivery.body.replace('"Musk"', '"Muss"') })).toBe('BAD_SIGNATURE');
    expect(verifyWith({ body: `${delivery.body} ` })).toBe('BAD_SIGNATURE');
    expect(verifyWith({ headers: { 'webhook-id': '00000000-0000-4000-8000-000000000000' } })).toBe('BAD_SIGNATURE');
    const timestamp = Number(delivery.headers['webhook-timestamp']);
    expect(verifyWith({ headers: { 'webhook-timestamp': String(timestamp - 1) } })).toBe('BAD_SIGNATURE');
    expect(verifyWith({ headers: { 'webhook-timestamp': 'yesterday' } })).toBe('INVALID_TIMESTAMP');
    expect(verifyWith({ headers: { 'webhook-signature': `v1,${randomBytes(32).toString('base64')}` } })).toBe('BAD_SIGNATURE');
    expect(verifyWith({ secrets: someSecret() })).toBe('BAD_SIGNATURE');
    expect(verifyWith({ secrets: [someSecret(), someSecret()] })).toBe('BAD_SIGNATURE');
    for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
      expect(verifyWith({ headers: { [name]: undefined } })).toBe('MISSING_HEADER');
    }
    expect(() => verifyWebhook([], delivery.body, delivery.headers)).toThrow(TypeError);
  });

  it('refuses a delivery more than 5 minutes old or ahead of the receiver’s clock, and takes one within them', async () => {
    const delivery = await deliveryOfNewProduct('Amber');
    const verify = () => verifyWebhook(subscription.secret, delivery.body, delivery.headers);
    expect(atServiceTime(verify, 4 * MINUTE_MS).type).toBe('product.created');
    expect(atServiceTime(verify, -4 * MINUTE_MS).type).toBe('product.created');
    expect(refusalOf(() => atServiceTime(verify, 6 * MINUTE_MS))).toBe('STALE_TIMESTAMP');
    expect(refusalOf(() => atServiceTime(verify, -6 * MINUTE_MS))).toBe('FUTURE_TIMESTAMP');
  });

  it('refuses a body that is not raw (parsed JSON, nothing, a stream) with a TypeError that names the fix; takes the bytes in any form', async () => {
    const delivery = await deliveryOfNewProduct('Amber');
    const parsed: unknown = JSON.parse(delivery.body);
    const notRaw = (body: unknown) => () => verifyWebhook(subscription.secret, body as string, delivery.headers);
    for (const [body, kind] of [
      [parsed, 'an object (a body already parsed as JSON)'],
      [undefined, 'undefined'],
      [Readable.from([delivery.body]), 'a stream'],
    ] as const) {
      expect(notRaw(body)).toThrow(TypeError);
      expect(notRaw(body)).toThrow(kind);
      expect(notRaw(body)).toThrow("express.raw({ type: 'application/json' })");
    }
    const bytes = new TextEncoder().encode(delivery.body);
    expect(nameOf(atServiceTime(() => verifyWebhook(subscription.secret, bytes.buffer, delivery.headers)))).toBe('Amber');
  });

  it('accepts a delivery signed during a rotation with the old secret, the new one or both, and still refuses a stranger’s', async () => {
    const oldSecret = subscription.secret;
    const { data } = await subscriber.POST('/stores/{storeId}/v1/webhook-subscriptions/{id}/rotate-secret', {
      params: { path: { storeId, id: subscription.id } },
    });
    const newSecret = data.data.secret;
    expect(newSecret).not.toBe(oldSecret);
    const delivery = await deliveryOfNewProduct('Saffron');
    expect(String(delivery.headers['webhook-signature']).split(' ')).toHaveLength(2);
    for (const secrets of [oldSecret, newSecret, [oldSecret, newSecret], [newSecret, oldSecret], [someSecret(), newSecret]]) {
      expect(nameOf(atServiceTime(() => verifyWebhook(secrets, delivery.body, delivery.headers)))).toBe('Saffron');
    }
    expect(refusalOf(() => atServiceTime(() => verifyWebhook(someSecret(), delivery.body, delivery.headers)))).toBe('BAD_SIGNATURE');
    subscription = { ...subscription, secret: newSecret };
  });
});
