import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The drill's webhook receiver, in the drill's process: it answers each delivery 200 once its body
 * is read and notes its event (`webhook-id`, the same on every attempt of an event). `hang` makes
 * it accept requests and never answer them, as an endpoint whose application is stuck does, until
 * `answer` puts it back (the requests it held are then dropped: their attempts have timed out).
 */
export interface Receiver {
  readonly url: string;
  /** Event ids answered 200, at least once each. */
  readonly received: ReadonlySet<string>;
  /** Requests received, answered or not. */
  readonly requests: () => number;
  hang(): void;
  answer(): void;
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const received = new Set<string>();
  const held: ServerResponse[] = [];
  let hanging = false;
  let requests = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests += 1;
    req.resume();
    req.on('end', () => {
      if (hanging) {
        held.push(res);
        return;
      }
      const id = req.headers['webhook-id'];
      if (typeof id === 'string') received.add(id);
      res.statusCode = 200;
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`,
    received,
    requests: () => requests,
    hang() {
      hanging = true;
    },
    answer() {
      hanging = false;
      for (const res of held.splice(0)) res.destroy();
    },
    async close() {
      for (const res of held.splice(0)) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
