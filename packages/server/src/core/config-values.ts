import { isIP } from 'node:net';

/**
 * How a setting's text becomes its value: one pure parser per kind of value (integers, flags,
 * choices, URLs, lists, keys). A parser is given the variable's text (undefined when it is not set)
 * and answers the value, or the problems that each complete the line "NAME …" the start prints
 * before it stops (core/config.ts adds the name and, unless the setting is secret, what was given).
 */
export type Reading<T> = { readonly value: T } | { readonly problems: readonly string[] };

export type ValueParser<T> = (text: string | undefined) => Reading<T>;

const read = <T>(value: T): Reading<T> => ({ value });
const refuse = (problem: string): Reading<never> => ({ problems: [problem] });

/** Unset, for most settings: not in the environment, or set to nothing (`NAME=`). */
const unset = (text: string | undefined): text is undefined => text === undefined || text === '';

/** Unset, for the lists: also a value of blanks only. */
const blank = (text: string | undefined): text is undefined => text === undefined || text.trim() === '';

/** The text as it is (a path), undefined when the variable is not in the environment. */
export const anyText: ValueParser<string | undefined> = (text) => read(text);

/** Plain decimal digits only: `" "`, hex, exponents, signs and fractions are refused, not read as numbers. */
export function decimal<Fallback extends number | undefined>(range: string, min: number, max: number, fallback: Fallback): ValueParser<number | Fallback> {
  return (text) => {
    if (unset(text)) return read(fallback);
    if (!/^[0-9]{1,15}$/.test(text) || Number(text) < min || Number(text) > max) return refuse(`must be a decimal integer ${range}`);
    return read(Number(text));
  };
}

export function oneOf<const T extends string>(values: readonly T[], fallback: T): ValueParser<T> {
  return (text) => {
    if (unset(text)) return read(fallback);
    const found = values.find((candidate) => candidate === text);
    return found === undefined ? refuse(`must be one of ${values.join(', ')}`) : read(found);
  };
}

export function flag(fallback: boolean): ValueParser<boolean> {
  return (text) => {
    if (unset(text)) return read(fallback);
    if (text === 'true' || text === '1') return read(true);
    if (text === 'false' || text === '0') return read(false);
    return refuse('must be true or false (or 1 or 0)');
  };
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
 * TRUST_PROXY: unset or blank trusts no proxy. Otherwise a hop count, or a comma-separated list of
 * addresses, CIDR subnets and `loopback`/`linklocal`/`uniquelocal`, as Express's `trust proxy`
 * takes them. `true` (trust every hop) is refused: any client could then name its own address.
 */
export const trustProxy: ValueParser<TrustProxy> = (text) => {
  if (blank(text)) return read(false);
  const problem = `must be a hop count or a comma-separated list of proxy addresses, CIDR subnets and ${TRUSTED_RANGE_NAMES.join('/')} (leave it unset to trust no proxy)`;
  const trimmed = text.trim();
  if (trimmed === 'true') return refuse(`${problem}: "true" would let any client choose its own address`);
  if (/^[0-9]{1,6}$/.test(trimmed)) return read(Number(trimmed) === 0 ? false : Number(trimmed));
  const entries = trimmed.split(',').map((entry) => entry.trim());
  return entries.some((entry) => !TRUSTED_RANGE_NAMES.includes(entry) && !isSubnet(entry)) ? refuse(problem) : read(entries);
};

export const SECRET_KEY_BYTES = 32;

/** A 32-byte key written as 64 hexadecimal digits or in base64 (44 characters, or 43 in base64url); undefined otherwise. */
export function parseSecretKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(text)) return Buffer.from(text, 'base64');
  if (/^[A-Za-z0-9_-]{43}$/.test(text)) return Buffer.from(text, 'base64url');
  return undefined;
}

const KEY_FORM = 'must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32)';

export const secretKey: ValueParser<Buffer | undefined> = (text) => {
  if (unset(text)) return read(undefined);
  const key = parseSecretKey(text.trim());
  return key ? read(key) : refuse(KEY_FORM);
};

/**
 * SECRET_KEYS: the ring of a rotation, comma-separated, each key as SECRET_KEY takes it; the first
 * seals. A bad entry is named by its position, never echoed; every bad entry is named.
 */
