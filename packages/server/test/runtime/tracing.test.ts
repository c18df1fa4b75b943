/**
 * OpenTelemetry in the built server (`node packages/server/dist/main.js`), as an operator runs it:
 * without OTEL_EXPORTER_OTLP_ENDPOINT not one of its modules is loaded; with it, spans of the
 * request reach an OTLP/HTTP receiver (a small HTTP server here), in the caller's trace.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { until } from '../../../../tools/testbed/until';
import { builtServersPerTest, type ServerRun, tempDataDir } from '../support/built-server';

jest.setTimeout(120_000);

const REPORTER = path.join(__dirname, 'fixtures', 'report-modules.cjs');
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';

const start = builtServersPerTest(() => ({ DATA_DIR: tempDataDir(), WEBHOOK_WORKERS: '0' }));

/** Stops the server as an orchestrator does and answers the module files it had loaded. */
async function stoppedModules(run: ServerRun, report: string): Promise<string[]> {
  run.child.kill('SIGTERM');
  expect(await run.exited).toBe(0);
  return JSON.parse(fs.readFileSync(report, 'utf8')) as string[];
}

const reportFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-modules-')), 'modules.json');

it('loads nothing of OpenTelemetry without OTEL_EXPORTER_OTLP_ENDPOINT, even when a request carries a traceparent', async () => {
  const report = reportFile();
  const run = start({ NODE_OPTIONS: `--require ${REPORTER}`, MODULES_REPORT: report });
  const port = await run.port();
  const response = await fetch(`http://127.0.0.1:${port}/openapi.json`, { headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01` } });
  expect(response.status).toBe(200);
  const modules = await stoppedModules(run, report);
  expect(modules.some((file) => file.includes(`${path.sep}express${path.sep}`))).toBe(true); // the report sees the server's modules
  expect(modules.filter((file) => file.includes('@opentelemetry'))).toEqual([]);
});

it("loads no part of OpenTelemetry's SDK with METRICS_PORT alone (prom-client's CPU metric loads the no-op API package)", async () => {
  const report = reportFile();
  const run = start({ NODE_OPTIONS: `--require ${REPORTER}`, MODULES_REPORT: report, METRICS_PORT: '0' });
  await run.port();
  const modules = await stoppedModules(run, report);
  expect(modules.some((file) => file.includes('prom-client'))).toBe(true);
  expect(modules.filter((file) => file.includes('@opentelemetry') && !file.includes(`@opentelemetry${path.sep}api${path.sep}`))).toEqual([]);
});

describe('with OTEL_EXPORTER_OTLP_ENDPOINT', () => {
  const posts: Array<{ path: string; type: string; body: string }> = [];
  let collector: http.Server;
  let endpoint = '';

  beforeAll(async () => {
    collector = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        posts.push({ path: req.url ?? '', type: req.headers['content-type'] ?? '', body: Buffer.concat(chunks).toString('utf8') });
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => collector.close(() => resolve())));

  it("exports the request's spans over OTLP/HTTP, in the caller's trace, and logs that trace", async () => {
    const run = start({ OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '100', OTEL_SERVICE_NAME: 'svc-under-test', LOG_LEVEL: 'info' });
    const port = await run.port();
    const response = await fetch(`http://127.0.0.1:${port}/openapi.json`, {
      headers: { traceparent: `00-${TRACE}-00f067aa0ba902b7-01`, 'x-request-id': 'lb-42' },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-request-id')).toBe('lb-42');
    await until(async () => posts.some((post) => post.path === '/v1/traces' && post.body.includes(TRACE)));
    const post = posts.find((candidate) => candidate.body.includes(TRACE));
    expect(post?.type).toMatch(/^application\/json/);
    const exported = JSON.parse(post?.body ?? '{}') as {
      resourceSpans: Array<{
        resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
        scopeSpans: Array<{ scope: { name: string }; spans: Array<{ traceId: string; parentSpanId?: string; kind: number }> }>;
      }>;
    };
    const [resource] = exported.resourceSpans;
    expect(resource?.resource.attributes).toContainEqual({ key: 'service.name', value: { stringValue: 'svc-under-test' } });
    const spans = exported.resourceSpans.flatMap((entry) =>
      entry.scopeSpans.flatMap((scope) => scope.spans.map((span) => ({ ...span, scope: scope.scope.name }))),
    );
    const server = spans.find((span) => span.scope === '@opentelemetry/instrumentation-http' && span.kind === 2);
    expect(server).toMatchObject({ traceId: TRACE, parentSpanId: '00f067aa0ba902b7' });
    // The request's log line names the same trace.
    await until(async () => run.stdout.includes('"caller_request_id":"lb-42"'));
    const line = JSON.parse(run.stdout.split('\n').find((candidate) => candidate.includes('"caller_request_id":"lb-42"')) ?? '{}') as {
      trace_id?: string;
      span_id?: string;
    };
    expect(line.trace_id).toBe(TRACE);
    expect(spans.map((span) => (span as { spanId?: string }).spanId)).toContain(line.span_id);
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
  });
});
