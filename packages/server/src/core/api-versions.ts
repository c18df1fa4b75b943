import type { ApiVersionEntry } from '@svc/contract';
import { ApiError, type ErrorDetail } from './errors';
import { dayNumberOf } from './instants';

export type { ApiVersionEntry };

/**
 * The request and response header that names a date version (docs/decisions/0055-date-versions.md).
 * http/cors.ts lists the same name among the headers a browser may send.
 */
export const API_VERSION_HEADER = 'API-Version';

/**
 * Where a version stands: `current` (the newest), `supported`, `deprecated` (a deprecation is
 * recorded, whether its date has come or not: RFC 9745 lets a future date announce it) or
 * `retired` (its sunset has come: requests naming it are refused).
 */
export type VersionState = 'current' | 'supported' | 'deprecated' | 'retired';

/** The registry of date versions a process serves (spec/versions.yaml; tests give their own). */
export interface ApiVersionRegistry {
  readonly entries: readonly ApiVersionEntry[];
  /** The newest version: what a request without a version, from an app without a pin, gets. */
  readonly current: ApiVersionEntry;
  /** The entry of a version, or undefined for a date that is none. */
  find(version: string): ApiVersionEntry | undefined;
  stateOf(entry: ApiVersionEntry, now: number): VersionState;
  /** The versions a request may name at `now`, oldest first. */
  supportedAt(now: number): ApiVersionEntry[];
}

const DAY_MS = 86_400_000;

/** Midnight UTC at the start of a `YYYY-MM-DD` day, in epoch ms (the registry's dates are UTC days). */
export function startOfDay(day: string): number {
  const dayNumber = dayNumberOf(day);
  if (dayNumber === undefined) throw new Error(`"${day}" is not a YYYY-MM-DD date`);
  return dayNumber * DAY_MS;
}

/** The same day a year later (29 February → 1 March): the least notice a sunset gets. */
function aYearAfter(day: string): string {
  const next = new Date(startOfDay(day));
  next.setUTCFullYear(next.getUTCFullYear() + 1);
  return next.toISOString().slice(0, 10);
}

/**
 * The registry's rules, checked when it is made (by `pnpm generate` for spec/versions.yaml, and by
 * every fixture): versions are real dates, unique and oldest first; the newest is neither deprecated
 * nor sunset; a version is deprecated no earlier than its successor's release; a sunset comes with a
 * deprecation and at least 12 months after it, which is the interface's promise for breaking changes.
 */
export function registryProblems(entries: readonly ApiVersionEntry[]): string[] {
  const problems: string[] = [];
  if (entries.length === 0) return ['the registry lists no version'];
  entries.forEach((entry, index) => {
    const name = `version ${entry.version}`;
    for (const [field, value] of [
      ['version', entry.version],
      ['released', entry.released],
      ['deprecated', entry.deprecated],
      ['sunset', entry.sunset],
    ] as const) {
      if (value !== null && dayNumberOf(value) === undefined) problems.push(`${name}: ${field} "${value}" is not a YYYY-MM-DD date`);
    }
    if (!/^[A-Za-z0-9-]{1,64}$/.test(entry.changelog)) problems.push(`${name}: changelog "${entry.changelog}" is not an anchor (letters, digits, hyphens)`);
    const previous = entries[index - 1];
    if (previous && previous.version >= entry.version) problems.push(`${name} is listed after ${previous.version}: oldest first, each once`);
    const successor = entries[index + 1];
    if (!successor && (entry.deprecated !== null || entry.sunset !== null)) problems.push(`${name} is the newest: it cannot be deprecated or sunset`);
    if (successor && entry.deprecated !== null && entry.deprecated < successor.released) {
      problems.push(`${name} is deprecated on ${entry.deprecated}, before ${successor.version} replaces it (${successor.released})`);
    }
    if (entry.sunset !== null && entry.deprecated === null) problems.push(`${name} has a sunset without a deprecation`);
    if (entry.sunset !== null && entry.deprecated !== null && dayNumberOf(entry.deprecated) !== undefined && entry.sunset < aYearAfter(entry.deprecated)) {
      problems.push(`${name}: sunset ${entry.sunset} is less than 12 months after its deprecation on ${entry.deprecated}`);
    }
  });
  return problems;
}

