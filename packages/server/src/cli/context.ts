import type { Command } from 'commander';
import type { ApiVersionRegistry } from '../core/api-versions';
import type { Shutdown } from '../runtime/shutdown';
import type { Deps, Services } from '../services/container';
import type { Report } from './output';

/** What a long command watches to stop: `svc` gives the process's shutdown (SIGINT, SIGTERM). */
export type Stopping = Pick<Shutdown, 'signal' | 'begun'>;

export interface CliIo {
  /**
   * The database and clock, or how to open them: `svc` opens the database only for a command that
   * runs, so `svc help` and a malformed line never touch it.
   */
  readonly deps: Deps | ((role: CommandRole) => Promise<Deps>);
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  /** Where `SVC_OWNER_PASSWORD` is read from; `process.env` unless a test gives its own. */
  readonly env?: NodeJS.ProcessEnv;
  /** Told how far a long command is (work done, of all): `svc` draws a bar when stderr is a terminal. */
  readonly progress?: ((done: number, total: number) => void) | undefined;
  /**
   * What the commands that open sealed values work with (`svc worker`, `svc secrets reseal`): the
   * process's services (sealing keys, checked against the database's; webhook settings).
   */
  readonly worker?: WorkerIo;
  /**
   * Called by a long command when it starts, so that only long commands take over SIGINT and
   * SIGTERM; without it nothing stops them but their end.
   */
  readonly stopping?: () => Stopping;
  /** The date versions the commands judge pins and usage by; the published registry unless a test gives its own. */
  readonly apiVersions?: ApiVersionRegistry;
}

export interface WorkerIo {
  services(): Promise<Services>;
  /**
   * `svc worker`'s services: with `METRICS_PORT`, they count into the process's own `/metrics`
   * listener (closed with the database), whose address comes with them.
   */
  servicesWithMetrics(): Promise<{ services: Services; metricsUrl?: string }>;
}

/** What a command's code sees besides its flags and arguments. */
export interface Context {
  readonly deps: Deps;
  readonly env: NodeJS.ProcessEnv;
  readonly err: (line: string) => void;
  readonly progress?: ((done: number, total: number) => void) | undefined;
  readonly worker: WorkerIo | undefined;
  readonly apiVersions: ApiVersionRegistry;
  stopping(): Stopping;
}

/** A command line's values as commander parsed them: the options by their camel-case names, the arguments in order. */
export interface Input<Options, Args extends readonly string[]> {
  readonly options: Options;
  readonly args: Args;
}

/** The options of a command that takes none. */
export type NoOptions = Record<string, never>;

export type Run<Options = NoOptions, Args extends readonly string[] = []> = (context: Context, input: Input<Options, Args>) => Promise<Report>;

/**
 * What a command does to the schema before it runs. A command that writes brings it up to date
 * first (the quick start needs nothing else); one that only reads refuses a schema that is behind
 * instead of changing it; `svc migrate` is the migration itself.
 */
export type SchemaUse = 'writes' | 'reads' | 'migrates';

/**
 * What kind of process a command runs in (runtime/process.ts): `svc worker` is a worker's (its
 * metrics kept with `METRICS_PORT`), every other command a one-off command's.
 */
export type CommandRole = 'worker' | 'command';

export type ActionHandler = (...params: unknown[]) => void;

/** The commander actions of the commands, one per way of using the schema: a noun's commands are built with them. */
export type Actions = {
  readonly [use in SchemaUse]: <Options, Args extends readonly string[]>(run: Run<Options, Args>) => ActionHandler;
} & {
  /** A command that writes and runs as a worker process (`svc worker`). */
  readonly delivers: <Options, Args extends readonly string[]>(run: Run<Options, Args>) => ActionHandler;
};

/** A noun of the CLI (`store`, `app`, `simulate`): its commander command, with its subcommands. */
export type Noun = (actions: Actions) => Command;
