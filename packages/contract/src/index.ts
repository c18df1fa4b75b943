import path from 'node:path';

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

/** Absolute path of the bundled OpenAPI document (generated from spec/). */
export const bundledSpecPath = path.join(__dirname, '..', 'openapi.json');
