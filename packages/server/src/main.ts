import { ConfigError, loadConfig } from './core/config';
import { StartError } from './core/start-error';

/**
 * The server's entry. It reads the settings, then, only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set,
 * starts OpenTelemetry (runtime/tracing) before the rest of the server is loaded: its
 * instrumentation patches Express, pg and Knex as they are loaded, so they must come after. Both
 * are dynamic imports: without the setting nothing of OpenTelemetry is loaded, and the request path
 * pays nothing for it. docs/decisions/0061-metrics-and-traces.md.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const tracing = config.tracing ? (await import('./runtime/tracing.js')).startTracing() : undefined;
  const { startServer } = await import('./server.js');
  await startServer(config, tracing);
}

/** A start that cannot go on says why in one line (a bad setting, a port in use, no database) and exits 1: no stack. */
main().catch((error: unknown) => {
  const known = error instanceof ConfigError || error instanceof StartError;
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`${known ? message : `the service could not start: ${message}`}\n`);
  process.exit(1);
});
