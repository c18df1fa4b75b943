import { Command } from 'commander';
import { endStoreMigration, startStoreMigration } from '../../platform/stores';
import type { Actions, NoOptions, Run } from '../context';
import { storeReport } from '../output';
import { uuid } from '../values';

const start: Run<NoOptions, [string]> = async (context, { args: [storeId] }) => storeReport(await startStoreMigration(context.deps, storeId));

const end: Run<NoOptions, [string]> = async (context, { args: [storeId] }) => storeReport(await endStoreMigration(context.deps, storeId));

/** Moving a store between databases (`svc store migration`), not to be confused with the schema's migrations (`svc migrate`). */
export function storeMigrationCommands(actions: Actions): Command {
  const migration = new Command('migration');
  migration
    .command('start')
    .description('Start moving a store: its store API answers 503 STORE_MIGRATING until the move ends.')
    .argument('<storeId>', '', uuid)
    .action(actions.writes(start));
  migration
    .command('end')
    .description('End the move: the store answers again under a new route_epoch.')
    .argument('<storeId>', '', uuid)
    .action(actions.writes(end));
  return migration;
}
