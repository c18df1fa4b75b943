import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The bench's webhook receiver, in a process of its own so that it does not share the worker's
 * event loop: answers every POST 200 once its body is read, and tells the bench its port.
 */
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.statusCode = 200;
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.send?.({ type: 'receiver', port: (server.address() as AddressInfo).port });
});
process.on('disconnect', () => process.exit(0));
