import { Command } from 'commander';
import { resealEverything } from '../../jobs/reseal';
import { PlatformError } from '../../platform/stores';
import { RESEAL_LIMITS } from '../../services/sealing-key';
import type { Actions, Run } from '../context';
import { table } from '../output';
import { wholeNumber } from '../values';

/** Unreadable values named in the error, at most: the rest are counted. */
const NAMED = 10;

/**
 * Re-seals under the first key of SECRET_KEYS. Stopped part-way (a signal ends it between or inside
 * a batch, whose transaction then rolls back), it is run again: what is under the first key already
 * is not read again. It fails (exit 1) while anything live is left under another key, since the
 * database's check then stays under the old key and an instance without it is still refused.
 */
const reseal: Run<{ batch: number }> = async (context, { options }) => {
  if (!context.worker) throw new Error('svc secrets reseal was started without its services');
  const services = await context.worker.services();
  const result = await resealEverything(services, { batchRows: options.batch });
  const lines = table(
    ['COLUMN', 'RE-SEALED', 'UNREADABLE'],
    result.columns.map((column) => [`${column.table}.${column.column}`, String(column.resealed), String(column.unreadable.length)]),
  );
  const sealing = services.sealer.keyIds[0] as string;
  if (!result.complete) {
    for (const line of lines) context.err(line);
    const unreadable = result.columns.flatMap((column) => column.unreadable);
    const named = unreadable
      .slice(0, NAMED)
      .map((value) => `${value.table}.${value.column} ${value.id} (${value.keyId === undefined ? 'sealed before key ids' : `key id ${value.keyId}`})`);
    const more = unreadable.length > NAMED ? ` and ${unreadable.length - NAMED} more` : '';
    throw new PlatformError(
      unreadable.length > 0
        ? `${unreadable.length} sealed values open under no key of ${services.sealer.source}: ${named.join(', ')}${more}. Add the key they were sealed under to ${services.sealer.source} and run again; the database's check stays under key id ${result.checkedKeyId}, so no instance may drop it yet`
        : `${result.remaining} sealed values changed while resealing and are not under key id ${sealing} yet: run svc secrets reseal again (every instance must hold ${sealing} first in its keys)`,
    );
  }
  return {
    json: {
      key_id: sealing,
      complete: true,
      columns: result.columns.map((column) => ({ table: column.table, column: column.column, resealed: column.resealed })),
    },
    lines: [...lines, `everything sealed, and the database's check, is under key id ${sealing}: keys after the first may now be dropped from SECRET_KEYS`],
  };
};

/** `svc secrets`: what the service keeps sealed under SECRET_KEY. */
export function secretsCommands(actions: Actions): Command {
  const secrets = new Command('secrets');
  secrets
    .command('reseal')
    .description(
      'Re-seal every sealed value (webhook signing secrets, current and previous, and stored idempotent answers) and the database\'s key check under the first key of SECRET_KEYS, in short batches, beside running instances; run again after a stop. Run it once every instance holds that key first in its SECRET_KEYS (docs/deploy.md, "Rotating SECRET_KEY").',
    )
    .option('--batch <rows>', '', wholeNumber({ min: 1, max: 10_000 }), RESEAL_LIMITS.batchRows)
    .action(actions.writes(reseal));
  return secrets;
}
