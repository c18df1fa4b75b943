import { resolveLocalRef } from '../../packages/contract/src/refs';
import type { OpenApiDocument } from './bundle';
import { GENERATED_HEADER } from './paths';
import type { ScopeDefinition } from './scopes';

/**
 * The events of the contract, read from the spec's `webhooks`: each event's scope
 * (`x-required-scope`), its payload schema, the generic `*.updated` sent for the same change, and
 * where its payload holds fields that need a scope to be seen (`x-field-scopes` on a schema).
 */
export interface EventDefinition {
  readonly type: string;
  /** The scope an installation needs to subscribe to it; null: none. */
  readonly scope: string | null;
  /** The component schema of the whole event (`OrderPaidEvent`). */
  readonly schema: string;
  /** The generic event sent for the same change (`order.updated` for `order.paid`), if any. */
  readonly alsoSends: string | null;
  /** Where its payload holds objects with scoped fields: the path to each and the fields' scopes. */
  readonly scopedFields: readonly ScopedFieldsAt[];
}

export interface ScopedFieldsAt {
  /** Property names from the event's root to the object (`['data', 'order', 'customer']`). */
  readonly path: readonly string[];
  readonly schema: string;
}

/** A spec whose event catalogue cannot be generated; the message names the place in the spec. */
export class EventCatalogueError extends Error {
  override readonly name = 'EventCatalogueError';
}

const SCOPE = 'x-required-scope';
const FIELD_SCOPES = 'x-field-scopes';
const SCHEMA_REF = /^#\/components\/schemas\/([A-Za-z0-9_]+)$/;
const GENERIC_VERBS = new Set(['created', 'updated']);

type Json = Record<string, unknown>;
const isRecord = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The pairing rule, the one place it is written: a specific change of a resource (`order.paid`,
 * `order.cancelled`: any verb but `created` and `updated`) is also an update of it, so when the
 * contract has the generic `<resource>.updated`, the same change sends that too, with the same
 * data. A creation is not an update (`product.created` sends no `product.updated`).
 */
export function genericUpdateOf(type: string, types: ReadonlySet<string>): string | null {
  const dot = type.lastIndexOf('.');
  const resource = type.slice(0, dot);
  const verb = type.slice(dot + 1);
  const generic = `${resource}.updated`;
  return dot > 0 && !GENERIC_VERBS.has(verb) && types.has(generic) ? generic : null;
}

/** The schema-level `x-field-scopes` of every component schema that has them: schema → field → scopes. */
export function readFieldScopes(document: OpenApiDocument, catalogue: readonly ScopeDefinition[]): Map<string, Record<string, string[]>> {
  const declared = new Set(catalogue.map((scope) => scope.name));
  const tables = new Map<string, Record<string, string[]>>();
  for (const [name, schema] of Object.entries(document.components.schemas ?? {})) {
    if (!isRecord(schema) || schema[FIELD_SCOPES] === undefined) continue;
    const table = schema[FIELD_SCOPES];
    const at = `components.schemas.${name}.${FIELD_SCOPES}`;
    const properties = isRecord(schema.properties) ? schema.properties : {};
    if (!isRecord(table)) throw new EventCatalogueError(`${at} must map fields to the scopes that show them.`);
    for (const [field, scopes] of Object.entries(table)) {
      if (!(field in properties)) throw new EventCatalogueError(`${at}.${field}: ${name} has no field ${field}.`);
      if (!Array.isArray(scopes) || scopes.length === 0 || !scopes.every((scope) => typeof scope === 'string' && declared.has(scope))) {
        throw new EventCatalogueError(`${at}.${field} must be a non-empty list of declared scopes.`);
      }
      if (isRecord(schema) && Array.isArray(schema.required) && schema.required.includes(field)) {
        throw new EventCatalogueError(`${at}.${field}: a field left out without the scope cannot be required.`);
      }
    }
    tables.set(name, table as Record<string, string[]>);
  }
  return tables;
}

