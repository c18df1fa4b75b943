import type { Knex } from 'knex';
import { ManualClock } from '../../core/clock';
import { ApiError } from '../../core/errors';
import type { Db } from '../../db/transactions';
import { inTransaction } from '../../db/transactions';
import { adjustInventory } from '../../domain/catalog/inventory/changes';
import { unsoldUnits } from '../../domain/catalog/inventory/queries';
import type { ProductRow } from '../../domain/catalog/products/row';
import type { Actor } from '../../domain/common/actor';
import { abandonCart, recoverCart } from '../../domain/storefront/carts/changes';
import { createCoupon } from '../../domain/storefront/coupons/changes';
import { findCouponByCode } from '../../domain/storefront/coupons/queries';
import { createCustomer } from '../../domain/storefront/customers/changes';
import { cancelOrder, failPayment, fulfilOrder, payOrder, placeOrder, refundOrder } from '../../domain/storefront/orders/changes';
import type { OrderRow, ProductKind } from '../../domain/storefront/orders/row';
import { writeReview } from '../../domain/storefront/reviews/changes';
import { findStore, PlatformError } from '../../platform/stores';
import type { Deps } from '../../services/container';
import { between, type Random, seededRandom } from '../random';
import { HOUR_MS, utcOffsetMs } from './calendar';
import { type CartPlan, type LinePlan, markerCouponCode, type OrderPlan, planSimulation, type SimulationPlan, type Step, type TimedStep } from './plan';

/**
 * `svc simulate` and the demo's first start: shopper and merchant activity played through the
 * storefront's domain functions only (each its own rules, transaction work and outbox events), on a
 * clock stepped through the planned instants, so every `created_at`, `paid_at` and event time is
 * the simulated moment. The same seed on a store with the same catalog gives the same orders.
 */

/** The bounds `svc simulate` takes: a year and a day of history, a million orders, a 32-bit seed. */
export const SIMULATION_BOUNDS = {
  days: { min: 1, max: 366 },
  orders: { min: 1, max: 1_000_000 },
  seed: { min: 0, max: 4_294_967_295 },
} as const;

export interface SimulationRequest {
  storeId: string;
  days: number;
  orders: number;
  seed: number;
  /** Told after each committed batch: the steps played so far, of all. */
  onProgress?: (done: number, total: number) => void;
  /**
   * A stopping process aborts it: the run ends after the batch in hand commits, rejecting with the
   * signal's reason. What was committed stays (a later run needs another seed).
   */
  signal?: AbortSignal;
}

export interface SimulationSummary {
  /** The simulated days: from the first's local midnight to today's (exclusive). */
  from: number;
  to: number;
  customers: number;
  orders: number;
  /** Orders paid (including those later refunded or cancelled). */
  paid: number;
  /** Orders refunded, by a refund or by cancelling a paid order. */
  refunded: number;
  cancelled: number;
  failedPayments: number;
  /** Carts abandoned, recovered or not. */
  carts: number;
  recovered: number;
  reviews: number;
  couponsUsed: number;
  /** Inventory adjustments made to keep products in stock. */
  restocks: number;
  /** Outbox events the run wrote. */
  events: number;
}

/**
 * How long one transaction plays steps before it commits (a few orders). Everything else that
 * writes to the database waits for it: on SQLite the requests of the server running the
 * simulation (better-sqlite3 is synchronous, so a batch never lets the event loop run) and any
 * other process on the file; on PostgreSQL whoever writes the stock of the products it sells. A
 * commit costs a fraction of a millisecond, so short batches slow the run by little.
 */
const BATCH_MS = 10;
/** Restocks bring the missing units and a lot more, as a merchant reorders. */
const RESTOCK_LOT = { physical: [20, 120], digital: [5, 25] } as const;

const positiveWhole = (value: number, { min, max }: { min: number; max: number }) => Number.isSafeInteger(value) && value >= min && value <= max;

interface ProductForSale {
  id: number;
  kind: ProductKind;
}

