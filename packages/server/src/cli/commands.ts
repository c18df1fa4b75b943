import { ApiError } from '../core/errors';
import { UUID_PATTERN } from '../core/ids';
import { readDateTime } from '../core/instants';
import { MONEY_PATTERN, toHalalas } from '../core/money';
import { createCoupon, type NewCoupon } from '../domain/storefront/coupons/changes';
import type { CouponRow, CouponType } from '../domain/storefront/coupons/row';
import { couponView } from '../domain/storefront/coupons/view';
import { runHousekeeping } from '../jobs/housekeeping';
import { createDispatcher, DISPATCHER_DEFAULTS } from '../jobs/webhook-dispatcher';
import { installDirectly } from '../oauth/direct-install';
import type { App } from '../platform/apps';
import {
  addVersion,
  findApp,
  latestVersion,
  listApps,
  listClientSecrets,
  listVersions,
  registerApp,
  revokeClientSecret,
  rotateClientSecret,
} from '../platform/apps';
import { listInstallations, uninstall } from '../platform/installations';
import type { Deps, Services } from '../platform/services';
import type { Store } from '../platform/stores';
import { createStore, endStoreMigration, findOwnerByEmail, findStore, listStores, PlatformError, startStoreMigration } from '../platform/stores';
import { SIMULATION_BOUNDS, simulateStore } from '../seeds/simulation/run';
import {
  appJson,
  installationJson,
  instantCell,
  keyValues,
  listCell,
  ownerJson,
  type Report,
  secretJson,
  secretStatus,
  simulationFacts,
  simulationJson,
  storeJson,
  table,
  versionJson,
} from './output';
import { type CommandSpec, type Invocation, type OptionSpec, parseCommandLine, stringValue, stringValues, usageText } from './parse';

export interface CliIo {
  readonly deps: Deps;
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  /** Where `SVC_OWNER_PASSWORD` is read from; `process.env` unless a test gives its own. */
  readonly env?: NodeJS.ProcessEnv;
  /** Told how far a long command is (work done, of all): `svc` draws a bar when stderr is a terminal. */
  readonly progress?: ((done: number, total: number) => void) | undefined;
  /** What `svc worker` runs with: the process's services (sealing key, webhook settings) and when to stop. */
  readonly worker?: WorkerIo;
}

export interface WorkerIo {
  services(): Services;
  /** Resolves when the worker is asked to stop (SIGINT, SIGTERM). */
  untilStopped(): Promise<void>;
}

/** A malformed argument found while running (an id that is not a UUID): exit 2 like a parse error. */
class UsageError extends Error {}

/** What a command's code sees: the injected deps and checked accessors for its arguments. */
interface Context {
  readonly deps: Deps;
  readonly env: NodeJS.ProcessEnv;
  readonly worker: WorkerIo | undefined;
  readonly err: (line: string) => void;
  option(name: string): string | undefined;
  /** A flag the spec marks required: the parser has already refused a line without it. */
  required(name: string): string;
  list(name: string): string[];
  /** Whether a boolean flag was given. */
  flag(name: string): boolean;
  arg(name: string): string;
  /** A positional id: checked to be a UUID, so PostgreSQL's uuid columns never see anything else. */
  id(arg: string): string;
  optionalId(option: string): string | undefined;
  /** A required flag's whole number within bounds. */
  wholeNumber(option: string, bounds: { min: number; max: number }): number;
  readonly progress?: ((done: number, total: number) => void) | undefined;
}

interface Command extends CommandSpec {
  run(context: Context): Promise<Report>;
}

function checkUuid(value: string, what: string): string {
  if (!UUID_PATTERN.test(value)) throw new UsageError(`${what} must be a UUID, not "${value}"`);
  return value;
}

