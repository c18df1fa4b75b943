/**
 * One sealing key for the fleet, and its rotation: the database's check of the key refuses an
 * instance with another, a value that no key opens is never a 500, and the rotation's runbook
 * (docs/deploy.md, "Rotating SECRET_KEY") keeps stored answers replayed and deliveries verifiable
 * from the old key to the new one.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Express } from 'express';
import type { Knex } from 'knex';
import { createApp } from '../../src/app';
import { runCli } from '../../src/cli/run';
import { derivedKey, keyIdOf, SECRET_KEY_FILE, type Sealer, sealerOf } from '../../src/credentials/sealing';
import { engineOfHandle } from '../../src/db/engine';
import { createDispatcher, type Dispatcher } from '../../src/delivery/dispatcher';
import { createProduct } from '../../src/domain/catalog/products/changes';
import { secretPurpose } from '../../src/domain/webhooks/subscriptions/row';
import { SEALED_COLUMNS } from '../../src/jobs/reseal';
import { createServices, type Services, sealerFromConfig } from '../../src/services/container';
import { verifySealingKey } from '../../src/services/sealing-key';
import { depsOf, testDatabases } from '../support/databases';
import { createTestStore, type Harness, localOnlyResolver, suiteHarness } from '../support/harness';
import { type Receiver, startReceiver, verifyDelivery } from '../support/webhook-receiver';
import { installSubscriber, postAction, postSubscription, type Subscriber } from '../support/webhooks';

const DAY_MS = 24 * 60 * 60 * 1000;

/** A value as the sealer wrote it before key ids (`sealed1.`): what a database from before this change holds. */
function legacySealed(key: Buffer, plaintext: string, purpose: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(purpose));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `sealed1.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
}

/** An instance of the service on the suite's database, with its own keys: its app and its dispatcher. */
interface Instance {
  services: Services;
  app: Express;
  dispatcher: Dispatcher;
}

function instanceOf(h: Harness, sealer: Sealer): Instance {
  const services = createServices({
    db: h.db,
    engine: engineOfHandle(h.db),
    clock: h.clock,
    rateLimits: { perInstallation: 1000, perClient: 1000 },
    sealer,
    webhooks: { environment: 'test', resolve: localOnlyResolver, retryScheduleMs: [1000] },
  });
  return {
    services,
    app: createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services }),
    dispatcher: createDispatcher(services, { random: () => 0.5 }),
  };
}

/** What one key, or one ring, is refused with. */
const refusal = (source: string, expected: Buffer, held: Buffer[]) =>
  `${source} ${source === 'SECRET_KEYS' ? 'do' : 'does'} not open this database's sealed values (key id ${keyIdOf(expected)} expected, ${
    held.length > 1 ? `these keys are ${held.map(keyIdOf).join(', ')}` : `this key is ${keyIdOf(held[0] as Buffer)}`
  }): give every instance the same SECRET_KEY or SECRET_KEYS`;

/** `svc secrets reseal` in this process, with this instance's services: its exit code and what it wrote. */
async function reseal(h: Harness, instance: Instance, ...extra: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['secrets', 'reseal', ...extra], {
    deps: depsOf(h.db, h.clock),
    worker: { services: async () => instance.services, servicesWithMetrics: async () => ({ services: instance.services }) },
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** Every live sealed value of the database, with the key id it names. */
async function sealedValues(db: Knex, now: number): Promise<string[]> {
  const subscriptions = await db('webhook_subscriptions')
    .whereNot('state', 'revoked')
    .select('secret_sealed', 'previous_secret_sealed', 'previous_secret_until');
  const answers = await db('idempotency_keys').where('expires_at', '>', now).whereNotNull('response_body').select('response_body');
  return [
    ...subscriptions.flatMap((row) => [row.secret_sealed, ...(row.previous_secret_until > now ? [row.previous_secret_sealed] : [])]),
    ...answers.map((row) => row.response_body as string),
  ];
}

const checkRow = (db: Knex) => db('sealing_key_check').where({ name: 'canary' }).first();

describe.each(testDatabases())('rotating the sealing key on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let receiver: Receiver;
  const [OLD, NEW] = [derivedKey('rotation: old key'), derivedKey('rotation: new key')];

  beforeAll(async () => {
    receiver = await startReceiver();
    h.atEnd(() => receiver.close());
  });

  it('walks the runbook: old key, then both, then svc secrets reseal, then the new key alone; answers replay and deliveries verify throughout', async () => {
    const store = await createTestStore(h);
    const storeId = store.store.id;
    const subscriber: Subscriber = await installSubscriber(h, store, ['products:read']);
    const hook = '/rotation';
    const body = { endpoint_url: receiver.url(hook), event_types: ['product.created'] };

    // 1. The old key alone (SECRET_KEY=old): the first instance writes the database's check.
    const old = instanceOf(h, sealerOf(OLD, 'SECRET_KEY'));
    await verifySealingKey(old.services);
    expect(await checkRow(h.db)).toMatchObject({ key_id: keyIdOf(OLD) });
    const created = await postSubscription(old.app, storeId, subscriber.token, body, 'rotation-create');
    expect(created.status).toBe(201);
    const { id, secret } = created.body.data as { id: string; secret: string };
    // As a database from before key ids holds it: the secret sealed with no key id.
    await h
      .db('webhook_subscriptions')
      .where({ id })
      .update({ secret_sealed: legacySealed(OLD, secret, secretPurpose(id, 1)) });

    let products = 0;
    const expectReplayed = async (instance: Instance) => {
      const again = await postSubscription(instance.app, storeId, subscriber.token, body, 'rotation-create');
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.data).toEqual(created.body.data);
      expect(await h.db('webhook_subscriptions').where({ store_id: storeId, endpoint_url: body.endpoint_url })).toHaveLength(1);
    };
    const expectDelivered = async (instance: Instance) => {
      products += 1;
      const name = `Product ${products}`;
      await createProduct(h.db, { storeId, installationId: null, now: h.clock.now() }, { name, product_kind: 'physical' });
      while ((await instance.dispatcher.runOnce()) > 0);
      const received = receiver.receivedAt(hook);
      expect(received).toHaveLength(products);
      const delivered = verifyDelivery(received.at(-1)!, secret, h.clock);
      expect(delivered).toMatchObject({ type: 'product.created', data: { product: { name } } });
    };

    await expectReplayed(old);
    await expectDelivered(old);

    // 2. SECRET_KEYS=new,old on every instance: new values are sealed under the new key, the old ones still open.
    const both = instanceOf(h, sealerOf([NEW, OLD], 'SECRET_KEYS'));
    await verifySealingKey(both.services);
    await expectReplayed(both);
    await expectDelivered(both);
    const during = await postSubscription(both.app, storeId, subscriber.token, { ...body, endpoint_url: receiver.url('/rotation-during') });
    expect(during.status).toBe(201);
    // The old key cannot be dropped yet: the database's check is still under it.
    const newOnly = instanceOf(h, sealerOf(NEW, 'SECRET_KEY'));
    await expect(verifySealingKey(newOnly.services)).rejects.toThrow(refusal('SECRET_KEY', OLD, [NEW]));

    // 3. svc secrets reseal, a row per batch: everything, and the check, under the new key.
    const resealed = await reseal(h, both, '--batch', '1');
    expect(resealed).toMatchObject({ code: 0, err: '' });
    expect(resealed.out.split('\n')).toEqual([
      'COLUMN                                        RE-SEALED  UNREADABLE',
      'webhook_subscriptions.secret_sealed           1          0',
      'webhook_subscriptions.previous_secret_sealed  0          0',
      'idempotency_keys.response_body                1          0',
      `everything sealed, and the database's check, is under key id ${keyIdOf(NEW)}: keys after the first may now be dropped from SECRET_KEYS`,
    ]);
    const values = await sealedValues(h.db, h.clock.now());
    expect(values.length).toBeGreaterThanOrEqual(4);
    for (const value of values) expect(value.startsWith(`sealed2.${keyIdOf(NEW)}.`)).toBe(true);
    expect(await checkRow(h.db)).toMatchObject({ key_id: keyIdOf(NEW) });
    // Run again (after a stop, say): what is under the new key already is left alone.
    const again = await reseal(h, both, '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.out)).toEqual({
      key_id: keyIdOf(NEW),
      complete: true,
      columns: [
        { table: 'webhook_subscriptions', column: 'secret_sealed', resealed: 0 },
        { table: 'webhook_subscriptions', column: 'previous_secret_sealed', resealed: 0 },
        { table: 'idempotency_keys', column: 'response_body', resealed: 0 },
      ],
    });
    await expectReplayed(both);
    await expectDelivered(both);

    // 4. SECRET_KEY=new: the old key is gone, and an instance that still has only it is refused.
    await verifySealingKey(newOnly.services);
    await expectReplayed(newOnly);
    await expectDelivered(newOnly);
    await expect(verifySealingKey(old.services)).rejects.toThrow(refusal('SECRET_KEY', NEW, [OLD]));
  });
});

