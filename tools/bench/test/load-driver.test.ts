import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { drive } from '../load-driver';

/**
 * The bench's load driver. At a rate, requests arrive spread over the time, not as autocannon's
 * burst at the start of every second, whatever the server answers; without one, as many as the
 * server answers. Either way one result shape, and a POST carries its body and a key of its own.
 */

async function serve(answer: (request: http.IncomingMessage, response: http.ServerResponse) => void) {
  const arrivals: number[] = [];
  const server = http.createServer((request, response) => {
    arrivals.push(performance.now());
    answer(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, arrivals, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

test('requests arrive evenly over the time, with the path and headers given, and are counted with their latency', async () => {
  const seen: string[] = [];
  const server = await serve((request, response) => {
    seen.push(`${request.url} ${request.headers.authorization}`);
    response.end('ok');
  });
  const paths = ['/a', '/b'];
  let next = 0;
  const started = performance.now();
  try {
    const result = await drive(
      { base: server.base, path: () => paths[next++ % 2] as string, headers: { authorization: 'Bearer t' } },
      { seconds: 2, connections: 4, rate: 100 },
    );
    // 200 due in 2 s; a loaded machine's late timer sends what came due late, never more.
    expect(server.arrivals.length).toBeGreaterThanOrEqual(190);
    expect(server.arrivals.length).toBeLessThanOrEqual(200);
    // Spread out: each half second takes about 50 (autocannon's rate sends all of a second's share at its start).
    for (let quarter = 0; quarter < 4; quarter += 1) {
      const inQuarter = server.arrivals.filter((at) => at - started >= quarter * 500 && at - started < (quarter + 1) * 500).length;
      expect(inQuarter).toBeGreaterThanOrEqual(25);
      expect(inQuarter).toBeLessThanOrEqual(75);
    }
    expect(seen.slice(0, 2)).toEqual(['/a Bearer t', '/b Bearer t']);
    expect(result.requests.total).toBe(server.arrivals.length);
    expect(result.non2xx).toBe(0);
    expect(result.errors).toBe(0);
    expect(result.latency.p99).toBeGreaterThanOrEqual(result.latency.p50);
  } finally {
    await server.close();
  }
});

test('answers other than 2xx are counted, and a slow server shows in the latency from when each request was due', async () => {
  let answered = 0;
  const server = await serve((_request, response) => {
    answered += 1;
    // One connection, each answer 50 ms: the requests queue behind each other, as callers would.
    setTimeout(() => {
      response.statusCode = answered % 2 === 0 ? 503 : 200;
      response.end();
    }, 50);
  });
  try {
    const result = await drive({ base: server.base, path: () => '/' }, { seconds: 1, connections: 1, rate: 50 });
    // At most 20 answers fit in the second; 50 were due.
    expect(result.requests.total).toBeLessThanOrEqual(20);
    expect(result.requests.total).toBeGreaterThan(0);
    expect(result.non2xx).toBeGreaterThan(0);
    // The last answered waited for the queue: far more than one answer's 50 ms.
    expect(result.latency.p99).toBeGreaterThan(200);
  } finally {
    await server.close();
  }
});

test('a server that is not there gives errors, not answers', async () => {
  const server = await serve((_request, response) => response.end());
  await server.close();
  const result = await drive({ base: server.base, path: () => '/' }, { seconds: 0.5, connections: 2, rate: 20 });
  expect(result.requests.total).toBe(0);
  expect(result.errors).toBeGreaterThan(0);
});

describe.each([
  ['at an even pace', 50],
  ['saturating', 0],
])('%s, a POST', (_way, rate) => {
  test('carries its body and an idempotency key of its own to the path given', async () => {
    const seen: { url: string | undefined; method: string | undefined; key: unknown; body: string }[] = [];
    const server = await serve((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on('end', () => {
        seen.push({ url: request.url, method: request.method, key: request.headers['idempotency-key'], body });
        response.statusCode = 201;
        response.end();
      });
    });
    try {
      const result = await drive({ base: server.base, path: () => '/adjust', method: 'POST', body: '{"delta":1}' }, { seconds: 0.5, connections: 2, rate });
      expect(result.requests.total).toBeGreaterThan(0);
      expect(result.non2xx).toBe(0);
      expect(result.errors).toBe(0);
      expect(seen[0]).toMatchObject({ url: '/adjust', method: 'POST', body: '{"delta":1}' });
      const keys = seen.map((each) => each.key);
      expect(keys.every((key) => typeof key === 'string')).toBe(true);
      expect(new Set(keys).size).toBe(keys.length);
    } finally {
      await server.close();
    }
  });
});
