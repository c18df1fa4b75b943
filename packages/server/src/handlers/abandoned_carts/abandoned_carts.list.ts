import { listCarts } from '../../domain/storefront/carts/queries';
import { pageEnvelope } from '../../http/envelope';
import { type Handler, listRequestOf, principalOf } from '../../http/handler';

/**
 * `abandoned_carts.list`: GET /stores/{storeId}/v1/abandoned-carts. Keyset pages by id (by
 * `updated_at` and id given `updated_since`), recovered carts included; contact details need
 * `customers:read`.
 */
const abandonedCartsList: Handler<'abandoned_carts.list'> = async (context) => {
  const { limit, cursor, ...filters } = context.query;
  const principal = principalOf(context);
  const reading = { reader: principal.scopes, now: context.services.clock.now() };
  const page = await listCarts(context.db, principal.storeId, filters, reading, listRequestOf(context, { limit, cursor }));
  return { status: 200, body: pageEnvelope(context, page) };
};

export default abandonedCartsList;
