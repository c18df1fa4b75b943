import { Command } from 'commander';
import { type App, listApps, pinApiVersion, registerApp } from '../../platform/apps';
import type { Actions, NoOptions, Run } from '../context';
import { appJson, instantCell, keyValues, SHOWN_ONCE, table } from '../output';
import { dateVersion, pinnedVersion, uuid } from '../values';
import { secretCommands } from './secret';
import { versionCommands, versionList } from './version';

const appType = (app: App): string => (app.store_id === null ? 'public' : `private to store ${app.store_id}`);

/** An app's pin as printed: the version, or that the current one applies. */
const pinCell = (app: App): string => app.api_version ?? 'none (the current version)';

const appCreate: Run<{ name: string; store?: string; apiVersion?: string }> = async (context, { options }) => {
  const { app, clientSecret } = await registerApp(
    { ...context.deps, apiVersions: context.apiVersions },
    { name: options.name, ...(options.store ? { storeId: options.store } : {}), ...(options.apiVersion ? { apiVersion: options.apiVersion } : {}) },
  );
  return {
    json: { app: appJson(app), client_id: app.id, client_secret: clientSecret },
    lines: keyValues([
      ['client_id', app.id],
      ['name', app.name],
      ['type', appType(app)],
      ['api_version', pinCell(app)],
      ['client_secret', `${clientSecret}  ${SHOWN_ONCE}`],
    ]),
  };
};

const appList: Run = async (context) => {
  const apps = await listApps(context.deps.db);
  return {
    json: apps.map(appJson),
    lines: table(
      ['CLIENT_ID', 'NAME', 'TYPE', 'API_VERSION', 'AUTH_EPOCH', 'CREATED'],
      apps.map((app) => [app.id, app.name, appType(app), app.api_version ?? 'none', String(app.auth_epoch), instantCell(app.created_at)]),
    ),
  };
};

/** `svc app api-version <appId> <version|none>`: what the app's requests that name no version get. */
const appApiVersion: Run<NoOptions, [string, string]> = async (context, { args: [appId, version] }) => {
  const app = await pinApiVersion({ ...context.deps, apiVersions: context.apiVersions }, appId, version === 'none' ? null : version);
  return {
    json: appJson(app),
    lines: keyValues([
      ['client_id', app.id],
      ['name', app.name],
      ['api_version', pinCell(app)],
    ]),
  };
};

export function appCommands(actions: Actions): Command {
  const app = new Command('app');
  app
    .command('create')
    .description('Register an app (private to one store with --store); prints its client secret once.')
    .requiredOption('--name <name>')
    .option('--store <storeId>', '', uuid)
    .option('--api-version <date>', '', dateVersion)
    .action(actions.writes(appCreate));
  app.command('list').description('List the apps.').action(actions.reads(appList));
  app.addCommand(versionCommands(actions));
  app.command('versions').description("List an app's versions.").argument('<appId>', '', uuid).action(actions.reads(versionList));
  app.addCommand(secretCommands(actions));
  app
    .command('api-version')
    .description('Pin an app to a date version (`none`: unpinned, the current version applies): its requests without an API-Version header get it.')
    .argument('<appId>', '', uuid)
    .argument('<version>', '', pinnedVersion)
    .action(actions.writes(appApiVersion));
  return app;
}
