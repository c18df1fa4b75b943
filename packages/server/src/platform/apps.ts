import { randomUUID } from 'node:crypto';
import type { ApiVersionRegistry } from '../core/api-versions';
import { hashSecret, issueSecret, safeEqual } from '../credentials/secrets';
import { fromJsonList, toJsonList } from '../db/json-lists';
import type { Db } from '../db/transactions';
import { inTransaction } from '../db/transactions';
import { publishedApiVersions } from '../services/api-versions';
import type { Deps } from '../services/container';
import { isScope, missingDependency, sortScopes } from './scopes';
import { findStore, PlatformError } from './stores';

export interface App {
  id: string;
  name: string;
  auth_epoch: number;
  store_id: string | null;
  /** The date version the app's requests get when they name none; null: unpinned, the current one. */
  api_version: string | null;
  created_at: number;
}

interface AppVersionRow {
  id: string;
  app_id: string;
  number: number;
  redirect_urls: string;
  launch_url: string;
  required_scopes: string;
  optional_scopes: string;
  created_at: number;
}

export interface AppVersion {
  id: string;
  appId: string;
  number: number;
  redirectUrls: string[];
  launchUrl: string;
  requiredScopes: string[];
  optionalScopes: string[];
  createdAt: number;
}

export interface ClientSecretInfo {
  id: string;
  hint: string;
  createdAt: number;
  rotatedAt: number | null;
  revokedAt: number | null;
  validUntil: number | null;
}

export interface NewVersion {
  redirectUrls: string[];
  launchUrl: string;
  requiredScopes: string[];
  optionalScopes: string[];
}

/** The previous client secret stays valid this long after a rotation (the interface: 24 hours). */
export const PREVIOUS_SECRET_MS = 24 * 60 * 60 * 1000;

const toVersion = (row: AppVersionRow): AppVersion => ({
  id: row.id,
  appId: row.app_id,
  number: row.number,
  redirectUrls: fromJsonList(row.redirect_urls),
  launchUrl: row.launch_url,
  requiredScopes: fromJsonList(row.required_scopes),
  optionalScopes: fromJsonList(row.optional_scopes),
  createdAt: row.created_at,
});

export const findApp = (db: Db, id: string): Promise<App | undefined> => db<App>('apps').where({ id }).first();

export const listApps = (db: Db): Promise<App[]> => db<App>('apps').orderBy('created_at').orderBy('id');

export async function findVersion(db: Db, id: string): Promise<AppVersion | undefined> {
  const row = await db<AppVersionRow>('app_versions').where({ id }).first();
  return row && toVersion(row);
}

/** The version an authorization without `version_id` installs: the newest. */
export async function latestVersion(db: Db, appId: string): Promise<AppVersion | undefined> {
  const row = await db<AppVersionRow>('app_versions').where({ app_id: appId }).orderBy('number', 'desc').first();
  return row && toVersion(row);
}

export async function listVersions(db: Db, appId: string): Promise<AppVersion[]> {
  return (await db<AppVersionRow>('app_versions').where({ app_id: appId }).orderBy('number')).map(toVersion);
}

/** Whether an app may be installed in a store: public apps everywhere, private apps in their store only. */
export const isAvailableTo = (app: App, storeId: string): boolean => app.store_id === null || app.store_id === storeId;

async function requireApp(db: Db, appId: string): Promise<App> {
  const app = await findApp(db, appId);
  if (!app) throw new PlatformError(`No app ${appId}`);
  return app;
}

async function insertSecret(db: Db, appId: string, now: number): Promise<string> {
  const secret = issueSecret('clientSecret');
  await db('client_secrets').insert({
    id: randomUUID(),
    app_id: appId,
    secret_hash: hashSecret(secret),
    hint: secret.slice(-4),
    created_at: now,
  });
  return secret;
}

/** What the date-version choices need: the registry (the published one unless the services carry another). */
type VersionDeps = Deps & { readonly apiVersions?: ApiVersionRegistry };

