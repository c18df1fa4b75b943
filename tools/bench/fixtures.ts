import { randomBytes } from 'node:crypto';
import { createDatabase } from '../../packages/server/src/db/connection';
import { installDirectly } from '../../packages/server/src/oauth/direct-install';
import { addVersion, registerApp } from '../../packages/server/src/platform/apps';
import { createStore } from '../../packages/server/src/platform/stores';
import type { Deps, Services } from '../../packages/server/src/services/container';

/**
 * What the bench's servers run on, made for the run: a PostgreSQL schema of its own, a store, and an
 * app installed in it with its tokens.
 */

export type Knex = ReturnType<typeof createDatabase>;

export const REDIRECT_URI = 'http://localhost:8787/callback';

/**
 * A schema of its own on a PostgreSQL server, dropped by `drop` (which leaves `db` to its caller):
 * nothing is kept between runs, since the database is the operator's and its state is theirs.
 */
export async function scratchSchema(url: string, prefix: string): Promise<{ db: Knex; schema: string; drop: () => Promise<void> }> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const asAdmin = async (statement: string) => {
    const admin = createDatabase({ databaseUrl: url, dataDir: '' });
    try {
      await admin.raw(statement, [schema]);
    } finally {
      await admin.destroy();
    }
  };
  await asAdmin('create schema ??');
  return { db: createDatabase({ databaseUrl: url, dataDir: '' }, { pgSchema: schema }), schema, drop: () => asAdmin('drop schema ?? cascade') };
}

/** A store and its owner, the name's slug its domain. */
export function createBenchStore(deps: Deps, name: string) {
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-');
  return createStore(deps, {
    name,
    domain: `${slug}.example`,
    owner: { email: `owner@${slug}.example`, name: `${name} owner`, password: randomBytes(16).toString('base64url') },
  });
}

/** An app registered with these scopes and installed in the store: its id and the installation's first tokens. */
export async function installBenchApp(services: Services, storeId: string, name: string, scopes: string[]) {
  const { app } = await registerApp(services, { name });
  await addVersion(services, app.id, { redirectUrls: [REDIRECT_URI], launchUrl: 'http://localhost:8787/launch', requiredScopes: scopes, optionalScopes: [] });
  const tokens = await installDirectly(services, { storeId, appId: app.id, scopes, redirectUri: REDIRECT_URI });
  return { appId: app.id, tokens };
}
