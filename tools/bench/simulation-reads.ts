import type { FirstStartReadyMessage } from './protocol';
import { fixed } from './report';
import { startServer } from './servers';
import { percentile } from './stats';

/**
 * `reads during simulation`: a server of its own at its first start on an empty SQLite directory
 * (tools/bench/first-start.ts) simulates the demo store's history in its process, as `pnpm start`
 * does, while the API is meant to answer. Reads (a product, an order page, in turn) are sent at a
 * steady pace from when it listens until the simulation ends, each timed; those sent before the
 * simulation started are the baseline. Their p99 against a target of 100 ms.
 */

/**
 * One read sent this often, whatever the answers before it (an open loop: a stalled server shows
 * as the wait of every read sent meanwhile); a newcomer's pace, well below what the server can take.
 */
const PROBE_INTERVAL_MS = 50;
/** What a newcomer trying the API at first start waits for an answer, at most, nearly always. */
const READ_TARGET_P99_MS = 100;

interface ReadLatencies {
  reads: number;
  latencyP50: number;
  latencyP99: number;
  latencyMax: number;
}

export interface SimulationReadFigures {
  orders: number;
  simulationMs: number;
  /** The same reads before the simulation starts: this machine's own noise. */
  before: ReadLatencies;
  during: ReadLatencies;
}

function latenciesOf(milliseconds: readonly number[]): ReadLatencies {
  const sorted = [...milliseconds].sort((a, b) => a - b);
  return {
    reads: sorted.length,
    latencyP50: percentile(sorted, 0.5),
    latencyP99: percentile(sorted, 0.99),
    latencyMax: sorted[sorted.length - 1] ?? 0,
  };
}

const describeLatencies = ({ reads, latencyP50, latencyP99, latencyMax }: ReadLatencies) =>
  `${reads} reads, p50 ${fixed(latencyP50, 1)} ms, p99 ${fixed(latencyP99, 1)} ms, max ${fixed(latencyMax, 1)} ms`;

/** The figures, or why there are none (a read that failed). */
export async function readsDuringSimulation(): Promise<{ figures: SimulationReadFigures } | { failure: string }> {
  const server = await startServer<FirstStartReadyMessage>({ script: 'first-start.ts' });
  try {
    const { paths, accessToken } = server.ready;
    let simulating = false;
    let running = true;
    void server.next('simulating').then(
      () => {
        simulating = true;
      },
      () => undefined,
    );
    const simulated = server.next('simulated');
    const ended = simulated.finally(() => {
      running = false;
    });
    const before: number[] = [];
    const during: number[] = [];
    const refused: string[] = [];
    const reads: Promise<void>[] = [];
    for (let index = 0; running; index += 1) {
      const path = paths[index % paths.length] as string;
      const latencies = simulating ? during : before;
      const sent = performance.now();
      reads.push(
        fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${accessToken}` } }).then(
          async (response) => {
            await response.arrayBuffer();
            latencies.push(performance.now() - sent);
            if (response.status !== 200) refused.push(`${path} answered ${response.status}`);
          },
          (error: unknown) => void refused.push(`${path}: ${error instanceof Error ? error.message : String(error)}`),
        ),
      );
      await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, PROBE_INTERVAL_MS))]);
    }
    const { orders, simulationMs } = await simulated;
    await Promise.all(reads);
    if (refused.length > 0)
      return { failure: `reads during simulation: ${refused.length} of ${before.length + during.length} reads failed, first ${refused[0]}` };
    const figures = { orders, simulationMs, before: latenciesOf(before), during: latenciesOf(during) };
    const met = figures.during.latencyP99 < READ_TARGET_P99_MS;
    console.log(`  before it: ${describeLatencies(figures.before)}`);
    console.log(`  while ${orders} orders were simulated in ${(simulationMs / 1000).toFixed(1)} s: ${describeLatencies(figures.during)}`);
    console.log(`  p99 while simulating: target < ${READ_TARGET_P99_MS} ms   ${met ? 'met' : 'MISSED'}`);
    return { figures };
  } finally {
    await server.stop();
  }
}
