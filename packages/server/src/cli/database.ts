import { systemClock } from '../core/clock';
import { type Config, ConfigError, loadConfig } from '../core/config';
import { createDatabase } from '../db/connection';
import { type Deps, type Services, servicesFromConfig } from '../platform/services';
import { PlatformError } from '../platform/stores';

export interface ConfiguredDatabase {
  readonly deps: Deps;
  services(): Services;
  close(): Promise<void>;
}

/** A bad setting is the operator's to fix: one line naming it (exit 1), not a stack trace. */
function settings(): Config {
  try {
    return loadConfig();
  } catch (error) {
    throw error instanceof ConfigError ? new PlatformError(error.message) : error;
  }
}

/** The database the settings name (DATABASE_URL, or SQLite under DATA_DIR), with the system clock; connects on the first query. */
export function configuredDatabase(): ConfiguredDatabase {
  const config = settings();
  const db = createDatabase(config);
  return {
    deps: { db, clock: systemClock },
    services: () => servicesFromConfig(config, db),
    close: () => db.destroy(),
  };
}
