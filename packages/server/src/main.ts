import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { loadConfig } from './config';
import { createDatabase, describeDatabase } from './db/connection';
import { migrateToLatest } from './db/migrate';
import { createServices } from './services';

async function main(): Promise<void> {
  const config = loadConfig();
  const database = createDatabase(config);
  const applied = await migrateToLatest(database);
  if (applied.length > 0) console.log(`Database   migrated: ${applied.join(', ')}`);
  const services = createServices({ db: database, rateLimits: config.rateLimits });
  const app = createApp({ config, services });
  const server = app.listen(config.port, () => {
    const { port } = server.address() as AddressInfo;
    const base = `http://localhost:${port}`;
    console.log(`Store API  ${base}/stores/{storeId}/v1   (${describeDatabase(config)})`);
    console.log(`OAuth      ${base}/oauth/authorize`);
    console.log(`API docs   ${base}/docs`);
    console.log(`Dashboard  ${base}/dashboard`);
  });
  const stop = () => {
    server.close(() => void database.destroy().finally(() => process.exit(0)));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