describe.each(testDatabases())('the sealing key check on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let receiver: Receiver;
  const [FIRST, OTHER, LATER, LOST] = ['first', 'other', 'later', 'lost'].map((text) => derivedKey(`check: ${text}`)) as [Buffer, Buffer, Buffer, Buffer];

  beforeAll(async () => {
    receiver = await startReceiver();
    h.atEnd(() => receiver.close());
  });

  it('is written by the first instance on an empty database; the same key passes, another is refused with one line, a ring holding it passes', async () => {
    expect(await checkRow(h.db)).toBeUndefined();
    await Promise.all([verifySealingKey(instanceOf(h, sealerOf(FIRST, 'SECRET_KEY')).services), verifySealingKey(instanceOf(h, sealerOf(FIRST)).services)]);
    const check = await checkRow(h.db);
    expect(check).toMatchObject({ key_id: keyIdOf(FIRST) });
    expect(check.canary_sealed).not.toContain(FIRST.toString('hex'));
    expect(check.canary_sealed).not.toContain(FIRST.toString('base64url'));
    await verifySealingKey(instanceOf(h, sealerOf(FIRST, 'SECRET_KEY')).services);
    await expect(verifySealingKey(instanceOf(h, sealerOf(OTHER, 'SECRET_KEY')).services)).rejects.toThrow(refusal('SECRET_KEY', FIRST, [OTHER]));
    await expect(verifySealingKey(instanceOf(h, sealerOf([OTHER, LATER], 'SECRET_KEYS')).services)).rejects.toThrow(
      refusal('SECRET_KEYS', FIRST, [OTHER, LATER]),
    );
    await verifySealingKey(instanceOf(h, sealerOf([OTHER, FIRST], 'SECRET_KEYS')).services);
    expect(await checkRow(h.db)).toEqual(check);
  });

  /** A store, an app subscribed to product.created through `instance`, and the subscription's id, secret and receiver path. */
  async function subscribedThrough(instance: Instance) {
    const store = await createTestStore(h);
    const subscriber = await installSubscriber(h, store, ['products:read']);
    const hook = `/check-${randomBytes(4).toString('hex')}`;
    const body = { endpoint_url: receiver.url(hook), event_types: ['product.created'] };
    const created = await postSubscription(instance.app, store.store.id, subscriber.token, body, 'check-create');
    expect(created.status).toBe(201);
    return { storeId: store.store.id, subscriber, body, hook, id: created.body.data.id as string, secret: created.body.data.secret as string };
  }

  it('answers a stored answer that no key of the instance opens with 503 and Retry-After, never doing the work again', async () => {
    const first = instanceOf(h, sealerOf(FIRST, 'SECRET_KEY'));
    const { storeId, subscriber, body } = await subscribedThrough(first);
    const stranger = instanceOf(h, sealerOf(OTHER, 'SECRET_KEY'));
    const refused = await postSubscription(stranger.app, storeId, subscriber.token, body, 'check-create');
    expect(refused.status).toBe(503);
    expect(refused.headers['retry-after']).toBe('5');
    expect(refused.body.error).toEqual({
      code: 'SERVICE_UNAVAILABLE',
      message: 'The stored answer to this Idempotency-Key cannot be read by this instance right now; retry shortly.',
      retry_after_seconds: 5,
    });
    expect(await h.db('webhook_subscriptions').where({ store_id: storeId })).toHaveLength(1);
    const replayed = await postSubscription(first.app, storeId, subscriber.token, body, 'check-create');
    expect(replayed.status).toBe(201);
    expect(replayed.headers['idempotent-replayed']).toBe('true');
  });

  it('records a failed attempt, sending nothing, for a signing secret that no key of the instance opens; retried, it is delivered once the key is back', async () => {
    const first = instanceOf(h, sealerOf(FIRST, 'SECRET_KEY'));
    const { storeId, subscriber, hook, id, secret } = await subscribedThrough(first);
    const stranger = instanceOf(h, sealerOf(OTHER, 'SECRET_KEY'));
    const reason = "Not sent: the sending instance could not open this subscription's signing secret (a sealing key it lacks).";
    await createProduct(h.db, { storeId, installationId: null, now: h.clock.now() }, { name: 'Sealed away', product_kind: 'physical' });
    expect(await stranger.dispatcher.runOnce()).toBe(1);
    expect(receiver.receivedAt(hook)).toEqual([]);
    expect(await h.db('webhook_attempts').where({ subscription_id: id })).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'failed', response_status: null, error: reason }),
    ]);
    expect(await h.db('webhook_deliveries').where({ subscription_id: id }).first()).toMatchObject({ state: 'pending', attempts: 1 });
    const test = await postAction(stranger.app, storeId, subscriber.token, id, 'test');
    expect(test.status).toBe(200);
    expect(test.body.data).toMatchObject({ outcome: 'failed', response_status: null, error: reason });
    h.clock.advance(2000);
    expect(await first.dispatcher.runOnce()).toBe(1);
    const [delivered] = receiver.receivedAt(hook);
    expect(verifyDelivery(delivered!, secret, h.clock)).toMatchObject({ type: 'product.created', data: { product: { name: 'Sealed away' } } });
  });

  it('svc secrets reseal stops short (exit 1) while a live value opens under no key, naming it and keeping the check; once nothing live needs that key, it completes', async () => {
    const lost = instanceOf(h, sealerOf(LOST, 'SECRET_KEY'));
    const { storeId, subscriber, id } = await subscribedThrough(lost);
    const ring = instanceOf(h, sealerOf([LATER, FIRST, OTHER], 'SECRET_KEYS'));
    const stopped = await reseal(h, ring);
    expect(stopped.code).toBe(1);
    expect(stopped.err).toContain(`webhook_subscriptions.secret_sealed ${id} (key id ${keyIdOf(LOST)})`);
    expect(stopped.err).toContain('open under no key of SECRET_KEYS');
    expect(stopped.err).toContain(`the database's check stays under key id ${keyIdOf(FIRST)}, so no instance may drop it yet`);
    expect(await checkRow(h.db)).toMatchObject({ key_id: keyIdOf(FIRST) });
    // The app rotates the secret; a day later the lost one signs nothing and its answer has expired.
    const rotated = await postAction(ring.app, storeId, subscriber.token, id, 'rotate-secret');
    expect(rotated.status).toBe(200);
    h.clock.advance(DAY_MS + 1);
    const done = await reseal(h, ring);
    expect(done).toMatchObject({ code: 0, err: '' });
    expect(await checkRow(h.db)).toMatchObject({ key_id: keyIdOf(LATER) });
    for (const value of await sealedValues(h.db, h.clock.now())) expect(value.startsWith(`sealed2.${keyIdOf(LATER)}.`)).toBe(true);
    await verifySealingKey(instanceOf(h, sealerOf(LATER, 'SECRET_KEY')).services);
  });

  it('knows every column that holds sealed values: each *_sealed column of the schema, and the stored answers', async () => {
    const tables =
      h.db.client.config.client === 'pg'
        ? ((await h.db.raw('select table_name as name from information_schema.tables where table_schema = current_schema()')) as { rows: { name: string }[] })
            .rows
        : ((await h.db.raw("select name from sqlite_master where type = 'table'")) as { name: string }[]);
    const sealed: string[] = [];
    for (const { name } of tables) {
      for (const column of Object.keys(await h.db(name).columnInfo())) {
        if (column.endsWith('_sealed') || (name === 'idempotency_keys' && column === 'response_body')) sealed.push(`${name}.${column}`);
      }
    }
    // The check is re-sealed on its own, last.
    expect(sealed.filter((column) => column !== 'sealing_key_check.canary_sealed').sort()).toEqual(
      SEALED_COLUMNS.map((column) => `${column.table}.${column.column}`).sort(),
    );
  });
});

