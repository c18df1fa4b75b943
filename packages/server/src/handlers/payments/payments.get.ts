import { getPayment } from '../../domain/storefront/payments/queries';
import { paymentNotFound } from '../../domain/storefront/payments/row';
import { envelope } from '../../http/envelope';
import { type Handler, principalOf, recordIdOf } from '../../http/handler';

/** `payments.get`: GET /stores/{storeId}/v1/payments/{id}: one payment of the token's store. */
const paymentsGet: Handler<'payments.get'> = async (context) => {
  const payment = await getPayment(context.db, principalOf(context).storeId, recordIdOf(context.params.id, paymentNotFound));
  return { status: 200, body: envelope(context, payment) };
};

export default paymentsGet;
