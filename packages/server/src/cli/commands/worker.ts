import { Command } from 'commander';
import { createDispatcher, DISPATCHER_DEFAULTS } from '../../delivery/dispatcher';
import type { Actions, Run } from '../context';
import { wholeNumber } from '../values';

/**
 * Delivers until the process is asked to stop, then stops claiming and waits for the attempts on
 * the wire to be recorded; `svc` closes the metrics listener and the database pool after it and
 * exits 0. With `METRICS_PORT` its attempts, claims and process figures are served as the server's
 * are (docs/deploy.md, "Metrics").
 */
const worker: Run<{ concurrency: number }> = async (context, { options }) => {
  if (!context.worker) throw new Error('svc worker was started without its services');
  const stopping = context.stopping();
  const { services, metricsUrl } = await context.worker.servicesWithMetrics();
  const dispatcher = createDispatcher(services, {
    concurrency: options.concurrency,
    logError: context.err,
    logWarning: context.err,
    metrics: services.metrics,
  });
  dispatcher.start();
  if (metricsUrl) context.err(`svc worker: metrics at ${metricsUrl}`);
  context.err(
    `svc worker: delivering webhooks with ${options.concurrency} attempts at once, at most ${services.webhooks.attemptsPerSubscription} per subscription; stop with SIGINT or SIGTERM`,
  );
  await stopping.begun;
  await dispatcher.stop();
  return { json: { stopped: true }, lines: ['svc worker: stopped'] };
};

export function workerCommand(actions: Actions): Command {
  return new Command('worker')
    .description(
      "Deliver webhooks from the outbox until stopped (SIGINT or SIGTERM finish the attempts under way; a second signal exits at once), beside or instead of the server's own dispatcher (WEBHOOK_WORKERS=0).",
    )
    .option('--concurrency <n>', '', wholeNumber({ min: 1, max: 9999 }), DISPATCHER_DEFAULTS.concurrency)
    .action(actions.delivers(worker));
}
