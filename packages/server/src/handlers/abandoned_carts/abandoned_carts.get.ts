import { getCart } from '../../domain/storefront/carts/queries';
import { cartNotFound } from '../../domain/storefront/carts/row';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `abandoned_carts.get`: GET /stores/{storeId}/v1/abandoned-carts/{id}: one cart of the token's store; contact details need `customers:read`. */
const abandonedCartsGet: Handler<'abandoned_carts.get'> = async (context) => {
  const principal = principalOf(context);
  const cart = await getCart(context.db, principal.storeId, recordIdOf(context.params.id, cartNotFound), {
    reader: principal.scopes,
    now: context.services.clock.now(),
  });
  return { status: 200, body: envelope(context, cart) };
};

export default abandonedCartsGet;
