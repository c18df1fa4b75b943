import { systemClock } from '../core/clock';
import { type Config, ConfigError, loadConfig } from '../core/config';
import { createDatabase } from '../db/connection';
import { PlatformError } from '../platform/stores';
import { type Deps, type Services, servicesFromConfig } from '../services/container';
import { verifySealingKey } from '../services/sealing-key';

export interface ConfiguredDatabase {
  readonly deps: Deps;
  /** The services of `svc worker` and `svc secrets reseal`, whose sealing keys the database's check has accepted. */
  services(): Promise<Services>;
  close(): Promise<void>;
}

/** A bad setting (a wrong sealing key among them) is the operator's to fix: one line naming it (exit 1), not a stack trace. */
const asPlatformError = (error: unknown): unknown => (error instanceof ConfigError ? new PlatformError(error.message) : error);

function settings(): Config {
  try {
    return loadConfig();
  } catch (error) {
    throw asPlatformError(error);
  }
}

/** The database the settings name (DATABASE_URL, or SQLite under DATA_DIR), with the system clock; connects on the first query. */
export function configuredDatabase(): ConfiguredDatabase {
  const config = settings();
  const db = createDatabase(config);
  return {
    deps: { db, clock: systemClock },
    async services() {
      try {
        const services = servicesFromConfig(config, db);
        await verifySealingKey(services);
        return services;
      } catch (error) {
        throw asPlatformError(error);
      }
    },
    close: () => db.destroy(),
  };
}
