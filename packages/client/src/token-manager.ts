import type { AccessTokenProvider } from './credentials';
import { ReauthorizationRequiredError, StoreApiError } from './errors';
import type { ErrorCode } from './generated/schema';
import type { OAuthClient, TokenRequest, TokenResponse } from './oauth';

/** A token pair as the app stores it: the token response and when its access token expires. */
export interface StoredTokens extends TokenResponse {
  /** When the access token expires, in epoch milliseconds (`expires_in` counted from receipt). */
  expires_at: number;
}

export const storedTokens = (response: TokenResponse, receivedAt: number): StoredTokens => ({
  ...response,
  expires_at: receivedAt + response.expires_in * 1000,
});

export interface TokenManagerOptions {
  oauth: OAuthClient;
  /** The installation's latest stored pair (undefined before the first code exchange was stored). */
  load(): Promise<StoredTokens | undefined>;
  /** Stores a new pair; the manager uses it only after this resolved (the refresh token it replaces is spent). */
  save(tokens: StoredTokens): Promise<void>;
  /** The time in epoch milliseconds; `Date.now` by default. */
  now?: () => number;
  /** Refresh this long before the access token expires. Default 60 s. */
  refreshMarginMs?: number;
}

/** One installation's tokens: a current access token, refreshed by the interface's rules. */
export interface TokenManager extends AccessTokenProvider {
  /** A fresh pair now; with `rejected`, only when that access token is still the current one. */
  refresh(rejected?: string): Promise<string>;
  /** The pair in use (loaded from storage on first use). */
  current(): Promise<StoredTokens>;
}

/** After these, only a new authorization gets tokens for the installation again. */
const REAUTHORIZE: ReadonlySet<string> = new Set<ErrorCode>([
  'TOKEN_REUSE_DETECTED',
  'INVALID_REFRESH_TOKEN',
  'RECONSENT_REQUIRED',
  'RESULT_UNAVAILABLE_REAUTHORIZE',
]);

const asReauthorization = (error: unknown): unknown =>
  error instanceof StoreApiError && !(error instanceof ReauthorizationRequiredError) && REAUTHORIZE.has(error.code)
    ? new ReauthorizationRequiredError(error)
    : error;

/** What a refresh settled on: a pair to store first, or one another process of the app already stored. */
type Settled = { tokens: StoredTokens; stored: boolean };

/**
 * Keeps one installation's token pair by the refresh rules of `POST /oauth/token`: one refresh at a
 * time (every caller that finds the access token expired or refused waits for the same refresh), the
 * new pair stored before it is used, a lost response recovered (docs/decisions/0042-client-sdk.md), and
 * the answers after which the app must authorize again thrown as `ReauthorizationRequiredError`.
 * Create one per installation and keep it for the process's life.
 */
