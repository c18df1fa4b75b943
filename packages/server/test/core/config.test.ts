import path from 'node:path';
import express from 'express';
import { ConfigError, loadConfig } from '../../src/core/config';
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
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'a'.repeat(64), PUBLIC_URL: 'https://api.example.com' })).toMatchObject({
      validateResponses: false,
      exposeInternalErrors: false,
    });
  });

  it.each(['-1', '65536', 'abc', '80.5', ' ', '0x1152', '1e3', '+80', '3000 '])('refuses PORT=%p with a clear message', (port) => {
    expect(() => loadConfig({ PORT: port })).toThrow(`PORT must be a decimal integer from 0 to 65535, not "${port}"`);
  });

  it('takes PORT=0 (any free port) and plain decimals', () => {
    expect(loadConfig({ PORT: '0' }).port).toBe(0);
    expect(loadConfig({ PORT: '08080' }).port).toBe(8080);
  });

  it.each(['prod', 'PRODUCTION', 'staging', 'dev'])('refuses NODE_ENV=%p, naming the values it takes', (value) => {
    expect(() => loadConfig({ NODE_ENV: value })).toThrow(`NODE_ENV must be one of development, test, production, not "${value}"`);
  });

  it('leaves the demo store off unless SEED_DEMO asks, and refuses it in production', () => {
    expect(loadConfig({}).seedDemo).toBe(false);
    expect(loadConfig({ SEED_DEMO: 'true' }).seedDemo).toBe(true);
    expect(() => loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'a'.repeat(64), SEED_DEMO: '1' })).toThrow('SEED_DEMO is refused in production');
  });

  it('waits 5 s before closing the listener in production only, and drains for 20 s', () => {
    expect(loadConfig({}).shutdown).toEqual({ delayMs: 0, timeoutMs: 20_000 });
    expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'a'.repeat(64), PUBLIC_URL: 'https://api.example.com' }).shutdown).toEqual({
      delayMs: 5000,
      timeoutMs: 20_000,
    });
    expect(loadConfig({ SHUTDOWN_DELAY_MS: '100', SHUTDOWN_TIMEOUT_MS: '0' }).shutdown).toEqual({ delayMs: 100, timeoutMs: 0 });
  });

  it('names every bad setting at once, in one line, without echoing a secret', () => {
    let message = '';
    try {
      loadConfig({ PORT: 'x', SECRET_KEY: 'not-a-key-but-secret', DATABASE_POOL_MAX: '0' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('PORT must be');
    expect(message).toContain('SECRET_KEY must be 32 bytes');
    expect(message).toContain('DATABASE_POOL_MAX must be');
    expect(message).not.toContain('not-a-key-but-secret');
    expect(message).not.toContain('\n');
  });

  it('takes the database settings', () => {
    expect(loadConfig({}).database).toEqual({
      poolMax: 10,
      statementTimeoutMs: 30_000,
      connectTimeoutMs: 60_000,
      migrateOnStart: true,
      replicaUrls: [],
      replicaMaxLagMs: 5000,
      replicaTimeoutMs: 1000,
      replicaPooled: false,
    });
    expect(
      loadConfig({ DATABASE_POOL_MAX: '25', DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_CONNECT_TIMEOUT_MS: '5000', MIGRATE_ON_START: 'false' }).database,
    ).toEqual({
      poolMax: 25,
      statementTimeoutMs: 0,
      connectTimeoutMs: 5000,
      migrateOnStart: false,
      replicaUrls: [],
      replicaMaxLagMs: 5000,
      replicaTimeoutMs: 1000,
      replicaPooled: false,
    });
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

  it('takes DATABASE_DIRECT_URL beside a pooled DATABASE_URL only, never echoing it', () => {
    const pooled = { DATABASE_URL: 'postgres://svc:secret@pgbouncer:6432/svc', DATABASE_DIRECT_URL: 'postgres://svc:secret@db:5432/svc' };
    expect(loadConfig(pooled).database.directUrl).toBe('postgres://svc:secret@db:5432/svc');
    expect(loadConfig({ DATABASE_URL: pooled.DATABASE_URL }).database.directUrl).toBeUndefined();
    expect(() => loadConfig({ DATABASE_DIRECT_URL: pooled.DATABASE_DIRECT_URL })).toThrow(/DATABASE_DIRECT_URL is set without DATABASE_URL/);
    expect(() => loadConfig({ ...pooled, DATABASE_DIRECT_URL: 'mysql://secret@x' })).toThrow(/^(?!.*secret).*DATABASE_DIRECT_URL must be a postgres:\/\/ URL/);
  });

  it('takes DATABASE_REPLICA_URL as comma-separated postgres:// URLs beside DATABASE_URL only, never echoing them', () => {
    const primary = { DATABASE_URL: 'postgres://svc:secret@db:5432/svc' };
    const two = 'postgres://svc:secret@replica-a:5432/svc, postgres://svc:secret@replica-b:5432/svc';
    expect(loadConfig({ ...primary, DATABASE_REPLICA_URL: two }).database).toMatchObject({
      replicaUrls: ['postgres://svc:secret@replica-a:5432/svc', 'postgres://svc:secret@replica-b:5432/svc'],
      replicaMaxLagMs: 5000,
    });
    expect(loadConfig(primary).database.replicaUrls).toEqual([]);
    expect(loadConfig({ ...primary, DATABASE_REPLICA_URL: ' ' }).database.replicaUrls).toEqual([]);
    expect(loadConfig({ ...primary, DATABASE_REPLICA_URL: two, DATABASE_REPLICA_MAX_LAG_MS: '250' }).database.replicaMaxLagMs).toBe(250);
    expect(() => loadConfig({ DATABASE_REPLICA_URL: two })).toThrow(/DATABASE_REPLICA_URL is set without DATABASE_URL/);
    for (const bad of [
      'mysql://secret@x',
      'postgres://svc:secret@a/svc,,postgres://svc:secret@b/svc',
      'postgres://svc:secret@a/svc,postgres://svc:secret@a/svc',
    ]) {
      expect(() => loadConfig({ ...primary, DATABASE_REPLICA_URL: bad })).toThrow(
        /^(?!.*secret).*DATABASE_REPLICA_URL (entry \d must be a postgres:\/\/ URL|names one replica twice)/,
      );
    }
    const seventeen = Array.from({ length: 17 }, (_, index) => `postgres://r${index}/svc`).join(',');
    expect(() => loadConfig({ ...primary, DATABASE_REPLICA_URL: seventeen })).toThrow(/names more than 16 replicas/);
    expect(() => loadConfig({ ...primary, DATABASE_REPLICA_MAX_LAG_MS: '-1' })).toThrow(/DATABASE_REPLICA_MAX_LAG_MS must be a decimal integer/);
    expect(loadConfig({ ...primary, DATABASE_REPLICA_URL: two, DATABASE_REPLICA_TIMEOUT_MS: '250', DATABASE_REPLICA_POOLED: 'true' }).database).toMatchObject({
      replicaTimeoutMs: 250,
      replicaPooled: true,
    });
    // A deadline of nothing would skip every replica.
    expect(() => loadConfig({ ...primary, DATABASE_REPLICA_TIMEOUT_MS: '0' })).toThrow(
      /DATABASE_REPLICA_TIMEOUT_MS must be a decimal integer from 10 to 600000/,
    );
  });

  describe('TRUST_PROXY', () => {
    it.each([undefined, '', '  ', '0'])('%p trusts no proxy', (value) => {
      expect(loadConfig(value === undefined ? {} : { TRUST_PROXY: value }).trustProxy).toBe(false);
    });

    it.each([
      ['loopback', ['loopback']],
      ['loopback, linklocal,uniquelocal', ['loopback', 'linklocal', 'uniquelocal']],
      [' 10.0.0.0/8, 203.0.113.7 ', ['10.0.0.0/8', '203.0.113.7']],
      ['2001:db8::/32,::1,192.0.2.0/24', ['2001:db8::/32', '::1', '192.0.2.0/24']],
      ['::ffff:10.0.0.1/128', ['::ffff:10.0.0.1/128']],
      ['2', 2],
    ])('%p is trusted as %p, which Express takes', (value, trusted) => {
      const { trustProxy } = loadConfig({ TRUST_PROXY: value });
      expect(trustProxy).toEqual(trusted);
      expect(() => express().set('trust proxy', trustProxy)).not.toThrow();
    });

    it.each([
      'yes',
      'loopback,',
      'loopback,,linklocal',
      'localhost',
      '10.0.0.0/33',
      '2001:db8::/129',
      '0.0.0.0/0',
      '::/0',
      '10.0.0.0/08',
      '10.0.0.0/',
      '10.0.0.0/8/8',
      '10.0.0.0/255.0.0.0',
      '300.1.1.1',
      '-1',
      '1.5',
      'proxy.internal',
    ])('refuses %p at start-up with a clear message', (value) => {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(
        /^TRUST_PROXY must be a hop count or a comma-separated list of proxy addresses, CIDR subnets and loopback\/linklocal\/uniquelocal \(leave it unset to trust no proxy\), not "/,
      );
    });

    it('refuses true, which would let any client choose its own address', () => {
      expect(() => loadConfig({ TRUST_PROXY: 'true' })).toThrow(/TRUST_PROXY must be .*"true" would let any client choose its own address/);
    });
  });

  describe('SECRET_KEY and the webhook settings', () => {
    it('refuses to start in production without SECRET_KEY, and takes 32 bytes in hex or base64', () => {
      expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/SECRET_KEY is required in production/);
      expect(loadConfig({ NODE_ENV: 'production', SECRET_KEY: 'ab'.repeat(32), PUBLIC_URL: 'https://api.example.com' }).secretKeys).toEqual({
        keys: [Buffer.alloc(32, 0xab)],
        setting: 'SECRET_KEY',
      });
      expect(loadConfig({ SECRET_KEY: Buffer.alloc(32, 7).toString('base64') }).secretKeys?.keys).toEqual([Buffer.alloc(32, 7)]);
      expect(loadConfig({}).secretKeys).toBeUndefined();
      for (const bad of ['ab'.repeat(31), Buffer.alloc(16).toString('base64'), 'not a key']) {
        expect(() => loadConfig({ SECRET_KEY: bad })).toThrow(/SECRET_KEY must be 32 bytes/);
      }
    });

    it('takes SECRET_KEYS, a ring whose first key seals, in production too (in place of SECRET_KEY)', () => {
      const [first, second] = [Buffer.alloc(32, 1), Buffer.alloc(32, 2)];
      const config = loadConfig({
        NODE_ENV: 'production',
        SECRET_KEYS: `${first.toString('hex')}, ${second.toString('base64')}`,
        PUBLIC_URL: 'https://api.example.com',
      });
      expect(config.secretKeys).toEqual({ keys: [first, second], setting: 'SECRET_KEYS' });
      expect(loadConfig({ SECRET_KEYS: first.toString('base64url') }).secretKeys?.keys).toEqual([first]);
    });

    it('refuses SECRET_KEY and SECRET_KEYS both set, naming both and what to keep', () => {
      const key = 'ab'.repeat(32);
      expect(() => loadConfig({ SECRET_KEY: key, SECRET_KEYS: key })).toThrow(
        'SECRET_KEY and SECRET_KEYS are both set: keep one (SECRET_KEYS=new,old while rotating, SECRET_KEY for a single key)',
      );
    });

    it('refuses a bad SECRET_KEYS entry by its position, never echoing a key', () => {
      const good = 'ab'.repeat(32);
      const secretish = 'cd'.repeat(31);
      const message = (() => {
        try {
          loadConfig({ SECRET_KEYS: `${good},${secretish},,${good}` });
          return '';
        } catch (error) {
          return (error as Error).message;
        }
      })();
      expect(message).toBe(
        'SECRET_KEYS entry 2 must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32); SECRET_KEYS entry 3 must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32); SECRET_KEYS entry 4 repeats an earlier key',
      );
      expect(message).not.toContain(secretish);
      expect(message).not.toContain(good);
    });

    it('runs one dispatcher in the server unless WEBHOOK_WORKERS says otherwise (0 disables it)', () => {
      expect(loadConfig({}).webhooks.workers).toBe(1);
      expect(loadConfig({ WEBHOOK_WORKERS: '0' }).webhooks.workers).toBe(0);
      expect(loadConfig({ WEBHOOK_WORKERS: '3' }).webhooks.workers).toBe(3);
      expect(() => loadConfig({ WEBHOOK_WORKERS: '-1' })).toThrow(/WEBHOOK_WORKERS/);
      expect(() => loadConfig({ WEBHOOK_WORKERS: 'two' })).toThrow(/WEBHOOK_WORKERS/);
    });

    it('serves from one process unless WEB_CONCURRENCY says more, on PostgreSQL only, up to a sane maximum', () => {
      const pg = { DATABASE_URL: 'postgres://svc:svc@db:5432/svc', SECRET_KEY: 'a'.repeat(64) };
      expect(loadConfig({}).webConcurrency).toBe(1);
      expect(loadConfig({ ...pg, WEB_CONCURRENCY: '4' }).webConcurrency).toBe(4);
      expect(loadConfig({ ...pg, WEB_CONCURRENCY: '64' }).webConcurrency).toBe(64);
      expect(() => loadConfig({ ...pg, WEB_CONCURRENCY: '65' })).toThrow('WEB_CONCURRENCY must be a decimal integer from 1 to 64, not "65"');
      expect(() => loadConfig({ ...pg, WEB_CONCURRENCY: '0' })).toThrow('WEB_CONCURRENCY must be a decimal integer from 1 to 64, not "0"');
      expect(() => loadConfig({ ...pg, WEB_CONCURRENCY: 'max' })).toThrow(/WEB_CONCURRENCY must be/);
      expect(loadConfig({ WEB_CONCURRENCY: '1' }).webConcurrency).toBe(1);
      expect(() => loadConfig({ WEB_CONCURRENCY: '2' })).toThrow(
        'WEB_CONCURRENCY=2 needs PostgreSQL (DATABASE_URL): on SQLite one server process serves the data directory',
      );
      expect(() => loadConfig({ ...pg, WEB_CONCURRENCY: '2', SEED_DEMO: 'true' })).toThrow(/SEED_DEMO seeds from one server process/);
    });

    it('reads WEBHOOK_RETRY_SCHEDULE as comma-separated milliseconds, refusing anything else', () => {
      expect(loadConfig({}).webhooks.retryScheduleMs).toBeUndefined();
      expect(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '100, 200,0' }).webhooks.retryScheduleMs).toEqual([100, 200, 0]);
      for (const bad of ['1s', '100,,200', '-5', '1.5', '86400001']) {
        expect(() => loadConfig({ WEBHOOK_RETRY_SCHEDULE: bad })).toThrow(/WEBHOOK_RETRY_SCHEDULE must be/);
      }
    });
  });
});

