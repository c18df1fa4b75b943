import path from 'node:path';
import { createExampleApp } from './app';
import { registration } from './registration';
import { JsonStorage } from './storage';

/**
 * `pnpm example`: the example app on http://localhost:8787 against the service on
 * http://localhost:3000 (SVC_URL, PORT and EXAMPLE_DATA_DIR change them). Once listening it
 * reconciles every installation with the events feed, then every RECONCILE_MINUTES (10; 0 for at
 * start only).
 */
async function main(): Promise<void> {
  const repositoryRoot = path.resolve(__dirname, '../../..');
  const port = Number(process.env.PORT ?? 8787);
  const serviceUrl = process.env.SVC_URL ?? 'http://localhost:3000';
  const publicUrl = `http://localhost:${port}`;
  const dataDir = path.resolve(process.env.EXAMPLE_DATA_DIR ?? path.join(repositoryRoot, 'data', 'example-app'));
  const reconcileMinutes = Number(process.env.RECONCILE_MINUTES ?? 10);
  if (!(reconcileMinutes >= 0)) throw new Error('RECONCILE_MINUTES must be a number of minutes, 0 or more.');
  const { clientId, clientSecret } = await registration({ dataDir, publicUrl, repositoryRoot, env: process.env });
  const storage = await JsonStorage.open(dataDir);
  const app = createExampleApp({ serviceUrl, publicUrl, clientId, clientSecret, storage });
  app.listen(port, () => {
    console.log(`Example App  ${publicUrl}   (client_id ${clientId}, state in ${dataDir})`);
    console.log(`Install      ${publicUrl}/install?store_id=<your store id>   then open it from ${serviceUrl}/dashboard`);
    // Webhooks may have failed while the app was down: the events feed has them.
    if (reconcileMinutes > 0) app.reconcileEvery(reconcileMinutes * 60_000);
    else void app.reconcileAll();
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