export function createTokenManager(options: TokenManagerOptions): TokenManager {
  const now = options.now ?? Date.now;
  const marginMs = options.refreshMarginMs ?? 60_000;
  let held: StoredTokens | undefined;
  /** A pair whose `save` failed: stored again before anything else, since its predecessor is spent. */
  let unsaved: StoredTokens | undefined;
  let refreshing: Promise<StoredTokens> | undefined;

  async function current(): Promise<StoredTokens> {
    if (unsaved) {
      await options.save(unsaved);
      held = unsaved;
      unsaved = undefined;
    }
    held ??= await options.load();
    if (!held) {
      throw new ReauthorizationRequiredError(
        new StoreApiError({ status: 0, code: 'NO_TOKENS', message: 'No tokens are stored for this installation: authorize first.' }),
      );
    }
    return held;
  }

  const fresh = (response: TokenResponse): Settled => ({ tokens: storedTokens(response, now()), stored: false });

  /** A pair another process of the app stored since `spent` was read (it refreshed first). */
  async function newerInStorage(spent: StoredTokens): Promise<Settled | undefined> {
    const latest = await options.load();
    return latest && latest.refresh_token !== spent.refresh_token ? { tokens: latest, stored: true } : undefined;
  }

  /**
   * The refresh may have succeeded without its answer reaching this process, and the server never
   * sends a pair twice. Lookup tells what happened: the request never arrived (send it now), it is
   * still running (an identical request joins it), or its pair was issued and never used, which is
   * lost: the operation is recovered (its tokens revoked, as the spec asks) and the owner must
   * authorize again. `refusal` is the token endpoint's answer that led here, if it gave one.
   */
  async function settleThroughLookup(body: TokenRequest, spent: StoredTokens, refusal: StoreApiError | undefined): Promise<Settled> {
    const elsewhere = await newerInStorage(spent);
    if (elsewhere) return elsewhere;
    let state: string;
    try {
      state = (await options.oauth.lookup(body)).state;
    } catch (error) {
      if (!(error instanceof StoreApiError)) throw error;
      if (error.code === 'OPERATION_NOT_FOUND') return fresh(await options.oauth.token(body));
      const operationId = error.error?.operation_id;
      if (error.code !== 'RESULT_UNAVAILABLE_REAUTHORIZE' || !operationId) throw error;
      await options.oauth.recover(operationId);
      throw new ReauthorizationRequiredError(refusal ?? error, {
        message: `The refresh's pair was issued but never arrived; its operation ${operationId} was recovered (its tokens revoked): authorize again.`,
        recoveredOperationId: operationId,
      });
    }
    if (state === 'IN_PROGRESS') return fresh(await options.oauth.token(body));
    const reason = refusal ?? new StoreApiError({ status: 0, code: 'REFRESH_ALREADY_USED', message: 'The refresh token was spent elsewhere.' });
    throw new ReauthorizationRequiredError(reason, { message: `The refresh's operation is ${state} and its pair is not stored here: authorize again.` });
  }

  /**
   * The answer was lost (the connection failed, maybe after the request arrived). The identical
   * request is sent again at once: the server takes it as the same operation and answers the same
   * pair while that pair is unused, for 2 seconds. Only when that fails does lookup decide; lookup
   * first would end the sharing, since it marks the operation of an unused pair as lost.
   */
  async function recoverLostResponse(body: TokenRequest, spent: StoredTokens): Promise<Settled> {
    try {
      return fresh(await options.oauth.token(body));
    } catch (error) {
      if (!(error instanceof StoreApiError)) throw error;
      if (error.code === 'REFRESH_ALREADY_USED') return settleThroughLookup(body, spent, error);
      if (error.lostResponse) return settleThroughLookup(body, spent, undefined);
      throw error;
    }
  }

  async function obtain(spent: StoredTokens): Promise<Settled> {
    // Another process of the app may have refreshed first: its successor is in storage, and sending
    // the spent token again could be taken for reuse (TOKEN_REUSE_DETECTED revokes the grant).
    const elsewhere = await newerInStorage(spent);
    if (elsewhere) return elsewhere;
    const body: TokenRequest = { grant_type: 'refresh_token', refresh_token: spent.refresh_token };
    try {
      return fresh(await options.oauth.token(body));
    } catch (error) {
      if (!(error instanceof StoreApiError)) throw error;
      if (error.lostResponse) return recoverLostResponse(body, spent);
      // Nothing was revoked: another process may hold the successor, or an earlier answer was lost.
      if (error.code === 'REFRESH_ALREADY_USED') return settleThroughLookup(body, spent, error);
      throw error;
    }
  }

  async function runRefresh(spent: StoredTokens): Promise<StoredTokens> {
    let settled: Settled;
    try {
      settled = await obtain(spent);
    } catch (error) {
      throw asReauthorization(error);
    }
    if (!settled.stored) {
      unsaved = settled.tokens;
      await options.save(settled.tokens);
      unsaved = undefined;
    }
    held = settled.tokens;
    return settled.tokens;
  }

  async function refresh(rejected?: string): Promise<string> {
    const tokens = await current();
    if (rejected !== undefined && tokens.access_token !== rejected) return tokens.access_token;
    refreshing ??= runRefresh(tokens).finally(() => {
      refreshing = undefined;
    });
    return (await refreshing).access_token;
  }

  return {
    current,
    refresh,
    async accessToken() {
      const tokens = await current();
      return now() < tokens.expires_at - marginMs ? tokens.access_token : refresh(tokens.access_token);
    },
  };
}
