import fs from 'node:fs';
import os from 'node:os';

/**
 * What the bench prints and writes: tables, the figures as JSON, warnings about a machine too busy
 * for its figures to mean much, and a script's one-line failure.
 */

/** Runs a script's `main`; what stops it (a wrong setting, a server that cannot start) is one line, and exit 1. */
export function runScript(main: () => Promise<void>, failurePrefix = ''): void {
  main().catch((error: unknown) => {
    console.error(`${failurePrefix}${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}

export const fixed = (value: number, digits = 2) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
export const ratio = (numerator: number, denominator: number) => (denominator > 0 ? numerator / denominator : Number.NaN);

export interface Column {
  readonly title: string;
  /** Text is aligned left, figures right. */
  readonly align: 'left' | 'right';
}

/** A table: each column as wide as its widest cell, two spaces apart, a rule under the titles. */
export function printTable(columns: readonly Column[], rows: readonly string[][]): void {
  const widths = columns.map(({ title }, column) => Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    columns
      .map(({ align }, column) => (align === 'left' ? (cells[column] ?? '').padEnd(widths[column] ?? 0) : (cells[column] ?? '').padStart(widths[column] ?? 0)))
      .join('  ');
  console.log(line(columns.map(({ title }) => title)));
  console.log(widths.map((width) => '-'.repeat(width)).join('  '));
  for (const row of rows) console.log(line(row));
}

/** `2 CPUs (AMD EPYC), Node v20.20.2`. */
export const machineSummary = () => `${os.cpus().length} CPUs (${os.cpus()[0]?.model.trim() ?? 'unknown'}), Node ${process.version}`;

/** Warns when other processes keep the CPUs busy before the bench starts. */
export function warnIfBusy(): void {
  const [load1] = os.loadavg();
  if ((load1 ?? 0) > 0.5) console.warn(`  ! load average ${load1?.toFixed(2)}: other processes are using the CPUs, the figures will be low and noisy`);
}

/** Writes the figures as JSON, with when and on what machine they were measured. */
export function writeFigures(file: string, figures: Record<string, unknown>): void {
  const machine = {
    cpus: os.cpus().length,
    model: os.cpus()[0]?.model,
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
  };
  fs.writeFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), machine, ...figures }, null, 2)}\n`);
  console.log(`Figures written to ${file}`);
}

// ---------------------------------------------------------------------------------------------
// `pnpm bench`'s request cases

export interface CaseFigures {
  name: string;
  label: string;
  /** The status of a check request sent before the run. */
  status: number;
  requestsPerSecond: number;
  latencyP50: number;
  latencyP99: number;
  requests: number;
  non2xx: number;
  errors: number;
  /** CPU time over wall time during the measured run: 1.0 is one core busy all the time. */
  serverCpu: number;
  /** The kernel's part of serverCpu (system calls, and on loopback the receiving side of TCP too). */
  serverSystemCpu: number;
  clientCpu: number;
  /** Other processes' CPU over the run, in cores (Linux only): above ~0.1 the figures are disturbed. */
  otherCpu: number | undefined;
  profile?: string | undefined;
  /** The store API's database (`SQLite` or `PostgreSQL`); the bare Express case has none. */
  database?: string;
}

export interface Verdict {
  name: string;
  value: number;
  target: string;
  met: boolean;
}

/** The targets of docs/performance.md, of the SQLite pass's figures. */
export function verdicts(figures: readonly CaseFigures[]): Verdict[] {
  const byName = new Map(figures.filter((f) => f.database !== 'PostgreSQL').map((f) => [f.name, f]));
  const hello = byName.get('hello');
  const get = byName.get('products.get');
  const first = byName.get('products.list');
  const deep = byName.get('products.list (deep)');
  if (!hello || !get || !first || !deep) return [];
  const getRatio = ratio(get.requestsPerSecond, hello.requestsPerSecond);
  const listRatio = ratio(first.requestsPerSecond, hello.requestsPerSecond);
  const depthRatio = ratio(deep.latencyP99, first.latencyP99);
  return [
    { name: 'products.get / hello (req/s)', value: getRatio, target: '≥ 0.50', met: getRatio >= 0.5 },
    { name: 'products.list / hello (req/s)', value: listRatio, target: '≥ 0.33', met: listRatio >= 0.33 },
    { name: 'deep page p99 / first page p99', value: depthRatio, target: '≤ 1.20', met: depthRatio <= 1.2 },
  ];
}

const cpuMsPerRequest = (f: CaseFigures) => (f.requestsPerSecond > 0 ? (1000 * f.serverCpu) / f.requestsPerSecond : Number.NaN);
const kernelMsPerRequest = (f: CaseFigures) => (f.requestsPerSecond > 0 ? (1000 * f.serverSystemCpu) / f.requestsPerSecond : Number.NaN);
/** "0.450 (kernel 0.120, 2200 req/s)": a case's server CPU per request, the kernel's part, and its throughput. */
const cpuCell = (f: CaseFigures) => `${fixed(cpuMsPerRequest(f), 3)} (kernel ${fixed(kernelMsPerRequest(f), 3)}, ${Math.round(f.requestsPerSecond)} req/s)`;

const CASE_COLUMNS: readonly Column[] = [
  { title: 'case', align: 'left' },
  ...['status', 'req/s', '÷ hello', 'p50 ms', 'p99 ms', 'server CPU', 'server CPU ms/req', 'client CPU', 'others CPU'].map((title) => ({
    title,
    align: 'right' as const,
  })),
  { title: 'problems', align: 'left' },
];

/** The cases' figures side by side, what the columns mean, and the targets met or missed. */
export function printCases(figures: readonly CaseFigures[], checks: readonly Verdict[]): void {
  const hello = figures.find((f) => f.name === 'hello');
  const rows = figures.map((f) => [
    f.database === 'PostgreSQL' ? `${f.label} [PostgreSQL]` : f.label,
    String(f.status),
    Math.round(f.requestsPerSecond).toString(),
    hello && f !== hello ? fixed(ratio(f.requestsPerSecond, hello.requestsPerSecond)) : '',
    fixed(f.latencyP50),
    fixed(f.latencyP99),
    `${Math.round(100 * f.serverCpu)} %`,
    f.requestsPerSecond > 0 ? fixed(cpuMsPerRequest(f), 3) : 'n/a',
    `${Math.round(100 * f.clientCpu)} %`,
    f.otherCpu === undefined ? 'n/a' : `${Math.round(100 * f.otherCpu)} %`,
    f.non2xx + f.errors > 0 ? `${f.non2xx} non-2xx, ${f.errors} errors` : '',
  ]);
  console.log();
  printTable(CASE_COLUMNS, rows);
  console.log();
  console.log("÷ hello: the case's req/s over the bare Express route's. CPU: time used over the run, 100 % = one core busy throughout");
  console.log("(ms/req: the server's CPU time per request);");
  console.log('"others": the other processes of the machine (noise).');
  // PostgreSQL's own processes are among the others on this machine: only the SQLite pass can tell noise.
  const disturbed = figures.filter((f) => f.database !== 'PostgreSQL' && (f.otherCpu ?? 0) > 0.1).map((f) => f.name);
  if (disturbed.length > 0) console.warn(`! other processes used the CPUs during ${disturbed.join(', ')}: run again on a quiet machine`);
  console.log();
  for (const check of checks)
    console.log(`${check.name.padEnd(34)} ${fixed(check.value).padStart(6)}   target ${check.target}   ${check.met ? 'met' : 'MISSED'}`);
}

/** The goal for a product read (docs/performance.md): PostgreSQL's server CPU per request at most this many times SQLite's. */
const POSTGRES_READ_GOAL = 1.2;

/** With BENCH_DATABASE_URL: each store API case's server CPU per request on SQLite and on PostgreSQL, and their ratio. */
export function printDatabases(figures: readonly CaseFigures[], { serverCpus, rate }: { serverCpus: string | undefined; rate: number }): void {
  const pairs = figures
    .filter((f) => f.database === 'PostgreSQL')
    .map((postgres) => ({ postgres, sqlite: figures.find((f) => f.database === 'SQLite' && f.name === postgres.name) }));
  if (pairs.length === 0) return;
  console.log(`SQLite and PostgreSQL, server CPU ms per request (goal for products.get and products.list: PostgreSQL at most ${POSTGRES_READ_GOAL} × SQLite):`);
  for (const { sqlite, postgres } of pairs) {
    const times = sqlite ? cpuMsPerRequest(postgres) / cpuMsPerRequest(sqlite) : Number.NaN;
    const goal = ['products.get', 'products.list'].includes(postgres.name) ? (times <= POSTGRES_READ_GOAL ? '  meets the goal' : '  above the goal') : '';
    console.log(`  ${postgres.name.padEnd(16)} SQLite ${sqlite ? cpuCell(sqlite) : 'n/a'}  PostgreSQL ${cpuCell(postgres)}  × ${fixed(times)}${goal}`);
  }
  console.log(
    serverCpus
      ? `  (the servers on CPUs ${serverCpus}; PostgreSQL's CPU, wherever it runs here, is in "others CPU"${rate > 0 ? `; ${rate} requests/s offered to each case` : ''})`
      : '  (PostgreSQL runs on the same CPUs as the servers and the load generator here: its own CPU is in "others CPU"; BENCH_SERVER_CPUS and BENCH_RATE keep them apart, docs/performance.md)',
  );
}
