import net from 'node:net';
import { runScript } from './report';
import { slowNetworkSettings } from './settings';

/**
 * `tsx tools/bench/slow-network.ts`: a TCP proxy that holds every chunk for BENCH_NETWORK_DELAY_MS
 * (1) each way, so that a bench run sees PostgreSQL as across a network rather than on loopback,
 * where a round trip costs almost nothing but the server's CPU. It listens on BENCH_PROXY_PORT
 * (5433) and forwards to BENCH_PROXY_TARGET (127.0.0.1:5432); point BENCH_DATABASE_URL at it
 * (docs/performance.md). Order is kept: every chunk waits the same time.
 */

/** Forwards what `from` receives to `to` after the delay, and closes `to` after `from` closes. */
function delayed(from: net.Socket, to: net.Socket, delayMs: number): void {
  from.on('data', (chunk) => setTimeout(() => to.write(chunk), delayMs));
  from.on('close', () => setTimeout(() => to.destroy(), delayMs));
  from.on('error', () => to.destroy());
}

runScript(async () => {
  const { delayMs, port, target } = slowNetworkSettings();
  net
    .createServer((client) => {
      const server = net.connect(target.port, target.host);
      // Without it, Nagle's algorithm holds the delayed small writes back for the peer's ACK: tens of ms, not the delay asked for.
      client.setNoDelay(true);
      server.setNoDelay(true);
      delayed(client, server, delayMs);
      delayed(server, client, delayMs);
    })
    .listen(port, '127.0.0.1', () => console.log(`slow network: 127.0.0.1:${port} → ${target.host}:${target.port}, ${delayMs} ms each way`));
});
