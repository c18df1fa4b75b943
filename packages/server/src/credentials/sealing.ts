import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseSecretKey, SECRET_KEY_BYTES } from '../core/config';

/**
 * Data at rest that the server itself must read again (a webhook signing secret, which has to sign
 * and so cannot be hashed, and the stored idempotent answers that may carry one) is sealed with
 * AES-256-GCM under the server's secret key. The purpose is authenticated with it, so a sealed value
 * cannot be moved to another column or row (docs/decisions.md, "Webhooks").
 */
export interface Sealer {
  seal(plaintext: string, purpose: string): string;
  /** The plaintext; throws when the value was not sealed under this key for this purpose. */
  open(sealed: string, purpose: string): string;
}

/** What a sealed value starts with: never the start of JSON, so stored JSON from before sealing is told apart. */
export const SEALED_PREFIX = 'sealed1.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export function sealerOf(key: Buffer): Sealer {
  if (key.length !== SECRET_KEY_BYTES) throw new Error(`The secret key must be ${SECRET_KEY_BYTES} bytes`);
  return {
    seal(plaintext, purpose) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(purpose));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `${SEALED_PREFIX}${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
    },
    open(sealed, purpose) {
      if (!sealed.startsWith(SEALED_PREFIX)) throw new Error('The value is not sealed');
      const bytes = Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(purpose));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
    },
  };
}

/** A key derived from a public text: for tests and tools that run on throw-away data, never for a real store. */
export const derivedKey = (text: string): Buffer => createHash('sha256').update(`svc-derived-secret-key\n${text}`).digest();

/** The file in the data directory that keeps the development key between starts. */
export const SECRET_KEY_FILE = 'secret-key';

/**
 * The development key: made once with 256 random bits and kept in the data directory (mode 0600),
 * so the server, `svc worker` and the CLI on one machine read the same secrets. The exclusive create
 * makes two processes starting at once agree on one key.
 */
export function developmentKey(dataDir: string): Buffer {
  const file = path.join(dataDir, SECRET_KEY_FILE);
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, `${randomBytes(SECRET_KEY_BYTES).toString('hex')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  const key = parseSecretKey(fs.readFileSync(file, 'utf8').trim());
  if (!key) throw new Error(`${file} does not hold a ${SECRET_KEY_BYTES}-byte key in hex; delete it to make a new one (secrets sealed with it are lost)`);
  return key;
}
