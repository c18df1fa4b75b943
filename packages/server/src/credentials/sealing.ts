import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseSecretKey, SECRET_KEY_BYTES } from '../core/config-values';

/**
 * Data at rest that the server itself must read again (a webhook signing secret, which has to sign
 * and so cannot be hashed, and the stored idempotent answers that may carry one) is sealed with
 * AES-256-GCM under the server's secret key. The purpose is authenticated with it, so a sealed value
 * cannot be moved to another column or row (docs/decisions/0017-sealed-secrets.md).
 *
 * A sealer holds a ring of keys (`SECRET_KEYS`): the first seals, every one opens, and each sealed
 * value names the key it was sealed under, so a rotation can re-seal what the old key sealed and
 * tell what is left (docs/decisions/0054-one-sealing-key.md).
 */
export interface Sealer {
  seal(plaintext: string, purpose: string): string;
  /** The plaintext; throws UnreadableSealedValue when no key of the ring opens it for this purpose. */
  open(sealed: string, purpose: string): string;
  /** Whether the value is sealed under the first key already (nothing to re-seal). */
  isCurrent(sealed: string): boolean;
  /** The ids of the ring's keys, the sealing one first. */
  readonly keyIds: readonly string[];
  /** Where the keys come from (`SECRET_KEY`, `SECRET_KEYS`, the development key file), for messages. */
  readonly source: string;
}

/** A sealed value that no key of the ring opens: a key left out, or a value altered or moved. */
export class UnreadableSealedValue extends Error {
  override readonly name = 'UnreadableSealedValue';
}

/** Values sealed before key ids: `sealed1.` and the sealed bytes. Still opened, by trying each key. */
const LEGACY_PREFIX = 'sealed1.';
/** `sealed2.<key id>.<iv, tag and ciphertext in base64url>`. */
const PREFIX = 'sealed2.';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Whether stored text is a sealed value: never the start of JSON, so stored JSON from before sealing is told apart. */
export const isSealed = (text: string): boolean => text.startsWith(PREFIX) || text.startsWith(LEGACY_PREFIX);

/**
 * A key's public name: 8 bytes of HMAC-SHA256 under the key, in base64url (11 characters). It tells
 * keys apart in the database and in messages without saying anything usable about the key.
 */
export const keyIdOf = (key: Buffer): string => createHmac('sha256', key).update('svc key id').digest().subarray(0, 8).toString('base64url');

function openWith(key: Buffer, bytes: Buffer, purpose: string): string | undefined {
  if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(purpose));
    decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/** The key id a value names (undefined for a value sealed before key ids, or no sealed value at all). */
export function sealedKeyId(sealed: string): string | undefined {
  if (!sealed.startsWith(PREFIX)) return undefined;
  const end = sealed.indexOf('.', PREFIX.length);
  return end === -1 ? undefined : sealed.slice(PREFIX.length, end);
}

/** What every value sealed under this key id starts with. */
export const sealedUnder = (keyId: string): string => `${PREFIX}${keyId}.`;

/** A sealer over a ring of keys, the first of which seals. `source` names where they come from in messages. */
export function sealerOf(keys: Buffer | readonly Buffer[], source = 'the secret key'): Sealer {
  const ring = Buffer.isBuffer(keys) ? [keys] : [...keys];
  const [sealing] = ring;
  if (!sealing) throw new Error('A sealer needs at least one key');
  for (const key of ring) if (key.length !== SECRET_KEY_BYTES) throw new Error(`The secret key must be ${SECRET_KEY_BYTES} bytes`);
  const keyIds = ring.map(keyIdOf);
  const byId = new Map(ring.map((key, index) => [keyIds[index] as string, key]));
  const currentPrefix = sealedUnder(keyIds[0] as string);
  const unreadable = (why: string) => new UnreadableSealedValue(`${why}; ${source} holds key ids ${keyIds.join(', ')}`);
  return {
    keyIds,
    source,
    seal(plaintext, purpose) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', sealing, iv);
      cipher.setAAD(Buffer.from(purpose));
      const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return `${currentPrefix}${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
    },
    open(sealed, purpose) {
      if (sealed.startsWith(LEGACY_PREFIX)) {
        const bytes = Buffer.from(sealed.slice(LEGACY_PREFIX.length), 'base64url');
        for (const key of ring) {
          const plaintext = openWith(key, bytes, purpose);
          if (plaintext !== undefined) return plaintext;
        }
        throw unreadable('No key opens this sealed value (sealed before key ids)');
      }
      const keyId = sealedKeyId(sealed);
      if (keyId === undefined) throw new UnreadableSealedValue('The value is not sealed');
      const key = byId.get(keyId);
      if (!key) throw unreadable(`The value is sealed under key id ${keyId}, which is not among this instance's keys`);
      const plaintext = openWith(key, Buffer.from(sealed.slice(PREFIX.length + keyId.length + 1), 'base64url'), purpose);
      if (plaintext === undefined) throw new UnreadableSealedValue(`The value sealed under key id ${keyId} does not open for this purpose (altered or moved)`);
      return plaintext;
    },
    isCurrent: (sealed) => sealed.startsWith(currentPrefix),
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
