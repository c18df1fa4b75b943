import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import { engineOfHandle } from '../../src/db/engine';
import { createDispatcher, type Dispatcher } from '../../src/delivery/dispatcher';
import { findInstallationOf } from '../../src/platform/installations';
import { createServices, type Services } from '../../src/services/container';
import { createTestApp, type Harness, installWithTokens, localOnlyResolver, type StoreFixture, type SuiteHarness } from './harness';
import { type Receiver, startReceiver } from './webhook-receiver';

export const subscriptionsPath = (storeId: string, id?: string, action?: 'rotate-secret' | 'test' | 'replay') =>
  `/stores/${storeId}/v1/webhook-subscriptions${id === undefined ? '' : `/${id}`}${action === undefined ? '' : `/${action}`}`;

/** An app installed in the store with these scopes: its token and installation. */
export interface Subscriber {
  token: string;
  installationId: string;
  appId: string;
}

export async function installSubscriber(h: Harness, store: StoreFixture, scopes: string[]): Promise<Subscriber> {
  const client = await createTestApp(h, { required: scopes, optional: [] });
  const tokens = await installWithTokens(h, store, client, scopes);
  const installation = await findInstallationOf(h.db, store.store.id, client.app.id);
  if (!installation) throw new Error('the app was not installed');
  return { token: tokens.access_token, installationId: installation.id, appId: client.app.id };
}

/** `POST …/webhook-subscriptions` with an `Idempotency-Key` (a fresh one unless given). */
export const postSubscription = (app: Express, storeId: string, token: string, body: object, key: string = randomUUID()) =>
  request(app).post(subscriptionsPath(storeId)).set('Authorization', `Bearer ${token}`).set('Idempotency-Key', key).send(body);

export const listSubscriptionsCall = (app: Express, storeId: string, token: string) =>
  request(app).get(subscriptionsPath(storeId)).set('Authorization', `Bearer ${token}`);

export const patchSubscription = (app: Express, storeId: string, token: string, id: string, body: object) =>
  request(app).patch(subscriptionsPath(storeId, id)).set('Authorization', `Bearer ${token}`).send(body);

export const deleteSubscription = (app: Express, storeId: string, token: string, id: string) =>
  request(app).delete(subscriptionsPath(storeId, id)).set('Authorization', `Bearer ${token}`);

/** A bodyless POST action (`rotate-secret`, `test`) with an `Idempotency-Key`. */
export const postAction = (app: Express, storeId: string, token: string, id: string, action: 'rotate-secret' | 'test', key: string = randomUUID()) =>
  request(app)
    .post(subscriptionsPath(storeId, id, action))
    .set('Authorization', `Bearer ${token}`)
    .set('Idempotency-Key', key);

export const postReplay = (app: Express, storeId: string, token: string, id: string, body: object, key: string = randomUUID()) =>
  request(app)
    .post(subscriptionsPath(storeId, id, 'replay'))
    .set('Authorization', `Bearer ${token}`)
    .set('Idempotency-Key', key)
    .send(body);

/** Creates a subscription and answers its id and secret; fails the test unless it was created. */
export async function subscribe(h: Harness, storeId: string, subscriber: Subscriber, body: object): Promise<{ id: string; secret: string }> {
  const response = await postSubscription(h.app, storeId, subscriber.token, body);
  if (response.status !== 201) throw new Error(`create answered ${response.status}: ${JSON.stringify(response.body)}`);
  return { id: response.body.data.id as string, secret: response.body.data.secret as string };
}

/** What a delivery suite works with: a receiver on loopback, services that deliver to it, and a dispatcher. */
export interface DeliverySetup {
  receiver: Receiver;
  services: Services;
  dispatcher: Dispatcher;
}

/**
 * A delivery suite's setup (its `beforeAll`): a receiver closed at the suite's end, services
 * retrying on `retryScheduleMs`, and a dispatcher without jitter, so that retries are due exactly on
 * the schedule.
 */
export async function deliverySetup(h: SuiteHarness, retryScheduleMs: readonly number[]): Promise<DeliverySetup> {
  const receiver = await startReceiver();
  h.atEnd(() => receiver.close());
  const services = createServices({
    db: h.db,
    engine: engineOfHandle(h.db),
    clock: h.clock,
    rateLimits: { perInstallation: 1000, perClient: 1000 },
    webhooks: { environment: 'test', resolve: localOnlyResolver, retryScheduleMs },
  });
  return { receiver, services, dispatcher: createDispatcher(services, { random: () => 0.5 }) };
}
