import { randomUUID } from 'node:crypto';
import { toIso } from '../core/clock';
import { fromJsonList, toJsonList } from '../db/json-lists';
import type { Db } from '../db/transactions';
import { inTransaction } from '../db/transactions';
import type { Deps } from '../services/container';
import { recordEvent } from '../services/outbox';
import { PlatformError } from './stores';
import { revokeTokens } from './tokens';

interface InstallationRow {
  id: string;
  store_id: string;
  app_id: string;
  version_id: string;
  generation: number;
  granted_scopes: string;
  grant_revision: number;
  status: 'installed' | 'uninstalled';
  installed_at: number;
  uninstalled_at: number | null;
}

export interface Installation {
  id: string;
  storeId: string;
  appId: string;
  versionId: string;
  generation: number;
  scopes: string[];
  grantRevision: number;
  status: 'installed' | 'uninstalled';
  installedAt: number;
  uninstalledAt: number | null;
}

const toInstallation = (row: InstallationRow): Installation => ({
  id: row.id,
  storeId: row.store_id,
  appId: row.app_id,
  versionId: row.version_id,
  generation: row.generation,
  scopes: fromJsonList(row.granted_scopes),
  grantRevision: row.grant_revision,
  status: row.status,
  installedAt: row.installed_at,
  uninstalledAt: row.uninstalled_at,
});

export async function findInstallation(db: Db, id: string): Promise<Installation | undefined> {
  const row = await db<InstallationRow>('installations').where({ id }).first();
  return row && toInstallation(row);
}

export async function findInstallationOf(db: Db, storeId: string, appId: string): Promise<Installation | undefined> {
  const row = await db<InstallationRow>('installations').where({ store_id: storeId, app_id: appId }).first();
  return row && toInstallation(row);
}

export async function listInstallations(db: Db, filter: { storeId?: string; appId?: string; installedOnly?: boolean } = {}): Promise<Installation[]> {
  const query = db<InstallationRow>('installations').orderBy('installed_at').orderBy('id');
  if (filter.storeId) query.where({ store_id: filter.storeId });
  if (filter.appId) query.where({ app_id: filter.appId });
  if (filter.installedOnly) query.where({ status: 'installed' });
  return (await query).map(toInstallation);
}

const sameScopes = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((scope) => b.includes(scope));

/**
 * The store owner approved: install the app, reinstall it (a new generation, so tokens of the
 * earlier one stop working), or update the grant of an installed app (`grant_revision` rises when
 * the scopes change, so refreshes of the older grant answer RECONSENT_REQUIRED).
 */
export async function recordConsent(
  trx: Db,
  now: number,
  consent: { storeId: string; appId: string; versionId: string; scopes: string[] },
): Promise<Installation> {
  const existing = await findInstallationOf(trx, consent.storeId, consent.appId);
  if (!existing) {
    const id = randomUUID();
    await trx('installations').insert({
      id,
      store_id: consent.storeId,
      app_id: consent.appId,
      version_id: consent.versionId,
      generation: 1,
      granted_scopes: toJsonList(consent.scopes),
      grant_revision: 1,
      status: 'installed',
      installed_at: now,
    });
    return (await findInstallation(trx, id)) as Installation;
  }
  const scopesChanged = !sameScopes(existing.scopes, consent.scopes);
  const reinstall = existing.status === 'uninstalled';
  await trx('installations')
    .where({ id: existing.id })
    .update({
      version_id: consent.versionId,
      granted_scopes: toJsonList(consent.scopes),
      generation: reinstall ? existing.generation + 1 : existing.generation,
      grant_revision: scopesChanged ? existing.grantRevision + 1 : existing.grantRevision,
      status: 'installed',
      ...(reinstall ? { installed_at: now, uninstalled_at: null } : {}),
    });
  return (await findInstallation(trx, existing.id)) as Installation;
}

/** Revokes every token and grant of an installation, its unexchanged codes and unverified launches. */
async function revokeInstallationTokens(trx: Db, installationId: string, now: number, reason: string): Promise<number> {
  const revoked = await revokeTokens(trx, { installationId }, now, reason);
  await trx('authorization_codes').where({ installation_id: installationId, consumed_at: null }).update({ expires_at: now });
  await trx('launch_tokens').where({ installation_id: installationId, used_at: null }).update({ expires_at: now });
  return revoked;
}

/**
 * Uninstalls: every token is revoked at once, and `app.uninstalled` goes to the outbox in the same
 * transaction (it is delivered even though the app's tokens no longer work).
 */
export async function uninstall({ db, clock }: Deps, installationId: string): Promise<Installation> {
  return inTransaction(db, async (trx) => {
    const installation = await findInstallation(trx, installationId);
    if (!installation) throw new PlatformError(`No installation ${installationId}`);
    if (installation.status !== 'installed') throw new PlatformError(`Installation ${installationId} is not installed`);
    const now = clock.now();
    await trx('installations').where({ id: installationId }).update({ status: 'uninstalled', uninstalled_at: now });
    await revokeInstallationTokens(trx, installationId, now, 'uninstalled');
    await recordEvent(trx, {
      type: 'app.uninstalled',
      storeId: installation.storeId,
      installationId,
      occurredAt: now,
      data: {
        app_id: installation.appId,
        installation_id: installationId,
        installation_generation: installation.generation,
        uninstalled_at: toIso(now),
      },
    });
    return (await findInstallation(trx, installationId)) as Installation;
  });
}
