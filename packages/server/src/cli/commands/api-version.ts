import { Command } from 'commander';
import type { ApiVersionEntry } from '../../core/api-versions';
import { versionUsage } from '../../services/api-versions';
import type { Actions, Run } from '../context';
import type { Json } from '../output';
import { table } from '../output';

const dayCell = (day: string | null): string => day ?? '-';

/** `svc api-version list`: the registry the service answers by, with where each version stands today. */
const versionList: Run = async (context) => {
  const registry = context.apiVersions;
  const now = context.deps.clock.now();
  const rows = [...registry.entries].reverse().map((entry: ApiVersionEntry) => ({ entry, state: registry.stateOf(entry, now) }));
  return {
    json: rows.map(
      ({ entry, state }): Json => ({
        version: entry.version,
        state,
        released: entry.released,
        deprecated: entry.deprecated,
        sunset: entry.sunset,
        changelog: entry.changelog,
      }),
    ),
    lines: table(
      ['VERSION', 'STATE', 'RELEASED', 'DEPRECATED', 'SUNSET'],
      rows.map(({ entry, state }) => [entry.version, state, entry.released, dayCell(entry.deprecated), dayCell(entry.sunset)]),
    ),
  };
};

/**
 * `svc api-version usage [--deprecated]`: which installations called under which version, from
 * what the service records per request (the installation, the version, the first and last day
 * seen, on how many days). With `--deprecated`, only the versions deprecated, retired or gone
 * from the registry: whom to tell before a sunset.
 */
const versionUsageReport: Run<{ deprecated?: boolean }> = async (context, { options }) => {
  const uses = await versionUsage(context.deps, context.apiVersions, { deprecatedOnly: options.deprecated === true });
  return {
    json: uses.map(
      (use): Json => ({
        api_version: use.version,
        state: use.state,
        installation_id: use.installationId,
        installation_status: use.installationStatus,
        app_id: use.appId,
        app_name: use.appName,
        store_id: use.storeId,
        first_seen_day: use.firstSeenDay,
        last_seen_day: use.lastSeenDay,
        days_seen: use.daysSeen,
      }),
    ),
    lines: table(
      ['VERSION', 'STATE', 'INSTALLATION', 'APP', 'STORE', 'FIRST_SEEN', 'LAST_SEEN', 'DAYS'],
      uses.map((use) => [
        use.version,
        use.state,
        `${use.installationId}${use.installationStatus === 'installed' ? '' : ` (${use.installationStatus})`}`,
        use.appName,
        use.storeId,
        use.firstSeenDay,
        use.lastSeenDay,
        String(use.daysSeen),
      ]),
    ),
  };
};

export function apiVersionCommands(actions: Actions): Command {
  const apiVersion = new Command('api-version');
  apiVersion.command('list').description('List the date versions with their state, release, deprecation and sunset days.').action(actions.reads(versionList));
  apiVersion
    .command('usage')
    .description('Which installations called under which date version, and when last (--deprecated: only deprecated or retired versions).')
    .option('--deprecated')
    .action(actions.reads(versionUsageReport));
  return apiVersion;
}
