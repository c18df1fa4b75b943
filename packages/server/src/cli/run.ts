import { PlatformError } from '../platform/stores';
import { publishedApiVersions } from '../services/api-versions';
import type { CliIo, CommandRole, Context, Stopping } from './context';
import type { Report } from './output';
import { type Invocation, parseCommandLine } from './program';
import { prepareSchema } from './schema';
import { usageText } from './usage';

/** A stop that never comes: a long command run without `svc`'s signal handling (tests) ends by itself. */
const NEVER: Stopping = { signal: new AbortController().signal, begun: new Promise<void>(() => {}) };

function print(report: Report, json: boolean, out: (line: string) => void): void {
  if (json) out(JSON.stringify(report.json, null, 2));
  else for (const line of report.lines) out(line);
}

async function contextFor(io: CliIo, role: CommandRole): Promise<Context> {
  const deps = typeof io.deps === 'function' ? await io.deps(role) : io.deps;
  return {
    deps,
    env: io.env ?? process.env,
    err: io.err,
    progress: io.progress,
    worker: io.worker,
    apiVersions: io.apiVersions ?? publishedApiVersions,
    stopping: () => io.stopping?.() ?? NEVER,
  };
}

/** Runs one command; expected failures (PlatformError) become `error: ...` and exit 1, bugs propagate. */
async function execute({ use, role, run, input, json }: Invocation, io: CliIo): Promise<number> {
  try {
    const context = await contextFor(io, role);
    await prepareSchema(use, context.deps.db);
    print(await run(context, input), json, io.out);
    return 0;
  } catch (error) {
    if (!(error instanceof PlatformError)) throw error;
    io.err(`error: ${error.message}`);
    return 1;
  }
}

/** The admin CLI: runs one command line and returns the exit code (0 ok, 1 command failed, 2 usage error). */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const parsed = parseCommandLine(argv);
  switch (parsed.kind) {
    case 'help':
      for (const line of parsed.lines) io.out(line);
      return 0;
    case 'usage-error':
      io.err(`svc: ${parsed.message}`);
      for (const line of usageText(parsed.commands)) io.err(line);
      return 2;
    case 'run':
      return execute(parsed.invocation, io);
  }
}
