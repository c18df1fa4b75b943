import { Command } from 'commander';
import { installDirectly } from '../../oauth/direct-install';
import { type AppVersion, findVersion, latestVersion } from '../../platform/apps';
import { findInstallationOf, type Installation, listInstallations, uninstall } from '../../platform/installations';
import { PlatformError } from '../../platform/stores';
import type { Actions, Context, NoOptions, Run } from '../context';
import { installationJson, instantCell, keyValues, listCell, table } from '../output';
import { scopeList, uuid } from '../values';

const installationList: Run<{ store?: string; app?: string }> = async (context, { options }) => {
  const installations = await listInstallations(context.deps.db, {
    ...(options.store ? { storeId: options.store } : {}),
    ...(options.app ? { appId: options.app } : {}),
  });
  return {
    json: installations.map(installationJson),
    lines: table(
      ['ID', 'STORE', 'APP', 'STATUS', 'GEN', 'INSTALLED', 'UNINSTALLED', 'SCOPES'],
      installations.map((installation) => [
        installation.id,
        installation.storeId,
        installation.appId,
        installation.status,
        String(installation.generation),
        instantCell(installation.installedAt),
        instantCell(installation.uninstalledAt),
        listCell(installation.scopes),
      ]),
    ),
  };
};

const installationUninstall: Run<NoOptions, [string]> = async (context, { args: [installationId] }) => {
  const installation = await uninstall(context.deps, installationId);
  return {
    json: installationJson(installation),
    lines: keyValues([
      ['installation_id', installation.id],
      ['status', installation.status],
      ['uninstalled_at', instantCell(installation.uninstalledAt)],
      ['note', 'every token of the installation is revoked; app.uninstalled is queued for the app'],
    ]),
  };
};

/** The scopes an installation holds that a new consent would take away. */
export const removedScopes = (held: readonly string[], asked: readonly string[]): string[] => held.filter((scope) => !asked.includes(scope));

/** What a consent grants: a version of the app and scopes it offers. */
interface Consent {
  readonly version: AppVersion;
  readonly scopes: string[];
}

/**
 * Without `--scopes`, an app already installed is renewed: the same version and scopes, so the grant
 * revision stays and tokens issued before keep every scope. Narrowing by accident (the version's
 * required scopes only) would cut the scopes of the installation's live tokens as well.
 */
async function consentFor(context: Context, appId: string, installed: Installation | undefined, scopes: string[] | undefined): Promise<Consent> {
  const version = installed && !scopes ? await findVersion(context.deps.db, installed.versionId) : await latestVersion(context.deps.db, appId);
  if (!version) throw new PlatformError(`App ${appId} has no version to install`);
  return { version, scopes: scopes ?? installed?.scopes ?? version.requiredScopes };
}

/** Taking scopes from an installation cuts its live tokens at once, so it is said, and done only when asked for by name. */
function checkNarrowing(context: Context, installed: Installation | undefined, consent: Consent, narrow: boolean): void {
  const removed = removedScopes(installed?.scopes ?? [], consent.scopes);
  if (removed.length === 0) return;
  const scopes = removed.join(', ');
  if (!narrow)
    throw new PlatformError(`--scopes removes ${scopes} from the installation's grant (its live tokens lose them at once): add --narrow to narrow it`);
  context.err(`narrowing the grant: removes ${scopes}`);
}

const installationCreate: Run<{ scopes?: string[]; narrow?: boolean }, [string, string]> = async (context, { options, args: [appId, storeId] }) => {
  const found = await findInstallationOf(context.deps.db, storeId, appId);
  const installed = found?.status === 'installed' ? found : undefined;
  const consent = await consentFor(context, appId, installed, options.scopes);
  checkNarrowing(context, installed, consent, options.narrow === true);
  const tokens = await installDirectly(context.deps, {
    storeId,
    appId,
    scopes: consent.scopes,
    redirectUri: consent.version.redirectUrls[0] as string,
    versionId: consent.version.id,
  });
  return {
    json: { ...tokens },
    lines: keyValues([
      ['installation_id', tokens.installation_id],
      ['generation', String(tokens.installation_generation)],
      ['scope', tokens.scope],
      ['access_token', `${tokens.access_token}  (valid ${tokens.expires_in} s)`],
      ['refresh_token', tokens.refresh_token],
    ]),
  };
};

export function installationCommands(actions: Actions): Command {
  const installation = new Command('installation');
  installation
    .command('list')
    .description('List installations, optionally of one store or one app.')
    .option('--store <storeId>', '', uuid)
    .option('--app <appId>', '', uuid)
    .action(actions.reads(installationList));
  installation
    .command('create')
    .description(
      "Install an app in a store as its owner's consent would and print a token pair: a first install grants the version's required scopes, an installed app keeps its version and scopes (a new pair, tokens issued before unchanged); --scopes that leave out scopes the installation holds need --narrow.",
    )
    .argument('<appId>', '', uuid)
    .argument('<storeId>', '', uuid)
    .option('--scopes "<scope> ..."', '', scopeList)
    .option('--narrow')
    .action(actions.writes(installationCreate));
  installation
    .command('uninstall')
    .description('Uninstall: revokes every token and queues app.uninstalled for the app.')
    .argument('<installationId>', '', uuid)
    .action(actions.writes(installationUninstall));
  return installation;
}
