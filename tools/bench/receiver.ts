import { createServer } from 'node:http';
import { failStart, listen, portOf, serveBench, tellParent } from './child';

/**
 * The bench's webhook receiver, in a process of its own so that it does not share the worker's
 * event loop: answers every POST 200 once its body is read. Started by tools/bench/webhooks.ts.
 */
async function main(): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.statusCode = 200;
      res.end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await listen(server);
  serveBench(server);
  tellParent({ type: 'ready', port: portOf(server) });
}

main().catch(failStart);
