import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { failStart, listen, portOf, serveBench, tellParent } from './child';

/**
 * The baseline: a bare Express 5 app, the same Express the server runs (resolved from
 * packages/server), with one route `GET /hello` answering `{"hello":"world"}`. Run in its own
 * process by tools/bench/run.ts.
 */
interface BareResponse {
  json(body: unknown): void;
}
interface BareApp {
  get(route: string, handler: (request: unknown, response: BareResponse) => void): void;
  listen(port: number, host: string, done: () => void): Server;
}

const serverPackage = path.resolve(__dirname, '..', '..', 'packages', 'server', 'package.json');
const express = createRequire(serverPackage)('express') as () => BareApp;

async function main(): Promise<void> {
  const app = express();
  app.get('/hello', (_request, response) => response.json({ hello: 'world' }));
  const server = await listen(app);
  serveBench(server);
  tellParent({ type: 'ready', port: portOf(server) });
}

main().catch(failStart);
