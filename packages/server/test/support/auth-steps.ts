import type { Express } from 'express';
import request from 'supertest';
import { answerConsentForm, authorizeQuery, authorizeUrl, CookieJar, inputValue, signInAndOpenConsent } from './browser';
import { type AppFixture, type Harness, REDIRECT_URI, RFC7636_VERIFIER, type StoreFixture, UUID } from './harness';

/** The interface's error format: the status, `error.code`, and `meta.request_id` (also in X-Request-Id). */
export function expectError(response: request.Response, status: number, code: string): void {
  expect({ status: response.status, code: (response.body as { error?: { code?: string } }).error?.code }).toEqual({ status, code });
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  expect(response.body.meta.request_id).toMatch(UUID);
  expect(response.headers['x-request-id']).toBe(response.body.meta.request_id);
}

/** A store API call, `GET /stores/{storeId}/v1/{path}`, with a bearer token when one is given. */
export function storeApi(app: Express, storeId: string, path: string, accessToken?: string): request.Test {
  const call = request(app).get(`/stores/${storeId}/v1/${path}`);
  return accessToken === undefined ? call : call.set('Authorization', `Bearer ${accessToken}`);
}

export const me = (app: Express, storeId: string, accessToken?: string) => storeApi(app, storeId, 'me', accessToken);

/** `POST /oauth/token` exchanging a code, as the app does after the redirect. */
export const exchangeCode = (app: Express, client: AppFixture, code: string, redirectUri = REDIRECT_URI) =>
  request(app)
    .post('/oauth/token')
    .set('Authorization', client.basic)
    .type('form')
    .send({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: RFC7636_VERIFIER });

/** `POST /oauth/token` with a refresh token. */
export const refreshTokens = (app: Express, client: AppFixture, refreshToken: string) =>
  request(app).post('/oauth/token').set('Authorization', client.basic).type('form').send({ grant_type: 'refresh_token', refresh_token: refreshToken });

/** Signs the store's owner in to the dashboard (login page, then the form with its CSRF token); the session lands in the jar. */
export async function signIn(app: Express, jar: CookieJar, store: StoreFixture): Promise<request.Response> {
  const loginPage = await request(app).get('/dashboard/login').set('Cookie', jar.header());
  jar.store(loginPage);
  const signedIn = await request(app)
    .post('/dashboard/login')
    .set('Cookie', jar.header())
    .type('form')
    .send({ csrf: inputValue(loginPage.text, 'csrf'), return_to: '/dashboard', email: store.email, password: store.password });
  jar.store(signedIn);
  if (signedIn.status !== 303) throw new Error(`Sign-in failed: ${signedIn.status}`);
  return signedIn;
}

/** The dashboard home page of the jar's session and the session's CSRF token (from its forms). */
export async function dashboardHome(app: Express, jar: CookieJar): Promise<{ page: request.Response; csrf: string }> {
  const page = await request(app).get('/dashboard').set('Cookie', jar.header());
  if (page.status !== 200) throw new Error(`The dashboard answered ${page.status}`);
  return { page, csrf: inputValue(page.text, 'csrf') };
}

/** Posts a dashboard form (the session's cookie and the given fields). */
export const postForm = (app: Express, jar: CookieJar, path: string, fields: Record<string, string>) =>
  request(app).post(path).set('Cookie', jar.header()).type('form').send(fields);

export const installationAction = (store: StoreFixture, installationId: string, action: 'open' | 'uninstall') =>
  `/dashboard/stores/${store.store.id}/installations/${installationId}/${action}`;

export interface BrowserConsent {
  jar: CookieJar;
  query: Record<string, string>;
  consent: request.Response;
  answered: request.Response;
  /** Where the consent answer sent the browser. */
  callback: URL;
}

/**
 * The browser part of the flow: authorize, sign in if needed, and approve with the given optional
 * scopes ticked (all that the page ticks when not given). Reuses the jar's session when it has one.
 */
export async function approveInBrowser(
  app: Express,
  store: StoreFixture,
  client: AppFixture,
  scopes: string[],
  options: { optional?: string[]; overrides?: Record<string, string>; jar?: CookieJar } = {},
): Promise<BrowserConsent> {
  const jar = options.jar ?? new CookieJar();
  const query = authorizeQuery(store, client, scopes, options.overrides);
  const consent = await signInAndOpenConsent(app, jar, store, authorizeUrl(query));
  if (consent.status !== 200) throw new Error(`Expected the consent page, got ${consent.status}: ${consent.text}`);
  const answered = await answerConsentForm(app, jar, consent.text, 'approve', options.optional);
  if (answered.status !== 302) throw new Error(`The consent answer was ${answered.status}: ${answered.text}`);
  return { jar, query, consent, answered, callback: new URL(answered.headers.location as string) };
}

/** Rows of `outbox_events` of one type for a store, with their payload parsed. */
export async function outboxEvents(h: Harness, storeId: string, type: string): Promise<Record<string, unknown>[]> {
  const rows = await h.db('outbox_events').where({ store_id: storeId, type }).select<{ payload: string }[]>('payload');
  return rows.map((row) => JSON.parse(row.payload) as Record<string, unknown>);
}

/** The HTML has no reference to an outside asset or page (`src=`/`href=` to an http(s) URL). */
export const EXTERNAL_REFERENCE = /\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?\/\//i;
