import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerClientErrors } from '../../src/http/client-errors';

/** A real HTTP server on a free port of this machine, as third-party clients and browsers reach it. */
export interface Listening {
  server: Server;
  /** `http://<host>:<port>`, without a trailing slash. */
  origin: string;
  port: number;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1 and a free port (an Express app is a request listener). */
export async function listen(handler: RequestListener): Promise<Listening> {
  const server = createServer(handler);
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