/** A registry over `entries`; refuses entries that break the rules of {@link registryProblems}. */
export function apiVersionRegistry(entries: readonly ApiVersionEntry[]): ApiVersionRegistry {
  const problems = registryProblems(entries);
  if (problems.length > 0) throw new Error(`The version registry is not valid: ${problems.join('; ')}`);
  const byVersion = new Map(entries.map((entry) => [entry.version, entry]));
  const current = entries.at(-1) as ApiVersionEntry;
  const stateOf = (entry: ApiVersionEntry, now: number): VersionState => {
    if (entry.sunset !== null && now >= startOfDay(entry.sunset)) return 'retired';
    if (entry.deprecated !== null) return 'deprecated';
    return entry === current ? 'current' : 'supported';
  };
  return {
    entries,
    current,
    find: (version) => byVersion.get(version),
    stateOf,
    supportedAt: (now) => entries.filter((entry) => stateOf(entry, now) !== 'retired'),
  };
}

/** RFC 9110's IMF-fixdate, which `Date#toUTCString` writes. */
const httpDate = (instant: number): string => new Date(instant).toUTCString();

/** The docs site's entry of a version in the changelog (served by the service at /docs). */
export const changelogHref = (entry: ApiVersionEntry): string => `/docs/#/changelog/${entry.changelog}`;

/**
 * The headers an answer served under `entry` carries: always `API-Version`; for a deprecated version
 * also `Deprecation` (RFC 9745: `@` and the deprecation's Unix time), `Sunset` (RFC 8594: an HTTP
 * date) when one is set, and `Link` to the version's changelog entry as both relations.
 */
export function versionHeaders(entry: ApiVersionEntry): Record<string, string> {
  const headers: Record<string, string> = { [API_VERSION_HEADER]: entry.version };
  if (entry.deprecated === null) return headers;
  headers.Deprecation = `@${startOfDay(entry.deprecated) / 1000}`;
  const link = `<${changelogHref(entry)}>`;
  const links = [`${link}; rel="deprecation"; type="text/html"`];
  if (entry.sunset !== null) {
    headers.Sunset = httpDate(startOfDay(entry.sunset));
    links.push(`${link}; rel="sunset"; type="text/html"`);
  }
  headers.Link = links.join(', ');
  return headers;
}

/** The names of the headers {@link versionHeaders} may set: an answer's version can change once its app is known. */
export const VERSION_HEADER_NAMES = [API_VERSION_HEADER, 'Deprecation', 'Sunset', 'Link'] as const;

/** One detail per version a request may name, so the refusal says what would be accepted. */
function supportedDetails(registry: ApiVersionRegistry, now: number): ErrorDetail[] {
  return registry.supportedAt(now).map((entry) => {
    const state = registry.stateOf(entry, now);
    const note =
      state === 'current'
        ? 'the current version'
        : state === 'deprecated'
          ? `deprecated${entry.sunset === null ? '' : `, sunset on ${entry.sunset}`}`
          : `supported, released ${entry.released}`;
    return { location: 'header', field: API_VERSION_HEADER, message: `${entry.version} (${note})` };
  });
}

/**
 * 400 UNSUPPORTED_VERSION for a version that is not one of the registry's, or whose sunset has come;
 * `pinned` when it is the app's pin rather than the request's header. The details list the
 * versions that would be accepted.
 */
export function unsupportedVersion(registry: ApiVersionRegistry, now: number, asked: string, pinned = false): ApiError {
  const entry = registry.find(asked);
  const shown = JSON.stringify(asked.slice(0, 40));
  const what = pinned ? `The app's pinned version ${shown}` : `The ${API_VERSION_HEADER} header's ${shown}`;
  const why = entry?.sunset ? `was retired on ${entry.sunset}` : 'is not a version of this interface';
  const remedy = pinned ? ` Send the ${API_VERSION_HEADER} header with a supported version, or have the app pinned to one.` : '';
  return new ApiError('UNSUPPORTED_VERSION', `${what} ${why}.${remedy}`, { details: supportedDetails(registry, now) });
}
