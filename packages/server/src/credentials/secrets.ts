import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Every credential the service issues is `prefix + 43 base64url characters (256 random bits)`;
 * tokens also end in a 6-character checksum, so a token of the wrong kind or with a typo is refused
 * before any database lookup. Only SHA-256 hashes are stored.
 */
export const PREFIXES = {
  accessToken: 'svc_at_',
  refreshToken: 'svc_rt_',
  authorizationCode: 'svc_c_',
  launchToken: 'svc_lt_',
  clientSecret: 'svc_cs_',
} as const;

export type SecretKind = keyof typeof PREFIXES;

const RANDOM_CHARS = 43;
const CHECKSUM_CHARS = 6;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** Client secrets are exactly `svc_cs_` + 43 characters (the interface's format): no checksum. */
const hasChecksum = (kind: SecretKind) => kind !== 'clientSecret';

function checksumOf(prefix: string, body: string): string {
  return createHash('sha256').update(`${prefix}${body}`).digest('base64url').slice(0, CHECKSUM_CHARS);
}

export function issueSecret(kind: SecretKind): string {
  const prefix = PREFIXES[kind];
  const body = randomBytes(32).toString('base64url');
  return hasChecksum(kind) ? `${prefix}${body}${checksumOf(prefix, body)}` : `${prefix}${body}`;
}

export type SecretCheck = { ok: true; hash: string } | { ok: false; reason: 'wrong_prefix' | 'malformed' | 'bad_checksum' };

/** Checks a presented credential's shape and checksum; on success gives the hash to look it up by. */
export function checkSecret(kind: SecretKind, presented: string): SecretCheck {
  const prefix = PREFIXES[kind];
  if (!presented.startsWith(prefix)) return { ok: false, reason: 'wrong_prefix' };
  const rest = presented.slice(prefix.length);
  const expectedLength = RANDOM_CHARS + (hasChecksum(kind) ? CHECKSUM_CHARS : 0);
  if (rest.length !== expectedLength || !BASE64URL.test(rest)) return { ok: false, reason: 'malformed' };
  if (hasChecksum(kind)) {
    const body = rest.slice(0, RANDOM_CHARS);
    if (!safeEqual(rest.slice(RANDOM_CHARS), checksumOf(prefix, body))) return { ok: false, reason: 'bad_checksum' };
  }
  return { ok: true, hash: hashSecret(presented) };
}

/** SHA-256 (hex) of a credential: what the database stores and looks up by. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** Constant-time comparison of two strings of any length. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}
