import { Command } from 'commander';
import { migrateToLatest } from '../../db/migrate';
import type { Actions, Run } from '../context';

const migrate: Run = async (context) => {
  const applied = await migrateToLatest(context.deps.db);
  return {
    json: { applied },
    lines: applied.length === 0 ? ['the database schema is current: nothing to apply'] : applied.map((name) => `applied ${name}`),
  };
};

/** `svc migrate`: the schema's migrations as a step of their own, for a release job. */
export function migrateCommand(actions: Actions): Command {
  return new Command('migrate')
    .description(
      'Bring the database schema up to date and print the migrations applied (or that it is current). Commands that write migrate first by themselves; lists refuse a schema that is behind.',
    )
    .action(actions.migrates(migrate));
}
