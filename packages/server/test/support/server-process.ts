/**
 * One server process for the multi-instance tests: the app over the PostgreSQL schema named by
 * TEST_PG_URL and TEST_PG_SCHEMA, or over the SQLite file of the data directory TEST_DATA_DIR
 * (migrated already), on the system clock, listening on a free port of 127.0.0.1. Prints
 * `LISTENING <port>` once it takes requests. TEST_RATE_LIMIT: requests per installation and per
 * client in a quota window (1000).
 */
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/app';
import { createDatabase } from '../../src/db/connection';
import { engineOfHandle } from '../../src/db/engine';
import { answerClientErrors } from '../../src/http/client-errors';
import { createServices } from '../../src/services/container';

const databaseUrl = process.env.TEST_PG_URL;
const pgSchema = process.env.TEST_PG_SCHEMA;
const dataDir = process.env.TEST_DATA_DIR;
if (!dataDir && (!databaseUrl || !pgSchema)) {
  process.stderr.write('server-process: TEST_PG_URL and TEST_PG_SCHEMA, or TEST_DATA_DIR, are required\n');
  process.exit(2);
}

const db = dataDir ? createDatabase({ databaseUrl: undefined, dataDir }) : createDatabase({ databaseUrl, dataDir: '' }, { pgSchema });
const limit = Number(process.env.TEST_RATE_LIMIT ?? 1000);
const services = createServices({ db, engine: engineOfHandle(db), rateLimits: { perInstallation: limit, perClient: limit } });
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
