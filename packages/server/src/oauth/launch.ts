import { randomUUID } from 'node:crypto';
import { toIso } from '../core/clock';
import { ApiError } from '../core/errors';
import { checkSecret, hashSecret, issueSecret } from '../credentials/secrets';
import { inTransaction } from '../db/transactions';
import { findVersion, latestVersion } from '../platform/apps';
import { findInstallationOf } from '../platform/installations';
import type { Deps } from '../services/container';
import { type ExpiryRule, expiresAtRule, LATE_USE_EXPLAINED_MS } from '../services/housekeeping';

/** A launch token lives 5 minutes and is spent by its verification. */
export const LAUNCH_MS = 5 * 60 * 1000;

/** An expired launch token is refused either way; kept a while longer so that a late verification is told why. */
export const launchTokensExpiry: ExpiryRule = expiresAtRule('launch_tokens', 'id', LATE_USE_EXPLAINED_MS);

interface LaunchTokenRow {
  id: string;
  token_hash: string;
  store_id: string;
  app_id: string;
  installation_id: string | null;
  expires_at: number;
  used_at: number | null;
  created_at: number;
}

/**
 * The URL the dashboard opens when the merchant opens (or installs) an app: the version's launch URL
 * with `svc_store_id`, a fresh `svc_launch_token` and `svc_timestamp` (Unix seconds of issue).
 */
export async function issueLaunch({ db, clock }: Deps, storeId: string, appId: string): Promise<string> {
  const installation = await findInstallationOf(db, storeId, appId);
  const installed = installation?.status === 'installed' ? installation : undefined;
  const version = installed ? await findVersion(db, installed.versionId) : await latestVersion(db, appId);
  if (!version) throw new Error(`App ${appId} has no version to launch`);
  const token = issueSecret('launchToken');
  const now = clock.now();
  await db('launch_tokens').insert({
    id: randomUUID(),
    token_hash: hashSecret(token),
    store_id: storeId,
    app_id: appId,
    installation_id: installed?.id ?? null,
    expires_at: now + LAUNCH_MS,
    created_at: now,
  });
  const url = new URL(version.launchUrl);
  url.searchParams.set('svc_store_id', storeId);
  url.searchParams.set('svc_launch_token', token);
  url.searchParams.set('svc_timestamp', String(Math.floor(now / 1000)));
  return url.toString();
}

const invalidLaunch = (message: string) => new ApiError('INVALID_LAUNCH', message);

function launchParameters(launchUrl: string): { storeId: string; token: string; timestamp: string } {
  let url: URL;
  try {
    url = new URL(launchUrl);
  } catch {
    throw new ApiError('INVALID_REQUEST', 'launch_url is not an absolute URL.');
  }
  const read = (name: string) => {
    const values = url.searchParams.getAll(name);
    if (values.length !== 1) throw invalidLaunch(`The launch URL must carry ${name} exactly once.`);
    return values[0] as string;
  };
  return { storeId: read('svc_store_id'), token: read('svc_launch_token'), timestamp: read('svc_timestamp') };
}

export interface LaunchVerification {
  store_id: string;
  app_id: string;
  installed: boolean;
  installation_id: string | null;
  installation_generation: number | null;
  scopes: string[];
  launch_expires_at: string;
  verified_at: string;
}

/** Verifies and spends a launch token for the app it was issued to. */
export async function verifyLaunch({ db, clock }: Deps, appId: string, launchUrl: string): Promise<LaunchVerification> {
  const parameters = launchParameters(launchUrl);
  const presented = checkSecret('launchToken', parameters.token);
  if (!presented.ok) throw invalidLaunch('svc_launch_token is not a launch token.');
  return inTransaction(db, async (trx) => {
    const launch = await trx<LaunchTokenRow>('launch_tokens').where({ token_hash: presented.hash }).first();
    const now = clock.now();
    if (!launch || launch.app_id !== appId) throw invalidLaunch('The launch token is unknown.');
    if (launch.store_id !== parameters.storeId || String(Math.floor(launch.created_at / 1000)) !== parameters.timestamp) {
      throw invalidLaunch('svc_store_id or svc_timestamp does not match the launch token.');
    }
    if (launch.used_at !== null) throw invalidLaunch('The launch token was used already.');
    if (now >= launch.expires_at) throw invalidLaunch('The launch token expired (launch tokens live 5 minutes).');
    const spent = await trx('launch_tokens').where({ id: launch.id, used_at: null }).update({ used_at: now });
    if (spent !== 1) throw invalidLaunch('The launch token was used already.');
    const installation = await findInstallationOf(trx, launch.store_id, appId);
    const installed = installation?.status === 'installed' ? installation : undefined;
    return {
      store_id: launch.store_id,
      app_id: appId,
      installed: installed !== undefined,
      installation_id: installed?.id ?? null,
      installation_generation: installed?.generation ?? null,
      scopes: installed?.scopes ?? [],
      launch_expires_at: toIso(launch.expires_at),
      verified_at: toIso(now),
    };
  });
}