function contextFor({ command, args, values }: Invocation<Command>, io: CliIo): Context {
  const option = (name: string) => stringValue(values, name);
  const arg = (name: string) => {
    const value = args[name];
    // The parser supplies every declared argument, so this is a mistake in COMMANDS.
    if (value === undefined) throw new Error(`svc ${command.words.join(' ')} declares no argument <${name}>`);
    return value;
  };
  return {
    deps: io.deps,
    env: io.env ?? process.env,
    worker: io.worker,
    err: io.err,
    option,
    required(name) {
      const value = option(name);
      if (value === undefined) throw new UsageError(`missing --${name}`);
      return value;
    },
    list: (name) => stringValues(values, name),
    flag: (name) => values[name] === true,
    arg,
    id: (name) => checkUuid(arg(name), `<${name}>`),
    optionalId(name) {
      const value = option(name);
      return value === undefined ? undefined : checkUuid(value, `--${name}`);
    },
    wholeNumber(name, { min, max }) {
      const value = option(name) ?? '';
      const number = /^[0-9]{1,16}$/.test(value) ? Number(value) : Number.NaN;
      if (!(number >= min && number <= max)) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, not "${value}"`);
      return number;
    },
    progress: io.progress,
  };
}

const text = (placeholder: string, extra: Omit<OptionSpec, 'type' | 'placeholder'> = {}): OptionSpec => ({ type: 'string', placeholder, ...extra });

/** Scope flags take one space-separated argument, the way OAuth writes scope lists. */
const scopesOf = (value: string | undefined): string[] => (value ?? '').split(/\s+/).filter((scope) => scope !== '');

const SECRET_ARG = 'secretId-or-last-4-chars';

const SHOWN_ONCE = '(shown once: store it now)';

// ---- stores ----

const storeFacts = (store: Store): Array<[string, string]> => [
  ['store_id', store.id],
  ['name', store.name],
  ['domain', store.domain],
  ['routing_state', store.routing_state],
  ['route_epoch', String(store.route_epoch)],
];

const storeReport = (store: Store): Report => ({ json: storeJson(store), lines: keyValues(storeFacts(store)) });

/**
 * A new owner needs a password; without one, say so plainly rather than let the domain report a
 * too-short empty password. An existing owner keeps theirs, so none is needed then.
 */
async function ownerPassword(context: Context, email: string): Promise<string> {
  const password = context.option('password') ?? context.env.SVC_OWNER_PASSWORD ?? '';
  if (password === '' && !(await findOwnerByEmail(context.deps.db, email))) {
    throw new PlatformError(`${email} has no account yet: give the new owner's password with --password or SVC_OWNER_PASSWORD`);
  }
  return password;
}

async function storeCreate(context: Context): Promise<Report> {
  const email = context.required('owner-email');
  const password = await ownerPassword(context, email);
  const { store, owner, ownerCreated } = await createStore(context.deps, {
    name: context.required('name'),
    domain: context.required('domain'),
    owner: { email, name: context.option('owner-name') ?? '', password },
  });
  const account = ownerCreated ? 'new account' : `existing account${password === '' ? '' : '; password unchanged'}`;
  return {
    json: { store: storeJson(store), owner: ownerJson(owner), owner_created: ownerCreated },
    lines: keyValues([...storeFacts(store), ['owner', `${owner.email} (${account})`]]),
  };
}

async function storeList(context: Context): Promise<Report> {
  const stores = await listStores(context.deps.db);
  return {
    json: stores.map(storeJson),
    lines: table(
      ['ID', 'DOMAIN', 'NAME', 'ROUTING', 'EPOCH', 'CREATED'],
      stores.map((store) => [store.id, store.domain, store.name, store.routing_state, String(store.route_epoch), instantCell(store.created_at)]),
    ),
  };
}

// ---- apps ----

async function requireApp(context: Context, arg: string): Promise<App> {
  const appId = context.id(arg);
  const app = await findApp(context.deps.db, appId);
  if (!app) throw new PlatformError(`No app ${appId}`);
  return app;
}

const appType = (app: App): string => (app.store_id === null ? 'public' : `private to store ${app.store_id}`);

async function appCreate(context: Context): Promise<Report> {
  const storeId = context.optionalId('store');
  const { app, clientSecret } = await registerApp(context.deps, { name: context.required('name'), ...(storeId ? { storeId } : {}) });
  return {
    json: { app: appJson(app), client_id: app.id, client_secret: clientSecret },
    lines: keyValues([
      ['client_id', app.id],
      ['name', app.name],
      ['type', appType(app)],
      ['client_secret', `${clientSecret}  ${SHOWN_ONCE}`],
    ]),
  };
}

async function appList(context: Context): Promise<Report> {
  const apps = await listApps(context.deps.db);
  return {
    json: apps.map(appJson),
    lines: table(
      ['CLIENT_ID', 'NAME', 'TYPE', 'AUTH_EPOCH', 'CREATED'],
      apps.map((app) => [app.id, app.name, appType(app), String(app.auth_epoch), instantCell(app.created_at)]),
    ),
  };
}

async function versionAdd(context: Context): Promise<Report> {
  const app = await requireApp(context, 'appId');
  const version = await addVersion(context.deps, app.id, {
    redirectUrls: context.list('redirect-url'),
    launchUrl: context.required('launch-url'),
    requiredScopes: scopesOf(context.option('required-scopes')),
    optionalScopes: scopesOf(context.option('optional-scopes')),
  });
  return {
    json: versionJson(version),
    lines: keyValues([
      ['version_id', version.id],
      ['number', String(version.number)],
      ['redirect_urls', listCell(version.redirectUrls)],
      ['launch_url', version.launchUrl],
      ['required_scopes', listCell(version.requiredScopes)],
      ['optional_scopes', listCell(version.optionalScopes)],
    ]),
  };
}

async function versionList(context: Context): Promise<Report> {
  const app = await requireApp(context, 'appId');
  const versions = await listVersions(context.deps.db, app.id);
  return {
    json: versions.map(versionJson),
    lines: table(
      ['NUMBER', 'ID', 'CREATED', 'LAUNCH_URL', 'REDIRECT_URLS', 'REQUIRED_SCOPES', 'OPTIONAL_SCOPES'],
      versions.map((version) => [
        String(version.number),
        version.id,
        instantCell(version.createdAt),
        version.launchUrl,
        listCell(version.redirectUrls),
        listCell(version.requiredScopes),
        listCell(version.optionalScopes),
      ]),
    ),
  };
}

async function secretRotate(context: Context): Promise<Report> {
  const app = await requireApp(context, 'appId');
  const { clientSecret, previousValidUntil } = await rotateClientSecret(context.deps, app.id);
  return {
    json: { client_id: app.id, client_secret: clientSecret, previous_valid_until: instantCell(previousValidUntil) },
    lines: keyValues([
      ['client_id', app.id],
      ['client_secret', `${clientSecret}  ${SHOWN_ONCE}`],
      ['previous_valid_until', `${instantCell(previousValidUntil)}  (the previous secret works until then)`],
    ]),
  };
}

async function secretRevoke(context: Context): Promise<Report> {
  const app = await requireApp(context, 'appId');
  const idOrHint = context.arg(SECRET_ARG);
  const secret = await revokeClientSecret(context.deps, app.id, idOrHint);
  return {
    json: secretJson(secret, context.deps.clock.now()),
    lines: keyValues([
      ['secret_id', secret.id],
      ['hint', `…${secret.hint}`],
      ['revoked_at', instantCell(secret.revokedAt)],
    ]),
  };
}

async function secretList(context: Context): Promise<Report> {
  const app = await requireApp(context, 'appId');
  const secrets = await listClientSecrets(context.deps.db, app.id);
  const now = context.deps.clock.now();
  return {
    json: secrets.map((secret) => secretJson(secret, now)),
    lines: table(
      ['ID', 'HINT', 'STATUS', 'CREATED', 'VALID_UNTIL', 'REVOKED'],
      secrets.map((secret) => [
        secret.id,
        `…${secret.hint}`,
        secretStatus(secret, now),
        instantCell(secret.createdAt),
        instantCell(secret.validUntil),
        instantCell(secret.revokedAt),
      ]),
    ),
  };
}

// ---- installations ----

async function installationList(context: Context): Promise<Report> {
  const storeId = context.optionalId('store');
  const appId = context.optionalId('app');
  const installations = await listInstallations(context.deps.db, { ...(storeId ? { storeId } : {}), ...(appId ? { appId } : {}) });
  return {
    json: installations.map(installationJson),
    lines: table(
      ['ID', 'STORE', 'APP', 'STATUS', 'GEN', 'INSTALLED', 'UNINSTALLED', 'SCOPES'],
      installations.map((installation) => [
        installation.id,
        installation.storeId,
        installation.appId,
        installation.status,
        String(installation.generation),
        instantCell(installation.installedAt),
        instantCell(installation.uninstalledAt),
        listCell(installation.scopes),
      ]),
    ),
  };
}

async function installationUninstall(context: Context): Promise<Report> {
  const installation = await uninstall(context.deps, context.id('installationId'));
  return {
    json: installationJson(installation),
    lines: keyValues([
      ['installation_id', installation.id],
      ['status', installation.status],
      ['uninstalled_at', instantCell(installation.uninstalledAt)],
      ['note', 'every token of the installation is revoked; app.uninstalled is queued for the app'],
    ]),
  };
}

async function installationCreate(context: Context): Promise<Report> {
  const appId = context.id('appId');
  const storeId = context.id('storeId');
  const version = await latestVersion(context.deps.db, appId);
  if (!version) throw new PlatformError(`App ${appId} has no version to install`);
  const scopes = context.option('scopes') === undefined ? version.requiredScopes : scopesOf(context.option('scopes'));
  const tokens = await installDirectly(context.deps, { storeId, appId, scopes, redirectUri: version.redirectUrls[0] as string });
  return {
    json: { ...tokens },
    lines: keyValues([
      ['installation_id', tokens.installation_id],
      ['generation', String(tokens.installation_generation)],
      ['scope', tokens.scope],
      ['access_token', `${tokens.access_token}  (valid ${tokens.expires_in} s)`],
      ['refresh_token', tokens.refresh_token],
    ]),
  };
}

// ---- coupons ----

const COUPON_TYPES: readonly CouponType[] = ['percentage', 'fixed'];

/** An amount (`15.00`) in hundredths; malformed is a usage error, a value out of the coupon's range is the domain's refusal. */
function parseAmount(name: string, value: string): number {
  if (!MONEY_PATTERN.test(value)) throw new UsageError(`--${name} must be an amount with two decimals, like 15.00, not "${value}"`);
  return toHalalas(value);
}

function parseInstant(name: string, value: string): number {
  const reading = readDateTime(value);
  if ('problem' in reading) throw new UsageError(`--${name} is ${reading.problem} (RFC 3339, like 2027-03-09T20:59:59Z): "${value}"`);
  return reading.instant;
}

function parseCount(name: string, value: string): number {
  if (!/^[0-9]{1,15}$/.test(value)) throw new UsageError(`--${name} must be a whole number, not "${value}"`);
  return Number(value);
}

/** An optional flag read by `parse`; null when it is not given (the coupon's "none"). */
function optionalFlag(context: Context, name: string, parse: (name: string, value: string) => number): number | null {
  const value = context.option(name);
  return value === undefined ? null : parse(name, value);
}

/** The flag a field of the domain's refusal came from, so the message names what the operator typed. */
const COUPON_FLAGS: Readonly<Record<string, string>> = {
  '/code': '--code',
  '/type': '--type',
  '/amount': '--amount',
  '/starts_at': '--starts-at',
  '/expires_at': '--expires-at',
  '/usage_limit': '--usage-limit',
  '/minimum_order_amount': '--minimum-order',
};

/** The domain's refusal in the operator's words: each rule broken, by flag, or the refusal's own message. */
function couponRefusal(error: ApiError): PlatformError {
  const details = error.extras.details ?? [];
  if (details.length === 0) return new PlatformError(error.message);
  const problems = details.map((detail) => `${(detail.field !== undefined && COUPON_FLAGS[detail.field]) || detail.field} ${detail.message}`);
  return new PlatformError(`coupon not created: ${problems.join('; ')}`);
}

const couponAmountCell = (coupon: CouponRow, amount: string): string => (coupon.type === 'percentage' ? `${amount} %` : `${amount} SAR`);

async function couponCreate(context: Context): Promise<Report> {
  const storeId = checkUuid(context.required('store'), '--store');
  const type = COUPON_TYPES.find((known) => known === context.required('type'));
  if (type === undefined) throw new UsageError(`--type must be percentage or fixed, not "${context.required('type')}"`);
  const coupon: NewCoupon = {
    code: context.required('code'),
    type,
    amountHalalas: parseAmount('amount', context.required('amount')),
    status: context.flag('inactive') ? 'inactive' : 'active',
    startsAt: optionalFlag(context, 'starts-at', parseInstant),
    expiresAt: optionalFlag(context, 'expires-at', parseInstant),
    usageLimit: optionalFlag(context, 'usage-limit', parseCount),
    minimumOrderHalalas: optionalFlag(context, 'minimum-order', parseAmount),
    freeShipping: context.flag('free-shipping'),
  };
  if (!(await findStore(context.deps.db, storeId))) throw new PlatformError(`No store ${storeId}`);
  let created: CouponRow;
  try {
    created = await createCoupon(context.deps.db, { storeId, installationId: null, now: context.deps.clock.now() }, coupon);
  } catch (error) {
    throw error instanceof ApiError ? couponRefusal(error) : error;
  }
  const view = couponView(created);
  return {
    json: view,
    lines: keyValues([
      ['coupon_id', String(view.id)],
      ['store_id', storeId],
      ['code', view.code],
      ['type', view.type],
      ['amount', couponAmountCell(created, view.amount)],
      ['status', view.status],
      ['starts_at', view.starts_at ?? '-'],
      ['expires_at', view.expires_at ?? '-'],
      ['usage_limit', view.usage_limit === null ? '-' : String(view.usage_limit)],
      ['minimum_order', view.minimum_order_amount === null ? '-' : `${view.minimum_order_amount} SAR`],
      ['free_shipping', view.free_shipping ? 'yes' : 'no'],
    ]),
  };
}

// ---- housekeeping ----

async function housekeeping(context: Context): Promise<Report> {
  const sweeps = await runHousekeeping(context.deps);
  return {
    json: sweeps.map((sweep) => ({ table: sweep.table, deleted: sweep.deleted, more_remain: sweep.capped })),
    lines: table(
      ['TABLE', 'DELETED'],
      sweeps.map((sweep) => [sweep.table, `${sweep.deleted}${sweep.capped ? '  (the run stopped at its cap: more remain, run again)' : ''}`]),
    ),
  };
}

// ---- simulation ----

async function simulate(context: Context): Promise<Report> {
  const storeId = checkUuid(context.required('store'), '--store');
  const request = {
    storeId,
    days: context.wholeNumber('days', SIMULATION_BOUNDS.days),
    orders: context.wholeNumber('orders', SIMULATION_BOUNDS.orders),
    seed: context.wholeNumber('seed', SIMULATION_BOUNDS.seed),
  };
  const summary = await simulateStore(context.deps, { ...request, ...(context.progress ? { onProgress: context.progress } : {}) });
  return { json: simulationJson(request, summary), lines: keyValues(simulationFacts(request, summary)) };
}

// ---- worker ----

/** Runs the webhook dispatcher in this process until it is asked to stop, then finishes the attempts on the wire. */
async function worker(context: Context): Promise<Report> {
  const io = context.worker;
  if (!io) throw new Error('svc worker was started without its services');
  const concurrency = positiveNumber(context.option('concurrency') ?? String(DISPATCHER_DEFAULTS.concurrency), '--concurrency');
  const dispatcher = createDispatcher(io.services(), { concurrency, logError: context.err });
  dispatcher.start();
  context.err(`svc worker: delivering webhooks with ${concurrency} attempts at once; stop with SIGINT or SIGTERM`);
  await io.untilStopped();
  await dispatcher.stop();
  return { json: { stopped: true }, lines: ['svc worker: stopped'] };
}

function positiveNumber(value: string, what: string): number {
  if (!/^[1-9][0-9]{0,3}$/.test(value)) throw new UsageError(`${what} must be a whole number from 1 to 9999, not "${value}"`);
  return Number(value);
}

/** Every command, in the order the usage lists them. */
export const COMMANDS: readonly Command[] = [
  {
    words: ['store', 'create'],
    args: [],
    options: {
      name: text('<name>', { required: true }),
      domain: text('<domain>', { required: true }),
      'owner-email': text('<email>', { required: true }),
      'owner-name': text('<name>'),
      password: text('<password>'),
    },
    description: "Create a store, and its owner if the e-mail is new (the new owner's password: SVC_OWNER_PASSWORD, or --password, which shell history keeps).",
    run: storeCreate,
  },
  { words: ['store', 'list'], args: [], options: {}, description: 'List the stores.', run: storeList },
  {
    words: ['store', 'migration', 'start'],
    args: ['storeId'],
    options: {},
    description: 'Start moving a store: its store API answers 503 STORE_MIGRATING until the move ends.',
    run: async (context) => storeReport(await startStoreMigration(context.deps, context.id('storeId'))),
  },
  {
    words: ['store', 'migration', 'end'],
    args: ['storeId'],
    options: {},
    description: 'End the move: the store answers again under a new route_epoch.',
    run: async (context) => storeReport(await endStoreMigration(context.deps, context.id('storeId'))),
  },
  {
    words: ['app', 'create'],
    args: [],
    options: { name: text('<name>', { required: true }), store: text('<storeId>') },
    description: 'Register an app (private to one store with --store); prints its client secret once.',
    run: appCreate,
  },
  { words: ['app', 'list'], args: [], options: {}, description: 'List the apps.', run: appList },
  {
    words: ['app', 'version', 'add'],
    args: ['appId'],
    options: {
      'redirect-url': text('<url>', { required: true, multiple: true }),
      'launch-url': text('<url>', { required: true }),
      'required-scopes': text('"<scope> ..."', { required: true }),
      'optional-scopes': text('"<scope> ..."'),
    },
    description: 'Add a version to an app: its redirect URLs, launch URL and scopes (space-separated).',
    run: versionAdd,
  },
  { words: ['app', 'versions'], args: ['appId'], options: {}, description: "List an app's versions.", run: versionList },
  {
    words: ['app', 'secret', 'rotate'],
    args: ['appId'],
    options: {},
    description: 'Issue a new client secret (printed once); the previous one keeps working for 24 hours.',
    run: secretRotate,
  },
  {
    words: ['app', 'secret', 'revoke'],
    args: ['appId', SECRET_ARG],
    options: {},
    description: 'Revoke a client secret at once, given its id or its last 4 characters.',
    run: secretRevoke,
  },
  {
    words: ['app', 'secret', 'list'],
    args: ['appId'],
    options: {},
    description: "List an app's client secrets: id, last 4 characters, status (never the secrets themselves).",
    run: secretList,
  },
  {
    words: ['installation', 'list'],
    args: [],
    options: { store: text('<storeId>'), app: text('<appId>') },
    description: 'List installations, optionally of one store or one app.',
    run: installationList,
  },
  {
    words: ['installation', 'create'],
    args: ['appId', 'storeId'],
    options: { scopes: text('"<scope> ..."') },
    description: "Install an app in a store as its owner's consent would (default: the version's required scopes) and print its first token pair.",
    run: installationCreate,
  },
  {
    words: ['installation', 'uninstall'],
    args: ['installationId'],
    options: {},
    description: 'Uninstall: revokes every token and queues app.uninstalled for the app.',
    run: installationUninstall,
  },
  {
    words: ['coupon', 'create'],
    args: [],
    options: {
      store: text('<storeId>', { required: true }),
      code: text('<CODE>', { required: true }),
      type: text('percentage|fixed', { required: true }),
      amount: text('<amount>', { required: true }),
      'starts-at': text('<date-time>'),
      'expires-at': text('<date-time>'),
      'usage-limit': text('<n>'),
      'minimum-order': text('<amount>'),
      'free-shipping': { type: 'boolean' },
      inactive: { type: 'boolean' },
    },
    description:
      'Create a discount coupon in a store: --amount is the percent (15.00) or the SAR off (50.00); dates are RFC 3339; active unless --inactive. Apps read coupons and change their status; only the merchant side creates them.',
    run: couponCreate,
  },
  {
    words: ['simulate'],
    args: [],
    options: {
      store: text('<storeId>', { required: true }),
      days: text('<N>', { required: true }),
      orders: text('<N>', { required: true }),
      seed: text('<N>', { required: true }),
    },
    description: `Play shoppers in a store through the storefront's rules: --orders orders in all over the --days whole days before today in the store's time zone, with payments (some declined), fulfilment, refunds, cancellations, coupons, abandoned and recovered carts and reviews; the same --seed gives the same orders. Days ${SIMULATION_BOUNDS.days.min}-${SIMULATION_BOUNDS.days.max}, orders ${SIMULATION_BOUNDS.orders.min}-${SIMULATION_BOUNDS.orders.max}, seed ${SIMULATION_BOUNDS.seed.min}-${SIMULATION_BOUNDS.seed.max}.`,
    run: simulate,
  },
  {
    words: ['housekeeping'],
    args: [],
    options: {},
    description:
      'Delete what has expired (idempotency keys, sessions, consent requests, codes, launch tokens, token operations, rate-limit windows, and webhook events, deliveries and attempts after 30 days) in batches of 1,000 rows, as the server does every 10 minutes; prints the rows deleted per table.',
    run: housekeeping,
  },
  {
    words: ['worker'],
    args: [],
    options: { concurrency: text('<n>') },
    description:
      "Deliver webhooks from the outbox until stopped (SIGINT or SIGTERM finish the attempts under way), beside or instead of the server's own dispatcher (WEBHOOK_WORKERS=0).",
    run: worker,
  },
];

function usageError(io: CliIo, message: string, commands: readonly CommandSpec[]): number {
  io.err(`svc: ${message}`);
  for (const line of usageText(commands)) io.err(line);
  return 2;
}

function print(report: Report, json: boolean, out: (line: string) => void): void {
  if (json) out(JSON.stringify(report.json, null, 2));
  else for (const line of report.lines) out(line);
}

/** Runs one command; expected failures (PlatformError) become `error: ...` and exit 1, bugs propagate. */
async function execute(invocation: Invocation<Command>, io: CliIo): Promise<number> {
  try {
    print(await invocation.command.run(contextFor(invocation, io)), invocation.json, io.out);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) return usageError(io, error.message, [invocation.command]);
    if (error instanceof PlatformError) {
      io.err(`error: ${error.message}`);
      return 1;
    }
    throw error;
  }
}

/** The admin CLI: runs one command line and returns the exit code (0 ok, 1 command failed, 2 usage error). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const parsed = parseCommandLine(argv, COMMANDS);
  switch (parsed.kind) {
    case 'help':
      for (const line of parsed.lines) io.out(line);
      return 0;
    case 'usage-error':
      return usageError(io, parsed.message, parsed.commands);
    case 'run':
      return execute(parsed.invocation, io);
  }
}
