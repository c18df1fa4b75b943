import { isIP } from 'node:net';
import path from 'node:path';

/** The workspace root: the default data directory is `./data` there, whatever the working directory. */
const repositoryRoot = path.resolve(__dirname, '..', '..', '..', '..');

export type Environment = 'production' | 'development' | 'test';

/** The levels `LOG_LEVEL` takes, most severe first (pino's names). */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  readonly environment: Environment;
  readonly port: number;
  /** PostgreSQL when set (`postgres://...`); otherwise SQLite in `dataDir`. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  /** Responses are checked against the spec outside production. */
  readonly validateResponses: boolean;
  /** Whether INTERNAL errors carry the underlying message (never in production). */
  readonly exposeInternalErrors: boolean;
  /** Requests per `quotaProofMs` (5 s) window: per installation on the store API, per client on /oauth. */
  readonly rateLimits: { readonly perInstallation: number; readonly perClient: number };
  /** The least severe log level written (`LOG_LEVEL`, default `info`). */
  readonly logLevel: LogLevel;
  /**
   * Express's `trust proxy`: which peers may say, in `X-Forwarded-For` and `X-Forwarded-Proto`, who
   * the client is and whether it came over HTTPS. `false` trusts none, so a client cannot choose the
   * address its sign-in failures are counted against; a number trusts that many hops; a list trusts
   * those addresses, subnets and Express's names for ranges.
   */
  readonly trustProxy: TrustProxy;
  /**
   * `SECRET_KEY`: the AES-256-GCM key that seals what the server must read back (webhook signing
   * secrets, stored idempotent answers). Required in production; elsewhere, when unset, a key is made
   * once and kept in `dataDir` (credentials/sealing.ts).
   */
  readonly secretKey: Buffer | undefined;
  readonly webhooks: WebhookConfig;
}

export interface WebhookConfig {
  /** `WEBHOOK_WORKERS`: how many dispatchers the server runs (default 1); 0 leaves delivery to `svc worker`. */
  readonly workers: number;
  /** `WEBHOOK_RETRY_SCHEDULE`: the delays before each retry, in ms (comma-separated); the design's schedule when unset. */
  readonly retryScheduleMs: readonly number[] | undefined;
}

export type TrustProxy = false | number | readonly string[];

/** The ranges Express (proxy-addr) knows by name. */
const TRUSTED_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function isSubnet(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  // A /0 would trust every peer, which Express refuses too.
  return /^[1-9][0-9]{0,2}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * TRUST_PROXY: unset or empty trusts no proxy. Otherwise a hop count, or a comma-separated list of
 * addresses, CIDR subnets and `loopback`/`linklocal`/`uniquelocal`, as Express's `trust proxy`
 * takes them. `true` (trust every hop) is refused: any client could then name its own address.
 */
function trustProxyOf(value: string | undefined): TrustProxy {
  if (value === undefined || value.trim() === '') return false;
  const problem = `TRUST_PROXY must be a hop count or a comma-separated list of proxy addresses, CIDR subnets and ${TRUSTED_RANGE_NAMES.join('/')} (leave it unset to trust no proxy), not "${value}"`;
  const trimmed = value.trim();
  if (trimmed === 'true') throw new Error(`${problem}: "true" would let any client choose its own address`);
  if (/^[0-9]+$/.test(trimmed)) {
    const hops = Number(trimmed);
    if (!Number.isSafeInteger(hops)) throw new Error(problem);
    return hops === 0 ? false : hops;
  }
  const entries = trimmed.split(',').map((entry) => entry.trim());
  if (entries.some((entry) => !TRUSTED_RANGE_NAMES.includes(entry) && !isSubnet(entry))) throw new Error(problem);
  return entries;
}

function environmentOf(value: string | undefined): Environment {
  if (value === 'production' || value === 'test') return value;
  return 'development';
}

function portOf(value: string | undefined): number {
  if (value === undefined || value === '') return 3000;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be an integer from 0 to 65535, not "${value}"`);
  return port;
}

function databaseUrlOf(value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!/^postgres(ql)?:\/\//.test(value)) throw new Error('DATABASE_URL must be a postgres:// URL (leave it unset for SQLite)');
  return value;
}

function logLevelOf(value: string | undefined): LogLevel {
  if (value === undefined || value === '') return 'info';
  const level = LOG_LEVELS.find((name) => name === value);
  if (!level) throw new Error(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, not "${value}"`);
  return level;
}

function positiveIntegerOf(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!Number.isInteger(number) || number < 1) throw new Error(`${name} must be a positive integer, not "${value}"`);
  return number;
}

export const SECRET_KEY_BYTES = 32;

/** A 32-byte key written as 64 hexadecimal digits or in base64 (44 characters, or 43 in base64url); undefined otherwise. */
export function parseSecretKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(text)) return Buffer.from(text, 'base64');
  if (/^[A-Za-z0-9_-]{43}$/.test(text)) return Buffer.from(text, 'base64url');
  return undefined;
}

function secretKeyOf(value: string | undefined, environment: Environment): Buffer | undefined {
  if (value === undefined || value === '') {
    if (environment === 'production')
      throw new Error('SECRET_KEY is required in production: 32 random bytes as 64 hex digits or base64 (openssl rand -hex 32)');
    return undefined;
  }
  const key = parseSecretKey(value.trim());
  if (!key) throw new Error('SECRET_KEY must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32)');
  return key;
}

function nonNegativeIntegerOf(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const number = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(number)) throw new Error(`${name} must be a whole number (0 or more), not "${value}"`);
  return number;
}

/** At most a day between attempts: a longer wait is a typo, not a schedule. */
const LONGEST_RETRY_DELAY_MS = 86_400_000;

function retryScheduleOf(value: string | undefined): readonly number[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const delays = value.split(',').map((part) => part.trim());
  const valid = delays.every((delay) => /^[0-9]{1,8}$/.test(delay) && Number(delay) <= LONGEST_RETRY_DELAY_MS);
  if (!valid || delays.length > 20) {
    throw new Error(`WEBHOOK_RETRY_SCHEDULE must be up to 20 comma-separated delays in milliseconds (each at most a day), not "${value}"`);
  }
  return delays.map(Number);
}

/** Reads the configuration from the environment; every setting has a default. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const environment = environmentOf(env.NODE_ENV);
  return {
    environment,
    port: portOf(env.PORT),
    databaseUrl: databaseUrlOf(env.DATABASE_URL),
    dataDir: path.resolve(env.DATA_DIR ?? path.join(repositoryRoot, 'data')),
    validateResponses: environment !== 'production',
    exposeInternalErrors: environment !== 'production',
    rateLimits: {
      perInstallation: positiveIntegerOf('RATE_LIMIT_PER_INSTALLATION', env.RATE_LIMIT_PER_INSTALLATION, 100),
      perClient: positiveIntegerOf('RATE_LIMIT_PER_CLIENT', env.RATE_LIMIT_PER_CLIENT, 60),
    },
    logLevel: logLevelOf(env.LOG_LEVEL),
    trustProxy: trustProxyOf(env.TRUST_PROXY),
    secretKey: secretKeyOf(env.SECRET_KEY, environment),
    webhooks: {
      workers: nonNegativeIntegerOf('WEBHOOK_WORKERS', env.WEBHOOK_WORKERS, 1),
      retryScheduleMs: retryScheduleOf(env.WEBHOOK_RETRY_SCHEDULE),
    },
  };
}
