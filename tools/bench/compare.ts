import path from 'node:path';
import { measuredRun } from './load-driver';
import type { StoreReadyMessage } from './protocol';
import { runScript } from './report';
import { type BenchScriptServer, keepClientOffServerCpus, startServer } from './servers';
import { compareSettings } from './settings';
import { median } from './stats';
import { productPaths, spreadProductIds } from './store-requests';

/**
 * `pnpm bench:compare`: two store API servers measured in alternating rounds, for a figure that a
 * noisy machine cannot fake. On a shared VM the same server's CPU per request drifts by 10–30 %
 * from one run to the next, more than most changes are worth; measured in short slices taken in
 * turn (A B, B A, A B …), a drift falls on both sides alike and their ratio holds still.
 *
 * The sides:
 * - BENCH_DATABASE_URL alone: this tree on SQLite (A) against this tree on PostgreSQL (B), the goal
 *   of docs/performance.md ("PostgreSQL at most 1.2 × SQLite");
 * - BENCH_BASELINE=<worktree>: that worktree's server (A) against this tree's (B), both on SQLite, or
 *   both on PostgreSQL with BENCH_DATABASE_URL ("no figure worse than before"). The worktree needs
 *   its dependencies installed and a tools/bench/server.ts that speaks tools/bench/protocol.ts.
 *
 * BENCH_ROUNDS (8) rounds of BENCH_SECONDS (5) per side and case, after BENCH_WARMUP_SECONDS (3)
 * per side and case; every slice offered BENCH_RATE (600) requests/s arriving evenly over at most
 * BENCH_CONNECTIONS (10) (tools/bench/load-driver.ts);
 * BENCH_PRODUCTS (10000) products, no orders; BENCH_CASES=products.get,products.list (both by
 * default); BENCH_SERVER_CPUS as for `pnpm bench`.
 */

const CASE_NAMES = ['products.get', 'products.list'] as const;
type CaseName = (typeof CASE_NAMES)[number];
type Settings = ReturnType<typeof compareSettings<CaseName>>;

interface Side {
  name: string;
  script: string;
  postgresUrl: string | undefined;
}

function sidesOf({ baseline, postgresUrl }: Settings): [Side, Side] {
  const here = path.join(__dirname, 'server.ts');
  if (baseline) {
    const database = postgresUrl ? 'PostgreSQL' : 'SQLite';
    return [
      { name: `${path.basename(baseline)} (${database})`, script: path.join(baseline, 'tools', 'bench', 'server.ts'), postgresUrl },
      { name: `this tree (${database})`, script: here, postgresUrl },
    ];
  }
  if (!postgresUrl) throw new Error('pnpm bench:compare needs BENCH_DATABASE_URL (SQLite against PostgreSQL) or BENCH_BASELINE (a worktree against this one)');
  return [
    { name: 'SQLite', script: here, postgresUrl: undefined },
    { name: 'PostgreSQL', script: here, postgresUrl },
  ];
}

/** A running side: its server, and the path of each request of a case. */
interface Running {
  side: Side;
  server: BenchScriptServer<StoreReadyMessage>;
  pathOf: Record<CaseName, () => string>;
}

async function startSide(side: Side, settings: Settings): Promise<Running> {
  const server = await startServer<StoreReadyMessage>({
    script: side.script,
    env: { BENCH_PRODUCTS: String(settings.products), BENCH_ORDERS: '0', BENCH_DATABASE_URL: side.postgresUrl ?? '' },
  });
  const reads = productPaths(server.ready.storeId, spreadProductIds(server.ready.productIds));
  return { side, server, pathOf: { 'products.get': reads.get, 'products.list': reads.list } };
}

interface Slice {
  requests: number;
  /** Server CPU in µs, all of it and the kernel's part. */
  cpu: number;
  system: number;
  failed: number;
}

async function slice(running: Running, caseName: CaseName, seconds: number, settings: Settings): Promise<Slice> {
  // Tokens live 900 s: a fresh one before every slice.
  const { accessToken } = await running.server.ask({ type: 'token' }, 'token');
  const requests = { base: running.server.base, path: running.pathOf[caseName], headers: { authorization: `Bearer ${accessToken}` } };
  const { load, server } = await measuredRun(running.server, requests, { seconds, connections: settings.connections, rate: settings.rate });
  return { requests: load.requests.total, cpu: server.total, system: server.system, failed: load.non2xx + load.errors };
}

