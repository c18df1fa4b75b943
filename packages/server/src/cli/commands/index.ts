import type { Noun } from '../context';
import { apiVersionCommands } from './api-version';
import { appCommands } from './app';
import { couponCommands } from './coupon';
import { housekeepingCommand } from './housekeeping';
import { installationCommands } from './installation';
import { migrateCommand } from './migrate';
import { secretsCommands } from './secrets';
import { simulateCommand } from './simulate';
import { storeCommands } from './store';
import { workerCommand } from './worker';

/** Every noun of `svc`, in the order the usage lists them. */
export const NOUNS: readonly Noun[] = [
  storeCommands,
  appCommands,
  apiVersionCommands,
  installationCommands,
  couponCommands,
  simulateCommand,
  housekeepingCommand,
  workerCommand,
  secretsCommands,
  migrateCommand,
];
