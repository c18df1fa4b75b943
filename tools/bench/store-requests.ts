/**
 * The product reads every bench script measures, `products.get` and `products.list`, as the paths
 * of their requests.
 */

/** The size of a list's page in the list cases. */
export const PAGE_LIMIT = 25;

/** 1,000 product ids spread over the whole store, in a scattered order: products.get reads no one hot row. */
export function spreadProductIds(productIds: { first: number; last: number }): number[] {
  const span = productIds.last - productIds.first + 1;
  return Array.from({ length: 1000 }, (_, index) => productIds.first + Math.floor(((index * 7919) % 1000) * (span / 1000)));
}

/** products.get walking over these ids in turn, and products.list's first page. */
export function productPaths(storeId: string, ids: readonly number[]): { get: () => string; list: () => string } {
  const products = `/stores/${storeId}/v1/products`;
  let next = 0;
  return { get: () => `${products}/${ids[next++ % ids.length]}`, list: () => `${products}?limit=${PAGE_LIMIT}` };
}
