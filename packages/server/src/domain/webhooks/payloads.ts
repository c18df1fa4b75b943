import { webhookEventCatalogue } from '@svc/contract';
import type { ApiVersionRegistry } from '../../core/api-versions';
import { hiddenFields } from '../../core/field-scopes';
import { publishedApiVersions } from '../../services/api-versions';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The version a subscription's events are built for at `now`: its own, or once that is retired the
 * oldest version still supported. A receiver cannot refuse an event as a request can be refused,
 * and dropping its events would be worse than moving them forward (Shopify falls forward the same
 * way); the event's `api_version` says which version it follows.
 */
export function eventVersionOf(subscriptionVersion: string, now: number, registry: ApiVersionRegistry = publishedApiVersions): string {
  const entry = registry.find(subscriptionVersion);
  if (entry && registry.stateOf(entry, now) !== 'retired') return subscriptionVersion;
  return (registry.supportedAt(now)[0] ?? registry.current).version;
}

/** Where each event type's payload holds objects with scoped fields (generated from the spec). */
const SCOPED_FIELDS = new Map(webhookEventCatalogue.map((event) => [event.type as string, event.scopedFields]));

/** The object at `path` in `value` (`*` is not walked: the generator refuses scoped fields in lists). */
function objectAt(value: unknown, path: readonly string[]): Json | undefined {
  let at: unknown = value;
  for (const key of path) at = isObject(at) ? at[key] : undefined;
  return isObject(at) ? at : undefined;
}

/**
 * The stored event body as one receiver may see it. The outbox keeps one body per event, written
 * with every field and the version current when it was written; a receiver gets it built for its
 * subscription's `apiVersion` (today every version's events have the same shape, so only
 * `api_version` differs), and without the fields its installation's scopes may not see: the spec's
 * `x-field-scopes` beside them (a customer's `email` and `mobile` need `customers:read`), found
 * where the generated catalogue says the event's payload holds them, the same table the API's
 * answers follow. Anything else is sent byte for byte as stored, so a replay re-sends the same body.
 */
export function payloadFor(stored: string, type: string, scopes: ReadonlySet<string>, apiVersion: string): string {
  const sameVersion = stored.includes(`"api_version":${JSON.stringify(apiVersion)}`);
  // Most events (products, inventory) hold no scoped field, or the receiver sees them all: sent as stored without parsing.
  const hiding = (SCOPED_FIELDS.get(type) ?? [])
    .map((location) => ({ path: location.path, hidden: hiddenFields(location.schema, scopes) }))
    .filter((location) => location.hidden.length > 0);
  if (sameVersion && hiding.length === 0) return stored;
  const event = JSON.parse(stored) as Json;
  let changed = false;
  if (event.api_version !== apiVersion) {
    event.api_version = apiVersion;
    changed = true;
  }
  for (const { path, hidden } of hiding) {
    const holder = objectAt(event, path.slice(0, -1));
    const key = path[path.length - 1];
    const scoped = key === undefined ? undefined : objectAt(holder, [key]);
    if (!holder || key === undefined || !scoped || !hidden.some((field) => field in scoped)) continue;
    holder[key] = Object.fromEntries(Object.entries(scoped).filter(([field]) => !hidden.includes(field)));
    changed = true;
  }
  return changed ? JSON.stringify(event) : stored;
}