/** A version an app may be pinned to: one of the registry's, not retired; null unpins. */
function pinnable({ clock, apiVersions = publishedApiVersions }: VersionDeps, version: string | null): string | null {
  if (version === null) return null;
  const entry = apiVersions.find(version);
  const supported = apiVersions
    .supportedAt(clock.now())
    .map((candidate) => candidate.version)
    .join(', ');
  if (!entry) throw new PlatformError(`"${version}" is not a date version of the interface (supported: ${supported})`);
  if (apiVersions.stateOf(entry, clock.now()) === 'retired') throw new PlatformError(`${version} was retired on ${entry.sunset} (supported: ${supported})`);
  return version;
}

/**
 * Registers an app (public, or private to one store); the client secret is shown once and stored
 * hashed. The app is pinned to `apiVersion`, by default the current version: what it is written
 * against keeps answering the same way when a newer version comes (Stripe pins an account the same way).
 */
export async function registerApp(
  deps: VersionDeps,
  input: { name: string; storeId?: string; apiVersion?: string | null },
): Promise<{ app: App; clientSecret: string }> {
  const { db, clock } = deps;
  const name = input.name.trim();
  if (name.length === 0 || name.length > 200) throw new PlatformError('The app name must be 1 to 200 characters');
  if (input.storeId && !(await findStore(db, input.storeId))) throw new PlatformError(`No store ${input.storeId}`);
  const apiVersion = pinnable(deps, input.apiVersion === undefined ? (deps.apiVersions ?? publishedApiVersions).current.version : input.apiVersion);
  return inTransaction(db, async (trx) => {
    const now = clock.now();
    const id = randomUUID();
    await trx('apps').insert({ id, name, store_id: input.storeId ?? null, api_version: apiVersion, created_at: now });
    const clientSecret = await insertSecret(trx, id, now);
    return { app: (await findApp(trx, id)) as App, clientSecret };
  });
}

/** Pins an app to a date version (null: unpinned, the current version applies); the app's next request gets it. */
export async function pinApiVersion(deps: VersionDeps, appId: string, version: string | null): Promise<App> {
  await requireApp(deps.db, appId);
  const pinned = pinnable(deps, version);
  await deps.db('apps').where({ id: appId }).update({ api_version: pinned });
  return (await findApp(deps.db, appId)) as App;
}

function checkUrl(value: string, what: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new PlatformError(`${what} "${value}" is not an absolute URL`);
  }
  const local = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]';
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && local)) throw new PlatformError(`${what} "${value}" must use https (http only for localhost)`);
  if (url.hash) throw new PlatformError(`${what} "${value}" must not have a fragment (RFC 6749 §3.1.2)`);
  if (value.length > 2048) throw new PlatformError(`${what} is longer than 2048 characters`);
  return value;
}

function checkScopes(required: string[], optional: string[]): void {
  for (const scope of [...required, ...optional]) if (!isScope(scope)) throw new PlatformError(`Unknown scope "${scope}"`);
  const overlap = required.filter((scope) => optional.includes(scope));
  if (overlap.length > 0) throw new PlatformError(`Scopes both required and optional: ${overlap.join(' ')}`);
  // Authorization must be possible: required scopes depend only on required ones, optional on either.
  const requiredGap = missingDependency(required);
  if (requiredGap) throw new PlatformError(`Required scope ${requiredGap.scope} needs ${requiredGap.needs} to be required too`);
  const anyGap = missingDependency([...required, ...optional]);
  if (anyGap) throw new PlatformError(`Scope ${anyGap.scope} needs ${anyGap.needs} in the version's scopes`);
}

/** Adds a version: its redirect URLs (exact match at authorize), launch URL and scopes. */
export async function addVersion({ db, clock }: Deps, appId: string, input: NewVersion): Promise<AppVersion> {
  await requireApp(db, appId);
  if (input.redirectUrls.length === 0 || input.redirectUrls.length > 10) throw new PlatformError('A version needs 1 to 10 redirect URLs');
  const redirectUrls = input.redirectUrls.map((url) => checkUrl(url, 'Redirect URL'));
  const launchUrl = checkUrl(input.launchUrl, 'Launch URL');
  checkScopes(input.requiredScopes, input.optionalScopes);
  return inTransaction(db, async (trx) => {
    const latest = await trx('app_versions').where({ app_id: appId }).max({ number: 'number' }).first();
    const id = randomUUID();
    await trx('app_versions').insert({
      id,
      app_id: appId,
      number: Number(latest?.number ?? 0) + 1,
      redirect_urls: toJsonList(redirectUrls),
      launch_url: launchUrl,
      required_scopes: toJsonList(sortScopes(input.requiredScopes)),
      optional_scopes: toJsonList(sortScopes(input.optionalScopes)),
      created_at: clock.now(),
    });
    return (await findVersion(trx, id)) as AppVersion;
  });
}

