/*
 * The four analytics reports computed in the test, from orders as `GET …/orders` shows them, by the
 * rules of docs/analytics.md, written out here again and on purpose not with the code under test:
 * days by the platform's own Asia/Riyadh data, money as integer halalas read from the strings.
 */

export interface OrderBody {
  id: number;
  status: string;
  payment_status: string;
  customer: { id: number };
  items: Array<{ id: number; product_id: number; quantity: number; total: string }>;
  amounts: { subtotal: string; discount: string; shipping: string; tax: string; total: string };
  created_at: string;
}

/** What the test knows of a product: its name now, and the category its lines were ordered in (null: none). */
export interface ProductFacts {
  name: string;
  category: { id: number; name: string } | null;
}

const riyadhCalendar = new Intl.DateTimeFormat('en-CA', { timeZone: 'Asia/Riyadh', year: 'numeric', month: '2-digit', day: '2-digit' });

/** The Riyadh calendar day of an instant, by the platform's time-zone data. */
export const riyadhDayOf = (iso: string): string => riyadhCalendar.format(new Date(iso));

/** The first instant of a Riyadh day, as an ISO string (`2026-10-15` → `2026-10-14T21:00:00.000Z`). */
export const riyadhMidnight = (day: string): string => new Date(`${day}T00:00:00+03:00`).toISOString();

/** Halalas of a `"0.00"` amount, digit by digit. */
export const halalasOf = (money: string): number => Number(money.replace('.', ''));

/** A `"0.00"` amount of halalas. */
export const moneyOf = (halalas: number): string => `${Math.trunc(halalas / 100)}.${String(halalas % 100).padStart(2, '0')}`;

/** Every day from `from` to `to`, both included. */
export function daysBetween(from: string, to: string): string[] {
  const days: string[] = [];
  for (let day = new Date(`${from}T00:00:00Z`); day.toISOString().slice(0, 10) <= to; day = new Date(day.getTime() + 86_400_000)) {
    days.push(day.toISOString().slice(0, 10));
  }
  return days;
}

/** `numerator ÷ denominator` to the nearest integer, a half going up, on integers only. */
function halfUp(numerator: number, denominator: number): number {
  const quotient = Math.floor(numerator / denominator);
  return 2 * (numerator - quotient * denominator) >= denominator ? quotient + 1 : quotient;
}

/**
 * The order's discount shared among its lines in proportion to their totals: each line gets the
 * floor of its exact share, then the halalas left go one each to the largest remainders, the
 * lower line id first among equal remainders.
 */
export function discountShares(order: OrderBody): Map<number, number> {
  const discount = halalasOf(order.amounts.discount);
  const lines = [...order.items].sort((a, b) => a.id - b.id);
  const whole = lines.reduce((sum, line) => sum + halalasOf(line.total), 0);
  const exact = lines.map((line) => ({
    id: line.id,
    floor: Math.floor((discount * halalasOf(line.total)) / whole),
    remainder: (discount * halalasOf(line.total)) % whole,
  }));
  let left = discount - exact.reduce((sum, line) => sum + line.floor, 0);
  const shares = new Map(exact.map((line) => [line.id, line.floor]));
  for (const line of [...exact].sort((a, b) => b.remainder - a.remainder || a.id - b.id)) {
    if (left === 0) break;
    shares.set(line.id, (shares.get(line.id) ?? 0) + 1);
    left -= 1;
  }
  return shares;
}

/** VAT as the rule has it: 15 % of (subtotal − discount + shipping), half up, once per order. */
export const vatOf = (order: OrderBody): number =>
  halfUp((halalasOf(order.amounts.subtotal) - halalasOf(order.amounts.discount) + halalasOf(order.amounts.shipping)) * 15, 100);

interface Sums {
  gross: number;
  discounts: number;
  tax: number;
  shipping: number;
  orders: number;
  items: number;
}

const emptySums = (): Sums => ({ gross: 0, discounts: 0, tax: 0, shipping: 0, orders: 0, items: 0 });

function add(sums: Sums, order: OrderBody): void {
  sums.gross += order.items.reduce((sum, item) => sum + halalasOf(item.total), 0);
  sums.discounts += halalasOf(order.amounts.discount);
  sums.tax += halalasOf(order.amounts.tax);
  sums.shipping += halalasOf(order.amounts.shipping);
  sums.orders += 1;
  sums.items += order.items.reduce((sum, item) => sum + item.quantity, 0);
}

