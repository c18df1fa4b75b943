import { ConfigError, loadConfig } from '../core/config';
import { StartError } from '../core/start-error';
import { PlatformError } from '../platform/stores';
import { assembleProcess, type ProcessRole, type ServiceProcess } from '../runtime/process';

/**
 * A bad setting (a wrong sealing key among them, or a `METRICS_PORT` already taken) is the operator's
 * to fix: one line naming it (exit 1), not a stack trace.
 */
const asPlatformError = (error: unknown): unknown => (error instanceof ConfigError || error instanceof StartError ? new PlatformError(error.message) : error);

/** A command's process (runtime/process.ts): the settings read and checked, the database they name (DATABASE_URL, or SQLite under DATA_DIR). */
export async function openProcess(role: Exclude<ProcessRole, 'server'>): Promise<ServiceProcess> {
  try {
    return await assembleProcess(role, loadConfig(process.env, 'command'));
  } catch (error) {
    throw asPlatformError(error);
  }
}

/** The services of `svc worker` and `svc secrets reseal`, whose sealing keys the database's check has accepted. */
export async function checkedServices(process: ServiceProcess) {
  try {
    return await process.services();
  } catch (error) {
    throw asPlatformError(error);
  }
}

/** `svc worker`'s metrics listener, with `METRICS_PORT`: answers its URL. */
export async function servedMetrics(process: ServiceProcess): Promise<string | undefined> {
  try {
    return (await process.serveMetrics())?.url;
  } catch (error) {
    throw asPlatformError(error);
  }
}
