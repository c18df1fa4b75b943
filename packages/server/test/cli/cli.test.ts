import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Express } from 'express';
import type { Knex } from 'knex';
import { until } from '../../../../tools/testbed/until';
import { createApp } from '../../src/app';
import { HOUSEKEEPING_LED_ELSEWHERE } from '../../src/cli/commands/housekeeping';
import type { CliIo } from '../../src/cli/context';
import { progressBar } from '../../src/cli/output';
import { runCli } from '../../src/cli/run';
import { terminalProgress } from '../../src/cli/svc';
import { ManualClock, toIso } from '../../src/core/clock';
import { hashSecret } from '../../src/credentials/secrets';
import { SESSION_MS, startSession } from '../../src/dashboard/sessions';
import { migrateToLatest, pendingMigrations, rollbackAll } from '../../src/db/migrate';
import { migrations } from '../../src/db/migrations';
import { EXPIRY_RULES } from '../../src/jobs/housekeeping';
import { PREVIOUS_SECRET_MS } from '../../src/platform/apps';
import { recordConsent } from '../../src/platform/installations';
import { seedDemoCatalog } from '../../src/seeds/demo-catalog';
import { createServices, type Deps } from '../../src/services/container';
import { storeApi } from '../support/auth-steps';
import { depsOf, leadershipOn, testDatabases } from '../support/databases';

type JsonObject = Record<string, unknown>;

interface Run {
  code: number;
  out: string;
  err: string;
}

