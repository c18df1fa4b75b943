import { createApp } from '../../src/app';
import { loadConfig } from '../../src/core/config';
import * as passwords from '../../src/credentials/passwords';
import { ADDRESS_BLOCK_S, FAILURES_IN_A_ROW, FAILURES_PER_ADDRESS_PER_DAY, FIRST_PAIR_BLOCK_S, SIGN_IN_LIMITS_TABLE } from '../../src/dashboard/sign-in-guard';
import { engineOfHandle } from '../../src/db/engine';
import { createServices } from '../../src/services/container';
import { testDatabases } from '../support/databases';
import { BrowserAt, type PlainResponse } from '../support/from-address';
import { createTestStore, type StoreFixture, suiteHarness } from '../support/harness';
import { type Listening, listen } from '../support/listen';

const SESSION_COOKIE = 'svc_session';
const WRONG_PASSWORD = 'not the password';

const setCookieLines = (response: PlainResponse): string[] => response.headers['set-cookie'] ?? [];
const startsSession = (response: PlainResponse) => setCookieLines(response).some((line) => line.startsWith(`${SESSION_COOKIE}=`) && !/max-age=0/i.test(line));

function expectSignedIn(response: PlainResponse): void {
  expect(response.status).toBe(303);
  expect(response.headers.location).toBe('/dashboard');
  expect(startsSession(response)).toBe(true);
}

function expectWrongPassword(response: PlainResponse): void {
  expect(response.status).toBe(401);
  expect(response.headers['retry-after']).toBeUndefined();
  expect(startsSession(response)).toBe(false);
}

function expectRefused(response: PlainResponse, retryAfterSeconds: number): void {
  expect(response.status).toBe(429);
  expect(response.headers['retry-after']).toBe(String(retryAfterSeconds));
  expect(response.headers['content-type']).toMatch(/^text\/html/);
  expect(response.text).toContain('Too many failed attempts');
  expect(startsSession(response)).toBe(false);
}

/** Wrong passwords for `email` until the pair is blocked: 401 for each until the last, which is 429. */
async function failUntilBlocked(browser: BrowserAt, email: string, headers: Record<string, string> = {}): Promise<PlainResponse> {
  for (let failure = 1; failure < FAILURES_IN_A_ROW; failure += 1) expectWrongPassword(await browser.signIn(email, WRONG_PASSWORD, headers));
  const blocking = await browser.signIn(email, WRONG_PASSWORD, headers);
  expectRefused(blocking, FIRST_PAIR_BLOCK_S);
  return blocking;
}

