import net from 'node:net';

/**
 * A TCP proxy in front of a server, that a test can partition: `partition` stops carrying bytes
 * either way while every socket stays open (a cut network, as a client and a server each see it:
 * no answer, no close), and `heal` ends the sockets it held, as the kernel of either side does once
 * its keepalive gives up (the server then ends the sessions, and frees their locks).
 */
export interface TcpProxy {
  /** `target` with the proxy's host and port. */
  urlOf(target: string): string;
  partition(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const pairs = new Set<[net.Socket, net.Socket]>();
  let cut = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(port || 5432), hostname);
    const pair: [net.Socket, net.Socket] = [client, upstream];
    pairs.add(pair);
    const carry = (from: net.Socket, to: net.Socket) =>
      from.on('data', (chunk) => {
        if (!cut) to.write(chunk);
      });
    carry(client, upstream);
    carry(upstream, client);
    // A side that closes is passed on to the other, except across a partition: nothing crosses it.
    const end = () => {
      if (cut) return;
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of pair) {
      socket.on('error', end);
      socket.on('close', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const listening = (server.address() as net.AddressInfo).port;
  const heal = () => {
    for (const [client, upstream] of pairs) {
      client.destroy();
      upstream.destroy();
    }
    pairs.clear();
    cut = false;
  };
  return {
    urlOf(url) {
      const proxied = new URL(url);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(listening);
      return proxied.toString();
    },
    partition() {
      cut = true;
    },
    heal,
    async close() {
      heal();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
