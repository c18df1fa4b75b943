/**
 * `pnpm lint:gate`: the working bundle (packages/contract/openapi.json, kept in step with spec/ by
 * `pnpm generate:check`) against the latest released document in spec/released/, by ./gate.
 * Exits 1 on an undeclared breaking change, naming each one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { locations, repoRoot } from '../codegen/paths';
import { readVersionRegistry } from '../codegen/versions';
import { judge, report } from './gate';

/** spec/released/<YYYY-MM-DD>.json: one bundled document per released date version. */
export const releasedDir = path.join(repoRoot, 'spec', 'released');

/** The newest released document (file names are date versions, so they sort by date). */
export function latestReleased(): { version: string; document: unknown } {
  const files = fs
    .readdirSync(releasedDir)
    .filter((name) => /^\d{4}-\d{2}-\d{2}\.json$/.test(name))
    .sort();
  const newest = files.at(-1);
  if (!newest) throw new Error(`${path.relative(repoRoot, releasedDir)} holds no released document`);
  return { version: newest.slice(0, -'.json'.length), document: JSON.parse(fs.readFileSync(path.join(releasedDir, newest), 'utf8')) };
}

function main(): number {
  const working = JSON.parse(fs.readFileSync(locations.bundledSpec, 'utf8')) as { info?: { version?: unknown } };
  const verdict = judge({
    released: latestReleased(),
    working,
    versions: readVersionRegistry(String(working.info?.version)),
    changelog: fs.readFileSync(locations.changelog, 'utf8'),
  });
  const text = report(verdict);
  if (verdict.passes) console.log(text);
  else console.error(text);
  return verdict.passes ? 0 : 1;
}

if (require.main === module) process.exitCode = main();
