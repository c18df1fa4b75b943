import type { ApiVersionRegistry } from '../../core/api-versions';
import { publishedApiVersions } from '../../platform/api-versions';

/** The scope that shows a customer's e-mail and mobile, in answers and in events alike. */
export const CONTACT_SCOPE = 'customers:read';

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

/**
 * The stored event body as one receiver may see it. The outbox keeps one body per event, written
 * with the customer's contact details and the version current when it was written; a receiver
 * gets it built for its subscription's `apiVersion` (today every version's events have the same
 * shape, so only `api_version` differs), and an installation without `customers:read` gets the
 * event with `email` and `mobile` left out of the customer of its resource (`data.order.customer`,
 * `data.cart.customer`, `data.review.customer`), as the API answers that installation. Anything
 * else is sent byte for byte as stored, so a replay re-sends the same body.
 */
export function payloadFor(stored: string, scopes: ReadonlySet<string>, apiVersion: string): string {
  const sameVersion = stored.includes(`"api_version":${JSON.stringify(apiVersion)}`);
  // Most events (products, inventory) carry no customer: sent as stored without parsing them.
  const keepsContacts = scopes.has(CONTACT_SCOPE) || !stored.includes('"customer":');
  if (sameVersion && keepsContacts) return stored;
  const event = JSON.parse(stored) as Json;
  let changed = false;
  if (event.api_version !== apiVersion) {
    event.api_version = apiVersion;
    changed = true;
  }
  if (!keepsContacts && isObject(event.data)) {
    for (const resource of Object.values(event.data)) {
      if (!isObject(resource) || !isObject(resource.customer)) continue;
      const { email, mobile, ...customer } = resource.customer;
      if (email === undefined && mobile === undefined) continue;
      resource.customer = customer;
      changed = true;
    }
  }
  return changed ? JSON.stringify(event) : stored;
}
