/**
 * What `pnpm drill` is asked to do: the faults, in the order given, and the load they run under.
 * Pure: read from the command line and the environment's BENCH-like settings, and tested without
 * a database (tools/drill/test/plan.test.ts).
 */

/** Each fault the drill knows, with the line that names it in the report. */
export const FAULTS = {
  'instance-kill': 'an instance killed (kill -9) under load, and a new one started',
  'replica-freeze': "the replica's processes stopped (SIGSTOP), then resumed",
  'leader-terminate': "the housekeeping leader's session terminated (pg_terminate_backend)",
  'listener-terminate': "the webhook listeners' sessions terminated (pg_terminate_backend)",
  'pgbouncer-restart': 'PgBouncer restarted',
  'receiver-hang': 'the webhook receiver hanging (accepts, never answers), then answering again',
  'migration-019': 'svc migrate killed (kill -9) half-way through 019 on a database with rows, then run again',
} as const;

export type FaultName = keyof typeof FAULTS;
export const FAULT_NAMES = Object.keys(FAULTS) as FaultName[];

export interface DrillPlan {
  readonly faults: readonly FaultName[];
  /** How long each fault lasts (a stopped replica, a hanging receiver), in seconds. */
  readonly faultSeconds: number;
  /** The load before and after each fault, in seconds. */
  readonly calmSeconds: number;
  /** Writes (products.create, each with its Idempotency-Key) per second, spread over the instances. */
  readonly writesPerSecond: number;
  /** Reads (products.list, the first page of 25) per second. */
  readonly readsPerSecond: number;
  /** Instances of the built server (one process each). */
  readonly instances: number;
  /** Rows in `outbox_events` before 019 runs: from 100,000 it takes its concurrent path. */
  readonly migrationRows: number;
}

export const USAGE = `usage: pnpm drill [fault …] [--fault-seconds N] [--calm-seconds N] [--writes N] [--reads N] [--instances N] [--migration-rows N]
faults (all of them, in this order, when none is named):
${FAULT_NAMES.map((name) => `  ${name.padEnd(20)} ${FAULTS[name]}`).join('\n')}`;

/** A command line the drill cannot run: the message says what, and the usage follows it. */
export class DrillUsageError extends Error {}

const DEFAULTS: Omit<DrillPlan, 'faults'> = {
  faultSeconds: 20,
  calmSeconds: 5,
  writesPerSecond: 10,
  readsPerSecond: 30,
  instances: 2,
  migrationRows: 120_000,
};

/** The options that take a number: their name on the command line, the plan's field, and the least value. */
const NUMBER_OPTIONS = {
  '--fault-seconds': { field: 'faultSeconds', least: 1 },
  '--calm-seconds': { field: 'calmSeconds', least: 1 },
  '--writes': { field: 'writesPerSecond', least: 1 },
  '--reads': { field: 'readsPerSecond', least: 0 },
  '--instances': { field: 'instances', least: 2 },
  '--migration-rows': { field: 'migrationRows', least: 0 },
} as const satisfies Record<string, { field: keyof typeof DEFAULTS; least: number }>;

const isNumberOption = (argument: string): argument is keyof typeof NUMBER_OPTIONS => Object.hasOwn(NUMBER_OPTIONS, argument);

/** The plan of `pnpm drill …`'s arguments (after the script's name); undefined for `--help`. */
export function planOf(argv: readonly string[]): DrillPlan | undefined {
  const plan: { -readonly [Field in keyof DrillPlan]: DrillPlan[Field] } = { ...DEFAULTS, faults: [] };
  const faults: FaultName[] = [];
  for (let index = 0; index < argv.length; index += 1) {
    const argument = argv[index] as string;
    if (argument === '--help' || argument === '-h') return undefined;
    const [name, inline] = argument.startsWith('--') && argument.includes('=') ? argument.split('=', 2) : [argument, undefined];
    if (name !== undefined && isNumberOption(name)) {
      if (inline === undefined) index += 1;
      const text = inline ?? argv[index];
      const { field, least } = NUMBER_OPTIONS[name];
      const value = Number(text);
      if (text === undefined || text.trim() === '' || !Number.isInteger(value) || value < least)
        throw new DrillUsageError(`${name} takes a whole number from ${least}, not ${text === undefined ? 'nothing' : `"${text}"`}`);
      plan[field] = value;
      continue;
    }
    if (argument.startsWith('-')) throw new DrillUsageError(`unknown option ${argument}`);
    if (!Object.hasOwn(FAULTS, argument)) throw new DrillUsageError(`unknown fault "${argument}"`);
    if (!faults.includes(argument as FaultName)) faults.push(argument as FaultName);
  }
  plan.faults = faults.length > 0 ? faults : FAULT_NAMES;
  return plan;
}
