import { loadConfig, settingsTable } from '../../src/core/config';
import { engineOfHandle } from '../../src/db/engine';
import { servicesFromConfig } from '../../src/services/container';
import { unreadDatabase } from '../support/databases';

const PRODUCTION = { NODE_ENV: 'production', SECRET_KEY: 'a'.repeat(64) };

describe('PUBLIC_URL: the origin clients reach the service at, the OAuth issuer', () => {
  const db = unreadDatabase();

  it('defaults to http://localhost:<PORT>', () => {
    expect(loadConfig({}).publicUrl).toBe('http://localhost:3000');
    expect(loadConfig({ PORT: '8080' }).publicUrl).toBe('http://localhost:8080');
  });

  it.each([
    ['https://api.example.com', 'https://api.example.com'],
    ['https://api.example.com/', 'https://api.example.com'],
    ['https://api.example.com:8443', 'https://api.example.com:8443'],
    ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
    ['http://[::1]:3000', 'http://[::1]:3000'],
  ])('takes the origin %p as %p', (value, origin) => {
    expect(loadConfig({ PUBLIC_URL: value }).publicUrl).toBe(origin);
  });

  it.each([
    'https://api.example.com/store',
    'https://api.example.com/?x=1',
    'https://api.example.com/#top',
    'https://user:secret@api.example.com',
    'https://API.example.com',
    'https://api.example.com:443',
    'ftp://api.example.com',
    'api.example.com',
    'not a url',
  ])('refuses %p: an http(s) origin without a path, written as one', (value) => {
    expect(() => loadConfig({ PUBLIC_URL: value })).toThrow('PUBLIC_URL must be the http(s) origin clients reach the service at, without a path');
  });

  it('is https in production; plain http only for this machine', () => {
    expect(loadConfig({ ...PRODUCTION, PUBLIC_URL: 'https://api.example.com' }).publicUrl).toBe('https://api.example.com');
    expect(() => loadConfig({ ...PRODUCTION, PUBLIC_URL: 'http://api.example.com' })).toThrow('PUBLIC_URL must be https in production');
    for (const local of ['http://localhost:3000', 'http://127.0.0.1:3000', 'http://[::1]:3000', 'http://app.localhost']) {
      expect(loadConfig({ ...PRODUCTION, PUBLIC_URL: local }).publicUrl).toBe(local);
    }
    expect(loadConfig({ NODE_ENV: 'development', PUBLIC_URL: 'http://api.example.com' }).publicUrl).toBe('http://api.example.com');
  });

  it('is required by the server in production (fail closed: no guessed issuer), and named in one line with the other missing settings', () => {
    expect(() => loadConfig(PRODUCTION)).toThrow(
      new Error('PUBLIC_URL is required in production: the https origin clients reach the service at (https://api.example.com), the OAuth issuer they check'),
    );
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/^SECRET_KEY is required in production: .*; PUBLIC_URL is required in production: [^\n]*$/);
    // An svc command (a migration, the webhook worker) names no issuer.
    expect(loadConfig(PRODUCTION, 'command').environment).toBe('production');
    // Outside production the local default stands.
    expect(loadConfig({ NODE_ENV: 'test' }).publicUrl).toBe('http://localhost:3000');
  });

  it("is the services' issuer, and has a row in the deploy guide's settings table", async () => {
    const config = loadConfig({ PUBLIC_URL: 'https://api.example.com', SECRET_KEY: 'b'.repeat(64) });
    expect(servicesFromConfig(config, db, engineOfHandle(db)).issuer).toBe('https://api.example.com');
    expect(settingsTable()).toMatch(/^\| `PUBLIC_URL` \| `http:\/\/localhost:<PORT>` \(not in production\) \| .*issuer.*Required by the server in production/m);
  });
});
