import { randomBytes } from 'node:crypto';
import {
  authorizeUrl,
  createOAuthClient,
  createPkcePair,
  createState,
  createStoreClient,
  createTokenManager,
  type FetchFunction,
  type OAuthClient,
  ReauthorizationRequiredError,
  StoreApiError,
  type StoreClient,
  storedTokens,
  type TokenManager,
  verifyWebhook,
  type WebhookEvent,
  WebhookVerificationError,
} from '@svc/client';
import express, { type Request, type Response } from 'express';
import { escapeHtml, layout, storePage } from './pages';
import { type Reconciliation, walkEventsFeed } from './reconcile';
import type { Installation, JsonStorage, ReceivedEvent } from './storage';

export interface ExampleAppOptions {
  /** Where the Store Management Service answers, e.g. http://localhost:3000. */
  serviceUrl: string;
  /** Where this app answers, as the service's browser redirects and webhooks reach it. */
  publicUrl: string;
  clientId: string;
  clientSecret: string;
  storage: JsonStorage;
  fetch?: FetchFunction;
  /** Where the reconciliation reports what it found; console.log when left out. */
  log?: (line: string) => void;
}

/** The scopes the app's version requires (`svc app version add --required-scopes`). */
export const SCOPES = ['products:read', 'orders:read'] as const;
/** What the app wants to hear about; each type needs one of SCOPES, `app.uninstalled` none. */
export const EVENT_TYPES = [
  'order.created',
  'order.paid',
  'order.updated',
  'order.cancelled',
  'product.created',
  'product.updated',
  'app.uninstalled',
] as const;

const SESSION_COOKIE = 'example_session';
const STATE_COOKIE = 'example_oauth_state';
const PAGE_SIZE = 10;

/** An authorization under way: what the callback needs, found by its `state`. */
interface PendingAuthorization {
  storeId: string;
  verifier: string;
}

