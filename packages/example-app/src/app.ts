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
import type { JsonStorage, ReceivedEvent } from './storage';

export interface ExampleAppOptions {
  /** Where the Store Management Service answers, e.g. http://localhost:3000. */
  serviceUrl: string;
  /** Where this app answers, as the service's browser redirects and webhooks reach it. */
  publicUrl: string;
  clientId: string;
  clientSecret: string;
  storage: JsonStorage;
  fetch?: FetchFunction;
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
    // A new installation (a reinstall after an uninstall) has no subscription yet; a re-authorization keeps its own.
    const webhooks = previous?.installationId === pair.installation_id ? previous.webhooks : undefined;
    await storage.saveInstallation({
      storeId,
      installationId: pair.installation_id,
      tokens: storedTokens(pair, Date.now()),
      ...(webhooks ? { webhooks } : {}),
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
    await storage.recordEvent(received(event));
    if (event.type === 'app.uninstalled') {
      tokenManagers.delete(storeId);
      await storage.forget(storeId);
    }
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

  return app;
}

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
