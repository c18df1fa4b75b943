import { Command } from 'commander';
import { migrateToLatest, pendingContract } from '../../db/migrate';
import type { Actions, Run } from '../context';

interface MigrateOptions {
  contract?: boolean;
}

/**
 * The expand phase, or with --contract the contract phase too (docs/deploy.md "Migrations"). A
 * contract phase left to run is said, since nothing else tells the operator it waits for them.
 */
const migrate: Run<MigrateOptions> = async (context, { options }) => {
  const applied = await migrateToLatest(context.deps.db, { contract: options.contract === true });
  const contractLeft = await pendingContract(context.deps.db);
  const lines = applied.length === 0 ? ['the database schema is current: nothing to apply'] : applied.map((name) => `applied ${name}`);
  if (contractLeft.length > 0)
    lines.push(`contract phase left to run (${contractLeft.join(', ')}): run svc migrate --contract once no instance of the previous release runs`);
  return { json: { applied, contract_pending: contractLeft }, lines };
};

/** `svc migrate`: the schema's migrations as a step of their own, for a release job. */
export function migrateCommand(actions: Actions): Command {
  return new Command('migrate')
    .description(
      'Bring the database schema up to date (the expand phase, which the previous release keeps working with) and print the migrations applied (or that it is current). --contract also runs the contract phase, which removes what the previous release needs: run it once every instance runs this release. Safe to run again after a failure: it completes what the failed run left. Commands that write migrate first by themselves; lists refuse a schema that is behind.',
    )
    .option('--contract')
    .action(actions.migrates(migrate));
}
