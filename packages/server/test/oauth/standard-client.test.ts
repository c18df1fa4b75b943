import * as oauth from 'oauth4webapi';
import { answerConsentForm, CookieJar, signInAndOpenConsent } from '../support/browser';
import { testDatabases } from '../support/databases';
import { type AppFixture, createTestApp, createTestStore, REDIRECT_URI, type StoreFixture, suiteHarness } from '../support/harness';
import { type IssuerServer, listenAsIssuer } from '../support/issuer';

/**
 * A third-party client configured from the metadata URL alone: oauth4webapi (panva's low-level
 * OAuth 2 client, 3.x) discovers the server (RFC 8414), runs the code flow with PKCE and checks the
 * callback's `iss` (RFC 9207), refreshes, introspects (RFC 7662) and revokes (RFC 7009), each with
 * its own functions, against the server listening on a real port whose origin is the issuer. Only
 * the store owner's browser steps (sign-in, consent) use the project's form helpers; the store
 * API calls go through oauth4webapi's protectedResourceRequest.
 *
 * oauth4webapi refuses plain-http issuers unless told otherwise: every call here takes its
 * documented `allowInsecureRequests` option, as a test on a local port must.
 */
const INSECURE = { [oauth.allowInsecureRequests]: true } as const;

describe.each(testDatabases())('a client configured only from the metadata URL (oauth4webapi) on $name', (testDatabase) => {
  const h = suiteHarness(testDatabase);
  let server: IssuerServer;
  let app: AppFixture;
  let as: oauth.AuthorizationServer;
  let client: oauth.Client;
  let clientAuth: oauth.ClientAuth;

  beforeAll(async () => {
    server = await listenAsIssuer(h);
    app = await createTestApp(h, { required: ['products:read'], optional: ['orders:read'] });
    const issuer = new URL(server.issuer);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...INSECURE }));
    client = { client_id: app.app.id };
    clientAuth = oauth.ClientSecretBasic(app.clientSecret);
  });

  /** The store owner follows the authorization URL built from the metadata, signs in and answers; where the browser is sent. */
  async function ownerAnswers(store: StoreFixture, decision: 'approve' | 'deny', state: string, challenge: string): Promise<URL> {
    const url = new URL(as.authorization_endpoint as string);
    const parameters = {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT_URI,
      scope: 'products:read orders:read',
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      store_id: store.store.id,
    };
    for (const [name, value] of Object.entries(parameters)) url.searchParams.set(name, value);
    expect(url.origin).toBe(server.issuer);
    const jar = new CookieJar();
    const consent = await signInAndOpenConsent(server.app, jar, store, `${url.pathname}${url.search}`);
    expect(consent.status).toBe(200);
    const answered = await answerConsentForm(server.app, jar, consent.text, decision);
    expect(answered.status).toBe(302);
    return new URL(answered.headers.location as string);
  }

  /** The whole code flow with PKCE: the callback checked by oauth4webapi (iss and state), the code exchanged. */
  async function authorize(store: StoreFixture): Promise<oauth.TokenEndpointResponse> {
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const callback = await ownerAnswers(store, 'approve', state, await oauth.calculatePKCECodeChallenge(verifier));
    const parameters = oauth.validateAuthResponse(as, client, callback, state);
    const response = await oauth.authorizationCodeGrantRequest(as, client, clientAuth, parameters, REDIRECT_URI, verifier, INSECURE);
    return oauth.processAuthorizationCodeResponse(as, client, response);
  }

  const me = (store: StoreFixture, accessToken: string) =>
    oauth.protectedResourceRequest(accessToken, 'GET', new URL(`/stores/${store.store.id}/v1/me`, server.issuer), undefined, undefined, INSECURE);

  async function introspect(token: string): Promise<oauth.IntrospectionResponse> {
    return oauth.processIntrospectionResponse(as, client, await oauth.introspectionRequest(as, client, clientAuth, token, INSECURE));
  }

  it('discovers everything from the issuer alone: the issuer is the URL it asked, every endpoint under it', () => {
    expect(as).toMatchObject({
      issuer: server.issuer,
      authorization_endpoint: `${server.issuer}/oauth/authorize`,
      token_endpoint: `${server.issuer}/oauth/token`,
      revocation_endpoint: `${server.issuer}/oauth/revoke`,
      introspection_endpoint: `${server.issuer}/oauth/introspect`,
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic'],
      authorization_response_iss_parameter_supported: true,
    });
  });

  it('code flow with PKCE, the store API, refresh, introspection and revocation; the revoked token is then refused by the store API', async () => {
    const store = await createTestStore(h);
    const first = await authorize(store);
    // oauth4webapi lower-cases token_type; the scope lists the scopes in the catalogue's order.
    expect(first).toMatchObject({ token_type: 'bearer', expires_in: 900, scope: 'orders:read products:read' });
    const firstMe = await me(store, first.access_token);
    expect(firstMe.status).toBe(200);
    expect(((await firstMe.json()) as { data: { store: { id: string } } }).data.store.id).toBe(store.store.id);

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, first.refresh_token as string, INSECURE),
    );
    expect(refreshed.access_token).not.toBe(first.access_token);
    expect((await me(store, refreshed.access_token)).status).toBe(200);

    expect(await introspect(refreshed.access_token)).toMatchObject({
      active: true,
      client_id: app.app.id,
      token_type: 'Bearer',
      iss: server.issuer,
      sub: store.store.id,
      aud: `${server.issuer}/stores/${store.store.id}/v1`,
      store_id: store.store.id,
    });
    expect((await introspect(first.access_token)).active).toBe(false);

    const revocation = await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token as string, {
      ...INSECURE,
      additionalParameters: { token_type_hint: 'refresh_token' },
    });
    await expect(oauth.processRevocationResponse(revocation)).resolves.toBeUndefined();
    expect(await introspect(refreshed.access_token)).toEqual({ active: false });
    expect(await introspect(refreshed.refresh_token as string)).toEqual({ active: false });

    // The store API refuses the revoked grant's access token: oauth4webapi surfaces the Bearer challenge.
    const refused = await me(store, refreshed.access_token).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect((refused as oauth.WWWAuthenticateChallengeError).status).toBe(401);
    expect((refused as oauth.WWWAuthenticateChallengeError).cause[0]?.scheme).toBe('bearer');
  });

  it("checks the callback's iss: a response checked against metadata with another issuer is refused (mix-up defence)", async () => {
    const store = await createTestStore(h);
    const state = oauth.generateRandomState();
    const callback = await ownerAnswers(store, 'approve', state, await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()));
    expect(callback.searchParams.get('iss')).toBe(server.issuer);
    const otherServer = { ...as, issuer: 'https://other-server.example' };
    expect(() => oauth.validateAuthResponse(otherServer, client, callback, state)).toThrow(/unexpected "iss"/);
    const withoutIss = new URL(callback);
    withoutIss.searchParams.delete('iss');
    expect(() => oauth.validateAuthResponse(as, client, withoutIss, state)).toThrow(/"iss" \(issuer\) missing/);
  });

  it('a denial comes back with iss and is surfaced as the access_denied authorization error', async () => {
    const store = await createTestStore(h);
    const state = oauth.generateRandomState();
    const callback = await ownerAnswers(store, 'deny', state, await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier()));
    const refused = (() => {
      try {
        oauth.validateAuthResponse(as, client, callback, state);
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(refused).toBeInstanceOf(oauth.AuthorizationResponseError);
    expect((refused as oauth.AuthorizationResponseError).error).toBe('access_denied');
  });

  it("how a standard client sees this server's errors: a 401 as the Basic challenge, a 400 in the interface's format as a non-conform response", async () => {
    const wrongSecret = oauth.ClientSecretBasic(`svc_cs_${'A'.repeat(43)}`);
    const challenged = await oauth
      .revocationRequest(as, client, wrongSecret, 'any-token', INSECURE)
      .then(oauth.processRevocationResponse)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(challenged).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    expect((challenged as oauth.WWWAuthenticateChallengeError).cause[0]?.scheme).toBe('basic');

    // Another client's live token: refused with 400 INVALID_REQUEST in the interface's error format,
    // whose `error` is an object, not RFC 6749's string: oauth4webapi reports a non-conform answer
    // and hands over the response, from which the client reads `error.code`.
    const other = await createTestApp(h, { required: ['products:read'], optional: [], name: 'Other App' });
    const store = await createTestStore(h);
    const othersPair = await (async () => {
      const otherClient = { client_id: other.app.id };
      const verifier = oauth.generateRandomCodeVerifier();
      const state = oauth.generateRandomState();
      const url = new URL(as.authorization_endpoint as string);
      const query = {
        response_type: 'code',
        client_id: other.app.id,
        redirect_uri: REDIRECT_URI,
        scope: 'products:read',
        state,
        code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        store_id: store.store.id,
      };
      for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
      const jar = new CookieJar();
      const consent = await signInAndOpenConsent(server.app, jar, store, `${url.pathname}${url.search}`);
      const answered = await answerConsentForm(server.app, jar, consent.text, 'approve');
      const parameters = oauth.validateAuthResponse(as, otherClient, new URL(answered.headers.location as string), state);
      const exchanged = await oauth.authorizationCodeGrantRequest(
        as,
        otherClient,
        oauth.ClientSecretBasic(other.clientSecret),
        parameters,
        REDIRECT_URI,
        verifier,
        INSECURE,
      );
      return oauth.processAuthorizationCodeResponse(as, otherClient, exchanged);
    })();
    const refused = await oauth
      .revocationRequest(as, client, clientAuth, othersPair.refresh_token as string, INSECURE)
      .then(oauth.processRevocationResponse)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(oauth.OperationProcessingError);
    expect((refused as oauth.OperationProcessingError).code).toBe(oauth.RESPONSE_IS_NOT_CONFORM);
    const response = (refused as oauth.OperationProcessingError).cause as Response;
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('INVALID_REQUEST');
    // And introspection tells this client nothing about the other's token.
    expect(await introspect(othersPair.access_token)).toEqual({ active: false });
    expect((await me(store, othersPair.access_token)).status).toBe(200);
  });
});
