import { apiVersions } from '@svc/contract';
import type { Knex } from 'knex';
import { type ApiVersionRegistry, apiVersionRegistry, type VersionState } from '../core/api-versions';
import type { Clock } from '../core/clock';
import type { Db } from '../db/transactions';

/** The database and the clock (services.ts's `Deps`, which imports this module). */
interface Deps {
  readonly db: Knex;
  readonly clock: Clock;
}

/** The registry of spec/versions.yaml, as generated into the contract: what a process serves unless given another. */
export const publishedApiVersions: ApiVersionRegistry = apiVersionRegistry(apiVersions);

const DAY_MS = 86_400_000;
/** The last day asked for: every request asks, and days change rarely. */
let lastDay = { start: Number.NaN, text: '' };

/** The UTC day of an instant (`YYYY-MM-DD`), as usage is counted. */
function dayOf(now: number): string {
  if (!(now >= lastDay.start && now < lastDay.start + DAY_MS)) {
    const start = now - (((now % DAY_MS) + DAY_MS) % DAY_MS);
    lastDay = { start, text: new Date(start).toISOString().slice(0, 10) };
  }
  return lastDay.text;
}

/** Pairs remembered; past this the oldest is forgotten, which costs at most one more write that day. */
const REMEMBERED_PAIRS = 10_000;

/** Which installation called under which date version: the services container holds one per process. */
export interface VersionUseLog {
  /**
   * Notes that an installation called under a version: the first call of the day per pair (in this
   * process) writes a row, every other call only looks at a map. The write is not awaited: a request
   * never waits for, or fails over, this bookkeeping; a write that fails is forgotten, so the next
   * call tries again. Several processes may write the same pair on the same day: the row counts the
   * day once whoever comes first.
   */
  note(installationId: string, version: string): void;
  /** Waits for the writes under way (tests read what requests recorded). */
  written(): Promise<void>;
}

export function versionUseLog({ db, clock }: Deps): VersionUseLog {
  /** The installation and version pairs already written, with the day. */
  const written = new Map<string, string>();
  const pending = new Set<Promise<void>>();
  return {
    note(installationId, version) {
      const day = dayOf(clock.now());
      const pair = `${installationId} ${version}`;
      if (written.get(pair) === day) return;
      written.delete(pair); // re-added at the newest end, so the oldest pairs are the ones forgotten
      if (written.size >= REMEMBERED_PAIRS) written.delete(written.keys().next().value as string);
      written.set(pair, day);
      const write: Promise<void> = recordUse(db, installationId, version, day)
        .catch(() => {
          if (written.get(pair) === day) written.delete(pair);
        })
        .finally(() => pending.delete(write));
      pending.add(write);
    },
    async written() {
      await Promise.all([...pending]);
    },
  };
}

async function recordUse(db: Db, installationId: string, version: string, day: string): Promise<void> {
  const later = 'api_version_usage.last_seen_day < ?';
  await db('api_version_usage')
    .insert({ installation_id: installationId, api_version: version, first_seen_day: day, last_seen_day: day, days_seen: 1 })
    .onConflict(['installation_id', 'api_version'])
    .merge({
      days_seen: db.raw(`case when ${later} then api_version_usage.days_seen + 1 else api_version_usage.days_seen end`, [day]),
      last_seen_day: db.raw(`case when ${later} then ? else api_version_usage.last_seen_day end`, [day, day]),
    });
}

/** An installation's calls under one version, with where the version stands now. */
export interface VersionUse {
  readonly version: string;
  readonly state: VersionState | 'unknown';
  readonly installationId: string;
  readonly installationStatus: string;
  readonly appId: string;
  readonly appName: string;
  readonly storeId: string;
  readonly firstSeenDay: string;
  readonly lastSeenDay: string;
  readonly daysSeen: number;
}

interface UsageRow {
  api_version: string;
  installation_id: string;
  installation_status: string;
  app_id: string;
  app_name: string;
  store_id: string;
  first_seen_day: string;
  last_seen_day: string;
  days_seen: number | string;
}

/**
 * Who called under which version, oldest version first, the most recently seen first within it.
 * `deprecatedOnly` keeps the versions that are deprecated, retired or no longer in the registry:
 * the installations to contact before a sunset.
 */
export async function versionUsage({ db, clock }: Deps, registry: ApiVersionRegistry, { deprecatedOnly = false } = {}): Promise<VersionUse[]> {
  const rows = await db<UsageRow>('api_version_usage as u')
    .join('installations as i', 'i.id', 'u.installation_id')
    .join('apps as a', 'a.id', 'i.app_id')
    .orderBy([{ column: 'u.api_version' }, { column: 'u.last_seen_day', order: 'desc' }, { column: 'u.installation_id' }])
    .select(
      'u.api_version',
      'u.installation_id',
      'i.status as installation_status',
      'i.app_id',
      'a.name as app_name',
      'i.store_id',
      'u.first_seen_day',
      'u.last_seen_day',
      'u.days_seen',
    );
  const now = clock.now();
  return rows
    .map((row): VersionUse => {
      const entry = registry.find(row.api_version);
      return {
        version: row.api_version,
        state: entry ? registry.stateOf(entry, now) : 'unknown',
        installationId: row.installation_id,
        installationStatus: row.installation_status,
        appId: row.app_id,
        appName: row.app_name,
        storeId: row.store_id,
        firstSeenDay: row.first_seen_day,
        lastSeenDay: row.last_seen_day,
        daysSeen: Number(row.days_seen),
      };
    })
    .filter((use) => !deprecatedOnly || use.state === 'deprecated' || use.state === 'retired' || use.state === 'unknown');
}
