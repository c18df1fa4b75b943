import { listProductRows, viewOfRow } from '../../domain/catalog/products';
import { pageEnvelope } from '../../http/envelope';
import { ApiError } from '../../core/errors';
import { type Handler, principalOf } from '../../http/handler';
import { keysetPage } from '../../core/paging';

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|([+-])(\d{2}):?(\d{2})?)$/;

/** An RFC 3339 date-time as epoch ms; 400 INVALID_FILTER when it is not one. */
export function parseUpdatedSince(text: string): number {
  const match = RFC3339.exec(text);
  if (!match) throw new ApiError('INVALID_FILTER', "The filter 'updated_since' is not a valid date-time.");
  const [, year, month, day, hour, minute, second, fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match;
  const milliseconds = Math.floor(Number(`0${fraction}`) * 1000);
  const local = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second), milliseconds);
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  const instant = local - (sign === undefined ? 0 : offset);
  const calendar = new Date(local);
  const real = calendar.getUTCFullYear() === Number(year) && calendar.getUTCMonth() === Number(month) - 1 && calendar.getUTCDate() === Number(day);
  if (!real || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59 || Number(offsetHours) > 23 || Number(offsetMinutes) > 59) {
    throw new ApiError('INVALID_FILTER', "The filter 'updated_since' is not a date-time that exists.");
  }
  if (!Number.isFinite(instant)) throw new ApiError('INVALID_FILTER', "The filter 'updated_since' is not a valid date-time.");
  return instant;
}

/**
 * `products.list`: GET /stores/{storeId}/v1/products. Keyset pages by id; the filters (AND) travel
 * in the cursor, so a cursor only works with the same filters.
 */
const productsList: Handler<'products.list'> = async (context) => {
  const { storeId } = principalOf(context);
  const { limit, cursor, status, category, search, updated_since: updatedSince } = context.query;
  const criteria = { status, category, search, updatedSince: updatedSince === undefined ? undefined : parseUpdatedSince(updatedSince) };
  const { rows, page } = await keysetPage(
    context.keys.cursor,
    context.services.clock.now(),
    { list: 'products.list', storeId, filters: { status, category, search, updated_since: updatedSince } },
    { limit, cursor },
    (afterId, take) => listProductRows(context.db, storeId, criteria, afterId, take),
  );
  return { status: 200, body: pageEnvelope(context, rows.map(viewOfRow), page) };
};

export default productsList;
