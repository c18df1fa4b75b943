import { randomBytes, randomUUID } from 'node:crypto';
import type { components } from '@svc/contract';
import { type Sealer, UnreadableSealedValue } from '../../../credentials/sealing';
import { toJsonList } from '../../../db/json-lists';
import { type Db, inTransaction } from '../../../db/transactions';
import { publishedApiVersions } from '../../../services/api-versions';
import type { WebhookSettings } from '../../../services/container';
import type { SealedColumn } from '../../../services/sealing-key';
import { queueDue } from '../enqueue/queues';
import { scopesAllowing } from '../event-types';
import { checkEndpointUrl } from '../url-guard';
import { lockSubscription, type SubscriptionOwner } from './queries';
import { type SubscriptionRow, secretPurpose, subscriptionRevoked } from './row';

/** The create body; `payload_version` has one value (1), which the validator fills in when it is left out. */
type SubscriptionCreate = Omit<components['schemas']['WebhookSubscriptionCreate'], 'payload_version'> & { payload_version?: 1 };
type SubscriptionUpdate = components['schemas']['WebhookSubscriptionUpdate'];

/** Who changes subscriptions: the installation (from its access token), the scopes it holds, and when. */
export interface Subscriber extends SubscriptionOwner {
  readonly scopes: ReadonlySet<string>;
  readonly now: number;
  /** The date version the request is served under: a new subscription's events are built for it (the current one when left out). */
  readonly apiVersion?: string;
}

/** What the subscription changes need besides the database: the sealing key and the endpoint rules. */
export interface SubscriptionDeps {
  readonly sealer: Sealer;
  readonly webhooks: Pick<WebhookSettings, 'environment' | 'policy'>;
}

/** After a rotation the previous secret signs too for this long, so receivers can switch without losing events. */
export const PREVIOUS_SECRET_SIGNS_MS = 24 * 60 * 60 * 1000;

/** `whsec_` and 32 random bytes in base64: the Standard Webhooks secret format. */
const newSecret = () => `whsec_${randomBytes(32).toString('base64')}`;

export interface SubscriptionWithSecret {
  readonly row: SubscriptionRow;
  readonly secret: string;
}

const readBack = async (db: Db, storeId: string, id: string): Promise<SubscriptionRow> =>
  (await db<SubscriptionRow>('webhook_subscriptions').where({ store_id: storeId, id }).first()) as SubscriptionRow;

/** webhooks.create: active, secret generation 1, the event types' scopes recorded; the secret is answered once and stored sealed. */
export async function createSubscription(db: Db, deps: SubscriptionDeps, subscriber: Subscriber, body: SubscriptionCreate): Promise<SubscriptionWithSecret> {
  checkEndpointUrl(body.endpoint_url, deps.webhooks);
  const issuedScopes = scopesAllowing(body.event_types, subscriber.scopes);
  const id = randomUUID();
  const secret = newSecret();
  await db('webhook_subscriptions').insert({
    id,
    store_id: subscriber.storeId,
    installation_id: subscriber.installationId,
    endpoint_url: body.endpoint_url,
    event_types: toJsonList(body.event_types),
    payload_version: 1,
    api_version: subscriber.apiVersion ?? publishedApiVersions.current.version,
    state: 'active',
    secret_generation: 1,
    secret_sealed: deps.sealer.seal(secret, secretPurpose(id, 1)),
    previous_secret_sealed: null,
    previous_secret_until: null,
    issued_scopes: toJsonList(issuedScopes),
    paused_reason: null,
    created_at: subscriber.now,
    updated_at: subscriber.now,
  });
  return { row: await readBack(db, subscriber.storeId, id), secret };
}

/**
 * webhooks.update: the endpoint (judged again), the event types (allowed by the scopes held now;
 * `issued_scopes` recomputed) and the state. Resuming clears `paused_reason`, and so does a pause by
 * the app, which is no delivery failure to explain.
 */
export function updateSubscription(db: Db, deps: SubscriptionDeps, subscriber: Subscriber, id: string, body: SubscriptionUpdate): Promise<SubscriptionRow> {
  return inTransaction(db, async (trx) => {
    const current = await lockSubscription(trx, subscriber, id);
    if (current.state === 'revoked') throw subscriptionRevoked();
    if (body.endpoint_url !== undefined) checkEndpointUrl(body.endpoint_url, deps.webhooks);
    const issuedScopes = body.event_types === undefined ? undefined : scopesAllowing(body.event_types, subscriber.scopes);
    await trx('webhook_subscriptions')
      .where({ store_id: subscriber.storeId, id })
      .update({
        ...(body.endpoint_url === undefined ? {} : { endpoint_url: body.endpoint_url }),
        ...(body.event_types === undefined ? {} : { event_types: toJsonList(body.event_types), issued_scopes: toJsonList(issuedScopes ?? []) }),
        ...(body.state === undefined ? {} : { state: body.state, paused_reason: null }),
        updated_at: subscriber.now,
      });
    // Resumed: what it was owed while paused is claimable again.
    if (body.state === 'active' && current.state !== 'active') await queueDue(trx, [{ subscriptionId: id, storeId: current.store_id }], subscriber.now);
    return readBack(trx, subscriber.storeId, id);
  });
}

