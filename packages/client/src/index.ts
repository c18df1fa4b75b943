export { createStoreClient, type EtagUpdate, type StoreClient, type StoreClientOptions, type StoreMethod } from './client';
export type { AccessTokenProvider, AccessTokenSource } from './credentials';
export { type ClientErrorCode, type ErrorObject, ReauthorizationRequiredError, StoreApiError } from './errors';
export * from './generated/schema';
export {
  type AuthorizationCallback,
  AuthorizationCallbackError,
  type AuthorizationServerMetadata,
  type AuthorizeUrlOptions,
  authorizeUrl,
  type CallbackExpectations,
  type CallbackRefusal,
  createOAuthClient,
  createPkcePair,
  createState,
  type LaunchVerification,
  type OAuthClient,
  type OAuthClientOptions,
  type OperationRecovery,
  type PkcePair,
  readAuthorizationCallback,
  type TokenIntrospection,
  type TokenOperation,
  type TokenRequest,
  type TokenResponse,
  type TokenTypeHint,
} from './oauth';
export type { ClientPaths, ItemOf, PagedPath, PageOf, PageRequest } from './paths';
export type { RetryOptions } from './retry';
export { createTokenManager, type StoredTokens, storedTokens, type TokenManager, type TokenManagerOptions } from './token-manager';
export type { TraceContext, TraceContextSource } from './trace';
export { DEFAULT_TIMEOUT_MS, type FetchFunction, type TransportOptions } from './transport';
export type { AppInfo } from './user-agent';
export { SDK_VERSION } from './version';
export { API_VERSION_HEADER, type ApiVersionEntry, apiVersions, CURRENT_API_VERSION } from './versions';
export {
  verifyWebhook,
  type WebhookEvent,
  type WebhookEventOf,
  type WebhookEventType,
  type WebhookHeaders,
  type WebhookRefusal,
  WebhookVerificationError,
} from './webhooks';