const net = (sums: Sums) => sums.gross - sums.discounts;
const total = (sums: Sums) => net(sums) + sums.tax + sums.shipping;

interface LineSums {
  key: number;
  items: number;
  orders: Set<number>;
  net: number;
}

/** The report's figures for these orders over `from`..`to` (Riyadh days). */
export function expectedReports(allOrders: readonly OrderBody[], from: string, to: string, products: ReadonlyMap<number, ProductFacts>) {
  const counted = allOrders.filter((order) => order.status !== 'cancelled' && riyadhDayOf(order.created_at) >= from && riyadhDayOf(order.created_at) <= to);

  const whole = emptySums();
  const byDay = new Map<string, Sums>();
  const byProduct = new Map<number, LineSums>();
  const byCategory = new Map<number, LineSums>();
  const sumLine = (table: Map<number, LineSums>, key: number, order: OrderBody, quantity: number, lineNet: number) => {
    const sums = table.get(key) ?? { key, items: 0, orders: new Set<number>(), net: 0 };
    sums.items += quantity;
    sums.orders.add(order.id);
    sums.net += lineNet;
    table.set(key, sums);
  };
  for (const order of counted) {
    add(whole, order);
    const day = riyadhDayOf(order.created_at);
    const daySums = byDay.get(day) ?? emptySums();
    add(daySums, order);
    byDay.set(day, daySums);
    const shares = discountShares(order);
    for (const item of order.items) {
      const lineNet = halalasOf(item.total) - (shares.get(item.id) ?? 0);
      const facts = products.get(item.product_id);
      if (!facts) throw new Error(`The test does not know product ${item.product_id}`);
      sumLine(byProduct, item.product_id, order, item.quantity, lineNet);
      // Uncategorised lines are keyed 0 here, and listed after the categories they tie with.
      sumLine(byCategory, facts.category?.id ?? 0, order, item.quantity, lineNet);
    }
  }

  const overview = {
    gross_sales: moneyOf(whole.gross),
    discounts: moneyOf(whole.discounts),
    net_sales: moneyOf(net(whole)),
    tax: moneyOf(whole.tax),
    shipping: moneyOf(whole.shipping),
    total_sales: moneyOf(total(whole)),
    orders_count: whole.orders,
    average_order_value: moneyOf(whole.orders === 0 ? 0 : halfUp(net(whole), whole.orders)),
    items_sold: whole.items,
    customers: new Set(counted.map((order) => order.customer.id)).size,
  };

  const sales = daysBetween(from, to).map((date) => {
    const sums = byDay.get(date) ?? emptySums();
    return {
      date,
      orders_count: sums.orders,
      items_sold: sums.items,
      gross_sales: moneyOf(sums.gross),
      discounts: moneyOf(sums.discounts),
      net_sales: moneyOf(net(sums)),
      total_sales: moneyOf(total(sums)),
    };
  });

  const byNetThenKey = (a: LineSums, b: LineSums) => b.net - a.net || (a.key === 0 ? 1 : 0) - (b.key === 0 ? 1 : 0) || a.key - b.key;
  const productSales = [...byProduct.values()]
    .sort(byNetThenKey)
    .slice(0, 100)
    .map((sums) => ({
      product_id: sums.key,
      name: products.get(sums.key)?.name,
      items_sold: sums.items,
      orders_count: sums.orders.size,
      net_sales: moneyOf(sums.net),
    }));
  const categoryNames = new Map([...products.values()].flatMap((facts) => (facts.category ? [[facts.category.id, facts.category.name] as const] : [])));
  const categorySales = [...byCategory.values()].sort(byNetThenKey).map((sums) => ({
    category_id: sums.key === 0 ? null : sums.key,
    category: sums.key === 0 ? null : categoryNames.get(sums.key),
    items_sold: sums.items,
    orders_count: sums.orders.size,
    net_sales: moneyOf(sums.net),
  }));

  return { overview, sales, products: productSales, categories: categorySales, counted };
}

export type ExpectedReports = ReturnType<typeof expectedReports>;