async function productsForSale(db: Db, storeId: string): Promise<ProductForSale[]> {
  const rows = (await db<ProductRow>('products')
    .where({ store_id: storeId, status: 'active', price_state: 'ready' })
    .orderBy('id')
    .select('id', 'product_kind')) as Array<Pick<ProductRow, 'id' | 'product_kind'>>;
  return rows.map((row) => ({ id: Number(row.id), kind: row.product_kind }));
}

async function outboxCount(db: Db, storeId: string): Promise<number> {
  const [row] = await db('outbox_events').where({ store_id: storeId }).count({ n: '*' });
  return Number(row?.n ?? 0);
}

/** Plays the plan's steps and keeps what they created (ids by plan) and the stock it can sell. */
class Player {
  readonly summary = {
    customers: 0,
    orders: 0,
    paid: 0,
    refunded: 0,
    cancelled: 0,
    failedPayments: 0,
    carts: 0,
    recovered: 0,
    reviews: 0,
    couponsUsed: 0,
    restocks: 0,
  };
  private readonly clock = new ManualClock();
  private readonly customerIds = new Map<number, number>();
  private readonly cartIds = new Map<CartPlan, number>();
  private readonly orders = new Map<OrderPlan, OrderRow>();
  /**
   * What each product can still sell: manual stock, or a digital product's unsold units less those
   * promised to orders placed and not yet paid (units are assigned at payment, so an order's units
   * must still be there when it is paid).
   */
  private readonly sellable = new Map<number, number>();
  private readonly random: Random;
  private codes = 0;

  constructor(
    private readonly storeId: string,
    private readonly seed: number,
    private readonly plan: SimulationPlan,
    private readonly products: readonly ProductForSale[],
    stock: ReadonlyMap<number, number>,
  ) {
    // Restock sizes and codes come from a stream of their own, so they never shift the plan.
    this.random = seededRandom(seed ^ 0x5eed_5eed);
    for (const product of products) this.sellable.set(product.id, stock.get(product.id) ?? 0);
  }

  private actorAt(at: number): Actor {
    this.clock.set(at);
    return { storeId: this.storeId, installationId: null, now: this.clock.now() };
  }

  private productOf(line: LinePlan): ProductForSale {
    const product = this.products[line.product];
    if (!product) throw new Error(`The plan names product ${line.product} of ${this.products.length}`);
    return product;
  }

  private itemsOf(lines: readonly LinePlan[]) {
    return lines.map((line) => ({ productId: this.productOf(line).id, quantity: line.quantity }));
  }

  private orderOf(plan: OrderPlan): OrderRow {
    const order = this.orders.get(plan);
    if (!order) throw new Error(`Order ${plan.reference} was not placed before its later steps`);
    return order;
  }

  async createCoupons(trx: Knex.Transaction): Promise<void> {
    const actor = this.actorAt(this.plan.window.from - HOUR_MS);
    for (const coupon of this.plan.coupons) await createCoupon(trx, actor, coupon);
  }

  private async customerId(trx: Knex.Transaction, actor: Actor, index: number): Promise<number> {
    const known = this.customerIds.get(index);
    if (known !== undefined) return known;
    const shopper = this.plan.customers[index];
    if (!shopper) throw new Error(`The plan names customer ${index} of ${this.plan.customers.length}`);
    const { id } = await createCustomer(trx, actor, shopper);
    this.customerIds.set(index, Number(id));
    this.summary.customers += 1;
    return Number(id);
  }

  /** Restocks (reason `restock`, through the inventory's own adjustment) what the lines would take below zero. */
  private async keepInStock(trx: Knex.Transaction, actor: Actor, lines: readonly LinePlan[]): Promise<void> {
    for (const line of lines) {
      const product = this.productOf(line);
      const sellable = this.sellable.get(product.id) ?? 0;
      if (sellable >= line.quantity) continue;
      const [low, high] = product.kind === 'digital' ? RESTOCK_LOT.digital : RESTOCK_LOT.physical;
      const delta = line.quantity - sellable + between(this.random, low, high);
      const codes = product.kind === 'digital' ? Array.from({ length: delta }, () => this.nextCode()) : undefined;
      await adjustInventory(trx, actor, product.id, { delta, reason: 'restock', note: 'Simulated restock', ...(codes ? { codes } : {}) });
      this.sellable.set(product.id, sellable + delta);
      this.summary.restocks += 1;
    }
  }

