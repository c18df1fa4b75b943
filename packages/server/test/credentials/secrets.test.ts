import crypto from 'node:crypto';
import { hashPassword, verifyPassword, verifySignIn } from '../../src/credentials/passwords';
import { checkSecret, hashSecret, issueSecret, PREFIXES, type SecretKind, safeEqual } from '../../src/credentials/secrets';

describe('issued credentials', () => {
  const kinds = Object.keys(PREFIXES) as SecretKind[];

  it.each(kinds)('%s: prefix, 256 random bits, and it checks out', (kind) => {
    const secret = issueSecret(kind);
    expect(secret.startsWith(PREFIXES[kind])).toBe(true);
    const check = checkSecret(kind, secret);
    expect(check).toEqual({ ok: true, hash: hashSecret(secret) });
    expect(issueSecret(kind)).not.toBe(secret);
  });

  it('client secrets are svc_cs_ followed by exactly 43 characters', () => {
    expect(issueSecret('clientSecret')).toMatch(/^svc_cs_[A-Za-z0-9_-]{43}$/);
  });

  it('tokens carry a checksum that catches a typo before any lookup', () => {
    const token = issueSecret('accessToken');
    const last = token.at(-8) === 'A' ? 'B' : 'A';
    const typo = `${token.slice(0, -8)}${last}${token.slice(-7)}`;
    expect(checkSecret('accessToken', typo)).toEqual({ ok: false, reason: 'bad_checksum' });
  });

  it('refuses another kind, a truncated value and characters outside base64url', () => {
    const refresh = issueSecret('refreshToken');
    expect(checkSecret('accessToken', refresh)).toEqual({ ok: false, reason: 'wrong_prefix' });
    expect(checkSecret('refreshToken', refresh.slice(0, -1))).toEqual({ ok: false, reason: 'malformed' });
    expect(checkSecret('refreshToken', `${refresh.slice(0, -1)}!`)).toEqual({ ok: false, reason: 'malformed' });
  });

  it('stores only a SHA-256 hash', () => {
    const secret = issueSecret('authorizationCode');
    expect(hashSecret(secret)).toMatch(/^[0-9a-f]{64}$/);
    expect(hashSecret(secret)).not.toContain(secret.slice(7, 20));
  });

  it('compares in constant time, whatever the lengths', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
  });
});

describe('store-owner passwords', () => {
  it('are hashed with scrypt and a salt, and verify only with the right password', async () => {
    const [first, second] = await Promise.all([hashPassword('correct horse'), hashPassword('correct horse')]);
    expect(first).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(first).not.toBe(second);
    expect(first).not.toContain('correct');
    expect(await verifyPassword('correct horse', first)).toBe(true);
    expect(await verifyPassword('correct horsE', first)).toBe(false);
    expect(await verifyPassword('correct horse', 'md5$abc')).toBe(false);
    const [, , r, p, salt, key] = first.split('$');
    for (const n of ['abc', '1073741824', '1000']) expect(await verifyPassword('correct horse', ['scrypt', n, r, p, salt, key].join('$'))).toBe(false);
  });
});

describe('sign-in checks', () => {
  afterEach(() => jest.restoreAllMocks());

  it('run scrypt once for an e-mail with no account, as for one with an account, and never accept it', async () => {
    const stored = await hashPassword('correct horse');
    await verifySignIn('warm-up', undefined); // the decoy hash is made once, on first use
    const scrypt = jest.spyOn(crypto, 'scrypt');
    expect(await verifySignIn('correct horse', undefined)).toBe(false);
    expect(await verifySignIn('', undefined)).toBe(false);
    const unknownAccountRuns = scrypt.mock.calls.length;
    scrypt.mockClear();
    expect(await verifySignIn('correct horse', stored)).toBe(true);
    expect(await verifySignIn('wrong horse', stored)).toBe(false);
    expect({ unknownAccountRuns, knownAccountRuns: scrypt.mock.calls.length }).toEqual({ unknownAccountRuns: 2, knownAccountRuns: 2 });
  });
});
