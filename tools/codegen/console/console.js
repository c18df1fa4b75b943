/**
 * The docs site's console (`/docs/console/`): Swagger UI over this service's own document, with
 * calls sent to this service, a fresh `Idempotency-Key` and the store id filled in, and a sign-in
 * through OAuth's authorization code flow with PKCE (RFC 7636) that comes back to this page, checks
 * `state` and `iss` (RFC 9207), exchanges the code with the client's credentials (HTTP Basic, the
 * one method the token endpoint takes) and authorizes Swagger UI with the access token. A pasted
 * token goes through Swagger UI's own Authorize dialog. docs/decisions/0098-docs-console.md.
 */
(() => {
  /** What the form keeps across reloads of this tab: never the secret. */
  const REMEMBERED = 'svc-console';
  /** A sign-in under way, across the redirect to /oauth/authorize and back: the verifier, state and client credentials. */
  const PENDING = 'svc-console-pending';
  /** The security scheme a token is sent with: an HTTP bearer scheme the console adds beside the document's OAuth one. */
  const TOKEN_SCHEME = 'token';
  /** What the Idempotency-Key field starts with: each request that sends it as it is gets a fresh key instead. */
  const FRESH_KEY = 'a-fresh-key-for-each-request';

  const form = document.getElementById('sign-in');
  const status = document.getElementById('console-status');
  const remembered = JSON.parse(sessionStorage.getItem(REMEMBERED) ?? '{}');

  const say = (text, failed = false) => {
    status.textContent = text;
    status.classList.toggle('failed', failed);
  };
  const base64url = (bytes) =>
    btoa(String.fromCharCode(...bytes))
      .replace(/\+/g, '-')
      .replace(/\//g, '_')
      .replace(/=+$/, '');
  const randomText = (length) => base64url(crypto.getRandomValues(new Uint8Array(length)));
  /** Where the authorization server sends the answer back: this page, whatever file name it was opened by. */
  const redirectUri = () => new URL('.', location.href).href;
  /** RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined for HTTP Basic. */
  const basic = (id, secret) => `Basic ${btoa(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`)}`;

  /**
   * A parameter as the console's form starts it: the reader's store, a fresh key, the example of
   * what it requires (a record's id) and nothing of what it may leave out (an example filter or
   * cursor would narrow the answer to nothing). Swagger UI fills each field with its example.
   */
  function forTheForm(parameter, storeId) {
    if (!parameter || parameter.$ref) return;
    const startWith = (value) => {
      parameter.example = value;
      delete parameter.examples;
      if (parameter.schema) delete parameter.schema.examples;
    };
    if (parameter.in === 'path' && parameter.name === 'storeId') {
      if (storeId) startWith(storeId);
    } else if (parameter.in === 'header' && parameter.name === 'Idempotency-Key') startWith(FRESH_KEY);
    else if (!parameter.required) {
      delete parameter.example;
      delete parameter.examples;
      if (parameter.schema) {
        delete parameter.schema.example;
        delete parameter.schema.examples;
      }
    }
  }

  /** The document as the console shows it: calls to this service, its forms started for the reader, and a bearer scheme beside OAuth on every operation that takes a token. */
  async function consoleDocument(storeId) {
    const spec = await (await fetch('/openapi.json')).json();
    spec.servers = [{ url: location.origin, description: 'This service' }];
    // The guides are sections of the reference (trait tags); the console shows the operations only.
    spec.tags = (spec.tags ?? []).filter((tag) => !tag['x-traitTag']);
    delete spec['x-tagGroups'];
    spec.components.securitySchemes[TOKEN_SCHEME] = {
      type: 'http',
      scheme: 'bearer',
      description: 'An access token (`svc_at_…`): the one the sign-in above got, or one of your own.',
    };
    for (const parameter of Object.values(spec.components.parameters ?? {})) forTheForm(parameter, storeId);
    for (const pathItem of Object.values(spec.paths)) {
      for (const parameter of pathItem.parameters ?? []) forTheForm(parameter, storeId);
      for (const operation of Object.values(pathItem)) {
        for (const parameter of operation?.parameters ?? []) forTheForm(parameter, storeId);
        if (operation?.security?.some((requirement) => 'oauth2' in requirement)) operation.security = [{ [TOKEN_SCHEME]: [] }, ...operation.security];
      }
    }
    return spec;
  }

  /** Sends the browser to /oauth/authorize with a fresh PKCE pair and state, kept for the way back. */
  async function signIn(values) {
    const verifier = randomText(32);
    const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
    const state = randomText(16);
    sessionStorage.setItem(REMEMBERED, JSON.stringify({ store_id: values.store_id, client_id: values.client_id, scope: values.scope }));
    sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, clientId: values.client_id, clientSecret: values.client_secret }));
    const query = new URLSearchParams({
      response_type: 'code',
      client_id: values.client_id,
      store_id: values.store_id,
      redirect_uri: redirectUri(),
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope: values.scope,
    });
    location.assign(`/oauth/authorize?${query}`);
  }

  /** On the way back from /oauth/authorize: the token pair, or why not. The pending sign-in is spent either way. */
  async function finishSignIn(answer) {
    const pending = JSON.parse(sessionStorage.getItem(PENDING) ?? 'null');
    sessionStorage.removeItem(PENDING);
    history.replaceState(null, '', `${location.pathname}${location.hash}`);
    if (!pending) throw new Error('No sign-in was started from this tab.');
    // RFC 9207: the issuer first, then the state, and only then the code.
    const metadata = await (await fetch('/.well-known/oauth-authorization-server')).json();
    if (answer.get('iss') !== metadata.issuer) throw new Error(`The answer came from ${answer.get('iss') ?? 'no issuer'}, not ${metadata.issuer}.`);
    if (answer.get('state') !== pending.state) throw new Error('The answer does not carry the state this sign-in sent.');
    if (answer.has('error')) throw new Error(`The sign-in was refused: ${answer.get('error')}.`);
    const response = await fetch('/oauth/token', {
      method: 'POST',
      headers: { Authorization: basic(pending.clientId, pending.clientSecret), 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code: answer.get('code') ?? '',
        redirect_uri: redirectUri(),
        code_verifier: pending.verifier,
      }),
    });
    const body = await response.json();
    if (!response.ok) throw new Error(`The token endpoint answered ${response.status} ${body.error?.code ?? ''}: ${body.error?.message ?? ''}`);
    return body;
  }

  function fillForm(scopes) {
    for (const [name, value] of Object.entries({ scope: scopes.join(' '), ...remembered })) {
      if (form.elements[name]) form.elements[name].value = value;
    }
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      signIn(Object.fromEntries(new FormData(form))).catch((error) => say(`The sign-in did not start: ${error.message}`, true));
    });
  }

  /** `?operation=<operationId>` (the reference's links) as Swagger UI's deep link, `#/<tag>/<operationId>`. */
  function openAskedOperation(spec) {
    const asked = new URLSearchParams(location.search).get('operation');
    if (!asked) return;
    for (const pathItem of Object.values(spec.paths)) {
      const operation = Object.values(pathItem).find((candidate) => candidate?.operationId === asked);
      const tag = operation?.tags?.[0];
      if (tag) return history.replaceState(null, '', `${location.pathname}#/${tag.replace(/\s/g, '_')}/${asked}`);
    }
  }

  async function start() {
    const answer = new URLSearchParams(location.search);
    let pair;
    if (answer.has('code') || answer.has('error')) {
      try {
        pair = await finishSignIn(answer);
      } catch (error) {
        say(error.message, true);
      }
    }
    const spec = await consoleDocument(pair?.store_id ?? remembered.store_id ?? '');
    openAskedOperation(spec);
    fillForm(Object.keys(spec.components.securitySchemes.oauth2?.flows?.authorizationCode?.scopes ?? {}));
    const ui = SwaggerUIBundle({
      spec,
      dom_id: '#swagger-ui',
      deepLinking: true,
      tryItOutEnabled: true,
      displayRequestDuration: true,
      showMutatedRequest: true,
      requestInterceptor: (request) => {
        if (request.headers['Idempotency-Key'] === FRESH_KEY) request.headers['Idempotency-Key'] = crypto.randomUUID();
        return request;
      },
      onComplete: () => {
        if (!pair) return;
        ui.preauthorizeApiKey(TOKEN_SCHEME, pair.access_token);
        say(`Signed in: a token for store ${pair.store_id} with ${pair.scope}, valid ${pair.expires_in} s.`);
      },
    });
  }

  start().catch((error) => say(`The console did not load: ${error.message}`, true));
})();
