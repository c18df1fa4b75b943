import { Command, Option } from 'commander';
import { addVersion, listVersions } from '../../platform/apps';
import type { Actions, NoOptions, Run } from '../context';
import { instantCell, keyValues, listCell, table, versionJson } from '../output';
import { repeated, scopeList, uuid } from '../values';
import { requireApp } from './app-lookup';

interface AddOptions {
  redirectUrl: readonly string[];
  launchUrl: string;
  requiredScopes: string[];
  optionalScopes?: string[];
}

const versionAdd: Run<AddOptions, [string]> = async (context, { options, args: [appId] }) => {
  const app = await requireApp(context.deps, appId);
  const version = await addVersion(context.deps, app.id, {
    redirectUrls: [...options.redirectUrl],
    launchUrl: options.launchUrl,
    requiredScopes: options.requiredScopes,
    optionalScopes: options.optionalScopes ?? [],
  });
  return {
    json: versionJson(version),
    lines: keyValues([
      ['version_id', version.id],
      ['number', String(version.number)],
      ['redirect_urls', listCell(version.redirectUrls)],
      ['launch_url', version.launchUrl],
      ['required_scopes', listCell(version.requiredScopes)],
      ['optional_scopes', listCell(version.optionalScopes)],
    ]),
  };
};

/** `svc app versions <appId>`: a word of the `app` group, not of `version`, so app.ts registers it. */
export const versionList: Run<NoOptions, [string]> = async (context, { args: [appId] }) => {
  const app = await requireApp(context.deps, appId);
  const versions = await listVersions(context.deps.db, app.id);
  return {
    json: versions.map(versionJson),
    lines: table(
      ['NUMBER', 'ID', 'CREATED', 'LAUNCH_URL', 'REDIRECT_URLS', 'REQUIRED_SCOPES', 'OPTIONAL_SCOPES'],
      versions.map((version) => [
        String(version.number),
        version.id,
        instantCell(version.createdAt),
        version.launchUrl,
        listCell(version.redirectUrls),
        listCell(version.requiredScopes),
        listCell(version.optionalScopes),
      ]),
    ),
  };
};

export function versionCommands(actions: Actions): Command {
  const version = new Command('version');
  version
    .command('add')
    .description('Add a version to an app: its redirect URLs, launch URL and scopes (space-separated).')
    .argument('<appId>', '', uuid)
    // `...` in the flags is for the usage line: commander reads a flag as variadic only with `<url...>`, which would swallow the words after it.
    .addOption(new Option('--redirect-url <url>...').argParser(repeated).makeOptionMandatory())
    .requiredOption('--launch-url <url>')
    .requiredOption('--required-scopes "<scope> ..."', '', scopeList)
    .option('--optional-scopes "<scope> ..."', '', scopeList)
    .action(actions.writes(versionAdd));
  return version;
}
