import { Command } from 'commander';
import { SIMULATION_BOUNDS, simulateStore } from '../../seeds/simulation/run';
import type { Actions, Run } from '../context';
import { keyValues, simulationFacts, simulationJson } from '../output';
import { uuid, wholeNumber } from '../values';

interface SimulateOptions {
  store: string;
  days: number;
  orders: number;
  seed: number;
}

/**
 * Stops between two batches when the process is asked to (SIGINT, SIGTERM): what was committed
 * stays, and the report says so, since the seed's marker coupon now refuses a second run of it.
 */
const simulate: Run<SimulateOptions> = async (context, { options }) => {
  const request = { storeId: options.store, days: options.days, orders: options.orders, seed: options.seed };
  const { signal } = context.stopping();
  try {
    const summary = await simulateStore(context.deps, { ...request, signal, ...(context.progress ? { onProgress: context.progress } : {}) });
    return { json: simulationJson(request, summary), lines: keyValues(simulationFacts(request, summary)) };
  } catch (error) {
    if (!signal.aborted) throw error;
    return {
      json: { store_id: request.storeId, seed: request.seed, stopped: true },
      lines: [`simulation stopped before its end: the orders committed so far stay in store ${request.storeId}; run again with another --seed`],
    };
  }
};

const { days, orders, seed } = SIMULATION_BOUNDS;

export function simulateCommand(actions: Actions): Command {
  return new Command('simulate')
    .description(
      `Play shoppers in a store through the storefront's rules: --orders orders in all over the --days whole days before today in the store's time zone, with payments (some declined), fulfilment, refunds, cancellations, coupons, abandoned and recovered carts and reviews; the same --seed gives the same orders. Days ${days.min}-${days.max}, orders ${orders.min}-${orders.max}, seed ${seed.min}-${seed.max}. SIGINT or SIGTERM stop it between two batches.`,
    )
    .requiredOption('--store <storeId>', '', uuid)
    .requiredOption('--days <N>', '', wholeNumber(days))
    .requiredOption('--orders <N>', '', wholeNumber(orders))
    .requiredOption('--seed <N>', '', wholeNumber(seed))
    .action(actions.writes(simulate));
}
