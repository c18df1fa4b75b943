import type { NewCoupon } from '../../domain/storefront/coupons/changes';
import type { ProductKind } from '../../domain/storefront/orders/row';
import type { PaymentAttempt } from '../../domain/storefront/payments/changes';
import type { PaymentCard, PaymentMethod } from '../../domain/storefront/payments/row';
import { between, pick, type Random, seededRandom, weightedPicker } from '../random';
import { DAY_MS, HOUR_MS, MINUTE_MS, type SimulationWindow, simulationWindow } from './calendar';

/*
 * The simulation's plan: every shopper and merchant step with its instant, drawn from the seed
 * alone (no database), so a seed always gives the same steps. `run.ts` plays them through the
 * domain functions in time order. The shares below are those of a busy Saudi online store; they
 * are documented in docs/decisions/0045-store-simulator.md.
 */

/** Orders placed but never paid (the shopper left at the payment page, or chose a transfer never made). */
const UNPAID_SHARE = 0.07;
/** Of those, the share the merchant cancels after a few days; the others stay pending. */
const UNPAID_CANCELLED_SHARE = 0.5;
/** Paid orders whose first attempt (or first two) the card issuer declined. */
const DECLINED_FIRST_SHARE = 0.12;
/** Paid orders cancelled before they ship (the shopper changed their mind; the domain refunds them). */
const CANCELLED_AFTER_PAYMENT_SHARE = 0.04;
/** Delivered orders refunded later (returns). */
const REFUNDED_AFTER_DELIVERY_SHARE = 0.06;
/** Delivered orders whose customer reviews a product of it. */
const REVIEWED_SHARE = 0.3;
/** Orders whose shopper enters a coupon code (it may not apply: then the order is placed without it). */
const COUPON_SHARE = 0.2;
/** Orders that recover a cart the same shopper abandoned earlier. */
const RECOVERED_SHARE = 0.05;
/** Carts abandoned and never recovered, per order. */
const UNRECOVERED_CART_SHARE = 0.12;
/** A shopper's activity that comes from a new customer rather than a returning one. */
const NEW_CUSTOMER_SHARE = 0.45;

const LINE_COUNT_WEIGHTS = [55, 28, 12, 5];
const QUANTITY_WEIGHTS = [80, 15, 5];
/** Product popularity falls with rank like a long tail (1/rank^0.9): a few best sellers, many slow ones. */
const POPULARITY_EXPONENT = 0.9;
const RATING_WEIGHTS = [3, 4, 10, 30, 53];

const METHODS: readonly PaymentMethod[] = ['mada', 'apple_pay', 'credit_card', 'stc_pay', 'cod', 'bank_transfer'];
const METHOD_WEIGHTS = [38, 22, 15, 10, 10, 5];
const CARD_BRANDS: Readonly<Partial<Record<PaymentMethod, readonly PaymentCard['brand'][]>>> = {
  mada: ['mada'],
  credit_card: ['visa', 'visa', 'mastercard', 'mastercard', 'amex'],
  apple_pay: ['mada', 'mada', 'visa', 'mastercard'],
};

const FIRST_NAMES = [
  'Noura',
  'Abdullah',
  'Sara',
  'Mohammed',
  'Reem',
  'Faisal',
  'Lama',
  'Khalid',
  'Hessa',
  'Turki',
  'Joud',
  'Omar',
  'Maha',
  'Saud',
  'Aljazi',
  'Yousef',
];
const FAMILY_NAMES = ['Al-Harbi', 'Al-Qahtani', 'Al-Otaibi', 'Al-Ghamdi', 'Al-Dosari', 'Al-Shehri', 'Al-Mutairi', 'Al-Zahrani', 'Al-Subaie', 'Al-Anazi'];
const REVIEWS_BY_RATING: readonly (readonly string[])[] = [
  ['Not what the pictures showed. Disappointed.', 'Arrived damaged and late.'],
  ['Below what I expected for the price.', 'The scent fades within an hour.'],
  ['Fine, nothing special.', 'Good quality but the delivery took long.'],
  ['Very good, I will order again.', 'Lovely scent, well packed.', 'Good value, fast delivery to Jeddah.'],
  ['Excellent! Exactly as described.', 'The best oud I have bought online.', 'Perfect gift, my mother loved it.', 'ممتاز جدا، شكرا'],
];

export interface ShopperPlan {
  name: string;
  email: string | null;
  mobile: string | null;
}

/** A line: the product's index in the store's products for sale (in id order), and how many. */
export interface LinePlan {
  product: number;
  quantity: number;
}

export interface CartPlan {
  at: number;
  customer: number;
  lines: readonly LinePlan[];
}

export interface OrderPlan {
  reference: string;
  at: number;
  customer: number;
  lines: readonly LinePlan[];
  /** The coupon the shopper enters (index in the plan's coupons), if any. */
  coupon: number | null;
  /** The abandoned cart this order recovers, if it does. */
  cart: CartPlan | null;
}