export function createExampleApp(options: ExampleAppOptions) {
  const { storage, serviceUrl, publicUrl, clientId } = options;
  const log = options.log ?? console.log;
  const redirectUri = `${publicUrl}/callback`;
  const oauth: OAuthClient = createOAuthClient({
    baseUrl: serviceUrl,
    clientId,
    clientSecret: options.clientSecret,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const pending = new Map<string, PendingAuthorization>();
  // Sessions and token managers live as long as the process: one token manager per installation, so
  // concurrent requests share one refresh.
  const sessions = new Map<string, string>();
  const tokenManagers = new Map<string, TokenManager>();

  function clientFor(storeId: string): StoreClient {
    let tokens = tokenManagers.get(storeId);
    if (!tokens) {
      tokens = createTokenManager({
        oauth,
        load: async () => storage.installation(storeId)?.tokens,
        save: (pair) => storage.saveTokens(storeId, pair),
      });
      tokenManagers.set(storeId, tokens);
    }
    return createStoreClient({ baseUrl: serviceUrl, accessToken: tokens, ...(options.fetch ? { fetch: options.fetch } : {}) });
  }

  function startSession(res: Response, storeId: string): void {
    const session = randomBytes(32).toString('base64url');
    sessions.set(session, storeId);
    res.cookie(SESSION_COOKIE, session, { httpOnly: true, sameSite: 'lax', path: '/' });
  }

  const sessionStore = (req: Request): string | undefined => {
    const session = cookieOf(req, SESSION_COOKIE);
    return session === undefined ? undefined : sessions.get(session);
  };

  /** Subscribes the installation to EVENT_TYPES once, keeping the secret the service shows only now. */
  async function subscribe(storeId: string): Promise<void> {
    const installation = storage.installation(storeId);
    if (!installation || installation.webhooks) return;
    const { data } = await clientFor(storeId).POST('/stores/{storeId}/v1/webhook-subscriptions', {
      params: { path: { storeId } },
      body: { endpoint_url: `${publicUrl}/webhooks/${storeId}`, event_types: [...EVENT_TYPES], payload_version: 1 },
    });
    await storage.saveInstallation({ ...installation, webhooks: { subscriptionId: data.data.id, secrets: [data.data.secret] } });
  }

  /** One way in for an event, pushed or pulled: kept once by its id; `app.uninstalled` forgets the store. */
  async function handle(event: WebhookEvent): Promise<boolean> {
    const isNew = await storage.recordEvent(received(event));
    if (event.type === 'app.uninstalled') {
      tokenManagers.delete(event.store_id);
      await storage.forget(event.store_id);
    }
    return isNew;
  }

  /** Delivery pauses a subscription whose endpoint failed for a day: webhooks come again only once it is resumed. */
  async function resumeWebhooks(client: StoreClient, installation: Installation): Promise<void> {
    const { storeId } = installation;
    const id = installation.webhooks?.subscriptionId;
    if (id === undefined) return;
    const { data } = await client.GET('/stores/{storeId}/v1/webhook-subscriptions', { params: { path: { storeId } } });
    if (data.data.find((subscription) => subscription.id === id)?.state !== 'paused') return;
    await client.PATCH('/stores/{storeId}/v1/webhook-subscriptions/{id}', { params: { path: { storeId, id } }, body: { state: 'active' } });
    log(`Store ${storeId}: webhooks resumed`);
  }

  const walks = new Map<string, Promise<Reconciliation>>();
  /**
   * Catches up with a store after downtime: resumes the webhooks, records what the events feed has
   * that no webhook brought, and keeps the new mark once the walk has ended. One walk per store at a
   * time: a second call while one runs gets its answer.
   */
  function reconcile(storeId: string): Promise<Reconciliation> {
    let walk = walks.get(storeId);
    if (!walk) {
      walk = (async () => {
        const installation = storage.installation(storeId);
        if (!installation) throw new Error(`The app is not installed in store ${storeId}.`);
        const client = clientFor(storeId);
        await resumeWebhooks(client, installation);
        const result = await walkEventsFeed({ client, storeId, types: EVENT_TYPES, mark: installation.feed, handle });
        await storage.saveFeedMark(storeId, result.mark);
        return result;
      })().finally(() => walks.delete(storeId));
      walks.set(storeId, walk);
    }
    return walk;
  }

  /** Every installation in turn; a failure is reported and the next store goes on. */
  async function reconcileAll(): Promise<void> {
    for (const storeId of storage.storeIds()) {
      try {
        const { recorded, gap } = await reconcile(storeId);
        if (recorded > 0) log(`Store ${storeId}: events no webhook brought, recorded from the events feed: ${recorded}`);
        if (gap) log(`Store ${storeId}: not reconciled for over 30 days; events older than the feed's 30 days are gone`);
      } catch (error) {
        const reason = error instanceof StoreApiError || error instanceof ReauthorizationRequiredError ? error.code : String(error);
        log(`Store ${storeId}: reconciliation failed (${reason}); the next one tries again`);
      }
    }
  }

  /** Reconciles every installation now and then every `intervalMs`; answers how to stop. */
  function reconcileEvery(intervalMs: number): () => void {
    void reconcileAll();
    const timer = setInterval(() => void reconcileAll(), intervalMs);
    return () => clearInterval(timer);
  }

  const app = express();

  app.get('/', async (req, res) => {
    const storeId = sessionStore(req);
    if (storeId === undefined || !storage.installation(storeId)) return void res.send(layout('Example App', installForm()));
    const client = clientFor(storeId);
    const products = await firstOf(client.paginate('/stores/{storeId}/v1/products', { params: { path: { storeId }, query: { limit: PAGE_SIZE } } }));
    const orders = await firstOf(client.paginate('/stores/{storeId}/v1/orders', { params: { path: { storeId }, query: { limit: PAGE_SIZE } } }));
    res.send(storePage({ storeId, products, orders, events: storage.recentEvents(storeId) }));
  });

  // Where an owner starts installing (the app's own install link): to the service's consent page.
  app.get('/install', async (req, res) => {
    const storeId = typeof req.query.store_id === 'string' ? req.query.store_id.trim() : '';
    if (storeId === '') return void res.status(400).send(layout('Example App', `<p>Give the id of your store.</p>${installForm()}`));
    const pkce = await createPkcePair();
    const state = createState();
    pending.set(state, { storeId, verifier: pkce.verifier });
    res.cookie(STATE_COOKIE, state, { httpOnly: true, sameSite: 'lax', path: '/callback', maxAge: 10 * 60_000 });
    res.redirect(authorizeUrl({ baseUrl: serviceUrl, clientId, storeId, redirectUri, state, scopes: [...SCOPES], codeChallenge: pkce.challenge }));
  });

  app.get('/callback', async (req, res) => {
    const state = typeof req.query.state === 'string' ? req.query.state : undefined;
    // The state must be the one this browser was given: a callback started elsewhere is refused.
    const authorization = state !== undefined && cookieOf(req, STATE_COOKIE) === state ? pending.get(state) : undefined;
    res.clearCookie(STATE_COOKIE, { path: '/callback' });
    if (!authorization || state === undefined)
      return void res.status(400).send(layout('Example App', '<p>This authorization was not started here. Install again.</p>'));
    pending.delete(state);
    if (typeof req.query.error === 'string') {
      return void res.status(400).send(layout('Example App', `<p>The app was not installed (${escapeHtml(req.query.error)}).</p>`));
    }
    const pair = await oauth.exchangeCode({ code: String(req.query.code ?? ''), redirectUri, codeVerifier: authorization.verifier });
    const { storeId } = authorization;
    const previous = storage.installation(storeId);
    // A new installation (a reinstall after an uninstall) has no subscription yet and reconciles from
    // now; a re-authorization keeps its own.
    const same = previous?.installationId === pair.installation_id ? previous : undefined;
    const now = new Date().toISOString();
    await storage.saveInstallation({
      storeId,
      installationId: pair.installation_id,
      tokens: storedTokens(pair, Date.now()),
      ...(same?.webhooks ? { webhooks: same.webhooks } : {}),
      feed: same?.feed ?? { newest: now, walkedAt: now },
    });
    tokenManagers.delete(storeId);
    await subscribe(storeId);
    startSession(res, storeId);
    res.redirect('/');
  });

  // The dashboard's Open: the launch token says which store, and the service vouches for it.
  app.get('/launch', async (req, res) => {
    const launch = await oauth.verifyLaunch({ launch_url: `${publicUrl}${req.originalUrl}` });
    if (!launch.installed || storage.installation(launch.store_id)?.installationId !== launch.installation_id) {
      return void res.redirect(`/install?store_id=${encodeURIComponent(launch.store_id)}`);
    }
    startSession(res, launch.store_id);
    res.redirect('/');
  });

  // The raw body: the signature covers the bytes as sent.
  app.post('/webhooks/:storeId', express.raw({ type: 'application/json' }), async (req, res) => {
    const storeId = String(req.params.storeId);
    const secrets = storage.installation(storeId)?.webhooks?.secrets;
    if (!secrets) return void res.status(404).send('unknown store');
    let event: WebhookEvent;
    try {
      event = verifyWebhook(secrets, req.body as Buffer, req.headers);
    } catch (error) {
      if (error instanceof WebhookVerificationError) return void res.status(400).send(error.reason);
      throw error;
    }
    if (event.store_id !== storeId) return void res.status(400).send('another store');
    await handle(event);
    res.sendStatus(204);
  });

  app.use((error: unknown, req: Request, res: Response, _next: express.NextFunction) => {
    if (error instanceof ReauthorizationRequiredError) {
      const storeId = sessionStore(req);
      if (storeId !== undefined) return void res.redirect(`/install?store_id=${encodeURIComponent(storeId)}`);
    }
    const reason =
      error instanceof StoreApiError
        ? `The service answered ${error.status} ${error.code}: ${error.message} (request ${error.requestId ?? 'none'})`
        : 'Something went wrong.';
    if (!(error instanceof StoreApiError)) console.error(error);
    res.status(502).send(layout('Example App', `<p>${escapeHtml(reason)}</p>`));
  });

  return Object.assign(app, { reconcile, reconcileAll, reconcileEvery });
}

export type ExampleApp = ReturnType<typeof createExampleApp>;

async function firstOf<Item>(items: AsyncIterable<Item>, count = PAGE_SIZE): Promise<Item[]> {
  const taken: Item[] = [];
  for await (const item of items) {
    taken.push(item);
    if (taken.length === count) break;
  }
  return taken;
}

function received(event: WebhookEvent): ReceivedEvent {
  return {
    id: event.id,
    type: event.type,
    storeId: event.store_id,
    occurredAt: event.occurred_at,
    receivedAt: new Date().toISOString(),
    summary: summaryOf(event),
  };
}

function summaryOf(event: WebhookEvent): string {
  switch (event.type) {
    case 'order.created':
    case 'order.paid':
    case 'order.updated':
    case 'order.cancelled': {
      const { order } = event.data;
      return `Order ${order.reference}: ${order.status}, ${order.payment_status}, ${order.amounts.total} SAR`;
    }
    case 'product.created':
    case 'product.updated':
      return `Product ${event.data.product.name} (${event.data.product.status})`;
    default:
      return event.type;
  }
}

function installForm(): string {
  return `<form method="get" action="/install"><label>Store id <input name="store_id" size="40" required></label> <button type="submit">Install in my store</button></form>`;
}

function cookieOf(req: Request, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return decodeURIComponent(value.join('='));
  }
  return undefined;
}
