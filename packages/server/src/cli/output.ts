import { toIso } from '../core/clock';
import type { App, AppVersion, ClientSecretInfo } from '../platform/apps';
import type { Installation } from '../platform/installations';
import type { Store, StoreOwner } from '../platform/stores';
import type { SimulationRequest, SimulationSummary } from '../seeds/simulation/run';

/** What `--json` prints: typed so that `undefined`, functions or raw numbers for instants cannot slip in. */
export type Json = string | number | boolean | null | readonly Json[] | { readonly [key: string]: Json };

/** A command's result in both forms; runCli prints one of them. */
export interface Report {
  readonly json: Json;
  readonly lines: readonly string[];
}

const isoOrNull = (milliseconds: number | null): string | null => (milliseconds === null ? null : toIso(milliseconds));

/** The state of a client secret at `now`: the current one, a rotated one still in its 24 hours, or dead. */
export type SecretStatus = 'current' | 'previous' | 'expired' | 'revoked';

export function secretStatus(secret: ClientSecretInfo, now: number): SecretStatus {
  if (secret.revokedAt !== null) return 'revoked';
  if (secret.validUntil === null) return 'current';
  return now < secret.validUntil ? 'previous' : 'expired';
}

// The JSON views: snake_case keys, ISO instants, and only the fields an operator may see (no hashes).

export const storeJson = (store: Store): Json => ({
  id: store.id,
  name: store.name,
  domain: store.domain,
  owner_id: store.owner_id,
  currency: store.currency,
  timezone: store.timezone,
  locale: store.locale,
  routing_state: store.routing_state,
  route_epoch: store.route_epoch,
  created_at: toIso(store.created_at),
});

export const ownerJson = (owner: StoreOwner): Json => ({
  id: owner.id,
  email: owner.email,
  name: owner.name,
  created_at: toIso(owner.created_at),
});

export const appJson = (app: App): Json => ({
  id: app.id,
  name: app.name,
  type: app.store_id === null ? 'public' : 'private',
  store_id: app.store_id,
  api_version: app.api_version,
  auth_epoch: app.auth_epoch,
  created_at: toIso(app.created_at),
});

export const versionJson = (version: AppVersion): Json => ({
  id: version.id,
  app_id: version.appId,
  number: version.number,
  redirect_urls: version.redirectUrls,
  launch_url: version.launchUrl,
  required_scopes: version.requiredScopes,
  optional_scopes: version.optionalScopes,
  created_at: toIso(version.createdAt),
});

export const secretJson = (secret: ClientSecretInfo, now: number): Json => ({
  id: secret.id,
  hint: secret.hint,
  status: secretStatus(secret, now),
  created_at: toIso(secret.createdAt),
  rotated_at: isoOrNull(secret.rotatedAt),
  revoked_at: isoOrNull(secret.revokedAt),
  valid_until: isoOrNull(secret.validUntil),
});

export const installationJson = (installation: Installation): Json => ({
  id: installation.id,
  store_id: installation.storeId,
  app_id: installation.appId,
  version_id: installation.versionId,
  generation: installation.generation,
  scopes: installation.scopes,
  grant_revision: installation.grantRevision,
  status: installation.status,
  installed_at: toIso(installation.installedAt),
  uninstalled_at: isoOrNull(installation.uninstalledAt),
});

// The human views: aligned `key  value` lines for one thing, tables for lists.

export const storeFacts = (store: Store): Array<[string, string]> => [
  ['store_id', store.id],
  ['name', store.name],
  ['domain', store.domain],
  ['routing_state', store.routing_state],
  ['route_epoch', String(store.route_epoch)],
];

/** `key  value` lines with the values in one column. */
export function keyValues(pairs: ReadonlyArray<readonly [string, string]>): string[] {
  const width = Math.max(...pairs.map(([key]) => key.length)) + 2;
  return pairs.map(([key, value]) => `${key.padEnd(width)}${value}`.trimEnd());
}

export const storeReport = (store: Store): Report => ({ json: storeJson(store), lines: keyValues(storeFacts(store)) });

/** A table with a header row; `(none)` when there are no rows, so an empty list is visibly empty. */
export function table(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string[] {
  if (rows.length === 0) return ['(none)'];
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)];
}

/** Beside a secret printed once: only its hash is kept. */
export const SHOWN_ONCE = '(shown once: store it now)';

/** A list cell: `-` rather than nothing, so columns stay readable. */
export const listCell = (values: readonly string[]): string => (values.length === 0 ? '-' : values.join(' '));

export const instantCell = (milliseconds: number | null): string => (milliseconds === null ? '-' : toIso(milliseconds));

type SimulationRun = Pick<SimulationRequest, 'storeId' | 'days' | 'orders' | 'seed'>;

export const simulationJson = (run: SimulationRun, summary: SimulationSummary): Json => ({
  store_id: run.storeId,
  seed: run.seed,
  days: run.days,
  from: toIso(summary.from),
  to: toIso(summary.to),
  customers: summary.customers,
  orders: summary.orders,
  paid: summary.paid,
  refunded: summary.refunded,
  cancelled: summary.cancelled,
  failed_payments: summary.failedPayments,
  carts: summary.carts,
  recovered: summary.recovered,
  reviews: summary.reviews,
  coupons_used: summary.couponsUsed,
  restocks: summary.restocks,
  events: summary.events,
});

export const simulationFacts = (run: SimulationRun, summary: SimulationSummary): Array<[string, string]> => [
  ['store_id', run.storeId],
  ['seed', String(run.seed)],
  ['period', `${toIso(summary.from)} to ${toIso(summary.to)} (${run.days} days)`],
  ['customers', String(summary.customers)],
  ['orders', String(summary.orders)],
  ['paid', String(summary.paid)],
  ['refunded', String(summary.refunded)],
  ['cancelled', String(summary.cancelled)],
  ['failed_payments', String(summary.failedPayments)],
  ['carts', `${summary.carts} (${summary.recovered} recovered)`],
  ['reviews', String(summary.reviews)],
  ['coupons_used', String(summary.couponsUsed)],
  ['restocks', String(summary.restocks)],
  ['events', `${summary.events} written to the outbox`],
];

/** A progress bar of `width` cells with the share and the counts: `[#####-----]  50 %  500/1000`. */
export function progressBar(done: number, total: number, width = 30): string {
  const share = total > 0 ? Math.min(1, done / total) : 1;
  const filled = Math.round(share * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(Math.floor(share * 100)).padStart(3)} %  ${done}/${total}`;
}