const msPerRequest = (s: Slice) => (s.requests > 0 ? s.cpu / 1000 / s.requests : Number.NaN);
const sum = (slices: readonly Slice[]): Slice =>
  slices.reduce(
    (total, s) => ({ requests: total.requests + s.requests, cpu: total.cpu + s.cpu, system: total.system + s.system, failed: total.failed + s.failed }),
    {
      requests: 0,
      cpu: 0,
      system: 0,
      failed: 0,
    },
  );

async function compareCase(a: Running, b: Running, caseName: CaseName, settings: Settings): Promise<boolean> {
  const { rounds, seconds, rate, warmupSeconds } = settings;
  console.log(`\n${caseName}: ${rounds} rounds of ${seconds} s per side at ${rate} requests/s (warm-up ${warmupSeconds} s each)`);
  await slice(a, caseName, warmupSeconds, settings);
  await slice(b, caseName, warmupSeconds, settings);
  const slicesOf = { a: [] as Slice[], b: [] as Slice[] };
  const ratios: number[] = [];
  console.log(`  round  ${a.side.name.padStart(22)}  ${b.side.name.padStart(22)}  B ÷ A`);
  for (let round = 1; round <= rounds; round += 1) {
    // Each round starts with the side the previous one ended with: A B, B A, A B …
    const order = round % 2 ? [a, b] : [b, a];
    const measured = new Map<Running, Slice>();
    for (const running of order) measured.set(running, await slice(running, caseName, seconds, settings));
    const [sliceA, sliceB] = [measured.get(a) as Slice, measured.get(b) as Slice];
    slicesOf.a.push(sliceA);
    slicesOf.b.push(sliceB);
    const ratio = msPerRequest(sliceB) / msPerRequest(sliceA);
    ratios.push(ratio);
    const cell = (s: Slice) => `${msPerRequest(s).toFixed(3)} ms (${Math.round(s.requests / seconds)}/s)`.padStart(22);
    console.log(`  ${String(round).padStart(5)}  ${cell(sliceA)}  ${cell(sliceB)}  ${ratio.toFixed(2)}`);
  }
  const [totalA, totalB] = [sum(slicesOf.a), sum(slicesOf.b)];
  const kernel = (s: Slice) => (s.requests > 0 ? s.system / 1000 / s.requests : Number.NaN);
  console.log(
    `  all    ${`${msPerRequest(totalA).toFixed(3)} (kernel ${kernel(totalA).toFixed(3)})`.padStart(22)}  ${`${msPerRequest(totalB).toFixed(3)} (kernel ${kernel(totalB).toFixed(3)})`.padStart(22)}  ${(msPerRequest(totalB) / msPerRequest(totalA)).toFixed(2)}`,
  );
  console.log(`  B ÷ A per round: median ${median(ratios).toFixed(2)}, from ${Math.min(...ratios).toFixed(2)} to ${Math.max(...ratios).toFixed(2)}`);
  const failed = totalA.failed + totalB.failed;
  if (failed > 0) console.error(`  ! ${failed} requests were not answered 200: the figures mean nothing`);
  return failed === 0;
}

async function main(): Promise<void> {
  const settings = compareSettings(CASE_NAMES);
  keepClientOffServerCpus();
  const [sideA, sideB] = sidesOf(settings);
  console.log(`A: ${sideA.name}, B: ${sideB.name}; server CPU ms per request${settings.serverCpus ? `, the servers on CPUs ${settings.serverCpus}` : ''}`);
  const running: Running[] = [];
  let clean = true;
  try {
    for (const side of [sideA, sideB]) running.push(await startSide(side, settings));
    const [a, b] = running as [Running, Running];
    for (const caseName of settings.cases) clean = (await compareCase(a, b, caseName, settings)) && clean;
  } finally {
    await Promise.all(running.map((side) => side.server.stop()));
  }
  if (!clean) process.exitCode = 1;
}

runScript(main);