describe('the sealing keys of a process', () => {
  it('refuses a development instance on PostgreSQL without SECRET_KEY or SECRET_KEYS, instead of making a key of its own', () => {
    expect(() => sealerFromConfig({ secretKeys: undefined, databaseUrl: 'postgres://svc:svc@db:5432/svc', dataDir: '/nowhere' })).toThrow(
      "SECRET_KEY is required with DATABASE_URL: every instance on one PostgreSQL database must seal with the same key, and a key made in DATA_DIR is this machine's own (openssl rand -hex 32, then give every instance that SECRET_KEY)",
    );
    const keys = [derivedKey('configured')];
    expect(
      sealerFromConfig({ secretKeys: { keys, setting: 'SECRET_KEY' }, databaseUrl: 'postgres://svc:svc@db:5432/svc', dataDir: '/nowhere' }).keyIds,
    ).toEqual(keys.map(keyIdOf));
  });

  it('uses the data directory key on SQLite only, made once', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-sealer-'));
    try {
      const sealer = sealerFromConfig({ secretKeys: undefined, databaseUrl: undefined, dataDir: dir });
      expect(sealer.source).toBe(`the development key in ${path.join(dir, SECRET_KEY_FILE)}`);
      expect(sealerFromConfig({ secretKeys: undefined, databaseUrl: undefined, dataDir: dir }).keyIds).toEqual(sealer.keyIds);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
