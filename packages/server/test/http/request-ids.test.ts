import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { createLogger } from '../../src/http/request-log';
import { testDatabases } from '../support/databases';
import { suiteHarness, UUID } from '../support/harness';

interface Line {
  msg: string;
  request_id?: string;
  caller_request_id?: string;
  trace_id?: string;
  span_id?: string;
}

/** The log as text, one JSON line each (the logger main.ts builds). */
let text = '';
const logger = createLogger(
  { level: 'info', environment: 'test' },
  {
    write: (line: string) => {
      text += line;
    },
  },
);

/** The request's line, once written (when its response finishes, perhaps a turn after the client read it). */
async function lineOf(requestId: string): Promise<Line> {
  for (let turn = 0; turn < 100 && !text.includes(requestId); turn += 1) await new Promise((resolve) => setImmediate(resolve));
  const lines = text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Line)
    .filter((line) => line.request_id === requestId);
  expect(lines).toHaveLength(1);
  return lines[0] as Line;
}

const TRACE = '0af7651916cd43dd8448eb211c80319c';

describe.each(testDatabases('sqlite'))('request ids and trace context ($name)', (testDatabase) => {
  const h = suiteHarness(testDatabase, { logger });
  // Any store path without a token: an error answer, which carries meta.request_id.
  const call = () => request(h.app).get(`/stores/${randomUUID()}/v1/products`);

  it("keeps a caller's X-Request-Id of safe characters: echoed, and logged beside the request's own id", async () => {
    const response = await call().set('X-Request-Id', 'my-trace-123').set('traceparent', `00-${TRACE}-b7ad6b7169203331-01`);
    expect(response.status).toBe(401);
    expect(response.headers['x-request-id']).toBe('my-trace-123');
    const requestId = response.body.meta.request_id as string;
    expect(requestId).toMatch(UUID);
    const line = await lineOf(requestId);
    expect(line).toMatchObject({ caller_request_id: 'my-trace-123', trace_id: TRACE });
    expect(line.span_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it.each([
    ['128 characters', 'a'.repeat(128)],
    ['what load balancers send', 'Root=1-67891233-abcdef012345678912345678'],
    ['a UUID', randomUUID()],
    ['base64', 'q83vEjRWeJA+/w=='],
  ])('keeps %s', async (_case, id) => {
    const response = await call().set('X-Request-Id', id);
    expect(response.headers['x-request-id']).toBe(id);
    expect((await lineOf(response.body.meta.request_id as string)).caller_request_id).toBe(id);
  });

  it.each([
    ['129 characters', 'a'.repeat(129)],
    ['spaces (and so two headers joined)', 'one, two'],
    ['markup', '<script>alert(1)</script>'],
    ['quotes', 'a"b'],
    ['non-ASCII', 'caf\u00e9'],
    ['an empty value', ''],
  ])('replaces %s with the request id', async (_case, id) => {
    const response = await call().set('X-Request-Id', id);
    const requestId = response.body.meta.request_id as string;
    expect(response.headers['x-request-id']).toBe(requestId);
    expect(requestId).toMatch(UUID);
    expect((await lineOf(requestId)).caller_request_id).toBeUndefined();
  });

  it('starts a trace of its own without a valid traceparent, logged on the line', async () => {
    const first = await call().set('traceparent', `00-${'0'.repeat(32)}-b7ad6b7169203331-01`);
    const second = await call();
    const [one, two] = [await lineOf(first.body.meta.request_id as string), await lineOf(second.body.meta.request_id as string)];
    expect(one.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(one.trace_id).not.toBe('0'.repeat(32));
    expect(two.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(two.trace_id).not.toBe(one.trace_id);
  });
});