/** Every path from `schema` to an object whose schema has scoped fields (depth-first, refs followed, no cycles). */
function scopedPaths(document: OpenApiDocument, schema: unknown, tables: ReadonlyMap<string, unknown>, path: string[], seen: Set<string>): ScopedFieldsAt[] {
  if (!isRecord(schema)) return [];
  const ref = typeof schema.$ref === 'string' ? SCHEMA_REF.exec(schema.$ref)?.[1] : undefined;
  if (ref !== undefined) {
    if (seen.has(ref)) return [];
    const found = tables.has(ref) ? [{ path, schema: ref }] : [];
    return [...found, ...scopedPaths(document, resolveLocalRef(document, schema), tables, path, new Set([...seen, ref]))];
  }
  const found: ScopedFieldsAt[] = [];
  for (const variant of ['oneOf', 'anyOf', 'allOf'] as const) {
    for (const part of Array.isArray(schema[variant]) ? schema[variant] : []) found.push(...scopedPaths(document, part, tables, path, seen));
  }
  if (isRecord(schema.properties)) {
    for (const [name, property] of Object.entries(schema.properties)) found.push(...scopedPaths(document, property, tables, [...path, name], seen));
  }
  if (schema.items !== undefined) {
    if (scopedPaths(document, schema.items, tables, [...path, '*'], seen).length > 0) {
      throw new EventCatalogueError(`An event payload holds scoped fields inside a list at ${path.join('.')}; the generator does not walk lists yet.`);
    }
  }
  return found;
}

/** The event catalogue in the spec's order; refuses an event without a declared scope, schema or matching `type`. */
export function readEventCatalogue(document: OpenApiDocument, catalogue: readonly ScopeDefinition[]): EventDefinition[] {
  const declared = new Set(catalogue.map((scope) => scope.name));
  const webhooks = document.webhooks ?? {};
  const types = new Set(Object.keys(webhooks));
  const enumeration = resolveLocalRef<Json>(document, document.components.schemas?.WebhookEventType);
  const listed = Array.isArray(enumeration?.enum) ? (enumeration.enum as string[]) : [];
  if (listed.length !== types.size || !listed.every((type) => types.has(type))) {
    throw new EventCatalogueError(`components.schemas.WebhookEventType lists ${listed.join(', ')}; webhooks has ${[...types].join(', ')}.`);
  }
  const tables = readFieldScopes(document, catalogue);
  return listed.map((type) => {
    const at = `webhooks.${type}.post`;
    const operation = resolveLocalRef<Json>(document, webhooks[type])?.post;
    if (!isRecord(operation)) throw new EventCatalogueError(`${at} is missing.`);
    if (!(SCOPE in operation)) throw new EventCatalogueError(`${at}.${SCOPE} is missing (a scope, or null for none).`);
    const scope = operation[SCOPE];
    if (scope !== null && (typeof scope !== 'string' || !declared.has(scope)))
      throw new EventCatalogueError(`${at}.${SCOPE}: ${String(scope)} is not a declared scope.`);
    const body = resolveLocalRef<Json>(document, operation.requestBody);
    const content = isRecord(body?.content) ? body.content['application/json'] : undefined;
    const schemaRef = isRecord(content) && isRecord(content.schema) ? content.schema : undefined;
    const schema = typeof schemaRef?.$ref === 'string' ? SCHEMA_REF.exec(schemaRef.$ref)?.[1] : undefined;
    if (schema === undefined || !schemaRef) throw new EventCatalogueError(`${at}.requestBody must be a $ref to a component schema.`);
    const resolved = resolveLocalRef<Json>(document, schemaRef);
    const typeField = isRecord(resolved?.properties) ? resolved.properties.type : undefined;
    if (!isRecord(typeField) || typeField.const !== type) throw new EventCatalogueError(`components.schemas.${schema}.properties.type must be const ${type}.`);
    const alsoSends = genericUpdateOf(type, types);
    // The rule and the words agree: an event that also sends the generic one says so where readers look.
    if (
      alsoSends !== null &&
      !String(operation.description ?? '')
        .replace(/\s+/g, ' ')
        .includes(`\`${alsoSends}\` event is sent for the same change`)
    ) {
      throw new EventCatalogueError(`${at}.description must say "An \`${alsoSends}\` event is sent for the same change."`);
    }
    return { type, scope: scope as string | null, schema, alsoSends, scopedFields: scopedPaths(document, schemaRef, tables, [], new Set()) };
  });
}

