import type { Noun } from '../context';
import { appCommands } from './app';
import { couponCommands } from './coupon';
import { housekeepingCommand } from './housekeeping';
import { installationCommands } from './installation';
import { migrateCommand } from './migrate';
import { simulateCommand } from './simulate';
import { storeCommands } from './store';
import { workerCommand } from './worker';

/** Every noun of `svc`, in the order the usage lists them. */
export const NOUNS: readonly Noun[] = [
  storeCommands,
  appCommands,
  installationCommands,
  couponCommands,
  simulateCommand,
  housekeepingCommand,
  workerCommand,
  migrateCommand,
];
