import { randomBytes, type ScryptOptions, scrypt as scryptCallback } from 'node:crypto';
import { safeEqual } from './secrets';

/** scrypt, N=2^15 r=8 p=1 (OWASP's minimum for scrypt), 16-byte salt, 32-byte key. */
const PARAMETERS = { N: 2 ** 15, r: 8, p: 1 } as const;
const KEY_BYTES = 32;

type Parameters = { N: number; r: number; p: number };

function scrypt(password: string, salt: Buffer, { N, r, p }: Parameters): Promise<Buffer> {
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) => {
    scryptCallback(password.normalize('NFKC'), salt, KEY_BYTES, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

/** Parameters read back from a stored hash, refused when they are not ones this code could have written. */
function storedParameters(n: string, r: string, p: string): Parameters | undefined {
  const [N, rr, pp] = [Number(n), Number(r), Number(p)];
  const valid = Number.isInteger(Math.log2(N)) && N >= 2 ** 14 && N <= 2 ** 20 && rr >= 1 && rr <= 32 && pp >= 1 && pp <= 16;
  return valid && Number.isInteger(rr) && Number.isInteger(pp) ? { N, r: rr, p: pp } : undefined;
}

/** `scrypt$N$r$p$salt$key`, base64url parts: the parameters travel with the hash so they can rise later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, PARAMETERS);
  return ['scrypt', PARAMETERS.N, PARAMETERS.r, PARAMETERS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n = '', r = '', p = '', salt, key] = stored.split('$');
  const parameters = storedParameters(n, r, p);
  if (scheme !== 'scrypt' || !parameters || !salt || !key) return false;
  const derived = await scrypt(password, Buffer.from(salt, 'base64url'), parameters);
  return safeEqual(derived.toString('base64url'), key);
}

/** A hash of no one's password, made once: what an unknown account's sign-in is checked against. */
let decoyHash: Promise<string> | undefined;

/**
 * Checks a sign-in: the owner's stored hash, or for an e-mail with no account the same scrypt work
 * against a decoy, so the time taken does not tell whether the account exists (OWASP's
 * authentication guidance). False for an unknown account whatever the password.
 */
export async function verifySignIn(password: string, stored: string | undefined): Promise<boolean> {
  if (stored !== undefined) return verifyPassword(password, stored);
  decoyHash ??= hashPassword(randomBytes(16).toString('base64url'));
  await verifyPassword(password, await decoyHash);
  return false;
}
