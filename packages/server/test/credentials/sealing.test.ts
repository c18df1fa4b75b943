import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { derivedKey, developmentKey, SECRET_KEY_FILE, sealerOf } from '../../src/credentials/sealing';

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
