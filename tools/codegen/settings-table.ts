/**
 * Writes the settings table of `docs/deploy.md` from the server's one settings schema
 * (`packages/server/src/core/config.ts`), between its `settings:start` and `settings:end` markers.
 * `pnpm generate` writes it and `pnpm generate:check` fails when the guide and the schema differ.
 */
import path from 'node:path';
import { settingsTable } from '../../packages/server/src/core/config';

export const deployGuide = path.resolve(__dirname, '..', '..', 'docs', 'deploy.md');
const START = '<!-- settings:start -->';
const END = '<!-- settings:end -->';

/** The guide with its table replaced by the schema's. */
export function withSettingsTable(guide: string): string {
  const start = guide.indexOf(START);
  const end = guide.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${deployGuide} has no ${START} … ${END} block`);
  return `${guide.slice(0, start + START.length)}\n${settingsTable()}\n${guide.slice(end)}`;
}
