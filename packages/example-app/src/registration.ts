import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { SCOPES } from './app';

export interface Registration {
  clientId: string;
  clientSecret: string;
}

const run = promisify(execFile);

/** The admin CLI of the service in this repository, as a developer would type it (`npx -y pnpm@10 -s svc …`). */
async function svc(repositoryRoot: string, args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run('npx', ['-y', 'pnpm@10', '-s', 'svc', ...args, '--json'], { cwd: repositoryRoot });
  return JSON.parse(stdout) as Record<string, unknown>;
}

/**
 * The app's client credentials: EXAMPLE_CLIENT_ID and EXAMPLE_CLIENT_SECRET when set, else the
 * ones kept in the data directory, else a new registration with the local service's CLI (an app and
 * a version whose redirect and launch URLs are this app's), kept for the next start. The secret is
 * shown once by the service, so it is written where only this app reads it.
 */
export async function registration(options: { dataDir: string; publicUrl: string; repositoryRoot: string; env: NodeJS.ProcessEnv }): Promise<Registration> {
  const { EXAMPLE_CLIENT_ID: clientId, EXAMPLE_CLIENT_SECRET: clientSecret } = options.env;
  if (clientId && clientSecret) return { clientId, clientSecret };
  const file = path.join(options.dataDir, 'app.json');
  try {
    return JSON.parse(await fs.readFile(file, 'utf8')) as Registration;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const created = await svc(options.repositoryRoot, ['app', 'create', '--name', 'Example App']);
  const registered = { clientId: String(created.client_id), clientSecret: String(created.client_secret) };
  await svc(options.repositoryRoot, [
    'app',
    'version',
    'add',
    registered.clientId,
    '--redirect-url',
    `${options.publicUrl}/callback`,
    '--launch-url',
    `${options.publicUrl}/launch`,
    '--required-scopes',
    SCOPES.join(' '),
  ]);
  await fs.mkdir(options.dataDir, { recursive: true });
  await fs.writeFile(file, JSON.stringify(registered, null, 2), { mode: 0o600 });
  return registered;
}
