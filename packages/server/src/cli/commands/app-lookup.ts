import { type App, findApp } from '../../platform/apps';
import { PlatformError } from '../../platform/stores';
import type { Deps } from '../../services/container';

/** The app a command names, or the refusal every app command gives for an unknown one. */
export async function requireApp(deps: Deps, appId: string): Promise<App> {
  const app = await findApp(deps.db, appId);
  if (!app) throw new PlatformError(`No app ${appId}`);
  return app;
}