  private nextCode(): string {
    this.codes += 1;
    const body = Math.floor(this.random() * 36 ** 8)
      .toString(36)
      .toUpperCase()
      .padStart(8, '0');
    return `SIM-${this.seed.toString(36).toUpperCase()}-${body}-${this.codes}`;
  }

  private changeSellable(lines: readonly LinePlan[], sign: 1 | -1, kinds: (kind: ProductKind) => boolean): void {
    for (const line of lines) {
      const product = this.productOf(line);
      if (kinds(product.kind)) this.sellable.set(product.id, (this.sellable.get(product.id) ?? 0) + sign * line.quantity);
    }
  }

  private async place(trx: Knex.Transaction, actor: Actor, plan: OrderPlan): Promise<void> {
    const customerId = await this.customerId(trx, actor, plan.customer);
    await this.keepInStock(trx, actor, plan.lines);
    const cartId = plan.cart ? this.cartIds.get(plan.cart) : undefined;
    if (plan.cart && cartId === undefined) throw new Error(`The cart of order ${plan.reference} was not abandoned before it`);
    const placeWith = (db: Db, couponCode: string | null): Promise<OrderRow> =>
      cartId === undefined
        ? placeOrder(db, actor, { customerId, items: this.itemsOf(plan.lines), couponCode, reference: plan.reference })
        : recoverCart(db, actor, cartId, { couponCode, reference: plan.reference });
    const coupon = plan.coupon === null ? undefined : this.plan.coupons[plan.coupon];
    let order: OrderRow | undefined;
    if (coupon) {
      try {
        // A savepoint: the refused attempt leaves nothing behind in the batch's transaction.
        order = await trx.transaction((attempt) => placeWith(attempt, coupon.code));
        this.summary.couponsUsed += 1;
      } catch (error) {
        // The shopper's code does not apply (expired, used up, under its minimum): they check out without it.
        if (!(error instanceof ApiError && error.code === 'COUPON_NOT_APPLICABLE')) throw error;
      }
    }
    order ??= await placeWith(trx, null);
    this.orders.set(plan, order);
    this.changeSellable(plan.lines, -1, () => true);
    this.summary.orders += 1;
    if (cartId !== undefined) this.summary.recovered += 1;
  }

  private async abandon(trx: Knex.Transaction, actor: Actor, cart: CartPlan): Promise<void> {
    const customerId = await this.customerId(trx, actor, cart.customer);
    const { id } = await abandonCart(trx, actor, { customerId, items: this.itemsOf(cart.lines) });
    this.cartIds.set(cart, Number(id));
    this.summary.carts += 1;
  }

  async play(trx: Knex.Transaction, at: number, step: Step): Promise<void> {
    const actor = this.actorAt(at);
    switch (step.kind) {
      case 'abandon':
        return this.abandon(trx, actor, step.cart);
      case 'place':
        return this.place(trx, actor, step.order);
      case 'fail-payment':
        await failPayment(trx, actor, this.orderOf(step.order).id, step.attempt);
        this.summary.failedPayments += 1;
        return;
      case 'pay':
        this.orders.set(step.order, await payOrder(trx, actor, this.orderOf(step.order).id, step.attempt));
        this.summary.paid += 1;
        return;
      case 'cancel': {
        const wasPaid = this.orderOf(step.order).payment_status === 'paid';
        this.orders.set(step.order, await cancelOrder(trx, actor, this.orderOf(step.order).id));
        // Manual stock comes back; a digital order's promised units are free again unless it was paid (then they were delivered).
        this.changeSellable(step.order.lines, 1, (kind) => kind !== 'digital' || !wasPaid);
        this.summary.cancelled += 1;
        if (wasPaid) this.summary.refunded += 1;
        return;
      }
      case 'fulfil':
        this.orders.set(step.order, await fulfilOrder(trx, actor, this.orderOf(step.order).id, step.next));
        return;
      case 'refund':
        this.orders.set(step.order, await refundOrder(trx, actor, this.orderOf(step.order).id));
        this.summary.refunded += 1;
        return;
      case 'review': {
        const order = this.orderOf(step.order);
        const productId = this.productOf(step.line).id;
        await writeReview(trx, actor, { customerId: Number(order.customer_id), orderId: order.id, productId, rating: step.rating, content: step.content });
        this.summary.reviews += 1;
        return;
      }
    }
  }
}

