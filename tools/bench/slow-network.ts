import net from 'node:net';
import { numberFromEnv } from './children';

/**
 * `tsx tools/bench/slow-network.ts`: a TCP proxy that holds every chunk for BENCH_NETWORK_DELAY_MS
 * (1) each way, so that a bench run sees PostgreSQL as across a network rather than on loopback,
 * where a round trip costs almost nothing but the server's CPU. It listens on BENCH_PROXY_PORT
 * (5433) and forwards to BENCH_PROXY_TARGET (127.0.0.1:5432); point BENCH_DATABASE_URL at it
 * (docs/performance.md). Order is kept: every chunk waits the same time.
 */
const delayMs = numberFromEnv('BENCH_NETWORK_DELAY_MS', 1, { zero: true });
const port = Math.round(numberFromEnv('BENCH_PROXY_PORT', 5433));
const [targetHost = '127.0.0.1', targetPort = '5432'] = (process.env.BENCH_PROXY_TARGET ?? '127.0.0.1:5432').split(':');

/** Forwards what `from` receives to `to` after the delay, and closes `to` after `from` closes. */
function delayed(from: net.Socket, to: net.Socket): void {
  from.on('data', (chunk) => setTimeout(() => to.write(chunk), delayMs));
  from.on('close', () => setTimeout(() => to.destroy(), delayMs));
  from.on('error', () => to.destroy());
}

net
  .createServer((client) => {
    const server = net.connect(Number(targetPort), targetHost);
    // Without it, Nagle's algorithm holds the delayed small writes back for the peer's ACK: tens of ms, not the delay asked for.
    client.setNoDelay(true);
    server.setNoDelay(true);
    delayed(client, server);
    delayed(server, client);
  })
  .listen(port, '127.0.0.1', () => console.log(`slow network: 127.0.0.1:${port} → ${targetHost}:${targetPort}, ${delayMs} ms each way`));
