/**
 * The breaking-change gate (docs/decisions/0062-breaking-change-gate.md): the working document
 * against the latest released one (`spec/released/<version>.json`), judged by api-smart-diff with
 * the rules of ./rules. A breaking change fails the gate unless the working document is a new date
 * version declared in spec/versions.yaml with its entry in CHANGELOG.md.
 */
import { apiCompare, type Diff } from 'api-smart-diff';
import type { ApiVersionEntry } from '../../packages/contract/src/generated/versions';
import { gateRules } from './rules';

/** One change the tool classed as breaking, said where a client meets it. */
export interface BreakingChange {
  /** `POST /stores/{storeId}/v1/pages`, `event order.created`, or the document path. */
  readonly where: string;
  readonly description: string;
  /** The JSON path of the change in the documents. */
  readonly path: string;
}

export interface GateInput {
  /** The latest released document and its version (the file's name). */
  readonly released: { readonly version: string; readonly document: unknown };
  /** The working document: the bundle `pnpm generate` writes. */
  readonly working: unknown;
  /** spec/versions.yaml as read. */
  readonly versions: readonly ApiVersionEntry[];
  /** The text of CHANGELOG.md. */
  readonly changelog: string;
}

export interface GateVerdict {
  readonly releasedVersion: string;
  readonly workingVersion: string;
  readonly breaking: readonly BreakingChange[];
  /** The new date version that declares the breaking changes, when there is one. */
  readonly declaredFor: string | null;
  /** Why the gate fails, besides undeclared breaking changes. */
  readonly problems: readonly string[];
  readonly passes: boolean;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace']);

/**
 * Components are compared where they are used: the tool follows each `$ref` into the operation or
 * event and judges the change there, as a request or a response. A schema's own entry under
 * `components` is judged without that context (a value removed from an enum only answers are
 * made of is not breaking), so those entries are left out; security schemes are used by name, not
 * `$ref`, and are kept.
 */
function judgedAtUse(path: readonly (string | number)[]): boolean {
  return path[0] === 'components' && path[1] !== 'securitySchemes';
}

function whereOf(path: readonly (string | number)[]): string {
  const [section, name, method] = path;
  if (section === 'paths' && typeof method === 'string' && METHODS.has(method)) return `${method.toUpperCase()} ${name}`;
  if (section === 'paths') return `path ${name}`;
  if (section === 'webhooks') return `event ${name}`;
  return path.join('/');
}

/**
 * The tool's own words, then the change's place below the operation or event: the tool words a
 * change met again through the same `$ref` more loosely ("annotation (excerpt)"), so the place is
 * what names it exactly.
 */
function describe(diff: Diff): string {
  const [section] = diff.path;
  const rest = section === 'paths' || section === 'webhooks' ? diff.path.slice(METHODS.has(String(diff.path[2])) ? 3 : 2) : diff.path;
  const place = rest.length > 0 ? rest.join('/') : String(diff.path.at(-1));
  const words = diff.description?.trim() ?? '';
  return `${words.length > 0 ? `${words} ` : ''}[${diff.action} ${place}]`;
}

/** Every breaking change from `before` to `after`, as the tool and the gate's rules class them. */
export function breakingChanges(before: unknown, after: unknown): BreakingChange[] {
  // The tool rewrites the documents it walks (it merges `allOf`s and `$ref` siblings in place), so it gets copies.
  const { diffs } = apiCompare(structuredClone(before), structuredClone(after), { rules: gateRules() });
  return diffs
    .filter((diff) => diff.type === 'breaking' && !judgedAtUse(diff.path))
    .map((diff) => ({ where: whereOf(diff.path), description: describe(diff), path: diff.path.join('/') }));
}

/** The body of `## <heading>` in the changelog, up to the next `## `. */
function changelogSection(changelog: string, heading: string): string | undefined {
  const lines = changelog.split('\n');
  const start = lines.findIndex((line) => line.trim() === `## ${heading}`);
  if (start < 0) return undefined;
  const rest = lines.slice(start + 1);
  const end = rest.findIndex((line) => line.startsWith('## '));
  return (end < 0 ? rest : rest.slice(0, end)).join('\n').trim();
}

function versionOf(document: unknown): string {
  const version = (document as { info?: { version?: unknown } } | null)?.info?.version;
  if (typeof version !== 'string') throw new Error('the working document has no info.version');
  return version;
}

/** The gate's verdict on the working document. */
export function judge(input: GateInput): GateVerdict {
  const releasedVersion = input.released.version;
  const workingVersion = versionOf(input.working);
  const problems: string[] = [];
  const releasedInside = versionOf(input.released.document);
  if (releasedInside !== releasedVersion) problems.push(`the released document of ${releasedVersion} says info.version ${releasedInside}`);
  if (workingVersion < releasedVersion) problems.push(`the working document's version ${workingVersion} is older than the released ${releasedVersion}`);

  const breaking = breakingChanges(input.released.document, input.working);
  let declaredFor: string | null = null;
  if (breaking.length > 0 && workingVersion > releasedVersion) {
    const entry = input.versions.find((candidate) => candidate.version === workingVersion);
    const section = entry ? changelogSection(input.changelog, entry.changelog) : undefined;
    if (!entry) problems.push(`the new version ${workingVersion} is not in spec/versions.yaml`);
    else if (!section) problems.push(`CHANGELOG.md has no "## ${entry.changelog}" entry saying what ${workingVersion} changes`);
    else declaredFor = workingVersion;
  }
  const undeclared = breaking.length > 0 && declaredFor === null;
  return { releasedVersion, workingVersion, breaking, declaredFor, problems, passes: problems.length === 0 && !undeclared };
}

/** The verdict as the lint prints it: each breaking change on a line of its own. */
export function report(verdict: GateVerdict): string {
  const lines = verdict.breaking.map((change) => `${verdict.declaredFor ? 'breaking (declared)' : 'BREAKING'} ${change.where}: ${change.description}`);
  lines.push(...verdict.problems.map((problem) => `problem: ${problem}`));
  if (verdict.passes && verdict.breaking.length === 0) {
    lines.push(`spec gate: no breaking change from the released ${verdict.releasedVersion} to the working document (${verdict.workingVersion})`);
  } else if (verdict.passes) {
    lines.push(
      `spec gate: ${verdict.breaking.length} breaking change(s), declared for the new version ${verdict.declaredFor} in spec/versions.yaml and CHANGELOG.md`,
    );
  } else {
    lines.push(
      `spec gate: ${verdict.breaking.length} breaking change(s) from the released ${verdict.releasedVersion}. Undo them, or make them in a new date version: add it to spec/versions.yaml with its CHANGELOG.md entry and set info.version (docs/guides/08-versions.md).`,
    );
  }
  return lines.join('\n');
}
