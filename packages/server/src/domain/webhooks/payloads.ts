/** The scope that shows a customer's e-mail and mobile, in answers and in events alike. */
export const CONTACT_SCOPE = 'customers:read';

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The stored event body as one receiver may see it. The outbox keeps one body per event, written
 * with the customer's contact details; an installation without `customers:read` gets the event
 * with `email` and `mobile` left out of the customer of its resource (`data.order.customer`,
 * `data.cart.customer`, `data.review.customer`), as the API answers that installation. Anything
 * else is sent byte for byte as stored, so a replay re-sends the same body.
 */
export function payloadFor(stored: string, scopes: ReadonlySet<string>): string {
  // Most events (products, inventory) carry no customer: sent as stored without parsing them.
  if (scopes.has(CONTACT_SCOPE) || !stored.includes('"customer":')) return stored;
  const event = JSON.parse(stored) as Json;
  if (!isObject(event.data)) return stored;
  let redacted = false;
  for (const resource of Object.values(event.data)) {
    if (!isObject(resource) || !isObject(resource.customer)) continue;
    const { email, mobile, ...customer } = resource.customer;
    if (email === undefined && mobile === undefined) continue;
    resource.customer = customer;
    redacted = true;
  }
  return redacted ? JSON.stringify(event) : stored;
}
