import type { Express } from 'express';
import request from 'supertest';
import { type AppFixture, REDIRECT_URI, RFC7636_CHALLENGE, type StoreFixture } from './harness';

/** A cookie jar, as a browser keeps one for the service's origin. */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  store(response: { headers: { 'set-cookie'?: string | string[] } }): void {
    const setCookies = ([] as string[]).concat(response.headers['set-cookie'] ?? []);
    for (const line of setCookies) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq).trim();
      const value = pair.slice(eq + 1).trim();
      if (/max-age=0/i.test(line) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
  }

  header(): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ');
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }
}

/** Text of a server-rendered page as the browser shows it (the entities the dashboard escapes, decoded). */
export const decodeHtml = (html: string): string =>
  html
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

/** The value of a named input in a server-rendered form. */
export function inputValue(html: string, name: string): string {
  const match = new RegExp(`<input[^>]*name="${name}"[^>]*value="([^"]*)"`).exec(html);
  if (!match) throw new Error(`No input ${name} in the page`);
  return decodeHtml(match[1] as string);
}

/** The consent page's list of scopes as the owner reads it: each scope's words and its name, in page order. */
export function consentScopeLines(html: string): { words: string; scope: string }[] {
  const list = /<ul class="scopes">(.*?)<\/ul>/s.exec(html)?.[1];
  if (list === undefined) throw new Error('No list of scopes in the page');
  return [...list.matchAll(/<li>(?:<label><input[^>]*> )?(.*?) <span class="muted">\(([^)<]*)\)<\/span>/g)].map((match) => ({
    words: decodeHtml(match[1] as string),
    scope: decodeHtml(match[2] as string),
  }));
}

export function authorizeQuery(store: StoreFixture, client: AppFixture, scopes: string[], overrides: Record<string, string> = {}): Record<string, string> {
  return {
    response_type: 'code',
    client_id: client.app.id,
    store_id: store.store.id,
    redirect_uri: REDIRECT_URI,
    state: 'xyzSTATE-0123456789abcdef',
    code_challenge: RFC7636_CHALLENGE,
    code_challenge_method: 'S256',
    scope: scopes.join(' '),
    ...overrides,
  };
}

export const authorizeUrl = (query: Record<string, string>) => `/oauth/authorize?${new URLSearchParams(query).toString()}`;

/**
 * A browser driving the dashboard: follows the authorize request to the login, signs in, and
 * returns the consent page it lands on (with the session cookie in the jar).
 */
export async function signInAndOpenConsent(app: Express, jar: CookieJar, store: StoreFixture, url: string): Promise<request.Response> {
  const first = await request(app).get(url).set('Cookie', jar.header());
  jar.store(first);
  if (first.status !== 302) return first;
  const loginUrl = first.headers.location as string;
  const loginPage = await request(app).get(loginUrl).set('Cookie', jar.header());
  jar.store(loginPage);
  const signedIn = await request(app)
    .post('/dashboard/login')
    .set('Cookie', jar.header())
    .type('form')
    .send({ csrf: inputValue(loginPage.text, 'csrf'), return_to: inputValue(loginPage.text, 'return_to'), email: store.email, password: store.password });
  jar.store(signedIn);
  if (signedIn.status !== 303) throw new Error(`Sign-in failed: ${signedIn.status}`);
  const consent = await request(app)
    .get(signedIn.headers.location as string)
    .set('Cookie', jar.header());
  jar.store(consent);
  return consent;
}

/** Posts the consent form as the browser would: its CSRF token, request id and the ticked optional scopes. */
export async function answerConsentForm(
  app: Express,
  jar: CookieJar,
  consentHtml: string,
  decision: 'approve' | 'deny',
  optionalScopes?: string[],
): Promise<request.Response> {
  const ticked = optionalScopes ?? [...consentHtml.matchAll(/name="optional_scope" value="([^"]+)" checked/g)].map((m) => m[1] as string);
  const form = new URLSearchParams({ csrf: inputValue(consentHtml, 'csrf'), request_id: inputValue(consentHtml, 'request_id'), decision });
  for (const scope of ticked) form.append('optional_scope', scope);
  return request(app).post('/dashboard/consent').set('Cookie', jar.header()).type('form').send(form.toString());
}