/** Runs `svc` in this process: its exit code and what it wrote. */
async function runSvc(argv: string[], io: Omit<CliIo, 'out' | 'err'>): Promise<Run> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { ...io, out: (line) => out.push(line), err: (line) => err.push(line) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const PASSWORD = 'correct horse battery';
const MISSING_ID = '00000000-0000-4000-8000-000000000000';
const SECRET = /svc_cs_[A-Za-z0-9_-]{43}/g;

describe.each(testDatabases())('svc on $name', (testDatabase) => {
  let db: Knex;
  const clock = new ManualClock();
  let deps: Deps;
  let domains = 0;

  beforeAll(async () => {
    db = await testDatabase.open();
    await migrateToLatest(db);
    deps = depsOf(db, clock);
  });
  afterAll(() => testDatabase.close());

  const svc = (argv: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> => runSvc(argv, { deps, env });

  /** Runs with --json, expects success and exactly one JSON document on out. */
  async function svcJson<T = JsonObject>(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<T> {
    const run = await svc([...argv, '--json'], env);
    expect(run).toMatchObject({ code: 0, err: '' });
    return JSON.parse(run.out) as T;
  }

  const nextDomain = () => {
    domains += 1;
    return `shop-${domains}.example.com`;
  };

  /** `svc store create` with a name and the given domain and owner e-mail, then any further flags. */
  const storeArgs = (domain: string, email: string, ...extra: string[]) => [
    'store',
    'create',
    '--name',
    'Oud House',
    '--domain',
    domain,
    '--owner-email',
    email,
    ...extra,
  ];

  async function newStore(email = `owner-${domains + 1}@example.com`): Promise<string> {
    const created = await svcJson<{ store: JsonObject }>(storeArgs(nextDomain(), email, '--password', PASSWORD));
    return created.store.id as string;
  }

  async function newApp(...extra: string[]): Promise<{ appId: string; secret: string }> {
    const created = await svcJson(['app', 'create', '--name', 'Stock Sync', ...extra]);
    return { appId: created.client_id as string, secret: created.client_secret as string };
  }

  const versionArgs = (appId: string, scopes = 'products:read') => [
    'app',
    'version',
    'add',
    appId,
    '--redirect-url',
    'https://app.example.com/callback',
    '--launch-url',
    'https://app.example.com/launch',
    '--required-scopes',
    scopes,
  ];

  describe('store create', () => {
    it('creates the store and its owner, and prints neither the password nor its hash', async () => {
      const domain = nextDomain();
      const run = await svc(storeArgs(domain, 'Noura@Example.com', '--owner-name', 'Noura', '--password', PASSWORD));
      expect(run.code).toBe(0);
      expect(run.out).toMatch(new RegExp(`^domain\\s+${domain.replace(/\./g, '\\.')}$`, 'm'));
      expect(run.out).toContain('noura@example.com (new account)');
      const owner = await db('store_owners').where({ email: 'noura@example.com' }).first();
      expect(owner.password_hash).toMatch(/^scrypt\$/);
      expect(`${run.out}${run.err}`).not.toContain(PASSWORD);
      expect(`${run.out}${run.err}`).not.toContain(owner.password_hash);
    });

    it('prints one JSON document with snake_case keys and ISO instants', async () => {
      clock.set('2026-11-22T10:00:00.123Z');
      const domain = nextDomain();
      const created = await svcJson(storeArgs(domain, 'amber@example.com', '--owner-name', 'Amber', '--password', PASSWORD));
      expect(created).toEqual({
        store: {
          id: expect.any(String),
          name: 'Oud House',
          domain,
          owner_id: expect.any(String),
          currency: 'SAR',
          timezone: 'Asia/Riyadh',
          locale: 'ar',
          routing_state: 'active',
          route_epoch: 1,
          created_at: '2026-11-22T10:00:00.123Z',
        },
        owner: {
          id: (created.store as JsonObject).owner_id,
          email: 'amber@example.com',
          name: 'Amber',
          created_at: '2026-11-22T10:00:00.123Z',
        },
        owner_created: true,
      });
      const listed = await svcJson<JsonObject[]>(['store', 'list']);
      expect(listed).toContainEqual(created.store);
    });

    it('adds a second store to an existing owner without a password', async () => {
      await newStore('twice@example.com');
      const second = await svcJson(storeArgs(nextDomain(), 'twice@example.com'));
      expect(second.owner_created).toBe(false);
    });

    it('takes the new owner password from SVC_OWNER_PASSWORD', async () => {
      const created = await svcJson(storeArgs(nextDomain(), 'env@example.com'), { SVC_OWNER_PASSWORD: PASSWORD });
      expect(created.owner_created).toBe(true);
    });

    it('refuses a domain that is taken (exit 1)', async () => {
      const domain = nextDomain();
      await svcJson(storeArgs(domain, 'first@example.com', '--password', PASSWORD));
      const run = await svc(storeArgs(domain, 'first@example.com'));
      expect(run).toEqual({ code: 1, out: '', err: `error: A store with the domain ${domain} exists already` });
    });

    it('asks for a password when the owner is new (exit 1), and creates nothing', async () => {
      const domain = nextDomain();
      const run = await svc(storeArgs(domain, 'nobody@example.com'));
      expect(run.code).toBe(1);
      expect(run.err).toBe("error: nobody@example.com has no account yet: give the new owner's password with --password or SVC_OWNER_PASSWORD");
      expect(await db('stores').where({ domain }).first()).toBeUndefined();
    });

    it('refuses a line without a required flag (exit 2, usage of the command)', async () => {
      const run = await svc(['store', 'create', '--name', 'X', '--owner-email', 'x@example.com']);
      expect(run.code).toBe(2);
      expect(run.err).toContain('svc: missing --domain');
      expect(run.err).toContain('usage: svc store create --name <name> --domain <domain>');
    });
  });

  describe('apps', () => {
    it('prints the client secret once and stores only its hash', async () => {
      const run = await svc(['app', 'create', '--name', 'Stock Sync']);
      expect(run.code).toBe(0);
      const secrets = run.out.match(SECRET) ?? [];
      expect(secrets).toHaveLength(1);
      const [secret] = secrets as [string];
      expect(run.out).toMatch(/^client_secret\s+svc_cs_\S+ {2}\(shown once: store it now\)$/m);
      const clientId = /^client_id\s+(\S+)$/m.exec(run.out)?.[1];
      const rows = await db('client_secrets').where({ app_id: clientId });
      expect(rows).toEqual([expect.objectContaining({ secret_hash: hashSecret(secret), hint: secret.slice(-4) })]);
      expect(JSON.stringify(rows)).not.toContain(secret);
    });

    it('lists apps without secrets; --store makes a private app', async () => {
      const storeId = await newStore();
      const { appId } = await newApp('--store', storeId);
      const apps = await svcJson<JsonObject[]>(['app', 'list']);
      const created_at = toIso(clock.now());
      expect(apps).toContainEqual({ id: appId, name: 'Stock Sync', type: 'private', store_id: storeId, api_version: '2026-10-15', auth_epoch: 1, created_at });
      const text = await svc(['app', 'list']);
      expect(text.out).not.toMatch(SECRET);
      expect(text.out).toContain(`private to store ${storeId}`);
    });

    it('refuses a private app for an unknown store (exit 1) and a malformed id (exit 2)', async () => {
      const unknown = await svc(['app', 'create', '--name', 'Lost', '--store', MISSING_ID]);
      expect(unknown).toEqual({ code: 1, out: '', err: `error: No store ${MISSING_ID}` });
      const malformed = await svc(['app', 'create', '--name', 'Lost', '--store', 'store-1']);
      expect(malformed.code).toBe(2);
      expect(malformed.err).toContain('svc: --store must be a UUID, not "store-1"');
    });

    it('adds versions and lists them', async () => {
      const { appId } = await newApp();
      const version = await svcJson([
        ...versionArgs(appId, 'products:write products:read'),
        '--redirect-url',
        'http://localhost:8080/callback',
        '--optional-scopes',
        'orders:read',
      ]);
      expect(version).toEqual({
        id: expect.any(String),
        app_id: appId,
        number: 1,
        redirect_urls: ['https://app.example.com/callback', 'http://localhost:8080/callback'],
        launch_url: 'https://app.example.com/launch',
        required_scopes: ['products:read', 'products:write'],
        optional_scopes: ['orders:read'],
        created_at: toIso(clock.now()),
      });
      await svcJson(versionArgs(appId));
      const versions = await svcJson<JsonObject[]>(['app', 'versions', appId]);
      expect(versions.map((listed) => listed.number)).toEqual([1, 2]);
    });

    it.each([
      ['an unknown scope', ['--required-scopes', 'products:read teleport:write'], 'error: Unknown scope "teleport:write"'],
      ['a missing dependency', ['--required-scopes', 'products:write'], 'error: Required scope products:write needs products:read to be required too'],
      [
        'a plain-http redirect URL',
        ['--redirect-url', 'http://app.example.com/callback'],
        'error: Redirect URL "http://app.example.com/callback" must use https (http only for localhost)',
      ],
      ['a relative launch URL', ['--launch-url', '/launch'], 'error: Launch URL "/launch" is not an absolute URL'],
    ])('refuses a version with %s (exit 1)', async (_case, override, message) => {
      const { appId } = await newApp();
      const [flag, value] = override as [string, string];
      const argv = versionArgs(appId);
      argv[argv.indexOf(flag) + 1] = value;
      expect(await svc(argv)).toEqual({ code: 1, out: '', err: message });
      expect(await svcJson<JsonObject[]>(['app', 'versions', appId])).toEqual([]);
    });

    it('refuses an unknown app (exit 1)', async () => {
      expect(await svc(['app', 'versions', MISSING_ID])).toEqual({ code: 1, out: '', err: `error: No app ${MISSING_ID}` });
    });
  });

  describe('client secrets', () => {
    it('rotates: the new secret is shown once, the previous one stays valid for 24 hours', async () => {
      const { appId, secret: first } = await newApp();
      clock.advance(60_000);
      const rotatedAt = clock.now();
      const rotated = await svcJson(['app', 'secret', 'rotate', appId]);
      expect(rotated).toEqual({
        client_id: appId,
        client_secret: expect.stringMatching(/^svc_cs_/),
        previous_valid_until: toIso(rotatedAt + PREVIOUS_SECRET_MS),
      });
      expect(rotated.client_secret).not.toBe(first);

      const secrets = await svcJson<JsonObject[]>(['app', 'secret', 'list', appId]);
      expect(secrets).toEqual([
        expect.objectContaining({
          hint: first.slice(-4),
          status: 'previous',
          rotated_at: toIso(rotatedAt),
          valid_until: toIso(rotatedAt + 24 * 3600_000),
          revoked_at: null,
        }),
        expect.objectContaining({ hint: (rotated.client_secret as string).slice(-4), status: 'current', valid_until: null }),
      ]);
      expect(JSON.stringify(secrets)).not.toMatch(/svc_cs_|secret_hash/);

      clock.advance(PREVIOUS_SECRET_MS);
      const later = await svcJson<JsonObject[]>(['app', 'secret', 'list', appId]);
      expect(later.map((secret) => secret.status)).toEqual(['expired', 'current']);
    });

    it('takes a secret suffix starting with "-" as a value, not a flag (base64url has "-"); -h stays help', async () => {
      const { appId } = await newApp();
      expect(await svc(['app', 'secret', 'revoke', appId, '-x4Z'])).toEqual({
        code: 1,
        out: '',
        err: `error: No active client secret "-x4Z" for app ${appId}`,
      });
      expect(await svc(['app', 'secret', 'revoke', appId, '-x4Z', '-q1'])).toMatchObject({
        code: 2,
        err: expect.stringContaining('unexpected argument "-q1"'),
      });
      expect(await svc(['app', 'secret', 'revoke', appId, '-h'])).toMatchObject({ code: 0, out: expect.stringContaining('usage: svc app secret revoke') });
    });

    it('revokes a secret by its last four characters', async () => {
      const { appId, secret } = await newApp();
      clock.advance(1000);
      await svcJson(['app', 'secret', 'rotate', appId]);
      const run = await svc(['app', 'secret', 'revoke', appId, secret.slice(-4)]);
      expect(run.code).toBe(0);
      expect(run.out).toMatch(new RegExp(`^revoked_at\\s+${toIso(clock.now()).replace(/\./g, '\\.')}$`, 'm'));
      const secrets = await svcJson<JsonObject[]>(['app', 'secret', 'list', appId]);
      expect(secrets.map((listed) => listed.status)).toEqual(['revoked', 'current']);
      expect(await db('apps').where({ id: appId }).first()).toMatchObject({ auth_epoch: 3 });

      const again = await svc(['app', 'secret', 'revoke', appId, secret.slice(-4)]);
      expect(again).toEqual({ code: 1, out: '', err: `error: No active client secret "${secret.slice(-4)}" for app ${appId}` });
    });

    it('revokes a secret by its id', async () => {
      const { appId } = await newApp();
      const [listed] = await svcJson<JsonObject[]>(['app', 'secret', 'list', appId]);
      const revoked = await svcJson(['app', 'secret', 'revoke', appId, listed?.id as string]);
      expect(revoked).toMatchObject({ id: listed?.id, status: 'revoked', revoked_at: toIso(clock.now()) });
    });
  });

  describe('installations', () => {
    async function installation(): Promise<{ storeId: string; appId: string; installationId: string }> {
      const storeId = await newStore();
      const { appId } = await newApp();
      const version = await svcJson(versionArgs(appId));
      const consent = { storeId, appId, versionId: version.id as string, scopes: ['products:read'] };
      const installed = await recordConsent(db, clock.now(), consent);
      return { storeId, appId, installationId: installed.id };
    }

    it('lists installations, filtered by store or app', async () => {
      const { storeId, appId, installationId } = await installation();
      await installation();
      const byStore = await svcJson<JsonObject[]>(['installation', 'list', '--store', storeId]);
      expect(byStore).toEqual([
        {
          id: installationId,
          store_id: storeId,
          app_id: appId,
          version_id: expect.any(String),
          generation: 1,
          scopes: ['products:read'],
          grant_revision: 1,
          status: 'installed',
          installed_at: toIso(clock.now()),
          uninstalled_at: null,
        },
      ]);
      expect((await svcJson<JsonObject[]>(['installation', 'list', '--app', appId])).map((listed) => listed.id)).toEqual([installationId]);
      expect((await svcJson<JsonObject[]>(['installation', 'list'])).length).toBeGreaterThanOrEqual(2);
      const table = await svc(['installation', 'list', '--store', storeId]);
      expect(table.out.split('\n')).toEqual([expect.stringMatching(/^ID\s+STORE\s+APP\s+STATUS/), expect.stringContaining(installationId)]);
    });

    it('uninstalls: the status changes and app.uninstalled goes to the outbox', async () => {
      const { installationId } = await installation();
      clock.advance(1000);
      const uninstalled = await svcJson(['installation', 'uninstall', installationId]);
      expect(uninstalled).toMatchObject({ id: installationId, status: 'uninstalled', uninstalled_at: toIso(clock.now()) });
      const events = await db('outbox_events').where({ installation_id: installationId });
      expect(events.map((event: { type: string }) => event.type)).toEqual(['app.uninstalled']);

      const again = await svc(['installation', 'uninstall', installationId]);
      expect(again).toEqual({ code: 1, out: '', err: `error: Installation ${installationId} is not installed` });
    });

    it('reports an empty list visibly', async () => {
      expect((await svc(['installation', 'list', '--store', MISSING_ID])).out).toBe('(none)');
    });

    it("installs an app as the owner's consent would and prints its first token pair; scopes the version does not offer are refused", async () => {
      const storeId = await newStore();
      const { appId } = await newApp();
      await svcJson(versionArgs(appId));
      const tokens = await svcJson(['installation', 'create', appId, storeId]);
      expect(tokens).toMatchObject({
        access_token: expect.stringMatching(/^svc_at_/),
        refresh_token: expect.stringMatching(/^svc_rt_/),
        scope: 'products:read',
        store_id: storeId,
        installation_generation: 1,
      });
      const [installed] = await svcJson<JsonObject[]>(['installation', 'list', '--store', storeId]);
      expect(installed).toMatchObject({ id: tokens.installation_id, app_id: appId, status: 'installed' });
      const refused = await svc(['installation', 'create', appId, storeId, '--scopes', 'products:read payments:read']);
      expect(refused).toMatchObject({ code: 1, err: expect.stringContaining('INVALID_SCOPE') });
    });

    describe('a new token pair for an installed app', () => {
      const WIDE = 'orders:read payments:read products:read';
      let api: Express;

      beforeAll(() => {
        const services = createServices({ ...deps, rateLimits: { perInstallation: 1000, perClient: 1000 }, webhooks: { environment: 'test' } });
        api = createApp({ config: { validateResponses: true, exposeInternalErrors: true }, services });
      });

      /** An app installed with more than its required scopes, as the demo's is, and its first token pair. */
      async function installedWide(): Promise<{ storeId: string; appId: string; first: JsonObject }> {
        const storeId = await newStore();
        const { appId } = await newApp();
        await svcJson([...versionArgs(appId), '--optional-scopes', 'orders:read payments:read']);
        const first = await svcJson(['installation', 'create', appId, storeId, '--scopes', WIDE]);
        return { storeId, appId, first };
      }

      const readsOrders = async (storeId: string, tokens: JsonObject) => (await storeApi(api, storeId, 'orders', tokens.access_token as string)).status;
      const grantRevision = async (storeId: string) => (await svcJson<JsonObject[]>(['installation', 'list', '--store', storeId]))[0]?.grant_revision;

      it('without --scopes keeps the grant: the same scopes and grant revision, and the earlier token keeps every scope', async () => {
        const { storeId, appId, first } = await installedWide();
        const renewed = await svcJson(['installation', 'create', appId, storeId]);
        expect(renewed).toMatchObject({ scope: WIDE, installation_id: first.installation_id, installation_generation: 1 });
        expect(renewed.access_token).not.toBe(first.access_token);
        expect(await grantRevision(storeId)).toBe(1);
        expect([await readsOrders(storeId, first), await readsOrders(storeId, renewed)]).toEqual([200, 200]);
      });

      it('refuses --scopes that leave out scopes the installation holds unless --narrow names the narrowing (exit 1), and changes nothing', async () => {
        const { storeId, appId, first } = await installedWide();
        const refused = await svc(['installation', 'create', appId, storeId, '--scopes', 'products:read']);
        expect(refused).toEqual({
          code: 1,
          out: '',
          err: "error: --scopes removes orders:read, payments:read from the installation's grant (its live tokens lose them at once): add --narrow to narrow it",
        });
        expect(await grantRevision(storeId)).toBe(1);
        expect(await readsOrders(storeId, first)).toBe(200);
      });

      it('narrows with --narrow, saying which scopes it removes: the grant revision rises and the earlier token loses them', async () => {
        const { storeId, appId, first } = await installedWide();
        const narrowed = await svc(['installation', 'create', appId, storeId, '--scopes', 'products:read', '--narrow', '--json']);
        expect(narrowed).toMatchObject({ code: 0, err: 'narrowing the grant: removes orders:read, payments:read' });
        expect(JSON.parse(narrowed.out)).toMatchObject({ scope: 'products:read' });
        expect(await grantRevision(storeId)).toBe(2);
        expect(await readsOrders(storeId, first)).toBe(403);
      });

      it('widens without a word: scopes added take nothing from the earlier token', async () => {
        const storeId = await newStore();
        const { appId } = await newApp();
        await svcJson([...versionArgs(appId), '--optional-scopes', 'orders:read payments:read']);
        const first = await svcJson(['installation', 'create', appId, storeId, '--scopes', 'orders:read products:read']);
        const wider = await svc(['installation', 'create', appId, storeId, '--scopes', WIDE]);
        expect(wider).toMatchObject({ code: 0, err: '' });
        expect(await readsOrders(storeId, first)).toBe(200);
      });
    });
  });

  describe('store migration', () => {
    it('starts and ends a move; route_epoch rises', async () => {
      const storeId = await newStore();
      const started = await svcJson(['store', 'migration', 'start', storeId]);
      expect(started).toMatchObject({ id: storeId, routing_state: 'migrating', route_epoch: 1 });
      const twice = await svc(['store', 'migration', 'start', storeId]);
      expect(twice).toEqual({ code: 1, out: '', err: `error: Store ${storeId} is already migrating` });
      const ended = await svc(['store', 'migration', 'end', storeId]);
      expect(ended.code).toBe(0);
      expect(ended.out).toMatch(/^routing_state\s+active$/m);
      expect(ended.out).toMatch(/^route_epoch\s+2$/m);
      expect(await db('stores').where({ id: storeId }).first()).toMatchObject({ routing_state: 'active', route_epoch: 2 });
      const notMigrating = await svc(['store', 'migration', 'end', storeId]);
      expect(notMigrating).toEqual({ code: 1, out: '', err: `error: Store ${storeId} is not migrating` });
    });

    it('refuses an unknown store (exit 1)', async () => {
      const run = await svc(['store', 'migration', 'start', MISSING_ID]);
      expect(run).toEqual({ code: 1, out: '', err: `error: No store ${MISSING_ID}` });
    });
  });

  describe('housekeeping', () => {
    it('deletes what has expired, leaves what is live, and prints the rows deleted per table', async () => {
      await newStore('keeper@example.com');
      const owner = await db('store_owners').where({ email: 'keeper@example.com' }).first();
      const ended = await startSession(deps, owner.id);
      clock.advance(SESSION_MS / 2);
      const live = await startSession(deps, owner.id);
      clock.advance(SESSION_MS / 2);

      const run = await svc(['housekeeping']);
      expect(run).toMatchObject({ code: 0, err: '' });
      expect(run.out.split('\n')[0]).toMatch(/^TABLE\s+DELETED$/);
      expect(run.out).toMatch(/^dashboard_sessions\s+1$/m);
      const sessions = await db('dashboard_sessions').whereIn('session_hash', [ended.token, live.token].map(hashSecret)).pluck('session_hash');
      expect(sessions).toEqual([hashSecret(live.token)]);

      const again = await svcJson<JsonObject[]>(['housekeeping']);
      expect(again).toHaveLength(EXPIRY_RULES.length);
      expect(again).toContainEqual({ table: 'dashboard_sessions', deleted: 0, more_remain: false });
      expect(again.every((table) => table.deleted === 0)).toBe(true);
    });

    it('takes no arguments', async () => {
      expect(await svc(['housekeeping', 'now'])).toMatchObject({ code: 2, err: expect.stringContaining('svc: unexpected argument "now"') });
    });

    if (testDatabase.name === 'postgres') {
      it('does nothing beside a server that leads housekeeping, and says so (exit 1): it never sweeps or keeps partitions beside the leader', async () => {
        const leader = leadershipOn(await testDatabase.openAnother(), { retryMs: 20 });
        try {
          await until(async () => leader.held);
          expect(await svc(['housekeeping'])).toEqual({
            code: 1,
            out: '',
            err: `error: ${HOUSEKEEPING_LED_ELSEWHERE}`,
          });
        } finally {
          await leader.stop();
        }
        expect(await svc(['housekeeping'])).toMatchObject({ code: 0, err: '' });
      });
    }
  });

  describe('coupon create', () => {
    const couponArgs = (storeId: string, code: string, ...extra: string[]) => ['coupon', 'create', '--store', storeId, '--code', code, ...extra];
    const couponsOf = (storeId: string) => db('coupons').where({ store_id: storeId }).orderBy('id');

    it('creates a percentage coupon with every condition and prints it; 15.00 % is kept as 1500 hundredths', async () => {
      clock.set('2027-01-25T09:00:00.000Z');
      const storeId = await newStore();
      const run = await svc(
        couponArgs(
          storeId,
          'RAMADAN15',
          '--type',
          'percentage',
          '--amount',
          '15.00',
          '--starts-at',
          '2027-02-08T00:00:00+03:00',
          '--expires-at',
          '2027-03-09T20:59:59Z',
          '--usage-limit',
          '500',
          '--minimum-order',
          '200.00',
        ),
      );
      expect(run).toMatchObject({ code: 0, err: '' });
      const [row] = await couponsOf(storeId);
      expect(run.out.split('\n')).toEqual([
        `coupon_id      ${row.id}`,
        `store_id       ${storeId}`,
        'code           RAMADAN15',
        'type           percentage',
        'amount         15.00 %',
        'status         active',
        'starts_at      2027-02-07T21:00:00.000Z',
        'expires_at     2027-03-09T20:59:59.000Z',
        'usage_limit    500',
        'minimum_order  200.00 SAR',
        'free_shipping  no',
      ]);
      expect(row).toMatchObject({ code: 'RAMADAN15', type: 'percentage', status: 'active', usage_limit: 500, usage_count: 0 });
      expect([Number(row.amount_halalas), Number(row.minimum_order_halalas), Number(row.starts_at), Number(row.expires_at)]).toEqual([
        1500,
        20_000,
        Date.parse('2027-02-07T21:00:00Z'),
        Date.parse('2027-03-09T20:59:59Z'),
      ]);
    });

    it('prints one JSON document, the coupon as the store API shows it: a fixed, free-shipping, inactive one without dates or limits', async () => {
      clock.set('2027-01-26T10:00:00.000Z');
      const storeId = await newStore();
      const created = await svcJson(couponArgs(storeId, 'WELCOME50', '--type', 'fixed', '--amount', '50.00', '--free-shipping', '--inactive'));
      expect(created).toEqual({
        id: expect.any(Number),
        code: 'WELCOME50',
        type: 'fixed',
        amount: '50.00',
        status: 'inactive',
        starts_at: null,
        expires_at: null,
        usage_limit: null,
        usage_count: 0,
        minimum_order_amount: null,
        free_shipping: true,
        created_at: '2027-01-26T10:00:00.000Z',
        updated_at: '2027-01-26T10:00:00.000Z',
      });
      expect((await couponsOf(storeId)).map((row) => [row.id, Number(row.amount_halalas), Boolean(row.free_shipping)])).toEqual([[created.id, 5000, true]]);
    });

    it('takes a shipping-only coupon of 0.00 with --free-shipping', async () => {
      const storeId = await newStore();
      expect(await svcJson(couponArgs(storeId, 'SHIPFREE', '--type', 'fixed', '--amount', '0.00', '--free-shipping'))).toMatchObject({
        amount: '0.00',
        free_shipping: true,
        status: 'active',
      });
    });

    it.each<[string, string[], string]>([
      ['a type that is neither percentage nor fixed', ['--type', 'bogo', '--amount', '15.00'], '--type must be percentage or fixed, not "bogo"'],
      ['an amount without its decimals', ['--type', 'percentage', '--amount', '15'], '--amount must be an amount with two decimals, like 15.00, not "15"'],
      ['an amount that is not a number', ['--type', 'fixed', '--amount', 'ten'], '--amount must be an amount with two decimals'],
      ['a negative amount', ['--type', 'fixed', '--amount', '-5.00'], '--amount must be an amount with two decimals, like 15.00, not "-5.00"'],
      ['a start that is no date-time', ['--type', 'fixed', '--amount', '5.00', '--starts-at', 'tomorrow'], '--starts-at is not a valid date-time'],
      [
        'an expiry on a day that does not exist',
        ['--type', 'fixed', '--amount', '5.00', '--expires-at', '2027-02-30T00:00:00Z'],
        '--expires-at is not a date-time that exists',
      ],
      [
        'a usage limit that is not a whole number',
        ['--type', 'fixed', '--amount', '5.00', '--usage-limit', '2.5'],
        '--usage-limit must be a whole number, not "2.5"',
      ],
      [
        'a minimum order without decimals',
        ['--type', 'fixed', '--amount', '5.00', '--minimum-order', '200'],
        '--minimum-order must be an amount with two decimals',
      ],
      ['no --type', ['--amount', '5.00'], 'missing --type'],
      ['no --amount', ['--type', 'fixed'], 'missing --amount'],
    ])('is a usage error (exit 2, with the usage) for %s, and creates nothing', async (_why, extra, message) => {
      const storeId = await newStore();
      const run = await svc(couponArgs(storeId, 'EID20', ...extra));
      expect(run).toMatchObject({ code: 2, out: '' });
      expect(run.err).toContain(`svc: ${message}`);
      expect(run.err).toContain('usage: svc coupon create --store <storeId> --code <CODE> --type percentage|fixed --amount <amount>');
      expect(await couponsOf(storeId)).toEqual([]);
    });

    it('is a usage error (exit 2) for a store id that is not a UUID', async () => {
      expect(await svc(couponArgs('abc', 'EID20', '--type', 'fixed', '--amount', '5.00'))).toMatchObject({
        code: 2,
        err: expect.stringContaining('svc: --store must be a UUID, not "abc"'),
      });
    });

    it.each<[string, string, string[], string]>([
      ['a lower-case code', 'eid20', ['--type', 'fixed', '--amount', '5.00'], '--code must be 3 to 30 upper-case letters, digits, "_" or "-"'],
      ['a percentage over 100.00', 'EID20', ['--type', 'percentage', '--amount', '100.01'], '--amount must be more than 0.00'],
      [
        'a zero amount without free shipping',
        'EID20',
        ['--type', 'fixed', '--amount', '0.00'],
        '--amount must be more than 0.00 (0.00 only with free shipping)',
      ],
      [
        'an expiry before the start',
        'EID20',
        ['--type', 'fixed', '--amount', '5.00', '--starts-at', '2027-03-01T00:00:00Z', '--expires-at', '2027-02-01T00:00:00Z'],
        '--expires-at must be after starts_at',
      ],
      [
        'a usage limit of 0',
        'EID20',
        ['--type', 'fixed', '--amount', '5.00', '--usage-limit', '0'],
        '--usage-limit must be a whole number from 1 to 1000000000',
      ],
    ])("is the domain's refusal (exit 1) for %s, naming the flag, and creates nothing", async (_why, code, extra, message) => {
      const storeId = await newStore();
      const run = await svc(couponArgs(storeId, code, ...extra));
      expect(run).toMatchObject({ code: 1, out: '' });
      expect(run.err.startsWith(`error: coupon not created: ${message}`)).toBe(true);
      expect(await couponsOf(storeId)).toEqual([]);
    });

    it('refuses a code the store already has (exit 1) and keeps the first; another store may use it', async () => {
      const storeId = await newStore();
      const args = ['--type', 'fixed', '--amount', '5.00'];
      expect((await svc(couponArgs(storeId, 'EID-20', ...args))).code).toBe(0);
      const again = await svc(couponArgs(storeId, 'EID-20', '--type', 'percentage', '--amount', '10.00'));
      expect(again).toEqual({ code: 1, out: '', err: 'error: coupon not created: --code is the code of another coupon of the store' });
      expect((await couponsOf(storeId)).map((row) => row.type)).toEqual(['fixed']);
      expect((await svc(couponArgs(await newStore(), 'EID-20', ...args))).code).toBe(0);
    });

    it('refuses a store that does not exist (exit 1)', async () => {
      expect(await svc(couponArgs(MISSING_ID, 'EID20', '--type', 'fixed', '--amount', '5.00'))).toEqual({
        code: 1,
        out: '',
        err: `error: No store ${MISSING_ID}`,
      });
    });
  });

  describe('simulate', () => {
    const simulateArgs = (storeId: string, ...flags: string[]) => ['simulate', '--store', storeId, '--days', '10', '--orders', '40', ...flags];

    async function storeWithCatalog(): Promise<string> {
      const storeId = await newStore();
      await seedDemoCatalog(deps, storeId);
      return storeId;
    }

    it('plays the orders asked for in the store and prints the summary as one JSON document, telling its progress as it goes', async () => {
      clock.set('2026-11-22T10:00:00Z');
      const storeId = await storeWithCatalog();
      const progress: Array<[number, number]> = [];
      const out: string[] = [];
      const err: string[] = [];
      const argv = [...simulateArgs(storeId, '--seed', '7'), '--json'];
      const code = await runCli(argv, {
        deps,
        out: (line) => out.push(line),
        err: (line) => err.push(line),
        progress: (done, total) => progress.push([done, total]),
      });
      expect({ code, err }).toEqual({ code: 0, err: [] });
      const summary = JSON.parse(out.join('\n'));
      expect(summary).toEqual({
        store_id: storeId,
        seed: 7,
        days: 10,
        from: '2026-11-11T21:00:00.000Z',
        to: '2026-11-21T21:00:00.000Z',
        customers: expect.any(Number),
        orders: 40,
        paid: expect.any(Number),
        refunded: expect.any(Number),
        cancelled: expect.any(Number),
        failed_payments: expect.any(Number),
        carts: expect.any(Number),
        recovered: expect.any(Number),
        reviews: expect.any(Number),
        coupons_used: expect.any(Number),
        restocks: expect.any(Number),
        events: expect.any(Number),
      });
      expect(await db('orders').where({ store_id: storeId }).count({ n: '*' })).toEqual([{ n: 40 }]);
      expect(summary.events).toBe(Number((await db('outbox_events').where({ store_id: storeId }).count({ n: '*' }))[0]?.n));
      expect(progress.length).toBeGreaterThan(0);
      const [lastDone, total] = progress[progress.length - 1] ?? [];
      expect(lastDone).toBe(total);
      expect(progress.every(([done], index) => index === 0 || done > (progress[index - 1]?.[0] ?? 0))).toBe(true);
    });

    it('prints the summary as lines without --json, and refuses the same seed again (exit 1)', async () => {
      const storeId = await storeWithCatalog();
      const run = await svc(simulateArgs(storeId, '--seed', '8'));
      expect(run).toMatchObject({ code: 0, err: '' });
      expect(run.out).toMatch(/^orders\s+40$/m);
      expect(run.out).toMatch(/^carts\s+\d+ \(\d+ recovered\)$/m);
      expect(run.out).toMatch(/^events\s+\d+ written to the outbox$/m);
      const again = await svc(simulateArgs(storeId, '--seed', '8'));
      expect(again).toEqual({
        code: 1,
        out: '',
        err: `error: Store ${storeId} already holds the simulation of seed 8 (its orders and coupons): run again with another --seed.`,
      });
    });

    it('refuses a store with nothing for sale and an unknown store (exit 1)', async () => {
      const storeId = await newStore();
      const empty = await svc(simulateArgs(storeId, '--seed', '1'));
      expect(empty).toMatchObject({ code: 1, out: '' });
      expect(empty.err).toBe(
        `error: Store ${storeId} has no active, priced products: simulated shoppers would have nothing to buy. Activate and price some products first.`,
      );
      expect(await svc(simulateArgs(MISSING_ID, '--seed', '1'))).toEqual({ code: 1, out: '', err: `error: No store ${MISSING_ID}` });
    });

    it('answers numbers out of bounds or not whole, a missing flag and a store id that is no UUID with the usage (exit 2)', async () => {
      const storeId = MISSING_ID;
      const cases: Array<[string[], string]> = [
        [['simulate', '--store', storeId, '--days', '0', '--orders', '40', '--seed', '1'], '--days must be a whole number from 1 to 366, not "0"'],
        [['simulate', '--store', storeId, '--days', '367', '--orders', '40', '--seed', '1'], '--days must be a whole number from 1 to 366, not "367"'],
        [
          ['simulate', '--store', storeId, '--days', '10', '--orders', '1000001', '--seed', '1'],
          '--orders must be a whole number from 1 to 1000000, not "1000001"',
        ],
        [['simulate', '--store', storeId, '--days', '10', '--orders', '1e3', '--seed', '1'], '--orders must be a whole number from 1 to 1000000, not "1e3"'],
        [['simulate', '--store', storeId, '--days', '10', '--orders', '40', '--seed', '-1'], '--seed must be a whole number from 0 to 4294967295, not "-1"'],
        [
          ['simulate', '--store', storeId, '--days', '10', '--orders', '40', '--seed', '4294967296'],
          '--seed must be a whole number from 0 to 4294967295, not "4294967296"',
        ],
        [['simulate', '--store', 'abc', '--days', '10', '--orders', '40', '--seed', '1'], '--store must be a UUID, not "abc"'],
      ];
      for (const [argv, message] of cases) {
        const run = await svc(argv);
        expect(run).toMatchObject({ code: 2, out: '' });
        expect(run.err).toMatch(
          new RegExp(`^svc: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\nusage: svc simulate --store <storeId> --days <N> --orders <N> --seed <N>`),
        );
      }
      expect(await svc(['simulate', '--store', storeId, '--days', '10', '--orders', '40'])).toMatchObject({ code: 2, err: expect.stringContaining('--seed') });
    });

    it('stops between two batches when the process is asked to stop, keeping what was committed and saying so', async () => {
      const storeId = await storeWithCatalog();
      const stop = new AbortController();
      const run = await runSvc(['simulate', '--store', storeId, '--days', '30', '--orders', '5000', '--seed', '9', '--json'], {
        deps,
        progress: () => stop.abort(),
        stopping: () => ({ signal: stop.signal, begun: new Promise(() => {}) }),
      });
      expect(run).toMatchObject({ code: 0, err: '' });
      expect(JSON.parse(run.out)).toEqual({ store_id: storeId, seed: 9, stopped: true });
      const [{ n }] = (await db('orders').where({ store_id: storeId }).count({ n: '*' })) as [{ n: number | string }];
      expect(Number(n)).toBeLessThan(5000);
      expect(await svc(simulateArgs(storeId, '--seed', '9'))).toMatchObject({
        code: 1,
        err: expect.stringContaining('already holds the simulation of seed 9'),
      });
    });
  });

  describe('worker', () => {
    it('delivers until asked to stop, then stops claiming and ends (exit 0)', async () => {
      let askToStop: () => void = () => undefined;
      const begun = new Promise<void>((resolve) => {
        askToStop = resolve;
      });
      const services = createServices({ ...deps, rateLimits: { perInstallation: 1000, perClient: 1000 }, webhooks: { environment: 'test' } });
      const err: string[] = [];
      const out: string[] = [];
      const code = await runCli(['worker', '--concurrency', '2'], {
        deps,
        out: (line) => out.push(line),
        err: (line) => {
          err.push(line);
          if (line.startsWith('svc worker: delivering')) askToStop();
        },
        worker: {
          services: () => Promise.reject(new Error('svc worker takes the services that keep its metrics')),
          servicesWithMetrics: async () => ({ services, metricsUrl: 'http://127.0.0.1:9464/metrics' }),
        },
        stopping: () => ({ signal: new AbortController().signal, begun }),
      });
      expect({ code, out, err }).toEqual({
        code: 0,
        out: ['svc worker: stopped'],
        err: [
          'svc worker: metrics at http://127.0.0.1:9464/metrics',
          'svc worker: delivering webhooks with 2 attempts at once, at most 4 per subscription; stop with SIGINT or SIGTERM',
        ],
      });
    });

    it('refuses a concurrency that is not a whole number from 1 to 9999 (exit 2)', async () => {
      expect(await svc(['worker', '--concurrency', '0'])).toMatchObject({
        code: 2,
        err: expect.stringContaining('svc: --concurrency must be a whole number from 1 to 9999, not "0"'),
      });
    });
  });

  describe('command line', () => {
    it('answers an unknown command with the usage on err (exit 2)', async () => {
      const run = await svc(['store', 'frobnicate']);
      expect(run.code).toBe(2);
      expect(run.out).toBe('');
      expect(run.err).toMatch(/^svc: unknown command "store frobnicate"\nusage:\n/);
      expect(run.err).toContain('svc store migration start <storeId>');
      expect(run.err).not.toContain('svc app create');
    });

    it('answers no command, a half command, an unknown flag and a wrong argument count with exit 2', async () => {
      expect(await svc([])).toMatchObject({ code: 2, out: '', err: expect.stringContaining('svc: no command given') });
      expect(await svc(['app', 'secret'])).toMatchObject({ code: 2, err: expect.stringContaining('svc: incomplete command "app secret"') });
      expect(await svc(['app', 'list', '--verbose'])).toMatchObject({ code: 2, err: expect.stringContaining('svc: unknown flag --verbose') });
      expect(await svc(['app', 'list', '--store', MISSING_ID])).toMatchObject({ code: 2, err: expect.stringContaining('svc: unknown flag --store') });
      expect(await svc(['app', 'versions'])).toMatchObject({ code: 2, err: expect.stringContaining('svc: missing <appId>') });
      expect(await svc(['store', 'list', 'extra'])).toMatchObject({ code: 2, err: expect.stringContaining('svc: unexpected argument "extra"') });
      const malformed = await svc(['installation', 'uninstall', 'abc']);
      expect(malformed).toMatchObject({ code: 2, err: expect.stringContaining('svc: <installationId> must be a UUID, not "abc"') });
    });

    it('prints help on out (exit 0): everything, a group, or one command', async () => {
      const all = await svc(['help']);
      expect(all).toMatchObject({ code: 0, err: '' });
      expect(all.out).toContain('svc app version add <appId> --redirect-url <url>... --launch-url <url> --required-scopes "<scope> ..."');
      expect(all.out).toContain('svc installation uninstall <installationId>');
      expect(all.out).toContain('svc housekeeping');
      expect(all.out).toContain('svc migrate [--contract]\n');
      expect(all.out).toContain('svc installation create <appId> <storeId> [--scopes "<scope> ..."] [--narrow]');
      expect(all.out).toContain(
        'svc coupon create --store <storeId> --code <CODE> --type percentage|fixed --amount <amount> [--starts-at <date-time>] [--expires-at <date-time>] [--usage-limit <n>] [--minimum-order <amount>] [--free-shipping] [--inactive]',
      );
      const group = await svc(['help', 'app', 'secret']);
      expect(group.out.match(/svc app secret \w+/g)).toEqual(['svc app secret rotate', 'svc app secret revoke', 'svc app secret list']);
      const one = await svc(['app', 'secret', 'revoke', '--help']);
      expect(one).toMatchObject({ code: 0, err: '' });
      expect(one.out).toMatch(/^usage: svc app secret revoke <appId> <secretId-or-last-4-chars>$/m);
      expect((await svc(['--help'])).out).toBe(all.out);
    });

    it('answers a flag without its value, and suggests the flag meant, with exit 2', async () => {
      expect(await svc(['app', 'create', '--name'])).toMatchObject({
        code: 2,
        out: '',
        err: expect.stringMatching(/^svc: --name needs a value\nusage: svc app create /),
      });
      expect(await svc(['app', 'list', '--jsn'])).toMatchObject({ code: 2, err: expect.stringContaining('svc: unknown flag --jsn (Did you mean --json?)') });
    });

    it('takes --json anywhere on the line', async () => {
      const run = await svc(['--json', 'store', 'list']);
      expect(run.code).toBe(0);
      expect(Array.isArray(JSON.parse(run.out))).toBe(true);
    });
  });
});

describe.each(testDatabases())('svc and the schema of a new $name database', (testDatabase) => {
  let db: Knex;
  let deps: Deps;
  const NOT_MIGRATED = { code: 1, out: '', err: 'error: the database schema is not migrated: run svc migrate' };

  beforeAll(async () => {
    db = await testDatabase.open();
    deps = depsOf(db, new ManualClock());
  });
  afterAll(() => testDatabase.close());

  const svc = (...argv: string[]) => runSvc(argv, { deps });

  it('refuses a command that only reads with one line, and leaves the database as it was', async () => {
    for (const argv of [
      ['store', 'list'],
      ['app', 'list'],
      ['installation', 'list'],
      ['app', 'secret', 'list', MISSING_ID],
    ]) {
      expect(await svc(...argv)).toEqual(NOT_MIGRATED);
    }
    expect(await db.schema.hasTable('knex_migrations')).toBe(false);
  });

  it('svc migrate applies every migration, then says the schema is current; reads work from then on', async () => {
    const first = await svc('migrate');
    // A new database runs the contract phases at once (no previous release can run on it).
    const applied = [
      ...migrations.map((entry) => `applied ${entry.name}`),
      ...migrations.filter((entry) => entry.contract).map((entry) => `applied ${entry.name} (contract)`),
    ];
    expect(first).toEqual({ code: 0, out: applied.join('\n'), err: '' });
    expect(await svc('migrate')).toEqual({ code: 0, out: 'the database schema is current: nothing to apply', err: '' });
    expect(JSON.parse((await svc('migrate', '--json')).out)).toEqual({ applied: [], contract_pending: [] });
    expect(await svc('store', 'list')).toEqual({ code: 0, out: '(none)', err: '' });
  });

  it('refuses a read on a schema one migration behind, and a command that writes migrates first (the quick start needs nothing else)', async () => {
    // Migrations after 017 are recorded in svc_migrations (db/migrate.ts).
    const latest = await db('svc_migrations').orderBy('id', 'desc').first();
    await db('svc_migrations').where({ id: latest.id }).delete();
    expect(await pendingMigrations(db)).toEqual([latest.name]);
    expect(await svc('app', 'list')).toEqual(NOT_MIGRATED);
    await db('svc_migrations').insert(latest);
    await rollbackAll(db);
    const created = await runSvc(['store', 'create', '--name', 'First', '--domain', 'first.example', '--owner-email', 'first@example.com', '--json'], {
      deps,
      env: { SVC_OWNER_PASSWORD: PASSWORD },
    });
    expect(created).toMatchObject({ code: 0, err: '' });
    expect(await pendingMigrations(db)).toEqual([]);
  });
});

describe('svc help', () => {
  it('answers without opening the database, as do --help and a malformed line', async () => {
    let opened = 0;
    const deps = async (): Promise<Deps> => {
      opened += 1;
      throw new Error('svc help opened the database');
    };
    const lines: Array<[string[], number]> = [
      [['help'], 0],
      [['--help'], 0],
      [['help', 'app', 'secret'], 0],
      [['store', 'list', '--help'], 0],
      [['migrate', '-h'], 0],
      [['store', 'frobnicate'], 2],
      [['app', 'versions', 'abc'], 2],
    ];
    for (const [argv, code] of lines) expect((await runSvc(argv, { deps })).code).toBe(code);
    expect(opened).toBe(0);
  });
});

describe('the svc binary', () => {
  const serverDir = path.resolve(__dirname, '..', '..');
  const tsx = path.resolve(serverDir, '..', '..', 'node_modules', '.bin', 'tsx');
  let dataDir = '';
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-cli-'));
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  const svcBinary = (argv: string[], env: NodeJS.ProcessEnv) =>
    promisify(execFile)(tsx, ['src/cli/svc.ts', ...argv], { cwd: serverDir, env: { ...process.env, DATABASE_URL: '', ...env } });

  it('answers svc help without settings or a database: a data directory that cannot exist and a bad setting do not matter', async () => {
    const notADirectory = path.join(dataDir, 'a-file');
    fs.writeFileSync(notADirectory, '');
    const { stdout, stderr } = await svcBinary(['help'], { DATA_DIR: path.join(notADirectory, 'data'), PORT: 'not-a-port' });
    expect(stdout).toContain('svc migrate');
    expect(stderr).toBe('');
  }, 60_000);

  it('refuses a list on a new SQLite database until svc migrate has run, then prints an empty store list as JSON', async () => {
    const env = { DATA_DIR: path.join(dataDir, 'new') };
    await expect(svcBinary(['store', 'list', '--json'], env)).rejects.toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: the database schema is not migrated: run svc migrate\n',
    });
    expect((await svcBinary(['migrate'], env)).stdout).toMatch(/^applied 001_platform$/m);
    const { stdout, stderr } = await svcBinary(['store', 'list', '--json'], env);
    expect(JSON.parse(stdout)).toEqual([]);
    expect(stderr).toBe('');
  }, 60_000);
});

describe('the progress bar', () => {
  it('draws the share done, and is drawn in place on a terminal only, ending its line when the work is done', () => {
    expect(progressBar(0, 200, 10)).toBe('[----------]   0 %  0/200');
    expect(progressBar(50, 200, 10)).toBe('[###-------]  25 %  50/200');
    expect(progressBar(200, 200, 10)).toBe('[##########] 100 %  200/200');
    const written: string[] = [];
    const stream = (isTTY: boolean) => ({ isTTY, write: (text: string) => written.push(text) > 0 }) as unknown as NodeJS.WriteStream;
    expect(terminalProgress(stream(false))).toBeUndefined();
    const draw = terminalProgress(stream(true));
    draw?.(100, 200);
    draw?.(200, 200);
    expect(written).toEqual([`\r${progressBar(100, 200)} steps`, `\r${progressBar(200, 200)} steps`, '\n']);
  });
});
