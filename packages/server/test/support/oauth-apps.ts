import type { TokenResponse } from '../../src/oauth/token-endpoint';
import { type AppFixture, createTestApp, createTestStore, type Harness, installWithTokens, type StoreFixture } from './harness';

/**
 * The OAuth tests' app, "Stock Sync" unless named otherwise: `products:read` required,
 * `products:write` and `orders:read` optional, so that a grant can be narrower or wider than the
 * required scope.
 */
export const stockSyncApp = (h: Harness, name?: string): Promise<AppFixture> =>
  createTestApp(h, { required: ['products:read'], optional: ['products:write', 'orders:read'], ...(name === undefined ? {} : { name }) });

/** A fresh Stock Sync installed in `store` with `scopes`: the app and its first token pair. */
export async function installedStockSync(h: Harness, store: StoreFixture, scopes: string[]): Promise<{ client: AppFixture; tokens: TokenResponse }> {
  const client = await stockSyncApp(h);
  return { client, tokens: await installWithTokens(h, store, client, scopes) };
}

/** `app` installed with `scopes` in a store of its own, made for it: the store and the app's first pair. */
export async function installedInNewStore(h: Harness, app: AppFixture, scopes: string[]): Promise<{ store: StoreFixture; pair: TokenResponse }> {
  const store = await createTestStore(h);
  return { store, pair: await installWithTokens(h, store, app, scopes) };
}
