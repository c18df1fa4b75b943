import path from 'node:path';
import { createExampleApp } from './app';
import { registration } from './registration';
import { JsonStorage } from './storage';

/**
 * `pnpm example`: the example app on http://localhost:8787 against the service on
 * http://localhost:3000 (SVC_URL, PORT and EXAMPLE_DATA_DIR change them).
 */
async function main(): Promise<void> {
  const repositoryRoot = path.resolve(__dirname, '../../..');
  const port = Number(process.env.PORT ?? 8787);
  const serviceUrl = process.env.SVC_URL ?? 'http://localhost:3000';
  const publicUrl = `http://localhost:${port}`;
  const dataDir = path.resolve(process.env.EXAMPLE_DATA_DIR ?? path.join(repositoryRoot, 'data', 'example-app'));
  const { clientId, clientSecret } = await registration({ dataDir, publicUrl, repositoryRoot, env: process.env });
  const storage = await JsonStorage.open(dataDir);
  const app = createExampleApp({ serviceUrl, publicUrl, clientId, clientSecret, storage });
  app.listen(port, () => {
    console.log(`Example App  ${publicUrl}   (client_id ${clientId}, state in ${dataDir})`);
    console.log(`Install      ${publicUrl}/install?store_id=<your store id>   then open it from ${serviceUrl}/dashboard`);
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
