import { randomUUID } from 'node:crypto';
import type { Fleet } from './fleet';
import type { Ledger, Outcome } from './ledger';

/**
 * The load a fault runs under: writes (products.create, each with an Idempotency-Key of its own, as
 * a careful client sends them) and reads (products.list's first page, which the replica serves when
 * it may), each at an even pace whatever the answers (an open loop: callers do not wait for each
 * other), sent to the instances in turn as a load balancer would. An instance that refuses a
 * connection leaves the rotation, as a balancer's health check takes it out.
 */
export interface Target {
  readonly storeId: string;
  readonly token: string;
}

export interface TrafficRates {
  readonly writesPerSecond: number;
  readonly readsPerSecond: number;
}

/** A request with no answer after this long is counted unanswered (a client's timeout). */
const CLIENT_TIMEOUT_MS = 30_000;

const connectionRefused = (error: unknown): boolean => {
  const cause = (error as { cause?: { code?: string } } | null)?.cause;
  return cause?.code === 'ECONNREFUSED';
};

export interface Traffic {
  /** Stops sending and waits for every request under way to be answered or to time out. */
  stop(): Promise<void>;
}

export function startTraffic(fleet: Fleet, target: Target, rates: TrafficRates, ledger: Ledger, namePrefix: string): Traffic {
  const underWay = new Set<Promise<void>>();
  let written = 0;

  const send = async (path: string, init: RequestInit): Promise<Outcome> => {
    const instance = fleet.pick();
    const started = performance.now();
    if (!instance) return { error: 'no instance serves', ms: 0 };
    try {
      const response = await fetch(`${instance.server.base}${path}`, { ...init, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });
      await response.arrayBuffer();
      return { status: response.status, retryAfter: response.headers.has('retry-after'), ms: performance.now() - started };
    } catch (error) {
      if (connectionRefused(error)) instance.serving = false;
      return {
        error: error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error),
        ms: performance.now() - started,
      };
    }
  };
  const track = (request: Promise<void>) => {
    underWay.add(request);
    void request.finally(() => underWay.delete(request));
  };
  const headers = { authorization: `Bearer ${target.token}` };
  const products = `/stores/${target.storeId}/v1/products`;

  const write = () => {
    written += 1;
    const name = `${namePrefix}-${written}`;
    track(
      send(products, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
        body: JSON.stringify({ name, product_kind: 'physical' }),
      }).then((outcome) => ledger.wrote(name, outcome)),
    );
  };
  const read = () => track(send(`${products}?limit=25`, { headers }).then((outcome) => ledger.read(outcome)));

  const timers = [setInterval(write, 1000 / rates.writesPerSecond), ...(rates.readsPerSecond > 0 ? [setInterval(read, 1000 / rates.readsPerSecond)] : [])];
  return {
    async stop() {
      for (const timer of timers) clearInterval(timer);
      while (underWay.size > 0) await Promise.allSettled([...underWay]);
    },
  };
}
