import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import request from 'supertest';
import { until as poll } from '../../../../tools/testbed/until';
import { createApp } from '../../src/app';
import { systemClock } from '../../src/core/clock';
import { engineOfHandle } from '../../src/db/engine';
import { LISTENER_NAME } from '../../src/db/notifications';
import { createDispatcher, type Dispatcher } from '../../src/delivery/dispatcher';
import { createServices, type Services } from '../../src/services/container';
import { type DomainEvent, recordEvent } from '../../src/services/outbox';
import { testDatabases } from '../support/databases';
import { createTestStore, localOnlyResolver, suiteHarness } from '../support/harness';
import { type Receiver, startReceiver } from '../support/webhook-receiver';
import { installSubscriber, postReplay, subscribe } from '../support/webhooks';

/**
 * Longer than any test here may run: a dispatcher that waited for its poll even once would not
 * finish, so delivering at all shows that it never slept with work waiting.
 */
const NEVER_MS = 3_600_000;
const BACKLOG = 300;

describe.each(testDatabases())('the webhook dispatcher on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let receiver: Receiver;
  let services: Services;
  const running: Dispatcher[] = [];

  beforeAll(async () => {
    receiver = await startReceiver();
    h.atEnd(() => receiver.close());
    h.atEnd(async () => {
      await Promise.all(running.map((dispatcher) => dispatcher.stop()));
    });
    services = createServices({
      db: h.db,
      engine: engineOfHandle(h.db),
      clock: h.clock,
      rateLimits: { perInstallation: 1000, perClient: 1000 },
      webhooks: { environment: 'test', resolve: localOnlyResolver },
    });
  });

  /** Fails the test, rather than waiting for jest's own timeout, when the condition never comes. */
  const until = (condition: () => Promise<boolean> | boolean, what: string) => poll(condition, { what, timeoutMs: 30_000, everyMs: 20, rethrow: true });

  function started(options: Parameters<typeof createDispatcher>[1] = {}): Dispatcher {
    const dispatcher = createDispatcher(services, { pollMs: NEVER_MS, ...options });
    running.push(dispatcher);
    dispatcher.start();
    return dispatcher;
  }

  async function stopped(dispatcher: Dispatcher): Promise<void> {
    running.splice(running.indexOf(dispatcher), 1);
    await dispatcher.stop();
  }

  /** A store whose installed app subscribes to product.created at a receiver path of its own. */
  async function subscribedStore(): Promise<{ storeId: string; subscriptionId: string; path: string; writer: string; subscriber: string }> {
    const store = await createTestStore(h);
    const subscriber = await installSubscriber(h, store, ['products:read']);
    const writer = await installSubscriber(h, store, ['products:read', 'products:write']);
    const path = `/hooks/${randomUUID()}`;
    const { id } = await subscribe(h, store.store.id, subscriber, { endpoint_url: receiver.url(path), event_types: ['product.created'] });
    return { storeId: store.store.id, subscriptionId: id, path, writer: writer.token, subscriber: subscriber.token };
  }

  // A short stand-in for a product: these tests are about delivery, which never reads the payload
  // (the events of real changes are checked against their schemas in test/webhooks/event-contract).
  const productEvent = (storeId: string, index: number) =>
    ({
      type: 'product.created',
      storeId,
      installationId: null,
      occurredAt: h.clock.now(),
      data: { product: { id: index + 1, name: `Backlog ${index}` } },
    }) as unknown as DomainEvent;

  const succeeded = async (subscriptionId: string) =>
    Number((await h.db('webhook_deliveries').where({ subscription_id: subscriptionId, state: 'succeeded' }).count({ n: '*' }))[0]?.n ?? 0);

  it(`drains a backlog of ${BACKLOG} events to one subscription without waiting for a poll while work is waiting`, async () => {
    // One subscription holds at most 4 attempts at once: every few attempts the dispatcher has to
    // claim again, each time after attempts end while it is busy with the database, which is when
    // it used to miss that they had ended and sleep its poll out.
    const target = await subscribedStore();
    receiver.answer(target.path, 204);
    await h.db.transaction(async (trx) => {
      for (let index = 0; index < BACKLOG; index += 1) await recordEvent(trx, productEvent(target.storeId, index));
    });
    const dispatcher = started();
    try {
      await until(async () => (await succeeded(target.subscriptionId)) === BACKLOG, 'the backlog is delivered');
    } finally {
      await stopped(dispatcher);
    }
    const ids = receiver.receivedAt(target.path).map((delivery) => String(delivery.headers['webhook-id']));
    expect(new Set(ids).size).toBe(BACKLOG);
    expect(ids).toHaveLength(BACKLOG);
  });

  it("drains another subscription's backlog while one endpoint hangs on the deliveries held for it, without waiting for a poll", async () => {
    // The hanging subscription's held deliveries are never answered: the other one's answers must
    // still be recorded, and its backlog claimed, turn after turn.
    const hanging = await subscribedStore();
    const flowing = await subscribedStore();
    receiver.answer(hanging.path, 'hang');
    receiver.answer(flowing.path, 204);
    await h.db.transaction(async (trx) => {
      for (let index = 0; index < 40; index += 1) await recordEvent(trx, productEvent(hanging.storeId, index));
    });
    const dispatcher = started();
    try {
      await until(() => receiver.receivedAt(hanging.path).length === 4, 'the hanging endpoint holds 4 attempts');
      await h.db.transaction(async (trx) => {
        for (let index = 0; index < BACKLOG; index += 1) await recordEvent(trx, productEvent(flowing.storeId, index));
      });
      await until(async () => (await succeeded(flowing.subscriptionId)) === BACKLOG, 'the other backlog is delivered');
      expect(receiver.receivedAt(hanging.path)).toHaveLength(4);
    } finally {
      receiver.answer(hanging.path, 204);
      await stopped(dispatcher);
    }
  });

  it('delivers backlogs with three workers on pools of their own, as three instances do, without any statement failing', async () => {
    // Workers claiming and recording at once lock the same queues' rows: a row another worker
    // updated since the statement began is checked again by PostgreSQL (EvalPlanQual), which must
    // not meet a data-modifying part of the statement. It did ("ModifyTable should not be called
    // during EvalPlanQual"): nothing was lost, but each such failure left deliveries to their lease.
    const targets = await Promise.all(Array.from({ length: 6 }, () => subscribedStore()));
    for (const target of targets) receiver.answer(target.path, 204);
    const failures: string[] = [];
    const workers = await Promise.all(
      Array.from({ length: 3 }, async () => {
        const db = await testDatabase.openAnother();
        h.atEnd(() => db.destroy());
        // Time passes for these workers (the suite's clock stands still): a queue looked at again
        // in a moment is due when that moment comes.
        const workerServices = createServices({
          db,
          engine: engineOfHandle(db),
          clock: systemClock,
          rateLimits: { perInstallation: 1000, perClient: 1000 },
          webhooks: { environment: 'test', resolve: localOnlyResolver },
        });
        const dispatcher = createDispatcher(workerServices, { pollMs: 50, logError: (line) => failures.push(line) });
        running.push(dispatcher);
        dispatcher.start();
        return dispatcher;
      }),
    );
    try {
      // Events keep arriving while the workers deliver, each in a commit of its own (as the store
      // API's writes make them): the fan-out's queue updates then meet the claims'.
      for (let index = 0; index < 200; index += 1) {
        await Promise.all(targets.map((target) => recordEvent(h.db, productEvent(target.storeId, index))));
      }
      // Within the 30 s `until` waits: a queue parked for a lease (45 s) while nothing was held
      // for it, which a claim racing the holder's record used to do, fails here.
      for (const target of targets) await until(async () => (await succeeded(target.subscriptionId)) === 200, 'every backlog is delivered');
    } finally {
      for (const worker of workers) await stopped(worker);
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('is woken from its idle wait by a commit of another connection pool, as another instance makes it, again and again', async () => {
    const target = await subscribedStore();
    const dispatcher = started();
    const other = await testDatabase.openAnother();
    const elsewhere = createApp({
      config: { validateResponses: true, exposeInternalErrors: true },
      services: createServices({ db: other, engine: engineOfHandle(other), clock: h.clock, rateLimits: { perInstallation: 1000, perClient: 1000 } }),
    });
    try {
      // Each product is written only once the one before was delivered: the dispatcher is idle, with
      // nothing to claim, when the commit comes, and only that commit can wake it.
      for (let index = 1; index <= 3; index += 1) {
        await request(elsewhere)
          .post(`/stores/${target.storeId}/v1/products`)
          .set('Authorization', `Bearer ${target.writer}`)
          .set('Idempotency-Key', randomUUID())
          .send({ name: `Written elsewhere ${index}`, product_kind: 'physical' })
          .expect(201);
        await until(() => receiver.receivedAt(target.path).length === index, `product ${index} is delivered`);
      }
    } finally {
      await stopped(dispatcher);
    }
    const names = receiver.receivedAt(target.path).map((delivery) => (JSON.parse(delivery.body) as { data: { product: { name: string } } }).data.product.name);
    expect(names).toEqual(['Written elsewhere 1', 'Written elsewhere 2', 'Written elsewhere 3']);
  });

  it('is woken by a replay, which queues deliveries without writing the outbox', async () => {
    const target = await subscribedStore();
    const from = h.clock.now();
    await h.db.transaction(async (trx) => {
      for (let index = 0; index < 5; index += 1) await recordEvent(trx, productEvent(target.storeId, index));
    });
    const dispatcher = started();
    try {
      await until(async () => (await succeeded(target.subscriptionId)) === 5, 'the events are delivered');
      h.clock.advance(1000);
      const replay = await postReplay(h.app, target.storeId, target.subscriber, target.subscriptionId, {
        from: new Date(from).toISOString(),
        to: new Date(h.clock.now()).toISOString(),
      });
      expect({ status: replay.status, count: replay.body.data.events_count }).toEqual({ status: 202, count: 5 });
      await until(() => receiver.receivedAt(target.path).length === 10, 'the replay is delivered');
    } finally {
      await stopped(dispatcher);
    }
  });

  if (testDatabase.name === 'postgres') {
    /** The backend pid of this suite's listening connection, once there is one. */
    const listenerPid = async (db: Knex): Promise<number | undefined> => {
      const { rows } = (await db.raw(
        "select pid from pg_stat_activity where datname = current_database() and application_name = left(? || current_schema(), 63) and query ilike 'listen%'",
        [LISTENER_NAME],
      )) as { rows: { pid: number }[] };
      return rows[0]?.pid;
    };

    it('listens again when its connection is cut, and is woken by the next commit', async () => {
      const target = await subscribedStore();
      const dispatcher = started();
      try {
        let cut: number | undefined;
        await until(async () => {
          cut = await listenerPid(h.db);
          return cut !== undefined;
        }, 'the dispatcher listens');
        await h.db.raw('select pg_terminate_backend(?)', [cut as number]);
        await until(async () => {
          const pid = await listenerPid(h.db);
          return pid !== undefined && pid !== cut;
        }, 'it listens on a new connection');
        const other = await testDatabase.openAnother();
        await recordEvent(other, productEvent(target.storeId, 0));
        await until(() => receiver.receivedAt(target.path).length === 1, 'the event is delivered');
      } finally {
        await stopped(dispatcher);
      }
    });
  }
});
