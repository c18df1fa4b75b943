import { apiVersionRegistry } from '../../../src/core/api-versions';
import { eventVersionOf, payloadFor } from '../../../src/domain/webhooks/payloads';

const VERSION = '2026-10-15';

const order = {
  id: 'evt',
  type: 'order.created',
  api_version: VERSION,
  data: { order: { id: 7, customer: { id: 3, name: 'Noura', email: 'noura@example.com', mobile: '+966501234567' }, total: '10.00' } },
};

describe('payloadFor', () => {
  it('leaves the stored body as it is, byte for byte, for a receiver holding customers:read', () => {
    const stored = JSON.stringify(order);
    expect(payloadFor(stored, 'order.created', new Set(['orders:read', 'customers:read']), VERSION)).toBe(stored);
  });

  it("drops the customer's e-mail and mobile for a receiver without customers:read, and nothing else", () => {
    const sent = JSON.parse(payloadFor(JSON.stringify(order), 'order.created', new Set(['orders:read']), VERSION));
    expect(sent).toEqual({ ...order, data: { order: { ...order.data.order, customer: { id: 3, name: 'Noura' } } } });
  });

  it('does the same for carts and reviews, whose resource is named otherwise', () => {
    for (const [type, key] of [
      ['abandoned_cart.created', 'cart'],
      ['review.created', 'review'],
    ] as const) {
      const stored = JSON.stringify({ type, api_version: VERSION, data: { [key]: { customer: { id: 1, name: 'A', email: 'a@example.com' } } } });
      expect(JSON.parse(payloadFor(stored, type, new Set(), VERSION)).data[key].customer).toEqual({ id: 1, name: 'A' });
    }
  });

  it('leaves fields alone where the spec declares none: a "customer" elsewhere in a payload is not one it scopes', () => {
    const stored = JSON.stringify({ type: 'product.updated', api_version: VERSION, data: { product: { id: 1, customer: { email: 'x@example.com' } } } });
    expect(payloadFor(stored, 'product.updated', new Set(), VERSION)).toBe(stored);
  });

  it('sends events without customers byte for byte, whatever the scopes', () => {
    const stored = JSON.stringify({ type: 'product.created', api_version: VERSION, data: { product: { id: 1, name: 'Oud' } } });
    expect(payloadFor(stored, 'product.created', new Set(), VERSION)).toBe(stored);
  });

  it("builds the event for the subscription's version: api_version names it, in its place, and the rest is as stored", () => {
    const stored = JSON.stringify(order);
    const sent = payloadFor(stored, 'order.created', new Set(['orders:read', 'customers:read']), '2025-04-01');
    expect(sent).toBe(stored.replace(`"api_version":"${VERSION}"`, '"api_version":"2025-04-01"'));
    const redacted = JSON.parse(payloadFor(stored, 'order.created', new Set(['orders:read']), '2025-04-01'));
    expect(redacted).toEqual({ ...order, api_version: '2025-04-01', data: { order: { ...order.data.order, customer: { id: 3, name: 'Noura' } } } });
  });
});

describe('eventVersionOf', () => {
  const registry = apiVersionRegistry([
    { version: '2024-04-01', released: '2024-04-01', deprecated: '2025-04-01', sunset: '2026-04-01', changelog: '2024-04-01' },
    { version: '2025-04-01', released: '2025-04-01', deprecated: '2026-10-15', sunset: '2027-10-15', changelog: '2025-04-01' },
    { version: '2026-10-15', released: '2026-10-15', deprecated: null, sunset: null, changelog: '2026-10-15' },
  ]);
  const now = Date.parse('2026-11-22T09:00:00Z');

  it("is the subscription's own version while it is supported, deprecated or not", () => {
    expect(eventVersionOf('2025-04-01', now, registry)).toBe('2025-04-01');
    expect(eventVersionOf('2026-10-15', now, registry)).toBe('2026-10-15');
  });

  it('falls forward to the oldest supported version once its own is retired, or for a version the registry does not know', () => {
    expect(eventVersionOf('2024-04-01', now, registry)).toBe('2025-04-01');
    expect(eventVersionOf('2023-01-01', now, registry)).toBe('2025-04-01');
    expect(eventVersionOf('2025-04-01', Date.parse('2027-10-15T00:00:00Z'), registry)).toBe('2026-10-15');
  });
});
