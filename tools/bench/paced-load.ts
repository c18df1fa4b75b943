import http from 'node:http';
import { percentile } from './stats';

/**
 * Requests at an even pace: the n-th goes out at `n / rate` seconds, whether or not earlier ones
 * were answered (an open loop, as independent callers arrive). autocannon's rate is a budget per
 * second instead: each connection sends as fast as it is answered until its share of the second is
 * spent, then waits for the next second, so "600 requests/s" reaches the server as a burst at full
 * speed and a long pause. A synchronous server (SQLite) answers a burst's queued requests in one
 * wake-up; one that waits on a database wakes for each answer. Even arrivals are what a service
 * with many independent callers sees, and what "CPU per request at a given rate" should mean.
 *
 * A request's latency counts from when it was due, not when a free connection took it, so a
 * server that falls behind shows it (no coordinated omission).
 */

/** What a load run reports: answers within the time, their latency in ms, and the failures. */
export interface LoadResult {
  requests: { total: number; average: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
}

export function pacedLoad(
  base: string,
  nextPath: () => string,
  seconds: number,
  options: { connections: number; rate: number; headers: Record<string, string> },
): Promise<LoadResult> {
  const { hostname, port } = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const latencies: number[] = [];
  let non2xx = 0;
  let errors = 0;
  let sent = 0;
  const start = performance.now();
  const end = start + seconds * 1000;

  const send = (dueAt: number) => {
    sent += 1;
    const request = http.request({ agent, hostname, port, path: nextPath(), headers: options.headers }, (response) => {
      response.resume();
      response.on('end', () => {
        // Answers after the time was up are left out, as autocannon leaves them.
        const answeredAt = performance.now();
        if (answeredAt > end) return;
        latencies.push(answeredAt - dueAt);
        if (response.statusCode === undefined || response.statusCode < 200 || response.statusCode > 299) non2xx += 1;
      });
    });
    request.on('error', () => {
      if (performance.now() <= end) errors += 1;
    });
    request.end();
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
      const due = Math.floor(((now - start) / 1000) * options.rate);
      while (sent < due) send(start + (sent / options.rate) * 1000);
      // Node's timers run no finer than a millisecond: at hundreds of requests a second, a tick
      // sends the one or two that came due, which keeps the spacing within a millisecond.
      setTimeout(tick, Math.max(0, Math.min(end, start + ((sent + 1) / options.rate) * 1000) - performance.now()));
    };
    tick();
  });
}
