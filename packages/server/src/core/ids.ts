/** A UUID, as ids of stores, apps, installations, clients and subscriptions are. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Store records have `integer` ids: anything beyond cannot exist (and PostgreSQL refuses to compare with it). */
export const MAX_ROW_ID = 2_147_483_647;

/**
 * A store record's id from a path (`^[1-9][0-9]*$`, checked by the spec validator) or a body:
 * undefined when it cannot name a row (not a positive integer in range). Parsed once, at the edge.
 */
export function rowIdOf(id: number | string): number | undefined {
  const rowId = typeof id === 'number' ? id : /^[1-9][0-9]*$/.test(id) ? Number(id) : Number.NaN;
  return Number.isSafeInteger(rowId) && rowId >= 1 && rowId <= MAX_ROW_ID ? rowId : undefined;
}
