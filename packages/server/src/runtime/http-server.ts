import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { createHttpTerminator } from 'http-terminator';
import { answerClientErrors } from '../http/client-errors';

/**
 * Timeouts set on purpose (docs/decisions/0051-probes-stop-and-timeouts.md). Idle keep-alive
 * connections outlive the 60 s idle timeout of common load balancers, so the balancer, not this
 * server, closes them (a server that closes first races the balancer's next request: stray 502s);
 * headers must arrive within a little more than that (Node requires headersTimeout above
 * keepAliveTimeout); a whole request, body included, within 30 s.
 */
export const SERVER_TIMEOUTS = { keepAliveMs: 65_000, headersMs: 66_000, requestMs: 30_000 } as const;

/** A start that cannot go on, with the one line that says why. */
import { StartError } from '../core/start-error';

export interface Listening {
  readonly server: http.Server;
  readonly port: number;
  /**
   * Stops accepting, lets requests in flight finish for up to `graceMs` (answering them with
   * `Connection: close`), closes idle keep-alive connections at once and every other one after that.
   */
  terminate(): Promise<void>;
}

function listenError(error: NodeJS.ErrnoException, port: number): Error {
  if (error.code === 'EADDRINUSE') return new StartError(`port ${port} is already in use`);
  if (error.code === 'EACCES') return new StartError(`port ${port} needs privileges this process does not have`);
  return error;
}

/** Serves `app` on `port` (0: any free port, reported back); refuses with one line when the port cannot be had. */
export async function listen(app: Express, port: number, graceMs: number): Promise<Listening> {
  const server = http.createServer(app);
  server.keepAliveTimeout = SERVER_TIMEOUTS.keepAliveMs;
  server.headersTimeout = SERVER_TIMEOUTS.headersMs;
  server.requestTimeout = SERVER_TIMEOUTS.requestMs;
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, port)));
    server.listen(port, () => resolve());
  });
  const terminator = createHttpTerminator({ server, gracefulTerminationTimeout: graceMs });
  return { server, port: (server.address() as AddressInfo).port, terminate: () => terminator.terminate() };
}
