import { Command } from 'commander';
import { type App, listApps, registerApp } from '../../platform/apps';
import type { Actions, Run } from '../context';
import { appJson, instantCell, keyValues, SHOWN_ONCE, table } from '../output';
import { uuid } from '../values';
import { secretCommands } from './secret';
import { versionCommands, versionList } from './version';

const appType = (app: App): string => (app.store_id === null ? 'public' : `private to store ${app.store_id}`);

const appCreate: Run<{ name: string; store?: string }> = async (context, { options }) => {
  const { app, clientSecret } = await registerApp(context.deps, { name: options.name, ...(options.store ? { storeId: options.store } : {}) });
  return {
    json: { app: appJson(app), client_id: app.id, client_secret: clientSecret },
    lines: keyValues([
      ['client_id', app.id],
      ['name', app.name],
      ['type', appType(app)],
      ['client_secret', `${clientSecret}  ${SHOWN_ONCE}`],
    ]),
  };
};

const appList: Run = async (context) => {
  const apps = await listApps(context.deps.db);
  return {
    json: apps.map(appJson),
    lines: table(
      ['CLIENT_ID', 'NAME', 'TYPE', 'AUTH_EPOCH', 'CREATED'],
      apps.map((app) => [app.id, app.name, appType(app), String(app.auth_epoch), instantCell(app.created_at)]),
    ),
  };
};

export function appCommands(actions: Actions): Command {
  const app = new Command('app');
  app
    .command('create')
    .description('Register an app (private to one store with --store); prints its client secret once.')
    .requiredOption('--name <name>')
    .option('--store <storeId>', '', uuid)
    .action(actions.writes(appCreate));
  app.command('list').description('List the apps.').action(actions.reads(appList));
  app.addCommand(versionCommands(actions));
  app.command('versions').description("List an app's versions.").argument('<appId>', '', uuid).action(actions.reads(versionList));
  app.addCommand(secretCommands(actions));
  return app;
}
