import type { OperationId } from '@svc/contract';
import { envelope, pageEnvelope } from '../../src/http/envelope';
import type { Execution, HandlerContext } from '../../src/http/handler';

const requestId = '8a1f7c3e-4b2d-4f6a-9c1e-2d3b4a5c6d7e';
const execution: Execution = {
  appId: '3f1c2b7a-8d4e-4a6b-9f2c-1e3d5a7b9c0d',
  versionId: '6b2e4d8f-1a3c-4e5b-8d7f-2c4e6a8b0d1f',
  installationId: '9d8c7b6a-5e4f-4a3b-8c2d-1e0f9a8b7c6d',
  storeId: '5c9f1e2d-3b4a-4c6d-8e7f-9a0b1c2d3e4f',
  requestId,
  generation: 2,
  routeEpoch: 1,
  appAuthEpoch: 3,
  grantRevision: 1,
};
const context = (withExecution: boolean) => ({ requestId, ...(withExecution ? { execution } : {}) }) as unknown as HandlerContext<OperationId>;

describe('the response envelope', () => {
  it('wraps one resource with meta.request_id and the execution of the token', () => {
    expect(envelope(context(true), { id: 7 })).toEqual({ data: { id: 7 }, meta: { request_id: requestId }, execution });
  });

  it('leaves execution out where no token was resolved', () => {
    expect(envelope(context(false), { id: 7 })).toEqual({ data: { id: 7 }, meta: { request_id: requestId } });
  });

  it('gives a keyset page its meta exactly as the interface lists it', () => {
    expect(pageEnvelope(context(true), { items: [{ id: 1 }], page: { hasMore: false, limit: 25, nextCursor: null } })).toEqual({
      data: [{ id: 1 }],
      meta: { request_id: requestId, has_more: false, limit: 25, next_cursor: null, consistency: 'live_keyset' },
      execution,
    });
  });
});
