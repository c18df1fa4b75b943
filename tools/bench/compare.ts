import path from 'node:path';
import {
  type Child,
  keepClientOffServerCpus,
  nextMessage,
  numberFromEnv,
  offerLoad,
  SERVER_CPUS,
  serverCpu,
  spreadProductIds,
  startChild,
  stopChild,
  tell,
} from './children';
import type { StoreReadyMessage } from './protocol';
import { median } from './stats';

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
 * BENCH_CONNECTIONS (10) (tools/bench/paced-load.ts);
 * BENCH_PRODUCTS (10000) products, no orders; BENCH_CASES=products.get,products.list (both by
 * default); BENCH_SERVER_CPUS as for `pnpm bench`.
 */

const ROUNDS = Math.round(numberFromEnv('BENCH_ROUNDS', 8));
const SECONDS = numberFromEnv('BENCH_SECONDS', 5);
const WARMUP_SECONDS = numberFromEnv('BENCH_WARMUP_SECONDS', 3);
const RATE = numberFromEnv('BENCH_RATE', 600);
const CONNECTIONS = Math.round(numberFromEnv('BENCH_CONNECTIONS', 10));
const PRODUCTS = Math.round(numberFromEnv('BENCH_PRODUCTS', 10_000));
const POSTGRES_URL = process.env.BENCH_DATABASE_URL || undefined;
const BASELINE = process.env.BENCH_BASELINE ? path.resolve(process.env.BENCH_BASELINE) : undefined;
const CASE_NAMES = ['products.get', 'products.list'] as const;
type CaseName = (typeof CASE_NAMES)[number];
const CASES: readonly CaseName[] = process.env.BENCH_CASES
  ? process.env.BENCH_CASES.split(',').map((name) => {
      const known = CASE_NAMES.find((candidate) => candidate === name.trim());
      if (!known) throw new Error(`BENCH_CASES: "${name}" is not one of ${CASE_NAMES.join(', ')}`);
      return known;
    })
  : CASE_NAMES;

interface Side {
  name: string;
  script: string;
  postgresUrl: string | undefined;
}

function sidesOfSettings(): [Side, Side] {
  const here = path.join(__dirname, 'server.ts');
  if (BASELINE) {
    const database = POSTGRES_URL ? 'PostgreSQL' : 'SQLite';
    return [
      { name: `${path.basename(BASELINE)} (${database})`, script: path.join(BASELINE, 'tools', 'bench', 'server.ts'), postgresUrl: POSTGRES_URL },
      { name: `this tree (${database})`, script: here, postgresUrl: POSTGRES_URL },
    ];
  }
  if (!POSTGRES_URL) throw new Error('pnpm bench:compare needs BENCH_DATABASE_URL (SQLite against PostgreSQL) or BENCH_BASELINE (a worktree against this one)');
  return [
    { name: 'SQLite', script: here, postgresUrl: undefined },
    { name: 'PostgreSQL', script: here, postgresUrl: POSTGRES_URL },
  ];
}

/** A running side: its server, a fresh token, and the path of each request of a case. */
interface Running {
  side: Side;
  server: Child<StoreReadyMessage>;
  pathOf: Record<CaseName, () => string>;
  accessToken: string;
}

async function startSide(side: Side): Promise<Running> {
  const server = await startChild<StoreReadyMessage>(side.script, {
    BENCH_PRODUCTS: String(PRODUCTS),
    BENCH_ORDERS: '0',
    BENCH_DATABASE_URL: side.postgresUrl ?? '',
  });
  const products = `/stores/${server.ready.storeId}/v1/products`;
  const ids = spreadProductIds(server.ready.productIds);
  let next = 0;
  return {
    side,
    server,
    accessToken: server.ready.accessToken,
    pathOf: { 'products.get': () => `${products}/${ids[next++ % ids.length]}`, 'products.list': () => `${products}?limit=25` },
  };
}

/** Tokens live 900 s: a fresh one before every slice. */
async function refreshToken(running: Running): Promise<void> {
  const answered = nextMessage(running.server.process, 'token');
  tell(running.server.process, { type: 'token' });
  running.accessToken = (await answered).accessToken;
}

interface Slice {
  requests: number;
  /** Server CPU in µs, all of it and the kernel's part. */
  cpu: number;
  system: number;
  failed: number;
}

async function slice(running: Running, caseName: CaseName, seconds: number): Promise<Slice> {
  await refreshToken(running);
  const options = { connections: CONNECTIONS, rate: RATE, headers: { authorization: `Bearer ${running.accessToken}` } };
  const before = await serverCpu(running.server);
  const result = await offerLoad(running.server.base, running.pathOf[caseName], seconds, options);
  const after = await serverCpu(running.server);
  return { requests: result.requests.total, cpu: after.total - before.total, system: after.system - before.system, failed: result.non2xx + result.errors };
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

async function compareCase(a: Running, b: Running, caseName: CaseName): Promise<boolean> {
  console.log(`\n${caseName}: ${ROUNDS} rounds of ${SECONDS} s per side at ${RATE} requests/s (warm-up ${WARMUP_SECONDS} s each)`);
  await slice(a, caseName, WARMUP_SECONDS);
  await slice(b, caseName, WARMUP_SECONDS);
  const slicesOf = { a: [] as Slice[], b: [] as Slice[] };
  const ratios: number[] = [];
  console.log(`  round  ${a.side.name.padStart(22)}  ${b.side.name.padStart(22)}  B ÷ A`);
  for (let round = 1; round <= ROUNDS; round += 1) {
    // Each round starts with the side the previous one ended with: A B, B A, A B …
    const order = round % 2 ? [a, b] : [b, a];
    const measured = new Map<Running, Slice>();
    for (const running of order) measured.set(running, await slice(running, caseName, SECONDS));
    const [sliceA, sliceB] = [measured.get(a) as Slice, measured.get(b) as Slice];
    slicesOf.a.push(sliceA);
    slicesOf.b.push(sliceB);
    const ratio = msPerRequest(sliceB) / msPerRequest(sliceA);
    ratios.push(ratio);
    const cell = (s: Slice) => `${msPerRequest(s).toFixed(3)} ms (${Math.round(s.requests / SECONDS)}/s)`.padStart(22);
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
  keepClientOffServerCpus();
  const [sideA, sideB] = sidesOfSettings();
  console.log(`A: ${sideA.name}, B: ${sideB.name}; server CPU ms per request${SERVER_CPUS ? `, the servers on CPUs ${SERVER_CPUS}` : ''}`);
  const running: Running[] = [];
  let clean = true;
  try {
    for (const side of [sideA, sideB]) running.push(await startSide(side));
    const [a, b] = running as [Running, Running];
    for (const caseName of CASES) clean = (await compareCase(a, b, caseName)) && clean;
  } finally {
    await Promise.all(running.map((side) => stopChild(side.server)));
  }
  if (!clean) process.exitCode = 1;
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