export const secretKeys: ValueParser<readonly Buffer[] | undefined> = (text) => {
  if (unset(text)) return read(undefined);
  const keys: Buffer[] = [];
  const problems: string[] = [];
  for (const [index, entry] of text.split(',').entries()) {
    const key = parseSecretKey(entry.trim());
    const position = `entry ${index + 1}`;
    if (!key) problems.push(`${position} ${KEY_FORM}`);
    else if (keys.some((known) => known.equals(key))) problems.push(`${position} repeats an earlier key`);
    else keys.push(key);
  }
  return problems.length > 0 ? { problems } : read(keys);
};

const isPostgresUrl = (text: string): boolean => /^postgres(ql)?:\/\/./.test(text) && URL.canParse(text);

export const databaseUrl: ValueParser<string | undefined> = (text) => {
  if (unset(text)) return read(undefined);
  return isPostgresUrl(text) ? read(text) : refuse('must be a postgres:// URL (leave it unset for SQLite)');
};

/** Replicas one process reads from: each holds a pool and is polled for its position. */
export const MAX_REPLICAS = 16;

/** Comma-separated postgres:// URLs, each a streaming replica (hot standby) of DATABASE_URL's primary. */
export const replicaUrls: ValueParser<readonly string[]> = (text) => {
  if (blank(text)) return read([]);
  const urls = text.split(',').map((entry) => entry.trim());
  const bad = urls.findIndex((url) => !isPostgresUrl(url));
  if (bad >= 0) return refuse(`entry ${bad + 1} must be a postgres:// URL (comma-separated, one per replica)`);
  if (new Set(urls).size !== urls.length) return refuse('names one replica twice');
  if (urls.length > MAX_REPLICAS) return refuse(`names more than ${MAX_REPLICAS} replicas`);
  return read(urls);
};

/** At most a day between attempts: a longer wait is a typo, not a schedule. */
const LONGEST_RETRY_DELAY_MS = 86_400_000;

export const retrySchedule: ValueParser<readonly number[] | undefined> = (text) => {
  if (blank(text)) return read(undefined);
  const delays = text.split(',').map((part) => part.trim());
  if (delays.length > 20 || !delays.every((delay) => /^[0-9]{1,8}$/.test(delay) && Number(delay) <= LONGEST_RETRY_DELAY_MS)) {
    return refuse('must be up to 20 comma-separated delays in milliseconds (each at most a day)');
  }
  return read(delays.map(Number));
};

/** Exact origins (`https://app.example.com`): a browser sends the origin, never a path or a wildcard. */
export const origins: ValueParser<readonly string[]> = (text) => {
  if (blank(text)) return read([]);
  const entries = text.split(',').map((entry) => entry.trim());
  const bad = entries.find((entry) => !URL.canParse(entry) || new URL(entry).origin !== entry || !/^https?:/.test(entry));
  return bad === undefined ? read(entries) : refuse(`must be a comma-separated list of origins such as https://app.example.com ("${bad}" is not one)`);
};

/** A hostname that names this machine only: an issuer there may be plain http, even in production. */
export const isLoopbackHost = (hostname: string): boolean =>
  hostname === 'localhost' || hostname.endsWith('.localhost') || hostname === '[::1]' || /^127(\.[0-9]{1,3}){3}$/.test(hostname);

/**
 * PUBLIC_URL: an http(s) origin, written as one (no path, query, fragment or credentials; a trailing
 * `/` is taken off), since the OAuth issuer is compared as a string by clients (RFC 8414 §3.3). Its
 * https rule needs NODE_ENV, so core/config.ts checks it with the other settings.
 */
export const publicUrl: ValueParser<string | undefined> = (text) => {
  if (unset(text)) return read(undefined);
  const origin = text.replace(/\/$/, '');
  const url = URL.canParse(origin) ? new URL(origin) : undefined;
  if (!url || !/^https?:$/.test(url.protocol) || url.origin !== origin) {
    return refuse('must be the http(s) origin clients reach the service at, without a path (https://api.example.com)');
  }
  return read(origin);
};

/** An address to bind: an IP address or `localhost`; loopback when unset. */
export const bindHost: ValueParser<string> = (text) => {
  if (unset(text)) return read('127.0.0.1');
  return isIP(text) === 0 && text !== 'localhost' ? refuse('must be an IP address to bind (127.0.0.1, 0.0.0.0, ::) or localhost') : read(text);
};

/** The collector's base URL; the SDK appends `/v1/traces`. */
export const otlpEndpoint: ValueParser<string | undefined> = (text) => {
  if (unset(text)) return read(undefined);
  return URL.canParse(text) && /^https?:$/.test(new URL(text).protocol)
    ? read(text)
    : refuse('must be an http:// or https:// URL of an OTLP/HTTP collector (http://collector:4318)');
};