export type Step =
  | { kind: 'abandon'; cart: CartPlan }
  | { kind: 'place'; order: OrderPlan }
  | { kind: 'fail-payment' | 'pay'; order: OrderPlan; attempt: PaymentAttempt }
  | { kind: 'cancel' | 'refund'; order: OrderPlan }
  | { kind: 'fulfil'; order: OrderPlan; next: 'shipped' | 'delivered' }
  | { kind: 'review'; order: OrderPlan; line: LinePlan; rating: number; content: string };

export interface TimedStep {
  at: number;
  step: Step;
}

export interface SimulationPlan {
  window: SimulationWindow;
  customers: readonly ShopperPlan[];
  /** Created just before the window opens. */
  coupons: readonly NewCoupon[];
  /** In time order (steps at the same instant in the order they were planned). */
  steps: readonly TimedStep[];
}

export interface PlanInput {
  seed: number;
  days: number;
  orders: number;
  now: number;
  /** The store's offset from UTC (its time zone's). */
  offsetMs: number;
  /** The kinds of the store's active, priced products, in id order. */
  products: readonly ProductKind[];
}

/** The coupons of a run: codes carry the seed, so runs with other seeds can share a store. */
function couponsOf(seed: number, orders: number, window: SimulationWindow): NewCoupon[] {
  const span = window.to - window.from;
  return [
    { code: `WELCOME10-S${seed}`, type: 'percentage', amountHalalas: 1000 },
    { code: `FREESHIP-S${seed}`, type: 'fixed', amountHalalas: 0, freeShipping: true, minimumOrderHalalas: 15_000 },
    { code: `SAVE50-S${seed}`, type: 'fixed', amountHalalas: 5000, minimumOrderHalalas: 40_000, usageLimit: Math.max(1, Math.round(orders * 0.01)) },
    {
      code: `EID20-S${seed}`,
      type: 'percentage',
      amountHalalas: 2000,
      startsAt: window.from + Math.round(span * 0.4),
      expiresAt: window.from + Math.round(span * 0.55),
    },
    { code: `VIP15-S${seed}`, type: 'percentage', amountHalalas: 1500, usageLimit: 5 },
  ];
}

/** The first coupon's code: a store that has it already ran this seed's simulation. */
export const markerCouponCode = (seed: number) => `WELCOME10-S${seed}`;

function shopper(random: Random, index: number): ShopperPlan {
  const first = pick(random, FIRST_NAMES);
  const family = pick(random, FAMILY_NAMES);
  const handle = `${first}.${family}`.toLowerCase().replace(/[^a-z.]/g, '');
  return {
    name: `${first} ${family}`,
    email: random() < 0.9 ? `${handle}.${index + 1}@example.com` : null,
    mobile: random() < 0.75 ? `+9665${String(between(random, 0, 99_999_999)).padStart(8, '0')}` : null,
  };
}

function attemptOf(random: Random, pickMethod: (random: Random) => number): PaymentAttempt {
  const method = METHODS[pickMethod(random)] as PaymentMethod;
  const brands = CARD_BRANDS[method];
  return brands ? { method, card: { brand: pick(random, brands), last4: String(between(random, 0, 9999)).padStart(4, '0') } } : { method };
}

