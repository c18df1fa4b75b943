import type { Knex } from 'knex';
import { engineOf, type QuotaCounters } from './engine';

/**
 * The API quotas' counters: per key, the requests spent in its window and when the window ends. A
 * window opens with a key's first request and lasts `windowMs`; the next request after it ends
 * opens the next (docs/decisions/0058-api-quotas-and-one-sqlite-server.md). The service owns the
 * counting outright: on PostgreSQL a statement of its own over `api_quota_counters`, shared by every
 * instance and worker of a fleet; on SQLite, whose one server process serves every request
 * (db/sqlite/one-server.ts), a map in that process's memory.
 */

export type { Counted, FoldedSpendSql, QuotaCounters } from './engine';

/** The table of `013_api_quota_counters`: one row per key (the key carries its quota's policy). */
export const API_QUOTAS_TABLE = 'api_quota_counters';

/** The quota counters of the database `db` is on. */
export const quotaCountersOf = (db: Knex): QuotaCounters => engineOf(db).quotaCounters;