interface ClientSecretRow {
  id: string;
  app_id: string;
  secret_hash: string;
  hint: string;
  created_at: number;
  rotated_at: number | null;
  revoked_at: number | null;
}

const validUntil = (row: ClientSecretRow): number | null => (row.rotated_at === null ? null : row.rotated_at + PREVIOUS_SECRET_MS);

const isSecretValid = (row: ClientSecretRow, now: number): boolean =>
  row.revoked_at === null && (row.rotated_at === null || now < row.rotated_at + PREVIOUS_SECRET_MS);

export async function listClientSecrets(db: Db, appId: string): Promise<ClientSecretInfo[]> {
  const rows = await db<ClientSecretRow>('client_secrets').where({ app_id: appId }).orderBy('created_at').orderBy('id');
  return rows.map((row) => ({
    id: row.id,
    hint: row.hint,
    createdAt: row.created_at,
    rotatedAt: row.rotated_at,
    revokedAt: row.revoked_at,
    validUntil: validUntil(row),
  }));
}

/**
 * Issues a new client secret. The current one keeps working for 24 hours (so the app can deploy the
 * new one), older ones keep their earlier end; `auth_epoch` rises.
 */
export async function rotateClientSecret({ db, clock }: Deps, appId: string): Promise<{ clientSecret: string; previousValidUntil: number }> {
  await requireApp(db, appId);
  return inTransaction(db, async (trx) => {
    const now = clock.now();
    await trx('client_secrets').where({ app_id: appId, rotated_at: null, revoked_at: null }).update({ rotated_at: now });
    await trx('apps')
      .where({ id: appId })
      .update({ auth_epoch: trx.raw('auth_epoch + 1') });
    return { clientSecret: await insertSecret(trx, appId, now), previousValidUntil: now + PREVIOUS_SECRET_MS };
  });
}

/** Revokes one client secret (by id or by its last four characters) at once; `auth_epoch` rises. */
export async function revokeClientSecret({ db, clock }: Deps, appId: string, idOrHint: string): Promise<ClientSecretInfo> {
  await requireApp(db, appId);
  const matches = (await db<ClientSecretRow>('client_secrets').where({ app_id: appId, revoked_at: null })).filter(
    (row) => row.id === idOrHint || row.hint === idOrHint,
  );
  if (matches.length === 0) throw new PlatformError(`No active client secret "${idOrHint}" for app ${appId}`);
  if (matches.length > 1) throw new PlatformError(`"${idOrHint}" matches several secrets; give the secret id`);
  const [row] = matches as [ClientSecretRow];
  await inTransaction(db, async (trx) => {
    await trx('client_secrets').where({ id: row.id }).update({ revoked_at: clock.now() });
    await trx('apps')
      .where({ id: appId })
      .update({ auth_epoch: trx.raw('auth_epoch + 1') });
  });
  return (await listClientSecrets(db, appId)).find((secret) => secret.id === row.id) as ClientSecretInfo;
}

/** The app whose valid client secret this is, or undefined (unknown app, wrong, revoked or expired secret). */
export async function authenticateClient({ db, clock }: Deps, clientId: string, secretHash: string): Promise<App | undefined> {
  const app = await findApp(db, clientId);
  if (!app) return undefined;
  const rows = await db<ClientSecretRow>('client_secrets').where({ app_id: clientId });
  const now = clock.now();
  // Compare every row in constant time, so timing says nothing about which secret was close.
  let matched = false;
  for (const row of rows) if (safeEqual(row.secret_hash, secretHash) && isSecretValid(row, now)) matched = true;
  return matched ? app : undefined;
}