/** A start stopped by its settings: the ConfigError's message, the one line the start prints. */
function refusal(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error('the settings were taken');
}

const KEY = 'a'.repeat(64);
const PRIMARY = 'postgres://a@db/x';

describe('the one line a bad setting stops the start with, to the byte', () => {
  it.each<[NodeJS.ProcessEnv, string]>([
    [{ PORT: 'x' }, 'PORT must be a decimal integer from 0 to 65535, not "x"'],
    [{ PORT: '65536' }, 'PORT must be a decimal integer from 0 to 65535, not "65536"'],
    [{ WEB_CONCURRENCY: '0' }, 'WEB_CONCURRENCY must be a decimal integer from 1 to 64, not "0"'],
    [{ NODE_ENV: 'prod' }, 'NODE_ENV must be one of development, test, production, not "prod"'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, not "verbose"'],
    [{ DATABASE_URL: 'mysql://db/x' }, 'DATABASE_URL must be a postgres:// URL (leave it unset for SQLite)'],
    [{ DATABASE_URL: 'postgres://' }, 'DATABASE_URL must be a postgres:// URL (leave it unset for SQLite)'],
    [{ DATABASE_DIRECT_URL: 'http://x' }, 'DATABASE_DIRECT_URL must be a postgres:// URL (leave it unset for SQLite)'],
    [
      { DATABASE_URL: PRIMARY, DATABASE_REPLICA_URL: 'postgres://r1/x,mysql://r2/x' },
      'DATABASE_REPLICA_URL entry 2 must be a postgres:// URL (comma-separated, one per replica)',
    ],
    [{ DATABASE_URL: PRIMARY, DATABASE_REPLICA_URL: 'postgres://r1/x, postgres://r1/x' }, 'DATABASE_REPLICA_URL names one replica twice'],
    [{ DATABASE_REPLICA_MAX_LAG_MS: '600001' }, 'DATABASE_REPLICA_MAX_LAG_MS must be a decimal integer from 0 to 600000, not "600001"'],
    [{ DATABASE_REPLICA_TIMEOUT_MS: '9' }, 'DATABASE_REPLICA_TIMEOUT_MS must be a decimal integer from 10 to 600000, not "9"'],
    [{ DATABASE_REPLICA_POOLED: 'yes' }, 'DATABASE_REPLICA_POOLED must be true or false (or 1 or 0), not "yes"'],
    [{ SECRET_KEY: 'short' }, 'SECRET_KEY must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32)'],
    [
      { SECRET_KEYS: `${'ab'.repeat(32)},x,${'ab'.repeat(32)}` },
      'SECRET_KEYS entry 2 must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32); SECRET_KEYS entry 3 repeats an earlier key',
    ],
    [
      { TRUST_PROXY: 'true' },
      'TRUST_PROXY must be a hop count or a comma-separated list of proxy addresses, CIDR subnets and loopback/linklocal/uniquelocal (leave it unset to trust no proxy): "true" would let any client choose its own address, not "true"',
    ],
    [
      { TRUST_PROXY: 'proxy.internal' },
      'TRUST_PROXY must be a hop count or a comma-separated list of proxy addresses, CIDR subnets and loopback/linklocal/uniquelocal (leave it unset to trust no proxy), not "proxy.internal"',
    ],
    [{ RATE_LIMIT_PER_INSTALLATION: '0' }, 'RATE_LIMIT_PER_INSTALLATION must be a decimal integer from 1 to 1000000, not "0"'],
    [{ RATE_LIMIT_PER_CLIENT: '1000001' }, 'RATE_LIMIT_PER_CLIENT must be a decimal integer from 1 to 1000000, not "1000001"'],
    [{ WEBHOOK_WORKERS: '65' }, 'WEBHOOK_WORKERS must be a decimal integer from 0 to 64, not "65"'],
    [{ WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION: '0' }, 'WEBHOOK_ATTEMPTS_PER_SUBSCRIPTION must be a decimal integer from 1 to 64, not "0"'],
    [{ WEBHOOK_RETRY_SCHEDULE: '1s' }, 'WEBHOOK_RETRY_SCHEDULE must be up to 20 comma-separated delays in milliseconds (each at most a day), not "1s"'],
    [{ SEED_DEMO: 'on' }, 'SEED_DEMO must be true or false (or 1 or 0), not "on"'],
    [{ MIGRATE_ON_START: 'no' }, 'MIGRATE_ON_START must be true or false (or 1 or 0), not "no"'],
    [{ SHUTDOWN_DELAY_MS: '-1' }, 'SHUTDOWN_DELAY_MS must be a decimal integer from 0 to 600000, not "-1"'],
    [{ SHUTDOWN_TIMEOUT_MS: '600001' }, 'SHUTDOWN_TIMEOUT_MS must be a decimal integer from 0 to 600000, not "600001"'],
    [{ DATABASE_POOL_MAX: '1001' }, 'DATABASE_POOL_MAX must be a decimal integer from 1 to 1000, not "1001"'],
    [{ DATABASE_STATEMENT_TIMEOUT_MS: '3600001' }, 'DATABASE_STATEMENT_TIMEOUT_MS must be a decimal integer from 0 to 3600000, not "3600001"'],
    [{ DATABASE_CONNECT_TIMEOUT_MS: 'soon' }, 'DATABASE_CONNECT_TIMEOUT_MS must be a decimal integer from 0 to 600000, not "soon"'],
    [
      { CORS_ORIGINS: 'https://app.example.com/path' },
      'CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com ("https://app.example.com/path" is not one), not "https://app.example.com/path"',
    ],
    [{ CORS_ORIGINS: '*' }, 'CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com ("*" is not one), not "*"'],
    [{ METRICS_PORT: '99999' }, 'METRICS_PORT must be a decimal integer from 0 to 65535, not "99999"'],
    [{ METRICS_HOST: 'metrics.internal' }, 'METRICS_HOST must be an IP address to bind (127.0.0.1, 0.0.0.0, ::) or localhost, not "metrics.internal"'],
    [
      { PUBLIC_URL: 'https://api.example.com/v1' },
      'PUBLIC_URL must be the http(s) origin clients reach the service at, without a path (https://api.example.com), not "https://api.example.com/v1"',
    ],
    [{ PUBLIC_URL: 'ftp://x' }, 'PUBLIC_URL must be the http(s) origin clients reach the service at, without a path (https://api.example.com), not "ftp://x"'],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
      'OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL of an OTLP/HTTP collector (http://collector:4318)',
    ],
    [
      { PORT: 'x', SECRET_KEY: 'not-a-key', DATABASE_POOL_MAX: '0', NODE_ENV: 'staging' },
      'NODE_ENV must be one of development, test, production, not "staging"; PORT must be a decimal integer from 0 to 65535, not "x"; SECRET_KEY must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32); DATABASE_POOL_MAX must be a decimal integer from 1 to 1000, not "0"',
    ],
    [
      { NODE_ENV: 'production' },
      'SECRET_KEY is required in production: 32 random bytes as 64 hex digits or base64 (openssl rand -hex 32), or SECRET_KEYS while rotating; PUBLIC_URL is required in production: the https origin clients reach the service at (https://api.example.com), the OAuth issuer they check',
    ],
    [
      { NODE_ENV: 'production', SECRET_KEY: KEY },
      'PUBLIC_URL is required in production: the https origin clients reach the service at (https://api.example.com), the OAuth issuer they check',
    ],
    [
      { NODE_ENV: 'production', SECRET_KEY: KEY, PUBLIC_URL: 'http://api.example.com' },
      'PUBLIC_URL must be https in production (it is the OAuth issuer clients check), not "http://api.example.com"; plain http is for localhost',
    ],
    [
      { SECRET_KEY: KEY, SECRET_KEYS: KEY },
      'SECRET_KEY and SECRET_KEYS are both set: keep one (SECRET_KEYS=new,old while rotating, SECRET_KEY for a single key)',
    ],
    [
      { WEB_CONCURRENCY: '2' },
      'WEB_CONCURRENCY=2 needs PostgreSQL (DATABASE_URL): on SQLite one server process serves the data directory (its quotas and housekeeping live in it); leave WEB_CONCURRENCY at 1',
    ],
    [
      { DATABASE_DIRECT_URL: 'postgres://d/x' },
      'DATABASE_DIRECT_URL is set without DATABASE_URL: it is the direct session beside a pooled DATABASE_URL; set both, or neither for SQLite',
    ],
    [
      { DATABASE_REPLICA_URL: 'postgres://r/x' },
      'DATABASE_REPLICA_URL is set without DATABASE_URL: replicas are of a PostgreSQL primary; set DATABASE_URL, or unset DATABASE_REPLICA_URL for SQLite',
    ],
  ])('%p', (env, line) => {
    expect(refusal(env)).toBe(line);
  });

  it('names more than 16 replicas as too many', () => {
    const urls = Array.from({ length: 17 }, (_, index) => `postgres://r${index}/x`).join(',');
    expect(refusal({ DATABASE_URL: PRIMARY, DATABASE_REPLICA_URL: urls })).toBe('DATABASE_REPLICA_URL names more than 16 replicas');
  });

  it('shortens a long value it echoes to 60 characters', () => {
    expect(refusal({ PORT: 'y'.repeat(80) })).toBe(`PORT must be a decimal integer from 0 to 65535, not "${'y'.repeat(57)}..."`);
  });
});
