import { createCipheriv, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { derivedKey, developmentKey, isSealed, keyIdOf, SECRET_KEY_FILE, sealedKeyId, sealerOf, UnreadableSealedValue } from '../../src/credentials/sealing';

/** A value as the sealer wrote it before key ids (`sealed1.` + iv, tag and ciphertext). */
function legacySealed(key: Buffer, plaintext: string, purpose: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(purpose));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `sealed1.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
}

describe('sealing what the server must read back', () => {
  const sealer = sealerOf(derivedKey('sealing test'));

  it('opens what it sealed, and the sealed text shows nothing of the plaintext', () => {
    const sealed = sealer.seal('whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=', 'webhook-secret:a:1');
    expect(sealed).not.toContain('c2VjcmV0');
    expect(sealer.open(sealed, 'webhook-secret:a:1')).toBe('whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=');
    expect(sealer.seal('same', 'p')).not.toBe(sealer.seal('same', 'p')); // a fresh nonce each time
  });

  it('refuses a value sealed for another purpose, under another key, or altered', () => {
    const sealed = sealer.seal('secret', 'webhook-secret:a:1');
    expect(() => sealer.open(sealed, 'webhook-secret:b:1')).toThrow();
    expect(() => sealerOf(derivedKey('another key')).open(sealed, 'webhook-secret:a:1')).toThrow();
    const altered = `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(() => sealer.open(altered, 'webhook-secret:a:1')).toThrow();
    expect(() => sealer.open('{"plain":"json"}', 'webhook-secret:a:1')).toThrow(/not sealed/);
  });

  describe('a ring of keys', () => {
    const [oldKey, newKey, otherKey] = [derivedKey('old'), derivedKey('new'), derivedKey('other')];

    it('names each key by a short id derived from it (8 bytes of HMAC-SHA256 in base64url), never the key', () => {
      expect(keyIdOf(oldKey)).toMatch(/^[A-Za-z0-9_-]{11}$/);
      expect(keyIdOf(oldKey)).toBe(keyIdOf(Buffer.from(oldKey)));
      expect(keyIdOf(oldKey)).not.toBe(keyIdOf(newKey));
      expect(sealerOf([newKey, oldKey]).keyIds).toEqual([keyIdOf(newKey), keyIdOf(oldKey)]);
    });

    it('seals under the first key, naming it in the value, and opens what any key of the ring sealed', () => {
      const before = sealerOf(oldKey);
      const during = sealerOf([newKey, oldKey]);
      const underOld = before.seal('whsec_old', 'p');
      const underNew = during.seal('whsec_new', 'p');
      expect(sealedKeyId(underOld)).toBe(keyIdOf(oldKey));
      expect(sealedKeyId(underNew)).toBe(keyIdOf(newKey));
      expect(isSealed(underNew)).toBe(true);
      expect(during.open(underOld, 'p')).toBe('whsec_old');
      expect(during.open(underNew, 'p')).toBe('whsec_new');
      expect(during.isCurrent(underNew)).toBe(true);
      expect(during.isCurrent(underOld)).toBe(false);
    });

    it('opens a value sealed before key ids by trying each key in turn', () => {
      const legacy = legacySealed(oldKey, 'whsec_legacy', 'webhook-secret:a:1');
      expect(isSealed(legacy)).toBe(true);
      expect(sealedKeyId(legacy)).toBeUndefined();
      expect(sealerOf([newKey, oldKey]).open(legacy, 'webhook-secret:a:1')).toBe('whsec_legacy');
      expect(sealerOf([newKey, oldKey]).isCurrent(legacy)).toBe(false);
      expect(() => sealerOf(newKey).open(legacy, 'webhook-secret:a:1')).toThrow(UnreadableSealedValue);
    });

    it('refuses, with UnreadableSealedValue naming the key ids, a value whose key the ring lacks or that was altered', () => {
      const sealed = sealerOf(otherKey).seal('secret', 'p');
      const ring = sealerOf([newKey, oldKey], 'SECRET_KEYS');
      expect(() => ring.open(sealed, 'p')).toThrow(UnreadableSealedValue);
      expect(() => ring.open(sealed, 'p')).toThrow(
        `The value is sealed under key id ${keyIdOf(otherKey)}, which is not among this instance's keys; SECRET_KEYS holds key ids ${keyIdOf(newKey)}, ${keyIdOf(oldKey)}`,
      );
      const mine = ring.seal('secret', 'p');
      expect(() => ring.open(`${mine.slice(0, -2)}${mine.endsWith('AA') ? 'BB' : 'AA'}`, 'p')).toThrow(UnreadableSealedValue);
      expect(() => ring.open(mine, 'q')).toThrow(UnreadableSealedValue);
    });
  });

  it('makes the development key once in the data directory, private to its owner, and reads the same key afterwards', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-key-'));
    try {
      const first = developmentKey(dir);
      expect(first).toHaveLength(32);
      expect(developmentKey(dir)).toEqual(first);
      expect(fs.statSync(path.join(dir, SECRET_KEY_FILE)).mode & 0o777).toBe(0o600);
      fs.writeFileSync(path.join(dir, SECRET_KEY_FILE), 'short\n');
      expect(() => developmentKey(dir)).toThrow(/does not hold a 32-byte key/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
