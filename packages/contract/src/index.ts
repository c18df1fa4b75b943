/**
 * The contract for every JavaScript runtime: no `node:` import here (a test bundles it for the browser).
 * The bundled document's file path is on the Node-only entry, `@svc/contract/node`.
 */

export type { ScopedSchema, WebhookEventData, WebhookEventDefinition, WebhookEventSchemas, WebhookEventType, WebhookGenericUpdates } from './generated/events';
export { EVENT_TYPE_SCOPES, FIELD_READ_SCOPES, webhookEventCatalogue } from './generated/events';
export type { components, operations, paths, webhooks } from './generated/openapi';
export type { OperationId } from './generated/operations';
export { operationIds, operationTable } from './generated/operations';
export type { Scope, ScopeDefinition } from './generated/scopes';
export { SCOPE_DEPENDENCIES, scopeCatalogue } from './generated/scopes';
export type { ApiVersionEntry } from './generated/versions';
export { apiVersions, CURRENT_API_VERSION } from './generated/versions';
export type { OperationEntry } from './operation';
export { type JsonNode, resolveLocalRef } from './refs';
