import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createDispatcher } from '../../src/delivery/dispatcher';
import { createMetrics, type MetricsListening, serveMetrics } from '../../src/runtime/metrics';
import { testDatabases } from '../support/databases';
import { createTestStore, suiteHarness, UUID } from '../support/harness';
import { shiftableSystemTime } from '../support/system-time';
import { type Receiver, startReceiver } from '../support/webhook-receiver';
import { installSubscriber, type Subscriber, subscribe } from '../support/webhooks';

/** One sample of the text format: `name{label="value",…} value`. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function samplesOf(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!match) throw new Error(`not a sample: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1], pair[2]]));
      return { name: match[1] as string, labels, value: Number(match[3]) };
    });
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
function sampleValue(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

const QUOTA = 5;
const WINDOW_MS = 5_000;

describe.each(testDatabases())('/metrics after known traffic on $name', (testDatabase) => {
  const systemTime = shiftableSystemTime();
  const metrics = createMetrics();
  const h = suiteHarness(testDatabase, { metrics, rateLimits: { perInstallation: QUOTA, perClient: 1000 } });
  let listening: MetricsListening;
  let receiver: Receiver;
  let storeId: string;
  let writer: Subscriber;
  let hookPath: string;

  beforeAll(async () => {
    metrics.watchDatabase(h.services);
    listening = await serveMetrics(metrics, { port: 0, host: '127.0.0.1' });
    h.atEnd(() => listening.close());
    receiver = await startReceiver();
    h.atEnd(() => receiver.close());
    const store = await createTestStore(h);
    storeId = store.store.id;
    const subscriber = await installSubscriber(h, store, ['products:read']);
    writer = await installSubscriber(h, store, ['products:read', 'products:write']);
    hookPath = `/hooks/${randomUUID()}`;
    await subscribe(h, storeId, subscriber, { endpoint_url: receiver.url(hookPath), event_types: ['product.created'] });
  });

  const scrape = async () => {
    const response = await fetch(`http://127.0.0.1:${listening.port}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return samplesOf(await response.text());
  };
  const products = () => `/stores/${storeId}/v1/products`;
  const list = () => request(h.app).get(products()).set('Authorization', `Bearer ${writer.token}`);
  const create = (key: string, name: string, headers: Record<string, string> = {}) =>
    request(h.app)
      .post(products())
      .set('Authorization', `Bearer ${writer.token}`)
      .set('Idempotency-Key', key)
      .set(headers)
      .send({ name, product_kind: 'physical' });
  /**
   * A new rate-limit window: the writer's quota is whole again. The quota counters
   * (rate-limiter-flexible) read the system clock, the rest of the service the harness's.
   */
  const nextWindow = () => {
    h.clock.advance(WINDOW_MS);
    systemTime.advance(WINDOW_MS);
  };

  it('counts requests per operation, method and status, refusals, idempotency, webhook attempts, claims and the outbox', async () => {
    const before = await scrape();
    const count = (samples: Sample[], labels: Record<string, string>) => sampleValue(samples, 'http_server_request_duration_seconds_count', labels) ?? 0;
    const listed = { operation: 'products.list', http_request_method: 'GET' };

    nextWindow();
    for (let index = 0; index < 3; index += 1) expect((await list()).status).toBe(200);
    const unknown = await request(h.app).get(`/no/such/${randomUUID()}`);
    expect(unknown.status).toBe(404);

    nextWindow();
    const key = randomUUID();
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const created = await create(key, 'Oud oil', { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    expect(created.status).toBe(201);
    expect((await create(key, 'Oud oil')).headers['idempotent-replayed']).toBe('true');
    expect((await create(key, 'Another body')).body.error.code).toBe('IDEMPOTENCY_KEY_REUSED');

    nextWindow();
    const answers = [];
    for (let index = 0; index < QUOTA + 2; index += 1) answers.push((await list()).status);
    expect(answers.filter((status) => status === 429)).toHaveLength(2);

    // The event waits in the outbox, its age by the (manual) clock.
    h.clock.advance(7_000);
    const waiting = await scrape();
    const [row] = await h.db('outbox_events').whereNull('dispatched_at').count({ n: '*' }).min({ oldest: 'occurred_at' });
    expect(sampleValue(waiting, 'svc_outbox_events_waiting')).toBe(Number(row?.n));
    expect(Number(row?.n)).toBeGreaterThanOrEqual(1);
    expect(sampleValue(waiting, 'svc_outbox_oldest_event_age_seconds')).toBe((h.clock.now() - Number(row?.oldest)) / 1000);

    const dispatcher = createDispatcher(h.services, { metrics });
    expect(await dispatcher.runOnce()).toBe(1);

    const after = await scrape();
    expect(count(after, { ...listed, http_response_status_code: '200' }) - count(before, { ...listed, http_response_status_code: '200' })).toBe(3 + QUOTA);
    expect(count(after, { ...listed, http_response_status_code: '429' }) - count(before, { ...listed, http_response_status_code: '429' })).toBe(2);
    expect(count(after, { operation: 'unmatched', http_request_method: 'GET', http_response_status_code: '404' })).toBe(1);
    const createdLabels = { operation: 'products.create', http_request_method: 'POST' };
    expect(count(after, { ...createdLabels, http_response_status_code: '201' }) - count(before, { ...createdLabels, http_response_status_code: '201' })).toBe(
      2,
    );
    expect(count(after, { ...createdLabels, http_response_status_code: '422' })).toBe(1);
    // No raw path became a label value.
    expect(after.filter((sample) => sample.labels.operation?.includes('/no/such'))).toEqual([]);

    expect(sampleValue(after, 'svc_rate_limited_requests_total', { policy: 'installation' })).toBe(2);
    expect(sampleValue(after, 'svc_idempotency_replays_total')).toBe(1);
    expect(sampleValue(after, 'svc_idempotency_conflicts_total', { reason: 'key_reused' })).toBe(1);
    expect(sampleValue(after, 'svc_webhook_delivery_duration_seconds_count', { outcome: 'succeeded' })).toBe(1);
    expect(sampleValue(after, 'svc_webhook_claims_total')).toBe(1);
    expect(sampleValue(after, 'svc_webhook_claimed_deliveries_total')).toBe(1);
    expect(sampleValue(after, 'svc_outbox_events_waiting')).toBe(0);
    expect(sampleValue(after, 'svc_outbox_oldest_event_age_seconds')).toBe(0);

    // The pool, the queries and the process.
    expect(sampleValue(after, 'svc_db_pool_connections_in_use')).toBeGreaterThanOrEqual(0);
    expect(sampleValue(after, 'svc_db_pool_acquires_waiting')).toBe(0);
    expect(sampleValue(after, 'svc_db_pooled')).toBe(0);
    expect(sampleValue(after, 'svc_db_query_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThan(
      sampleValue(before, 'svc_db_query_duration_seconds_count', { outcome: 'ok' }) ?? 0,
    );
    expect(sampleValue(after, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(after.some((sample) => sample.name === 'nodejs_eventloop_lag_seconds')).toBe(true);

    // The delivery carries a traceparent of the request's trace, with a span of its own.
    const [delivery] = receiver.receivedAt(hookPath);
    expect(delivery?.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(delivery?.headers.traceparent).not.toContain('00f067aa0ba902b7');
  });

  it('serves only /metrics, on its own listener', async () => {
    const elsewhere = await fetch(`http://127.0.0.1:${listening.port}/stores/${storeId}/v1/products`);
    expect(elsewhere.status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${listening.port}/metrics`, { method: 'POST' })).status).toBe(405);
    // The API's listener has no such route.
    const api = await request(h.app).get('/metrics');
    expect(api.status).toBe(404);
    expect(api.headers['x-request-id']).toMatch(UUID);
  });
});
