import path from 'node:path';
import { loadConfig } from '../../src/core/config';
import { describeDatabase } from '../../src/db/connection';

describe('configuration from the environment', () => {
  it('starts with no configuration: port 3000, SQLite under ./data, responses validated', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ port: 3000, databaseUrl: undefined, environment: 'development', validateResponses: true });
    const data = path.resolve(__dirname, '..', '..', '..', '..', 'data');
    expect(config.dataDir).toBe(data);
    expect(describeDatabase(config)).toBe(`SQLite at ${path.join(data, 'store.sqlite')}`);
  });

  it('reads PORT and DATABASE_URL', () => {
    const config = loadConfig({ PORT: '8080', DATABASE_URL: 'postgres://svc:secret@db.internal:5433/store' });
    expect(config.port).toBe(8080);
    expect(describeDatabase(config)).toBe('PostgreSQL at db.internal:5433/store');
  });

  it('turns response validation and internal messages off in production', () => {
    expect(loadConfig({ NODE_ENV: 'production' })).toMatchObject({ validateResponses: false, exposeInternalErrors: false });
  });

  it.each(['-1', '65536', 'abc', '80.5'])('refuses PORT=%p with a clear message', (port) => {
    expect(() => loadConfig({ PORT: port })).toThrow(/PORT must be an integer from 0 to 65535/);
  });

  it('logs at info unless LOG_LEVEL says otherwise', () => {
    expect(loadConfig({}).logLevel).toBe('info');
    expect(loadConfig({ LOG_LEVEL: 'debug' }).logLevel).toBe('debug');
    expect(loadConfig({ LOG_LEVEL: 'silent' }).logLevel).toBe('silent');
  });

  it.each(['verbose', 'INFO', '30'])('refuses LOG_LEVEL=%p with the levels it takes', (level) => {
    expect(() => loadConfig({ LOG_LEVEL: level })).toThrow('LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent');
  });

  it('refuses a DATABASE_URL that is not PostgreSQL', () => {
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL must be a postgres:\/\/ URL/);
  });
});
