import { randomUUID } from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import autocannon from 'autocannon';
import { type CpuTime, machineCpu } from './proc';
import type { ServerUnderTest } from './servers';
import { percentile } from './stats';

/**
 * The bench's one load driver: requests to a server for some seconds, in one of two ways.
 * - Saturating (no rate): autocannon keeps every connection busy, the most the server answers.
 * - An even pace (a rate): the n-th request goes out at `n / rate` seconds whether or not earlier
 *   ones were answered (an open loop, as independent callers arrive). autocannon's own rate is a
 *   budget per second instead: each connection sends as fast as it is answered until its share of
 *   the second is spent, then waits for the next second, so "600 requests/s" reaches the server as a
 *   burst at full speed and a long pause. A synchronous server (SQLite) answers a burst's queued
 *   requests in one wake-up; one that waits on a database wakes for each answer. Even arrivals are
 *   what a service with many independent callers sees, and what "CPU per request at a given rate"
 *   should mean. A request's latency counts from when it was due, not when a free connection took
 *   it, so a server that falls behind shows it (no coordinated omission).
 */

/** The requests of a run: where they go, and how each is made. */
export interface Requests {
  /** `http://host:port`. */
  readonly base: string;
  /** Each request's path (called per request: products.get walks over many ids). */
  readonly path: () => string;
  readonly method?: 'GET' | 'POST';
  readonly headers?: Record<string, string>;
  /** A POST's body. Each POST carries an Idempotency-Key of its own, as a careful client's writes do. */
  readonly body?: string;
}

export interface DriveOptions {
  readonly seconds: number;
  /** At most this many connections (saturating: this many kept busy). */
  readonly connections: number;
  /** Requests per second arriving evenly; 0 or none: as many as the server answers. */
  readonly rate?: number;
}

/** What a run reports: answers within the time, their latency in ms, and the failures. */
export interface LoadResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}

export function drive(requests: Requests, options: DriveOptions): Promise<LoadResult> {
  return options.rate ? evenPace(requests, { ...options, rate: options.rate }) : saturate(requests, options);
}

/** One request, made as the run will make them: what it answers, before a run measures anything. */
export async function firstAnswer(requests: Requests): Promise<{ status: number; body: string }> {
  const response = await fetch(requests.base + requests.path(), {
    method: requests.method ?? 'GET',
    headers: headersOf(requests),
    ...(requests.body ? { body: requests.body } : {}),
  });
  return { status: response.status, body: await response.text() };
}

/** A measured run, and the CPU time used over it: by the server, by this process (the load generator) and by the whole machine. */
export interface MeasuredRun {
  readonly load: LoadResult;
  /** The run's wall time, in µs. */
  readonly elapsed: number;
  readonly server: CpuTime;
  /** This process's CPU time, in µs. */
  readonly client: number;
  /** Other processes' CPU over the run, in cores (Linux only): above ~0.1 the figures are disturbed. */
  readonly otherCpu: number | undefined;
}

export async function measuredRun(server: ServerUnderTest, requests: Requests, options: DriveOptions): Promise<MeasuredRun> {
  const serverBefore = await server.cpu();
  const clientBefore = process.cpuUsage();
  const machineBefore = machineCpu();
  const started = performance.now();
  const load = await drive(requests, options);
  const elapsed = (performance.now() - started) * 1000;
  const clientUsed = process.cpuUsage(clientBefore);
  const machineAfter = machineCpu();
  const serverAfter = await server.cpu();
  const used = { total: serverAfter.total - serverBefore.total, system: serverAfter.system - serverBefore.system };
  const client = clientUsed.user + clientUsed.system;
  // The machine's busy cores minus the server's and the client's: other processes competing.
  const otherCpu =
    machineBefore && machineAfter
      ? Math.max(
          0,
          ((machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)) * os.cpus().length - (used.total + client) / elapsed,
        )
      : undefined;
  return { load, elapsed, server: used, client, otherCpu };
}

const idempotencyKey = (requests: Requests): Record<string, string> => (requests.method === 'POST' ? { 'idempotency-key': randomUUID() } : {});
const headersOf = (requests: Requests): Record<string, string> => ({ ...requests.headers, ...idempotencyKey(requests) });

async function saturate(requests: Requests, { seconds, connections }: DriveOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: requests.base,
    connections,
    duration: seconds,
    headers: requests.headers ?? {},
    requests: [
      {
        method: requests.method ?? 'GET',
        ...(requests.body ? { body: requests.body } : {}),
        setupRequest: (request) => ({
          ...request,
          path: requests.path(),
          ...(requests.method === 'POST' ? { headers: { ...request.headers, ...idempotencyKey(requests) } } : {}),
        }),
      },
    ],
  });
  return {
    requests: { total: result.requests.total, average: result.requests.average },
    latency: { p50: result.latency.p50, p99: result.latency.p99 },
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

function evenPace(requests: Requests, { seconds, connections, rate }: DriveOptions & { rate: number }): Promise<LoadResult> {
  const { hostname, port } = new URL(requests.base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let sent = 0;
  const start = performance.now();
  const end = start + seconds * 1000;

  const send = (dueAt: number) => {
    sent += 1;
    const request = http.request(
      { agent, hostname, port, method: requests.method ?? 'GET', path: requests.path(), headers: headersOf(requests) },
      (response) => {
        response.resume();
        response.on('end', () => {
          // Answers after the time was up are left out, as autocannon leaves them.
          const answeredAt = performance.now();
          if (answeredAt > end) return;
          latencies.push(answeredAt - dueAt);
          if (response.statusCode === undefined || response.statusCode < 200 || response.statusCode > 299) non2xx += 1;
        });
      },
    );
    request.on('error', () => {
      if (performance.now() <= end) errors += 1;
    });
    request.end(requests.body);
  };

  return new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      if (now >= end) {
        agent.destroy();
        latencies.sort((a, b) => a - b);
        resolve({
          requests: { total: latencies.length, average: latencies.length / seconds },
          latency: { p50: Math.round(percentile(latencies, 0.5)), p99: Math.round(percentile(latencies, 0.99)) },
          non2xx,
          errors,
        });
        return;
      }
      const due = Math.floor(((now - start) / 1000) * rate);
      while (sent < due) send(start + (sent / rate) * 1000);
      // Node's timers run no finer than a millisecond: at hundreds of requests a second, a tick
      // sends the one or two that came due, which keeps the spacing within a millisecond.
      setTimeout(tick, Math.max(0, Math.min(end, start + ((sent + 1) / rate) * 1000) - performance.now()));
    };
    tick();
  });
}
