import { Command } from 'commander';
import { runHousekeeping } from '../../jobs/housekeeping';
import type { Actions, Run } from '../context';
import { table } from '../output';

const housekeeping: Run = async (context) => {
  const sweeps = await runHousekeeping(context.deps);
  return {
    json: sweeps.map((sweep) => ({ table: sweep.table, deleted: sweep.deleted, more_remain: sweep.capped })),
    lines: table(
      ['TABLE', 'DELETED'],
      sweeps.map((sweep) => [sweep.table, `${sweep.deleted}${sweep.capped ? '  (the run stopped at its cap: more remain, run again)' : ''}`]),
    ),
  };
};

export function housekeepingCommand(actions: Actions): Command {
  return new Command('housekeeping')
    .description(
      'Delete what has expired (idempotency keys, sessions, consent requests, codes, launch tokens, token operations, API quota counters, and webhook events, deliveries and attempts after 30 days) in batches of 1,000 rows, as the server does every 10 minutes; prints the rows deleted per table.',
    )
    .action(actions.writes(housekeeping));
}