/** Plans a run: `orders` orders over the window's days, with their carts, payments, fulfilment, refunds and reviews. */
export function planSimulation({ seed, days, orders, now, offsetMs, products }: PlanInput): SimulationPlan {
  const random = seededRandom(seed);
  const window = simulationWindow(now, days, offsetMs, random);

  const ranked = products.map((_, index) => index);
  for (let index = ranked.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [ranked[index], ranked[other]] = [ranked[other] as number, ranked[index] as number];
  }
  const pickRank = weightedPicker(ranked.map((_, rank) => 1 / (rank + 1) ** POPULARITY_EXPONENT));
  const pickLineCount = weightedPicker(LINE_COUNT_WEIGHTS);
  const pickQuantity = weightedPicker(QUANTITY_WEIGHTS);
  const pickMethod = weightedPicker(METHOD_WEIGHTS);
  const pickRating = weightedPicker(RATING_WEIGHTS);

  const linesOf = (): LinePlan[] => {
    const wanted = Math.min(pickLineCount(random) + 1, products.length);
    const chosen = new Set<number>();
    // A few extra draws at most: on a tiny catalog the popular products keep coming back.
    for (let draws = 0; chosen.size < wanted && draws < wanted * 4; draws += 1) chosen.add(ranked[pickRank(random)] as number);
    return [...chosen].map((product) => ({ product, quantity: pickQuantity(random) + 1 }));
  };

  const customers: ShopperPlan[] = [];
  const customerFor = (): number => {
    if (customers.length > 0 && random() >= NEW_CUSTOMER_SHARE) return Math.floor(customers.length * random() ** 2);
    customers.push(shopper(random, customers.length));
    return customers.length - 1;
  };

  const coupons = couponsOf(seed, orders, window);
  const width = String(orders).length;
  const orderInstants = Array.from({ length: orders }, () => window.instant(random)).sort((a, b) => a - b);
  const cartInstants = Array.from({ length: Math.round(orders * UNRECOVERED_CART_SHARE) }, () => window.instant(random));
  const activities = [...orderInstants.map((at, index) => ({ at, order: index })), ...cartInstants.map((at) => ({ at, order: -1 }))].sort(
    (a, b) => a.at - b.at || a.order - b.order,
  );

  const steps: TimedStep[] = [];
  for (const { at, order: index } of activities) {
    const customer = customerFor();
    if (index < 0) {
      const cart: CartPlan = { at, customer, lines: linesOf() };
      steps.push({ at, step: { kind: 'abandon', cart } });
      continue;
    }
    const lines = linesOf();
    const recovers = at - window.from > HOUR_MS && random() < RECOVERED_SHARE;
    const cart = recovers ? { at: at - between(random, 20 * MINUTE_MS, Math.min(36 * HOUR_MS, at - window.from - MINUTE_MS)), customer, lines } : null;
    const order: OrderPlan = {
      reference: `ORD-S${seed}-${String(index + 1).padStart(width, '0')}`,
      at,
      customer,
      lines,
      coupon: random() < COUPON_SHARE ? between(random, 0, coupons.length - 1) : null,
      cart,
    };
    if (cart) steps.push({ at: cart.at, step: { kind: 'abandon', cart } });
    steps.push({ at, step: { kind: 'place', order } });
    planFollowUps(order, random, now, steps, {
      attempt: () => attemptOf(random, pickMethod),
      ships: lines.some((line) => products[line.product] === 'physical'),
      rating: () => pickRating(random) + 1,
    });
  }
  // Stable: steps of one instant keep the order they were planned in (a cart before its order).
  steps.sort((a, b) => a.at - b.at);
  return { window, customers, coupons, steps };
}

interface FollowUpDraws {
  attempt(): PaymentAttempt;
  ships: boolean;
  rating(): number;
}

/**
 * What happens to an order after it is placed, each step some time after the one before; a step
 * that would fall after `now` is not taken, nor any after it (recent orders are still on their way).
 */
function planFollowUps(order: OrderPlan, random: Random, now: number, steps: TimedStep[], draws: FollowUpDraws): void {
  let at = order.at;
  const next = (low: number, high: number, step: Step): boolean => {
    at += between(random, low, high);
    if (at >= now) return false;
    steps.push({ at, step });
    return true;
  };
  if (random() < UNPAID_SHARE) {
    if (random() < 0.3 && !next(2 * MINUTE_MS, 10 * MINUTE_MS, { kind: 'fail-payment', order, attempt: draws.attempt() })) return;
    if (random() < UNPAID_CANCELLED_SHARE) next(DAY_MS, 3 * DAY_MS, { kind: 'cancel', order });
    return;
  }
  const declined = random() < DECLINED_FIRST_SHARE ? between(random, 1, 2) : 0;
  for (let attempt = 0; attempt < declined; attempt += 1) {
    if (!next(MINUTE_MS, 10 * MINUTE_MS, { kind: 'fail-payment', order, attempt: draws.attempt() })) return;
  }
  if (!next(MINUTE_MS, 30 * MINUTE_MS, { kind: 'pay', order, attempt: draws.attempt() })) return;
  if (random() < CANCELLED_AFTER_PAYMENT_SHARE) {
    next(10 * MINUTE_MS, 20 * HOUR_MS, { kind: 'cancel', order });
    return;
  }
  if (draws.ships) {
    if (!next(4 * HOUR_MS, 48 * HOUR_MS, { kind: 'fulfil', order, next: 'shipped' })) return;
    if (!next(DAY_MS, 4 * DAY_MS, { kind: 'fulfil', order, next: 'delivered' })) return;
  } else if (!next(5 * MINUTE_MS, 60 * MINUTE_MS, { kind: 'fulfil', order, next: 'delivered' })) return;
  const delivered = at;
  if (random() < REVIEWED_SHARE) {
    const line = pick(random, order.lines);
    const rating = draws.rating();
    next(DAY_MS, 10 * DAY_MS, { kind: 'review', order, line, rating, content: pick(random, REVIEWS_BY_RATING[rating - 1] ?? []) });
  }
  at = delivered;
  if (random() < REFUNDED_AFTER_DELIVERY_SHARE) next(DAY_MS, 10 * DAY_MS, { kind: 'refund', order });
}
