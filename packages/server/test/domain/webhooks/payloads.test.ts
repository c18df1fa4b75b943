import { payloadFor } from '../../../src/domain/webhooks/payloads';

const order = {
  id: 'evt',
  type: 'order.created',
  data: { order: { id: 7, customer: { id: 3, name: 'Noura', email: 'noura@example.com', mobile: '+966501234567' }, total: '10.00' } },
};

describe('payloadFor', () => {
  it('leaves the stored body as it is, byte for byte, for a receiver holding customers:read', () => {
    const stored = JSON.stringify(order);
    expect(payloadFor(stored, new Set(['orders:read', 'customers:read']))).toBe(stored);
  });

  it("drops the customer's e-mail and mobile for a receiver without customers:read, and nothing else", () => {
    const sent = JSON.parse(payloadFor(JSON.stringify(order), new Set(['orders:read'])));
    expect(sent).toEqual({ ...order, data: { order: { ...order.data.order, customer: { id: 3, name: 'Noura' } } } });
  });

  it('does the same for carts and reviews, whose resource is named otherwise', () => {
    for (const key of ['cart', 'review']) {
      const stored = JSON.stringify({ type: 'x', data: { [key]: { customer: { id: 1, name: 'A', email: 'a@example.com' } } } });
      expect(JSON.parse(payloadFor(stored, new Set())).data[key].customer).toEqual({ id: 1, name: 'A' });
    }
  });

  it('sends events without customers byte for byte, whatever the scopes', () => {
    const stored = JSON.stringify({ type: 'product.created', data: { product: { id: 1, name: 'Oud' } } });
    expect(payloadFor(stored, new Set())).toBe(stored);
  });
});
