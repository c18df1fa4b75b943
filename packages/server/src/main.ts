import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { loadConfig } from './config';
import { createDatabase, describeDatabase } from './db/connection';
import { migrateToLatest } from './db/migrate';
import { DEMO_OWNER, type DemoSeed, seedDemo } from './db/seeds/demo';
import { createServices } from './services';

async function main(): Promise<void> {
  const config = loadConfig();
  const database = createDatabase(config);
  const applied = await migrateToLatest(database);
  if (applied.length > 0) console.log(`Database   migrated: ${applied.join(', ')}`);
  const services = createServices({ db: database, rateLimits: config.rateLimits });
  const demo = config.environment === 'production' ? undefined : await seedDemo(services);
  const app = createApp({ config, services });
  const server = app.listen(config.port, () => {
    const { port } = server.address() as AddressInfo;
    const base = `http://localhost:${port}`;
    console.log(`Store API  ${base}/stores/{storeId}/v1   (${describeDatabase(config)})`);
    console.log(`OAuth      ${base}/oauth/authorize`);
    console.log(`API docs   ${base}/docs`);
    console.log(`Dashboard  ${base}/dashboard`);
    if (demo) printDemo(demo);
  });
  const stop = () => {
    server.close(() => void database.destroy().finally(() => process.exit(0)));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** Printed once, by the start that seeded the demo: the secret is not kept anywhere in clear. */
function printDemo(demo: DemoSeed): void {
  console.log(`Demo store ${demo.store.id}  owner ${DEMO_OWNER.email} / ${DEMO_OWNER.password}`);
  console.log(`Demo app   client_id ${demo.app.id}  client_secret ${demo.clientSecret}  (shown once)`);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
