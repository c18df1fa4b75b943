import { Command } from 'commander';
import { LEADER_RETRY_MS } from '../../db/locks';
import { runHousekeeping } from '../../jobs/housekeeping';
import { PlatformError } from '../../platform/stores';
import { SWEEP_LIMITS, type TableSweep } from '../../services/housekeeping';
import type { Actions, Run } from '../context';
import { table } from '../output';

export const HOUSEKEEPING_LED_ELSEWHERE = 'another process leads housekeeping (a server of the fleet, which runs it every 10 minutes): nothing was done here';

/**
 * As a round of the leader (db/locks.ts): the command takes the lead for its run, so that it never
 * sweeps or keeps partitions beside a server's leader doing the same; where a server leads, it says
 * so and does nothing.
 */
const housekeeping: Run = async (context) => {
  const leadership = context.deps.engine.locks.holdLeadership(context.deps.db, { retryMs: LEADER_RETRY_MS });
  let sweeps: TableSweep[] | undefined;
  try {
    if (await leadership.tried()) sweeps = await runHousekeeping(context.deps, SWEEP_LIMITS, leadership);
  } finally {
    await leadership.stop();
  }
  if (!sweeps) throw new PlatformError(HOUSEKEEPING_LED_ELSEWHERE);
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
