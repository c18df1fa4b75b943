/** What signs the client's requests: a token manager refreshes on a 401 and the request is sent again once. */
export interface AccessTokenProvider {
  /** A current access token. */
  accessToken(): Promise<string>;
  /** A fresh token after `rejected` was refused (401); returns at once when another caller already replaced it. */
  refresh(rejected: string): Promise<string>;
}

/** A fixed token, a function that returns the current one, or a provider that can refresh (`createTokenManager`). */
export type AccessTokenSource = string | (() => string | Promise<string>) | AccessTokenProvider;

export function providerOf(source: AccessTokenSource): AccessTokenProvider | { accessToken(): Promise<string>; refresh?: undefined } {
  if (typeof source === 'string') return { accessToken: async () => source };
  if (typeof source === 'function') return { accessToken: async () => source() };
  return source;
}
