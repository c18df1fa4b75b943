/**
 * One server process for the multi-instance tests: the app over the PostgreSQL schema named by
 * TEST_PG_URL and TEST_PG_SCHEMA, on the system clock, listening on a free port of 127.0.0.1.
 * Prints `LISTENING <port>` once it takes requests.
 */
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app';
import { createDatabase } from '../../src/db/connection';
import { answerClientErrors } from '../../src/http/client-errors';
import { createServices } from '../../src/platform/services';

const databaseUrl = process.env.TEST_PG_URL;
const pgSchema = process.env.TEST_PG_SCHEMA;
if (!databaseUrl || !pgSchema) {
  process.stderr.write('server-process: TEST_PG_URL and TEST_PG_SCHEMA are required\n');
  process.exit(2);
}

const db = createDatabase({ databaseUrl, dataDir: '' }, { pgSchema });
const services = createServices({ db, rateLimits: { perInstallation: 1000, perClient: 1000 } });
const app = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services });
const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`LISTENING ${(server.address() as AddressInfo).port}\n`);
});
answerClientErrors(server);

function stop(): void {
  server.close();
  server.closeAllConnections();
  void db.destroy().finally(() => process.exit(0));
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