/**
 * webhooks.delete: revoked for good, its deliveries cancelled in the same transaction, so nothing
 * more is claimed for it (an attempt already on the wire is the only one that can still arrive).
 * Deleting a revoked subscription answers it as it is.
 */
export function revokeSubscription(db: Db, subscriber: Subscriber, id: string): Promise<SubscriptionRow> {
  return inTransaction(db, async (trx) => {
    const current = await lockSubscription(trx, subscriber, id);
    if (current.state === 'revoked') return current;
    await markRevoked(trx, { store_id: subscriber.storeId, id }, subscriber.now);
    return readBack(trx, subscriber.storeId, id);
  });
}

/** Revokes a subscription and cancels what it was still owed (the app's delete, or a 410 from its endpoint). */
export async function markRevoked(db: Db, { store_id, id }: Pick<SubscriptionRow, 'store_id' | 'id'>, now: number): Promise<void> {
  await db('webhook_subscriptions')
    .where({ store_id, id })
    .update({ state: 'revoked', paused_reason: null, previous_secret_sealed: null, previous_secret_until: null, updated_at: now });
  await db('webhook_deliveries')
    .where({ store_id, subscription_id: id, state: 'pending' })
    .update({ state: 'cancelled', finished_at: now, claimed_until: null });
}

/**
 * webhooks.rotate_secret: a new secret of the next generation; the one it replaces signs too for 24
 * hours (only the last one: two rotations within a day leave the oldest behind).
 */
export function rotateSecret(db: Db, deps: SubscriptionDeps, subscriber: Subscriber, id: string): Promise<SubscriptionWithSecret> {
  return inTransaction(db, async (trx) => {
    const current = await lockSubscription(trx, subscriber, id);
    if (current.state === 'revoked') throw subscriptionRevoked();
    const generation = current.secret_generation + 1;
    const secret = newSecret();
    await trx('webhook_subscriptions')
      .where({ store_id: subscriber.storeId, id })
      .update({
        secret_generation: generation,
        secret_sealed: deps.sealer.seal(secret, secretPurpose(id, generation)),
        previous_secret_sealed: current.secret_sealed, // sealed for its own generation, which stays its purpose
        previous_secret_until: subscriber.now + PREVIOUS_SECRET_SIGNS_MS,
        updated_at: subscriber.now,
      });
    return { row: await readBack(trx, subscriber.storeId, id), secret };
  });
}

/** The secrets that sign a delivery at `now`: the current one, and the previous one within its 24 hours. */
function signingSecrets(sealer: Sealer, row: SubscriptionRow, now: number): string[] {
  const secrets = [sealer.open(row.secret_sealed, secretPurpose(row.id, row.secret_generation))];
  if (row.previous_secret_sealed && row.previous_secret_until !== null && row.previous_secret_until > now) {
    secrets.push(sealer.open(row.previous_secret_sealed, secretPurpose(row.id, row.secret_generation - 1)));
  }
  return secrets;
}

/**
 * The signing secrets, or why nothing can be sent: a secret that no key of this instance opens (a
 * key dropped before `svc secrets reseal` finished, or an instance not yet given the new keys)
 * makes a failed attempt, retried on the schedule like any, never an unsigned or half-signed send.
 * The reason is the app's to read, so it names no key.
 */
export function signingSecretsOrReason(sealer: Sealer, row: SubscriptionRow, now: number): { secrets: string[] } | { error: string } {
  try {
    return { secrets: signingSecrets(sealer, row, now) };
  } catch (error) {
    if (!(error instanceof UnreadableSealedValue)) throw error;
    return { error: "Not sent: the sending instance could not open this subscription's signing secret (a sealing key it lacks)." };
  }
}

/**
 * The sealed secrets, for `svc secrets reseal`. A revoked subscription's secret and a previous one
 * past its day sign nothing again, so they are left as they are.
 */
export const subscriptionSecretsSealed: readonly SealedColumn[] = [
  {
    table: 'webhook_subscriptions',
    key: 'id',
    column: 'secret_sealed',
    purposeColumns: ['secret_generation'],
    purposeOf: (row) => secretPurpose(String(row.id), Number(row.secret_generation)),
    live: (rows) => rows.whereNot('state', 'revoked'),
  },
  {
    table: 'webhook_subscriptions',
    key: 'id',
    column: 'previous_secret_sealed',
    purposeColumns: ['secret_generation'],
    purposeOf: (row) => secretPurpose(String(row.id), Number(row.secret_generation) - 1),
    live: (rows, now) => rows.whereNot('state', 'revoked').where('previous_secret_until', '>', now),
  },
];