/** Each product's stock now: manual quantity, or a digital product's unsold units. */
async function stockOf(db: Db, storeId: string, products: readonly ProductForSale[]): Promise<Map<number, number>> {
  const manual = (await db<ProductRow>('products')
    .where({ store_id: storeId, status: 'active', price_state: 'ready' })
    .whereNot('product_kind', 'digital')
    .select('id', 'quantity')) as Array<Pick<ProductRow, 'id' | 'quantity'>>;
  const units: Array<{ product_id: number | string; units: number | string }> = await unsoldUnits(db, storeId)
    .groupBy('product_id')
    .select('product_id')
    .count({ units: '*' });
  const forSale = new Set(products.map((product) => product.id));
  return new Map([
    ...manual.map((row): [number, number] => [Number(row.id), Number(row.quantity)]),
    ...units.filter((row) => forSale.has(Number(row.product_id))).map((row): [number, number] => [Number(row.product_id), Number(row.units)]),
  ]);
}

/**
 * Simulates `orders` orders over the `days` whole days before today (the store's time zone), with
 * their customers, coupons, carts, payments, fulfilment, refunds, cancellations and reviews. Refuses
 * (PlatformError) an unknown store, a store with nothing for sale, and a seed the store already ran.
 */
export async function simulateStore(deps: Deps, request: SimulationRequest): Promise<SimulationSummary> {
  const { storeId, days, orders, seed } = request;
  for (const [name, value] of Object.entries({ days, orders, seed }) as Array<[keyof typeof SIMULATION_BOUNDS, number]>) {
    const bounds = SIMULATION_BOUNDS[name];
    if (!positiveWhole(value, bounds)) throw new RangeError(`${name} must be a whole number from ${bounds.min} to ${bounds.max}, not ${value}`);
  }
  const { db } = deps;
  const store = await findStore(db, storeId);
  if (!store) throw new PlatformError(`No store ${storeId}`);
  const products = await productsForSale(db, storeId);
  if (products.length === 0) {
    throw new PlatformError(
      `Store ${storeId} has no active, priced products: simulated shoppers would have nothing to buy. Activate and price some products first.`,
    );
  }
  if (await findCouponByCode(db, storeId, markerCouponCode(seed))) {
    throw new PlatformError(`Store ${storeId} already holds the simulation of seed ${seed} (its orders and coupons): run again with another --seed.`);
  }
  const now = deps.clock.now();
  const plan = planSimulation({ seed, days, orders, now, offsetMs: utcOffsetMs(store.timezone, now), products: products.map((product) => product.kind) });
  const eventsBefore = await outboxCount(db, storeId);
  const player = new Player(storeId, seed, plan, products, await stockOf(db, storeId, products));
  await inTransaction(db, (trx) => player.createCoupons(trx));
  const { steps } = plan;
  const pause = deps.engine.locks.pauseBetweenBatches;
  let done = 0;
  while (done < steps.length) {
    request.signal?.throwIfAborted();
    done = await inTransaction(db, async (trx) => {
      const started = performance.now();
      let next = done;
      do {
        const { at, step } = steps[next] as TimedStep;
        await player.play(trx, at, step);
        next += 1;
      } while (next < steps.length && performance.now() - started < BATCH_MS);
      return next;
    });
    request.onProgress?.(done, steps.length);
    if (pause && done < steps.length) await pause();
  }
  return { from: plan.window.from, to: plan.window.to, ...player.summary, events: (await outboxCount(db, storeId)) - eventsBefore };
}
