import type request from 'supertest';

/** One page of a store API list. */
export interface ListPage<Item> {
  data: Item[];
  meta: { next_cursor: string | null; has_more: boolean; consistency?: string };
}

/**
 * Every page of a list, following `next_cursor` until it is null: the one page walker of the tests.
 * `call(cursor)` asks for a page (`null` for the first). Each page must answer 200 (else the walk
 * throws with the answer) and say `has_more` exactly when it names a next cursor. `between(pages)`
 * runs after each page that has a next one, with the number of pages served so far.
 */
export async function walkList<Item>(
  call: (cursor: string | null) => PromiseLike<request.Response>,
  between?: (pages: number) => Promise<void>,
): Promise<{ items: Item[]; pages: ListPage<Item>[] }> {
  const pages: ListPage<Item>[] = [];
  let cursor: string | null = null;
  do {
    const response: request.Response = await call(cursor);
    if (response.status !== 200) throw new Error(`The list answered ${response.status}: ${JSON.stringify(response.body)}`);
    const page = response.body as ListPage<Item>;
    expect(page.meta.has_more).toBe(page.meta.next_cursor !== null);
    pages.push(page);
    cursor = page.meta.next_cursor;
    if (cursor !== null) await between?.(pages.length);
  } while (cursor !== null);
  return { items: pages.flatMap((page) => page.data), pages };
}

/** `query` with the cursor added, when there is one. */
export const withCursor = <Query extends object>(query: Query, cursor: string | null): Query | (Query & { cursor: string }) =>
  cursor === null ? query : { ...query, cursor };
