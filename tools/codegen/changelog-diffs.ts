import fs from 'node:fs';
import path from 'node:path';
import type { ApiVersionEntry } from '../../packages/contract/src/generated/versions';
import { type BreakingChange, breakingChanges } from '../spec-gate/gate';
import { locations, repoRoot } from './paths';

/**
 * Each date version's entry in CHANGELOG.md opens with what the breaking-change gate
 * (tools/spec-gate) finds between its released document and the previous one's
 * (`spec/released/<version>.json`): written by `pnpm generate` between the entry's
 * `gate-diff:<version>` markers, never by hand, so the changelog cannot promise less than the
 * documents differ by.
 */

const startOf = (version: string) => `<!-- gate-diff:${version}:start -->`;
const endOf = (version: string) => `<!-- gate-diff:${version}:end -->`;

/** The released documents of the registry's versions, oldest first; a version not released yet has none. */
export function readReleasedDocuments(entries: readonly ApiVersionEntry[], dir = path.join(repoRoot, 'spec', 'released')): Map<string, unknown> {
  const documents = new Map<string, unknown>();
  for (const { version } of entries) {
    const file = path.join(dir, `${version}.json`);
    if (fs.existsSync(file)) documents.set(version, JSON.parse(fs.readFileSync(file, 'utf8')));
  }
  return documents;
}

const escapeCell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** The block of one version: its breaking changes against the previous release, or why there are none to list. */
export function gateDiffBlock(version: string, previous: string | undefined, changes: readonly BreakingChange[] | undefined): string {
  const heading = '**Against the previous release** (the breaking-change gate, `tools/spec-gate`; written by `pnpm generate`):';
  let body: string;
  if (previous === undefined) body = `${heading} the first version, with no earlier release to compare with.`;
  else if (changes === undefined) body = `${heading} ${version} is not released yet (\`spec/released/${version}.json\`).`;
  else if (changes.length === 0) body = `${heading} no breaking change from ${previous}.`;
  else {
    const rows = changes.map((change) => `| ${escapeCell(change.where)} | ${escapeCell(change.description)} |`);
    body = [`${heading} ${changes.length} breaking change(s) from ${previous}.`, '', '| where | what |', '|---|---|', ...rows].join('\n');
  }
  return `${startOf(version)}\n${body}\n${endOf(version)}`;
}

/** The changelog with each version's block written (replaced where it is, or put first in the version's entry). */
export function withChangelogDiffs(changelog: string, entries: readonly ApiVersionEntry[], released: ReadonlyMap<string, unknown>): string {
  let text = changelog;
  entries.forEach((entry, index) => {
    const previous = entries[index - 1];
    const before = previous ? released.get(previous.version) : undefined;
    const after = released.get(entry.version);
    const changes = previous && before !== undefined && after !== undefined ? breakingChanges(before, after) : undefined;
    const block = gateDiffBlock(entry.version, previous?.version, changes);
    const start = text.indexOf(startOf(entry.version));
    const end = text.indexOf(endOf(entry.version));
    if (start >= 0 && end > start) {
      text = `${text.slice(0, start)}${block}${text.slice(end + endOf(entry.version).length)}`;
      return;
    }
    const heading = text.split('\n').findIndex((line) => line.trim() === `## ${entry.changelog}`);
    if (heading < 0) throw new Error(`${path.relative(repoRoot, locations.changelog)} has no "## ${entry.changelog}" entry for ${entry.version}`);
    const lines = text.split('\n');
    lines.splice(heading + 1, 0, '', block);
    text = lines.join('\n');
  });
  return text;
}