describe.each(testDatabases())('dashboard sign-in protection on $name, over HTTP from several loopback addresses', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  h.atEnd(() => server.close());
  let server: Listening;
  const closing: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    server = await listen(h.app);
  });
  beforeEach(async () => {
    // rate-limiter-flexible reads Date.now() itself: it follows the manual clock here, as it follows the system clock in service.
    jest.spyOn(Date, 'now').mockImplementation(() => h.clock.now());
    await h.db(SIGN_IN_LIMITS_TABLE).delete();
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    for (const close of closing.splice(0)) await close();
  });

  const browserAt = (address: string, listening: Listening = server) => new BrowserAt(listening.origin, address);

  /** Another app over the same services (database and clock), listening on a port of its own. */
  async function anotherApp(env: NodeJS.ProcessEnv, services = h.services): Promise<Listening> {
    const listening = await listen(createApp({ config: loadConfig({ NODE_ENV: 'test', ...env }), services }));
    closing.push(() => listening.close());
    return listening;
  }

  it('the owner signs in at once from 127.0.0.2 after 40 wrong passwords for their e-mail from 127.0.0.1', async () => {
    const owner = await createTestStore(h);
    const attacker = browserAt('127.0.0.1');
    const answers: number[] = [];
    for (let attempt = 0; attempt < 40; attempt += 1) answers.push((await attacker.signIn(owner.email, WRONG_PASSWORD)).status);
    expect(answers).toEqual([...Array<number>(FAILURES_IN_A_ROW - 1).fill(401), ...Array<number>(40 - FAILURES_IN_A_ROW + 1).fill(429)]);

    expectSignedIn(await browserAt('127.0.0.2').signIn(owner.email, owner.password));
  });

  describe('consecutive failures per (e-mail, address)', () => {
    let owner: StoreFixture;
    beforeEach(async () => {
      owner = await createTestStore(h);
    });

    it('block the pair after 10 in a row, even for the right password, with Retry-After, until the block ends', async () => {
      const browser = browserAt('127.0.0.1');
      expect((await failUntilBlocked(browser, owner.email)).text).toContain('Try again in 15 minutes.');
      expectRefused(await browser.signIn(owner.email, owner.password), FIRST_PAIR_BLOCK_S);
      expect(await h.db('dashboard_sessions').where({ owner_id: owner.owner.id })).toHaveLength(0);

      h.clock.advance(FIRST_PAIR_BLOCK_S * 1000 - 1000);
      const lastSecond = await browser.signIn(owner.email, owner.password);
      expectRefused(lastSecond, 1);
      expect(lastSecond.text).toContain('Try again in a minute.');
      h.clock.advance(1000);
      expectSignedIn(await browser.signIn(owner.email, owner.password));
    });

    it('a blocked caller is refused before its password is hashed', async () => {
      const browser = browserAt('127.0.0.1');
      await failUntilBlocked(browser, owner.email);
      const verify = jest.spyOn(passwords, 'verifyPassword');
      expectRefused(await browser.signIn(owner.email, owner.password), FIRST_PAIR_BLOCK_S);
      expect(verify).not.toHaveBeenCalled();
    });

    it('each further block of the same run lasts twice as long; a success ends the run', async () => {
      const browser = browserAt('127.0.0.1');
      await failUntilBlocked(browser, owner.email);
      h.clock.advance(FIRST_PAIR_BLOCK_S * 1000);
      for (let failure = 1; failure < FAILURES_IN_A_ROW; failure += 1) expectWrongPassword(await browser.signIn(owner.email, WRONG_PASSWORD));
      expectRefused(await browser.signIn(owner.email, WRONG_PASSWORD), 2 * FIRST_PAIR_BLOCK_S);

      h.clock.advance(2 * FIRST_PAIR_BLOCK_S * 1000);
      expectSignedIn(await browser.signIn(owner.email, owner.password));
      await failUntilBlocked(new BrowserAt(server.origin, '127.0.0.1'), owner.email);
    });

    it('a success before the limit starts the count again', async () => {
      const browser = browserAt('127.0.0.1');
      for (let failure = 1; failure < FAILURES_IN_A_ROW; failure += 1) expectWrongPassword(await browser.signIn(owner.email, WRONG_PASSWORD));
      expectSignedIn(await browser.signIn(owner.email, owner.password));
      await failUntilBlocked(browserAt('127.0.0.1'), owner.email);
    });

    it('other e-mails from the same address are not blocked by one e-mail’s run', async () => {
      const other = await createTestStore(h);
      const browser = browserAt('127.0.0.1');
      await failUntilBlocked(browser, owner.email);
      expectSignedIn(await browser.signIn(other.email, other.password));
    });
  });

  it('one address trying many e-mails is blocked after 100 failures, for a day, even for an owner’s right password', async () => {
    const owner = await createTestStore(h);
    const guesser = browserAt('127.0.0.3');
    for (let failure = 1; failure < FAILURES_PER_ADDRESS_PER_DAY; failure += 1)
      expectWrongPassword(await guesser.signIn(`nobody-${failure}@example.com`, WRONG_PASSWORD));
    const blocking = await guesser.signIn('nobody-last@example.com', WRONG_PASSWORD);
    expectRefused(blocking, ADDRESS_BLOCK_S);
    expect(blocking.text).toContain('Try again in 24 hours.');
    expectRefused(await guesser.signIn(owner.email, owner.password), ADDRESS_BLOCK_S);

    expectSignedIn(await browserAt('127.0.0.4').signIn(owner.email, owner.password));
    h.clock.advance(ADDRESS_BLOCK_S * 1000);
    expectSignedIn(await guesser.signIn(owner.email, owner.password));
    // 100 sign-ins each hash a password with scrypt on purpose: room for a machine busy with other suites.
  }, 120_000);

  it('the blocked answer is the same whether or not the e-mail belongs to an owner', async () => {
    const owner = await createTestStore(h);
    const stranger = `nobody-${Date.now()}@example.com`;
    /** The page as it would read for any e-mail: the typed e-mail and the form token set aside. */
    const comparable = (response: PlainResponse, email: string) => ({
      status: response.status,
      retryAfter: response.headers['retry-after'],
      headerNames: Object.keys(response.headers)
        .filter((name) => !['date', 'x-request-id'].includes(name))
        .sort(),
      text: response.text.replaceAll(email, '<email>').replace(/name="csrf" value="[^"]*"/, 'name="csrf" value="<csrf>"'),
    });
    const known = browserAt('127.0.0.5');
    const unknown = browserAt('127.0.0.6');
    expect(comparable(await failUntilBlocked(known, owner.email), owner.email)).toEqual(comparable(await failUntilBlocked(unknown, stranger), stranger));
    expect(comparable(await known.signIn(owner.email, owner.password), owner.email)).toEqual(
      comparable(await unknown.signIn(stranger, WRONG_PASSWORD), stranger),
    );
  });

  describe('the counted address', () => {
    it('without TRUST_PROXY, X-Forwarded-For is ignored: a client cannot choose the address it is counted against', async () => {
      const owner = await createTestStore(h);
      const browser = browserAt('127.0.0.1');
      for (let failure = 1; failure <= FAILURES_IN_A_ROW; failure += 1) {
        const response = await browser.signIn(owner.email, WRONG_PASSWORD, { 'X-Forwarded-For': `203.0.113.${failure}` });
        expect(response.status).toBe(failure < FAILURES_IN_A_ROW ? 401 : 429);
      }
      expectRefused(await browser.signIn(owner.email, owner.password, { 'X-Forwarded-For': '198.51.100.1' }), FIRST_PAIR_BLOCK_S);
    });

    it('with TRUST_PROXY=loopback, the address a loopback proxy forwards is counted', async () => {
      const owner = await createTestStore(h);
      const behindProxy = await anotherApp({ TRUST_PROXY: 'loopback' });
      const proxy = browserAt('127.0.0.1', behindProxy);
      await failUntilBlocked(proxy, owner.email, { 'X-Forwarded-For': '203.0.113.7' });
      expectRefused(await proxy.signIn(owner.email, owner.password, { 'X-Forwarded-For': '203.0.113.7' }), FIRST_PAIR_BLOCK_S);
      expectSignedIn(await proxy.signIn(owner.email, owner.password, { 'X-Forwarded-For': '203.0.113.8' }));
    });
  });

  it('two instances of the service on one database share the counters', async () => {
    const owner = await createTestStore(h);
    const secondDatabase = await testDatabase.openAnother();
    const second = await anotherApp(
      {},
      createServices({ db: secondDatabase, engine: engineOfHandle(secondDatabase), clock: h.clock, rateLimits: { perInstallation: 1000, perClient: 1000 } }),
    );
    const throughFirst = browserAt('127.0.0.1');
    const throughSecond = browserAt('127.0.0.1', second);
    for (let failure = 1; failure < FAILURES_IN_A_ROW; failure += 1)
      expectWrongPassword(await (failure % 2 === 0 ? throughFirst : throughSecond).signIn(owner.email, WRONG_PASSWORD));
    expectRefused(await throughFirst.signIn(owner.email, WRONG_PASSWORD), FIRST_PAIR_BLOCK_S);
    expectRefused(await throughSecond.signIn(owner.email, owner.password), FIRST_PAIR_BLOCK_S);
  });

  describe('cookies', () => {
    const attributes = (line: string) =>
      line
        .split(';')
        .slice(1)
        .map((part) => part.trim().toLowerCase());

    it('the session cookie is HttpOnly, SameSite=Lax, for the whole origin, for 12 hours; the form token cookie lasts the browser session and is dropped at sign-in', async () => {
      const owner = await createTestStore(h);
      const browser = browserAt('127.0.0.1');
      const page = await browser.send({ path: '/dashboard/login' });
      const [formCookie = ''] = setCookieLines(page);
      expect(formCookie).toMatch(/^svc_login_csrf=[A-Za-z0-9_-]{43};/);
      expect(attributes(formCookie)).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/']));
      expect(attributes(formCookie).some((part) => part.startsWith('max-age') || part.startsWith('expires') || part === 'secure')).toBe(false);

      const signedIn = await browser.signIn(owner.email, owner.password);
      const session = setCookieLines(signedIn).find((line) => line.startsWith(`${SESSION_COOKIE}=`)) ?? '';
      expect(attributes(session)).toEqual(expect.arrayContaining(['httponly', 'samesite=lax', 'path=/', 'max-age=43200']));
      expect(attributes(session)).not.toContain('secure');
      const dropped = setCookieLines(signedIn).find((line) => line.startsWith('svc_login_csrf=')) ?? '';
      expect(dropped).toMatch(/^svc_login_csrf=;/);
      expect(attributes(dropped)).toEqual(expect.arrayContaining(['max-age=0', 'path=/']));
    });

    it('are Secure when the request came over HTTPS through a trusted proxy, and not when an untrusted client says so', async () => {
      const owner = await createTestStore(h);
      const overHttps = { 'X-Forwarded-Proto': 'https' };
      const trusted = await browserAt('127.0.0.1', await anotherApp({ TRUST_PROXY: 'loopback' })).signIn(owner.email, owner.password, overHttps);
      expect(setCookieLines(trusted).length).toBeGreaterThan(0);
      for (const line of setCookieLines(trusted)) expect(attributes(line)).toContain('secure');
      const untrusted = await browserAt('127.0.0.1').signIn(owner.email, owner.password, overHttps);
      expect(setCookieLines(untrusted).length).toBeGreaterThan(0);
      for (const line of setCookieLines(untrusted)) expect(attributes(line)).not.toContain('secure');
    });
  });
});
