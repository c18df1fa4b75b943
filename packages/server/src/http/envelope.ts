import type { components, OperationId } from '@svc/contract';
import type { Page } from '../core/paging';
import type { HandlerContext } from './handler';

type RequestMeta = components['schemas']['RequestMeta'];
type ListMeta = components['schemas']['ListMeta'];

function execution(context: HandlerContext<OperationId>) {
  return context.execution ? { execution: context.execution } : {};
}

/** `{data, meta: {request_id}, execution}` around one resource. */
export function envelope<T>(context: HandlerContext<OperationId>, data: T): { data: T; meta: RequestMeta } {
  return { data, meta: { request_id: context.requestId }, ...execution(context) };
}

/** `{data: [...], meta: {request_id, has_more, limit, next_cursor, consistency}, execution}` for a keyset page. */
export function pageEnvelope<T>(context: HandlerContext<OperationId>, { items, page }: Page<T>): { data: T[]; meta: ListMeta } {
  return {
    data: items,
    meta: {
      request_id: context.requestId,
      has_more: page.hasMore,
      limit: page.limit,
      next_cursor: page.nextCursor,
      // A replica's page is a moment older, but never older than the caller's own writes.
      consistency: context.reads?.servedBy === 'replica' ? 'replica_keyset' : 'live_keyset',
    },
    ...execution(context),
  };
}

/** `{data, meta: {request_id, …the report's meta}, execution}` for a report that carries its own meta (analytics). */
export function reportEnvelope<T, M extends object>(context: HandlerContext<OperationId>, report: { data: T; meta: M }): { data: T; meta: M & RequestMeta } {
  return { data: report.data, meta: { request_id: context.requestId, ...report.meta }, ...execution(context) };
}
