import type { OpenApiDocument } from '../bundle';
import { EventCatalogueError, genericUpdateOf, readEventCatalogue, withEventScopeTable } from '../events';
import type { ScopeDefinition } from '../scopes';

const SCOPES: ScopeDefinition[] = [
  { name: 'orders:read', description: 'Read orders.', needs: [] },
  { name: 'customers:read', description: 'Read customers.', needs: [] },
];

const PAID_WORDS = 'Sent when the order is paid. An `order.updated` event is sent\n for the same change.';

/** An event schema whose `type` is `type` and whose data holds an order. */
const eventSchema = (type: string) => ({
  type: 'object',
  properties: { type: { type: 'string', const: type }, data: { type: 'object', properties: { order: { $ref: '#/components/schemas/Order' } } } },
});

const webhook = (schema: string, scope: unknown, description = 'Sent.') => ({
  post: {
    description,
    ...(scope === undefined ? {} : { 'x-required-scope': scope }),
    requestBody: { content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } } },
  },
});

/** A bundled document with order.created, order.paid, order.updated and app.uninstalled. */
function documentWith(overrides: { paid?: unknown; customer?: Record<string, unknown> } = {}): OpenApiDocument {
  return {
    openapi: '3.1.0',
    paths: {},
    webhooks: {
      'app.uninstalled': webhook('AppUninstalledEvent', null),
      'order.created': webhook('OrderCreatedEvent', 'orders:read'),
      'order.paid': (overrides.paid as object | undefined) ?? webhook('OrderPaidEvent', 'orders:read', PAID_WORDS),
      'order.updated': webhook('OrderUpdatedEvent', 'orders:read'),
    },
    components: {
      schemas: {
        WebhookEventType: { type: 'string', description: 'An event type.\n', enum: ['app.uninstalled', 'order.created', 'order.paid', 'order.updated'] },
        AppUninstalledEvent: { type: 'object', properties: { type: { const: 'app.uninstalled' } } },
        OrderCreatedEvent: eventSchema('order.created'),
        OrderPaidEvent: eventSchema('order.paid'),
        OrderUpdatedEvent: eventSchema('order.updated'),
        Order: { type: 'object', properties: { id: { type: 'integer' }, customer: { $ref: '#/components/schemas/CustomerSummary' } } },
        CustomerSummary: {
          type: 'object',
          required: ['id'],
          properties: { id: { type: 'integer' }, email: { type: 'string' } },
          'x-field-scopes': { email: ['customers:read'] },
          ...overrides.customer,
        },
      },
    },
  };
}

const refusal = (document: OpenApiDocument): string => {
  try {
    readEventCatalogue(document, SCOPES);
  } catch (error) {
    if (error instanceof EventCatalogueError) return error.message;
    throw error;
  }
  throw new Error('the catalogue was generated');
};

describe('the event catalogue', () => {
  it('reads each event: its scope, its schema, the generic event beside it, where its payload holds scoped fields', () => {
    const customer = [{ path: ['data', 'order', 'customer'], schema: 'CustomerSummary' }];
    expect(readEventCatalogue(documentWith(), SCOPES)).toEqual([
      { type: 'app.uninstalled', scope: null, schema: 'AppUninstalledEvent', alsoSends: null, scopedFields: [] },
      { type: 'order.created', scope: 'orders:read', schema: 'OrderCreatedEvent', alsoSends: null, scopedFields: customer },
      { type: 'order.paid', scope: 'orders:read', schema: 'OrderPaidEvent', alsoSends: 'order.updated', scopedFields: customer },
      { type: 'order.updated', scope: 'orders:read', schema: 'OrderUpdatedEvent', alsoSends: null, scopedFields: customer },
    ]);
  });

  it('pairs a specific change with its resource’s generic *.updated, never a creation, an update or a resource without one', () => {
    const types = new Set(['order.paid', 'order.updated', 'order.created', 'app.uninstalled', 'inventory.adjusted']);
    expect(genericUpdateOf('order.paid', types)).toBe('order.updated');
    expect(genericUpdateOf('order.created', types)).toBeNull();
    expect(genericUpdateOf('order.updated', types)).toBeNull();
    expect(genericUpdateOf('app.uninstalled', types)).toBeNull();
    expect(genericUpdateOf('inventory.adjusted', types)).toBeNull();
  });

  it('refuses a webhook without x-required-scope, or naming a scope not declared', () => {
    expect(refusal(documentWith({ paid: webhook('OrderPaidEvent', undefined, PAID_WORDS) }))).toMatch(
      /webhooks\.order\.paid\.post\.x-required-scope is missing/,
    );
    expect(refusal(documentWith({ paid: webhook('OrderPaidEvent', 'orders:write', PAID_WORDS) }))).toMatch(/orders:write is not a declared scope/);
  });

  it('refuses a paired event whose description does not say the generic event is sent for the same change', () => {
    expect(refusal(documentWith({ paid: webhook('OrderPaidEvent', 'orders:read', 'Sent when paid.') }))).toMatch(/must say "An `order.updated` event is sent/);
  });

  it('refuses an event whose schema’s type is another, and an enum that differs from the webhooks', () => {
    expect(refusal(documentWith({ paid: webhook('OrderCreatedEvent', 'orders:read', PAID_WORDS) }))).toMatch(
      /OrderCreatedEvent\.properties\.type must be const order\.paid/,
    );
    const document = documentWith();
    delete (document.webhooks as Record<string, unknown>)['order.updated'];
    expect(refusal(document)).toMatch(/WebhookEventType lists/);
  });

  it('refuses scoped fields that are required, absent, or need an undeclared scope', () => {
    expect(refusal(documentWith({ customer: { required: ['id', 'email'] } }))).toMatch(/cannot be required/);
    expect(refusal(documentWith({ customer: { 'x-field-scopes': { phone: ['customers:read'] } } }))).toMatch(/has no field phone/);
    expect(refusal(documentWith({ customer: { 'x-field-scopes': { email: ['customers:write'] } } }))).toMatch(/non-empty list of declared scopes/);
  });

  it('writes the event-type → scope table into WebhookEventType’s description', () => {
    const document = withEventScopeTable(documentWith(), readEventCatalogue(documentWith(), SCOPES));
    expect((document.components.schemas?.WebhookEventType as { description: string } | undefined)?.description).toBe(
      'An event type.\n\n| event type | scope |\n|---|---|\n| `app.uninstalled` | none |\n| `order.created`, `order.paid`, `order.updated` | `orders:read` |\n',
    );
  });
});
