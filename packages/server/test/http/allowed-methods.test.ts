import { type OperationEntry, operationTable } from '@svc/contract';
import { methodNotAllowed, pathTemplateOf } from '../../src/http/allowed-methods';

const operations = Object.values(operationTable) as OperationEntry[];
const entry = (operationId: string, method: OperationEntry['method'], path: string) => ({ operationId, method, path }) as OperationEntry;

describe('the spec path of a request path', () => {
  it('takes one segment for a parameter and prefers the template with more literal segments', () => {
    const templates = ['/stores/{storeId}/v1/events/{id}', '/stores/{storeId}/v1/events/latest', '/stores/{storeId}/v1/events'];
    expect(pathTemplateOf('/stores/5c9f/v1/events/latest', templates)).toBe('/stores/{storeId}/v1/events/latest');
    expect(pathTemplateOf('/stores/5c9f/v1/events/0192', templates)).toBe('/stores/{storeId}/v1/events/{id}');
    expect(pathTemplateOf('/stores/5c9f/v1/events/', templates)).toBe('/stores/{storeId}/v1/events');
    expect(pathTemplateOf('/stores/5c9f/v1/events/0192/more', templates)).toBeUndefined();
    expect(pathTemplateOf('/stores//v1/events', templates)).toBeUndefined();
  });
});

describe('a 405 of the interface', () => {
  it('lists the methods of the path and names its operations, and those below it that take the method sent', () => {
    const refusal = methodNotAllowed('put', '/stores/5c9f/v1/webhook-subscriptions/7', operations);
    const here = operations.filter((operation) => operation.path === '/stores/{storeId}/v1/webhook-subscriptions/{id}');
    expect(refusal?.status).toBe(405);
    expect(refusal?.extras.allowed_methods).toEqual(here.map((operation) => operation.method.toUpperCase()));
    expect(refusal?.message).toBe(
      `/stores/{storeId}/v1/webhook-subscriptions/{id} does not take PUT: it takes ${here.map((operation) => `${operation.method.toUpperCase()} (${operation.operationId})`).join(', ')}.`,
    );
    const post = methodNotAllowed('POST', '/stores/5c9f/v1/webhook-subscriptions/7', operations);
    expect(post?.message).toMatch(/ POST is taken below it, by …\/recover \(webhooks.recover\), .*…\/test \(webhooks.test\)\.$/);
  });

  it('is none for a path the interface does not have, and its message stays within the error format', () => {
    expect(methodNotAllowed('GET', '/nowhere', operations)).toBeUndefined();
    const many = Array.from({ length: 80 }, (_, index) => entry(`things.action${index}`, 'post', `/things/{id}/action-with-a-long-name-${index}`));
    const refusal = methodNotAllowed('POST', '/things/1', [entry('things.get', 'get', '/things/{id}'), ...many]);
    expect(refusal?.message.length).toBe(1024);
    expect(refusal?.message.endsWith('…')).toBe(true);
  });
});
