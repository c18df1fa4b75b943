/**
 * The registry of date versions, `spec/versions.yaml`: checked, written to
 * `packages/contract/src/generated/versions.ts` (which the server and the SDK read) and shown as the
 * table of the versions guide (`docs/guides/08-versions.md`, between its `versions:start` and
 * `versions:end` markers). `pnpm generate:check` fails when either is out of step with the registry.
 */
import fs from 'node:fs';
import { parse } from 'yaml';
import type { ApiVersionEntry } from '../../packages/contract/src/generated/versions';
import { registryProblems } from '../../packages/server/src/core/api-versions';
import { GENERATED_HEADER, locations } from './paths';

const START = '<!-- versions:start -->';
const END = '<!-- versions:end -->';
const FIELDS = ['version', 'released', 'deprecated', 'sunset', 'changelog'] as const;

/** YAML reads an unquoted `2026-10-15` as text under the core schema; anything else is refused rather than guessed. */
function entryOf(raw: unknown, index: number): ApiVersionEntry {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`spec/versions.yaml: entry ${index + 1} is not a mapping`);
  const record = raw as Record<string, unknown>;
  const unknown = Object.keys(record).filter((key) => !(FIELDS as readonly string[]).includes(key));
  if (unknown.length > 0) throw new Error(`spec/versions.yaml: entry ${index + 1} has unknown keys ${unknown.join(', ')}`);
  const text = (key: (typeof FIELDS)[number], nullable: boolean): string | null => {
    const value = record[key];
    if (typeof value === 'string') return value;
    if (value === null && nullable) return null;
    throw new Error(`spec/versions.yaml: entry ${index + 1} needs ${key} as a quoted text${nullable ? ' or null' : ''}`);
  };
  return {
    version: text('version', false) as string,
    released: text('released', false) as string,
    deprecated: text('deprecated', true),
    sunset: text('sunset', true),
    changelog: text('changelog', false) as string,
  };
}

/** The registry as written, checked by the server's own rules and against the document and the changelog. */
export function readVersionRegistry(documentVersion: string): ApiVersionEntry[] {
  const raw = parse(fs.readFileSync(locations.versionRegistry, 'utf8'), { schema: 'core' }) as { versions?: unknown };
  if (!Array.isArray(raw?.versions)) throw new Error('spec/versions.yaml must have a `versions` list');
  const entries = raw.versions.map(entryOf);
  const problems = registryProblems(entries);
  const newest = entries.at(-1);
  if (newest && newest.version !== documentVersion) {
    problems.push(`the newest version ${newest.version} is not the document's info.version ${documentVersion}`);
  }
  const headings = new Set([...fs.readFileSync(locations.changelog, 'utf8').matchAll(/^## (.+)$/gm)].map((match) => (match[1] as string).trim()));
  for (const entry of entries) if (!headings.has(entry.changelog)) problems.push(`CHANGELOG.md has no "## ${entry.changelog}" heading for ${entry.version}`);
  if (problems.length > 0) throw new Error(`spec/versions.yaml: ${problems.join('; ')}`);
  return entries;
}

/** The contract's module: the entries and the newest, typed, for the server and apps alike. */
export function contractVersions(entries: readonly ApiVersionEntry[]): string {
  const rows = entries.map((entry) => `  ${JSON.stringify(entry)},`).join('\n');
  return `${GENERATED_HEADER}
/** A date version of the interface, as spec/versions.yaml records it (dates are UTC days, \`YYYY-MM-DD\`). */
export interface ApiVersionEntry {
  /** The version's name, sent in the \`API-Version\` header. */
  readonly version: string;
  readonly released: string;
  /** From this day answers under the version carry \`Deprecation\`; null while it is not deprecated. */
  readonly deprecated: string | null;
  /** From this day requests naming the version are refused (\`UNSUPPORTED_VERSION\`); null while none is set. */
  readonly sunset: string | null;
  /** The heading of the version's entry in the interface's CHANGELOG.md. */
  readonly changelog: string;
}

/** Every date version, oldest first. */
export const apiVersions: readonly ApiVersionEntry[] = [
${rows}
];

/** The newest version: \`info.version\` of the document, served when neither the request nor the app names one. */
export const CURRENT_API_VERSION = ${JSON.stringify(entries.at(-1)?.version)};
`;
}

const cell = (value: string | null) => value ?? '–';

/** The versions guide's table: every version with its dates and its changelog entry. */
export function versionsTable(entries: readonly ApiVersionEntry[]): string {
  const newest = entries.at(-1);
  const rows = [...entries].reverse().map((entry) => {
    const name = entry === newest ? `\`${entry.version}\` (current)` : `\`${entry.version}\``;
    return `| ${name} | ${entry.released} | ${cell(entry.deprecated)} | ${cell(entry.sunset)} | [changes](../../CHANGELOG.md#${entry.changelog}) |`;
  });
  return ['| Version | Released | Deprecated | Sunset | Changelog |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** The guide with its table replaced by the registry's. */
export function withVersionsTable(guide: string, entries: readonly ApiVersionEntry[]): string {
  const start = guide.indexOf(START);
  const end = guide.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${locations.versionsGuide} has no ${START} … ${END} block`);
  return `${guide.slice(0, start + START.length)}\n${versionsTable(entries)}\n${guide.slice(end)}`;
}
