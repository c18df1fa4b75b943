/**
 * A consumer's scenario on the client @hey-api/openapi-ts generates from the served `/openapi.json`
 * (issue 20, part 4). Not compiled with the repository: tools/client-check copies it beside a freshly
 * generated client (`./client/`) and compiles both under `strict`, so this file is written against
 * the generated names only (operationIds as camelCase functions, schema names as types).
 */
import { createClient } from './client/client';
import { inventoryAdjust, ordersGet, ordersList, pagesCreate, pagesGet, pagesUpdate, productsGet, productsList } from './client/sdk.gen';
import type { ErrorBody, InventoryAdjustment, Order, Page, Product } from './client/types.gen';

export interface ScenarioInput {
  readonly baseUrl: string;
  readonly accessToken: string;
  readonly storeId: string;
  readonly orderId: number;
  readonly productId: number;
}

/** One answer the client received: the operation's path template, its method and status, and the header names. */
export interface SeenAnswer {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  readonly headers: readonly string[];
}

export interface ScenarioResult {
  readonly answers: readonly SeenAnswer[];
  readonly productPages: readonly (readonly number[])[];
  readonly product: Product;
  readonly created: Page;
  readonly replayed: { readonly id: number; readonly header: string | null };
  readonly updated: Page;
  readonly staleUpdate: { readonly status: number; readonly error: ErrorBody };
  readonly adjustment: InventoryAdjustment;
  readonly order: Order;
  readonly listedOrders: readonly number[];
}

function must<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what}: no data`);
  return value;
}

export async function runScenario(input: ScenarioInput): Promise<ScenarioResult> {
  const answers: SeenAnswer[] = [];
  const client = createClient({ baseUrl: input.baseUrl, auth: input.accessToken });
  client.interceptors.response.use((response, request, options) => {
    answers.push({ method: request.method, path: options.url, status: response.status, headers: [...response.headers.keys()] });
    return response;
  });
  const path = { storeId: input.storeId };

  // List with paging: two products a page, following next_cursor until has_more is false.
  const productPages: number[][] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await productsList({ client, path, query: { limit: 2, ...(cursor ? { cursor } : {}) }, throwOnError: true });
    productPages.push(page.data.data.map((product) => product.id));
    if (!page.data.meta.has_more || page.data.meta.next_cursor === null) break;
    cursor = page.data.meta.next_cursor;
  }

  const product = (await productsGet({ client, path: { ...path, id: String(input.productId) }, throwOnError: true })).data.data;

  // Create with an Idempotency-Key, then the same request again: the first answer, replayed.
  const key = `scenario-${input.storeId}`;
  const body = { title: 'Shipping policy', body: '<p>Orders ship within two days.</p>' };
  const first = await pagesCreate({ client, path, headers: { 'Idempotency-Key': key }, body, throwOnError: true });
  const again = await pagesCreate({ client, path, headers: { 'Idempotency-Key': key }, body, throwOnError: true });
  const created = first.data.data;
  const etag = must(first.response.headers.get('ETag') ?? undefined, 'pages.create ETag');

  // Update with If-Match: the ETag of the create; then the same stale ETag again is 412.
  const pageId = { ...path, id: String(created.id) };
  const update = await pagesUpdate({ client, path: pageId, headers: { 'If-Match': etag }, body: { excerpt: 'Two days.' }, throwOnError: true });
  const stale = await pagesUpdate({ client, path: pageId, headers: { 'If-Match': etag }, body: { excerpt: 'Three days.' } });
  if (stale.error === undefined || stale.response === undefined) throw new Error('a stale If-Match was accepted, or had no answer');
  await pagesGet({ client, path: pageId, throwOnError: true });

  const adjusted = await inventoryAdjust({
    client,
    path: { ...path, id: String(input.productId) },
    headers: { 'Idempotency-Key': `${key}-stock` },
    body: { delta: 5, reason: 'restock', note: 'Delivery from the warehouse.' },
    throwOnError: true,
  });

  const order = (await ordersGet({ client, path: { ...path, id: String(input.orderId) }, throwOnError: true })).data.data;
  const orders = await ordersList({ client, path, query: { limit: 10 }, throwOnError: true });

  return {
    answers,
    productPages,
    product,
    created,
    replayed: { id: again.data.data.id, header: again.response.headers.get('Idempotent-Replayed') },
    updated: update.data.data,
    staleUpdate: { status: stale.response.status, error: stale.error as ErrorBody },
    adjustment: adjusted.data.data,
    order,
    listedOrders: orders.data.data.map((listed) => listed.id),
  };
}