/**
 * The bundled document with the event-type → scope table written out in `WebhookEventType`'s
 * description, from each webhook's `x-required-scope` (renderers do not show extensions), so the
 * reference cannot say otherwise than the service does.
 */
export function withEventScopeTable(document: OpenApiDocument, events: readonly EventDefinition[]): OpenApiDocument {
  const schemas = document.components.schemas ?? {};
  const enumeration = schemas.WebhookEventType;
  if (!isRecord(enumeration)) return document;
  const byScope = new Map<string, string[]>();
  for (const event of events) byScope.set(event.scope ?? 'none', [...(byScope.get(event.scope ?? 'none') ?? []), `\`${event.type}\``]);
  const rows = [...byScope].map(([scope, types]) => `| ${types.join(', ')} | ${scope === 'none' ? 'none' : `\`${scope}\``} |`);
  const table = ['| event type | scope |', '|---|---|', ...rows].join('\n');
  const description = typeof enumeration.description === 'string' ? `${enumeration.description.trimEnd()}\n\n` : '';
  return {
    ...document,
    components: { ...document.components, schemas: { ...schemas, WebhookEventType: { ...enumeration, description: `${description}${table}\n` } } },
  };
}

/** packages/contract/src/generated/events.ts */
export function contractEvents(events: readonly EventDefinition[], fieldScopes: ReadonlyMap<string, Record<string, string[]>>): string {
  const schemas = events.map((event) => `  ${JSON.stringify(event.type)}: components['schemas'][${JSON.stringify(event.schema)}];`).join('\n');
  const rows = events
    .map(
      (event) =>
        `  { type: ${JSON.stringify(event.type)}, scope: ${JSON.stringify(event.scope)}, schema: ${JSON.stringify(event.schema)}, alsoSends: ${JSON.stringify(event.alsoSends)}, scopedFields: ${JSON.stringify(event.scopedFields)} },`,
    )
    .join('\n');
  const pairs = events
    .filter((event) => event.alsoSends !== null)
    .map((event) => `  ${JSON.stringify(event.type)}: ${JSON.stringify(event.alsoSends)};`)
    .join('\n');
  const fields = [...fieldScopes].map(([schema, table]) => `  ${JSON.stringify(schema)}: ${JSON.stringify(table)},`).join('\n');
  return `${GENERATED_HEADER}import type { components } from './openapi';
import type { Scope } from './scopes';

/** A webhook event type (the spec's \`webhooks\`, in its order). */
export type WebhookEventType = components['schemas']['WebhookEventType'];

/** The schema of each event, envelope and data: what a receiver is sent. */
export interface WebhookEventSchemas {
${schemas}
}

/** The \`data\` of an event of type \`T\`, as its schema has it. */
export type WebhookEventData<T extends WebhookEventType> = WebhookEventSchemas[T]['data'];

/** Each specific event and the generic \`*.updated\` the same change also sends, as a type: its data must fit both. */
export interface WebhookGenericUpdates {
${pairs}
}

/** The component schemas whose fields need a scope to be seen (their \`x-field-scopes\`): schema → field → scopes, every one needed. */
export const FIELD_READ_SCOPES = {
${fields}
} as const satisfies Record<string, Record<string, readonly Scope[]>>;

export type ScopedSchema = keyof typeof FIELD_READ_SCOPES;

export interface WebhookEventDefinition {
  readonly type: WebhookEventType;
  /** The scope an installation needs to subscribe to it (\`x-required-scope\`); null: none. */
  readonly scope: Scope | null;
  /** Its component schema. */
  readonly schema: keyof components['schemas'];
  /** The generic event the same change also sends (\`order.updated\` for \`order.paid\`). */
  readonly alsoSends: WebhookEventType | null;
  /** Where its payload holds objects with scoped fields (\`*\` would be any list item). */
  readonly scopedFields: readonly { readonly path: readonly string[]; readonly schema: ScopedSchema }[];
}

/** Every event of the contract, in the spec's order. */
export const webhookEventCatalogue: readonly WebhookEventDefinition[] = [
${rows}
];

/** The scope each event type needs (null: none). A Map: a listed name never reaches a prototype. */
export const EVENT_TYPE_SCOPES: ReadonlyMap<WebhookEventType, Scope | null> = new Map(webhookEventCatalogue.map((event) => [event.type, event.scope]));
`;
}
