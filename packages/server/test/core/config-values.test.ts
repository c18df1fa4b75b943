import {
  anyText,
  bindHost,
  databaseUrl,
  decimal,
  flag,
  isLoopbackHost,
  oneOf,
  origins,
  otlpEndpoint,
  parseSecretKey,
  publicUrl,
  replicaUrls,
  retrySchedule,
  secretKey,
  secretKeys,
  trustProxy,
} from '../../src/core/config-values';

/** The parsers alone, on a setting's text: the value read, or the problems that complete "NAME …". */
describe('the value parsers of the settings', () => {
  const KEY_FORM = 'must be 32 bytes as 64 hex digits or base64 (openssl rand -hex 32)';

  describe('decimal', () => {
    const port = decimal('from 0 to 65535', 0, 65535, 3000);
    it.each([
      [undefined, 3000],
      ['', 3000],
      ['0', 0],
      ['08080', 8080],
      ['65535', 65535],
    ])('reads %p as %p', (text, value) => {
      expect(port(text)).toEqual({ value });
    });
    it.each([' ', '-1', '65536', '0x10', '1e3', '+80', '80.5', '3000 ', '1234567890123456'])('refuses %p', (text) => {
      expect(port(text)).toEqual({ problems: ['must be a decimal integer from 0 to 65535'] });
    });
    it('falls back to undefined when it has no default', () => {
      expect(decimal('from 0 to 65535', 0, 65535, undefined)(undefined)).toEqual({ value: undefined });
    });
  });

  describe('oneOf', () => {
    const level = oneOf(['info', 'debug'], 'info');
    it('reads a value of the list, and the default when unset', () => {
      expect(level('debug')).toEqual({ value: 'debug' });
      expect(level('')).toEqual({ value: 'info' });
    });
    it.each(['DEBUG', ' debug', 'verbose'])('refuses %p, naming the values', (text) => {
      expect(level(text)).toEqual({ problems: ['must be one of info, debug'] });
    });
  });

  describe('flag', () => {
    it.each([
      ['true', true],
      ['1', true],
      ['false', false],
      ['0', false],
      [undefined, true],
      ['', true],
    ])('reads %p as %p', (text, value) => {
      expect(flag(true)(text)).toEqual({ value });
    });
    it.each(['yes', 'on', 'TRUE', ' 1'])('refuses %p', (text) => {
      expect(flag(false)(text)).toEqual({ problems: ['must be true or false (or 1 or 0)'] });
    });
  });

  describe('trustProxy', () => {
    const problem =
      'must be a hop count or a comma-separated list of proxy addresses, CIDR subnets and loopback/linklocal/uniquelocal (leave it unset to trust no proxy)';
    it.each([
      [undefined, false],
      ['  ', false],
      ['0', false],
      ['2', 2],
      [' 10.0.0.0/8, loopback ', ['10.0.0.0/8', 'loopback']],
    ])('reads %p as %p', (text, value) => {
      expect(trustProxy(text)).toEqual({ value });
    });
    it('refuses true, saying why', () => {
      expect(trustProxy('true')).toEqual({ problems: [`${problem}: "true" would let any client choose its own address`] });
    });
    it.each(['0.0.0.0/0', '10.0.0.0/08', 'proxy.internal', 'loopback,'])('refuses %p', (text) => {
      expect(trustProxy(text)).toEqual({ problems: [problem] });
    });
  });

  describe('secret keys', () => {
    it('reads 32 bytes written in hex, base64 or base64url, and nothing else', () => {
      const bytes = Buffer.alloc(32, 0xfb);
      expect(parseSecretKey(bytes.toString('hex'))).toEqual(bytes);
      expect(parseSecretKey(bytes.toString('base64'))).toEqual(bytes);
      expect(parseSecretKey(bytes.toString('base64url'))).toEqual(bytes);
      expect(parseSecretKey('ab'.repeat(31))).toBeUndefined();
    });
    it('SECRET_KEY: a key, trimmed; unset is no key', () => {
      expect(secretKey(` ${'ab'.repeat(32)} `)).toEqual({ value: Buffer.alloc(32, 0xab) });
      expect(secretKey('')).toEqual({ value: undefined });
      expect(secretKey('short')).toEqual({ problems: [KEY_FORM] });
    });
    it('SECRET_KEYS: the ring in order; every bad entry named by its position', () => {
      const [a, b] = ['ab'.repeat(32), 'cd'.repeat(32)];
      expect(secretKeys(`${a}, ${b}`)).toEqual({ value: [Buffer.alloc(32, 0xab), Buffer.alloc(32, 0xcd)] });
      expect(secretKeys(`${a},x,,${a}`)).toEqual({ problems: [`entry 2 ${KEY_FORM}`, `entry 3 ${KEY_FORM}`, 'entry 4 repeats an earlier key'] });
    });
  });

  describe('database URLs', () => {
    it('DATABASE_URL: postgres:// or postgresql:// only', () => {
      expect(databaseUrl('postgresql://svc@db/svc')).toEqual({ value: 'postgresql://svc@db/svc' });
      expect(databaseUrl(undefined)).toEqual({ value: undefined });
      for (const text of ['mysql://db/x', 'postgres://', 'db:5432']) {
        expect(databaseUrl(text)).toEqual({ problems: ['must be a postgres:// URL (leave it unset for SQLite)'] });
      }
    });
    it('DATABASE_REPLICA_URL: a trimmed list, none repeated, at most 16', () => {
      expect(replicaUrls(' postgres://r1/x , postgres://r2/x')).toEqual({ value: ['postgres://r1/x', 'postgres://r2/x'] });
      expect(replicaUrls(' ')).toEqual({ value: [] });
      expect(replicaUrls('postgres://r1/x,,postgres://r2/x')).toEqual({ problems: ['entry 2 must be a postgres:// URL (comma-separated, one per replica)'] });
      expect(replicaUrls('postgres://r1/x,postgres://r1/x')).toEqual({ problems: ['names one replica twice'] });
      const many = Array.from({ length: 17 }, (_, index) => `postgres://r${index}/x`).join(',');
      expect(replicaUrls(many)).toEqual({ problems: ['names more than 16 replicas'] });
    });
  });

  describe('retrySchedule', () => {
    const problem = 'must be up to 20 comma-separated delays in milliseconds (each at most a day)';
    it('reads delays in ms, a day at most, 20 at most', () => {
      expect(retrySchedule('100, 200,0')).toEqual({ value: [100, 200, 0] });
      expect(retrySchedule('86400000')).toEqual({ value: [86_400_000] });
      expect(retrySchedule('')).toEqual({ value: undefined });
    });
    it.each(['1s', '100,,200', '-5', '1.5', '86400001', Array(21).fill('1').join(',')])('refuses %p', (text) => {
      expect(retrySchedule(text)).toEqual({ problems: [problem] });
    });
  });

  describe('origins', () => {
    it('reads exact http(s) origins', () => {
      expect(origins('https://app.example.com, http://localhost:8787')).toEqual({ value: ['https://app.example.com', 'http://localhost:8787'] });
      expect(origins(undefined)).toEqual({ value: [] });
    });
    it.each(['*', 'https://app.example.com/', 'ftp://files.example.com', 'app.example.com'])('refuses %p, naming it', (text) => {
      expect(origins(text)).toEqual({ problems: [`must be a comma-separated list of origins such as https://app.example.com ("${text}" is not one)`] });
    });
  });

  describe('publicUrl', () => {
    it('reads an http(s) origin, a trailing slash taken off', () => {
      expect(publicUrl('https://api.example.com/')).toEqual({ value: 'https://api.example.com' });
      expect(publicUrl('http://localhost:3000')).toEqual({ value: 'http://localhost:3000' });
      expect(publicUrl('')).toEqual({ value: undefined });
    });
    it.each(['https://api.example.com/v1', 'ftp://x', 'https://user@api.example.com', 'api.example.com'])('refuses %p', (text) => {
      expect(publicUrl(text)).toEqual({ problems: ['must be the http(s) origin clients reach the service at, without a path (https://api.example.com)'] });
    });
    it.each([
      ['localhost', true],
      ['api.localhost', true],
      ['127.0.0.2', true],
      ['[::1]', true],
      ['api.example.com', false],
      ['localhost.example.com', false],
    ])('counts %p as loopback: %p', (hostname, loopback) => {
      expect(isLoopbackHost(hostname)).toBe(loopback);
    });
  });

  describe('bindHost and otlpEndpoint', () => {
    it('bindHost: an IP address or localhost, loopback when unset', () => {
      expect(bindHost(undefined)).toEqual({ value: '127.0.0.1' });
      expect(bindHost('::')).toEqual({ value: '::' });
      expect(bindHost('localhost')).toEqual({ value: 'localhost' });
      expect(bindHost('metrics.internal')).toEqual({ problems: ['must be an IP address to bind (127.0.0.1, 0.0.0.0, ::) or localhost'] });
    });
    it('otlpEndpoint: an http(s) URL', () => {
      expect(otlpEndpoint('http://collector:4318')).toEqual({ value: 'http://collector:4318' });
      expect(otlpEndpoint('')).toEqual({ value: undefined });
      expect(otlpEndpoint('collector:4318')).toEqual({ problems: ['must be an http:// or https:// URL of an OTLP/HTTP collector (http://collector:4318)'] });
    });
  });

  it('anyText: the text as it is', () => {
    expect(anyText('./data')).toEqual({ value: './data' });
    expect(anyText('')).toEqual({ value: '' });
    expect(anyText(undefined)).toEqual({ value: undefined });
  });
});
