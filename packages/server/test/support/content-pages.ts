import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import { anyVersion } from '../../src/domain/common/actor';
import { createPage, setPagePublication } from '../../src/domain/content/pages/changes';
import type { PageCreate, PageRow, PublishedStatus } from '../../src/domain/content/pages/row';
import { tokenWithScopes } from './catalog-fixtures';
import type { Harness, StoreFixture } from './harness';
import { walkList, withCursor } from './list-walk';

/** `/stores/{storeId}/v1/pages[/{id}[/publication]]`. */
export const pagesPath = (storeId: string, id?: number | string, publication = false) =>
  `/stores/${storeId}/v1/pages${id === undefined ? '' : `/${id}`}${publication ? '/publication' : ''}`;

/** The tokens the page tests use: one per scope the page operations need (each with the scopes it depends on), and one without any page scope. */
export interface PageTokens {
  reader: string;
  writer: string;
  publisher: string;
  deleter: string;
  unrelated: string;
}

export async function pageTokens(h: Harness, store: StoreFixture): Promise<PageTokens> {
  return {
    reader: await tokenWithScopes(h, store, ['pages:read']),
    writer: await tokenWithScopes(h, store, ['pages:read', 'pages:write']),
    publisher: await tokenWithScopes(h, store, ['pages:read', 'pages:write', 'pages.publish:write']),
    deleter: await tokenWithScopes(h, store, ['pages:read', 'pages:write', 'pages.delete:write']),
    unrelated: await tokenWithScopes(h, store, ['products:read']),
  };
}

const bearer = (token: string) => `Bearer ${token}`;

/** Sets `If-Match` when one is given. */
const withIfMatch = (call: request.Test, ifMatch: string | undefined): request.Test => (ifMatch === undefined ? call : call.set('If-Match', ifMatch));

/** `POST …/pages` with an `Idempotency-Key` (a fresh one unless given; `null` sends none). */
export function postPage(app: Express, storeId: string, token: string, body: unknown, key: string | null = randomUUID()): request.Test {
  const call = request(app).post(pagesPath(storeId)).set('Authorization', bearer(token));
  return (key === null ? call : call.set('Idempotency-Key', key)).send(body as object);
}

export const getPageCall = (app: Express, storeId: string, token: string, id: number | string) =>
  request(app).get(pagesPath(storeId, id)).set('Authorization', bearer(token));

export const listPagesCall = (app: Express, storeId: string, token: string, query: Record<string, string | number> = {}) =>
  request(app).get(pagesPath(storeId)).query(query).set('Authorization', bearer(token));

export const patchPage = (app: Express, storeId: string, token: string, id: number | string, body: unknown, ifMatch?: string) =>
  withIfMatch(request(app).patch(pagesPath(storeId, id)).set('Authorization', bearer(token)), ifMatch).send(body as object);

export const patchPublication = (app: Express, storeId: string, token: string, id: number | string, body: unknown, ifMatch?: string) =>
  withIfMatch(
    request(app)
      .patch(pagesPath(storeId, id, true))
      .set('Authorization', bearer(token)),
    ifMatch,
  ).send(body as object);

export const deletePageCall = (app: Express, storeId: string, token: string, id: number | string, ifMatch?: string) =>
  withIfMatch(request(app).delete(pagesPath(storeId, id)).set('Authorization', bearer(token)), ifMatch);

/** Follows `next_cursor` from the first page to the last: the ids served, in order, and the pages' sizes. */
export async function walkPages(
  app: Express,
  storeId: string,
  token: string,
  query: Record<string, string | number>,
): Promise<{ ids: number[]; sizes: number[] }> {
  const walk = await walkList<{ id: number }>((cursor) => listPagesCall(app, storeId, token, withCursor(query, cursor)));
  return { ids: walk.items.map((item) => item.id), sizes: walk.pages.map((page) => page.data.length) };
}

/** A page created through the domain (no HTTP), then published or hidden when `status` says so. */
export async function seedPage(h: Harness, storeId: string, body: PageCreate, status?: PublishedStatus): Promise<PageRow> {
  const actor = { storeId, installationId: null, now: h.clock.now() };
  const page = await createPage(h.db, actor, body);
  return status === undefined ? page : setPagePublication(h.db, actor, page.id, anyVersion, status);
}

/** The store's page rows, by id. */
export const storedPages = (h: Harness, storeId: string): Promise<PageRow[]> => h.db<PageRow>('pages').where('store_id', storeId).orderBy('id');
