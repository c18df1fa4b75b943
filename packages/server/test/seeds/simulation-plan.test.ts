import { planSimulation } from '../../src/seeds/simulation/plan';

const NOW = Date.parse('2025-06-15T12:34:56.789Z');
const RIYADH = 3 * 3_600_000;
const DAY = 86_400_000;
const PRODUCTS = ['physical', 'physical', 'digital', 'service', 'physical'] as const;

/** The weekday and hour in Riyadh by the platform's own time-zone data (not the code under test's offset). */
const riyadhParts = new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Riyadh', weekday: 'short', hour: 'numeric', hourCycle: 'h23' });
const weekdayAndHour = (instant: number) => {
  const parts = riyadhParts.formatToParts(instant);
  return { weekday: parts.find((part) => part.type === 'weekday')?.value, hour: Number(parts.find((part) => part.type === 'hour')?.value) };
};

describe('the simulation plan', () => {
  const plan = planSimulation({ seed: 7, days: 91, orders: 20_000, now: NOW, offsetMs: RIYADH, products: PRODUCTS });
  const placed = plan.steps.filter((timed) => timed.step.kind === 'place').map((timed) => timed.at);

  it('is the same for the same seed and differs for another', () => {
    const input = { days: 10, orders: 300, now: NOW, offsetMs: RIYADH, products: PRODUCTS };
    const { window: _, ...once } = planSimulation({ seed: 1, ...input });
    const { window: __, ...twice } = planSimulation({ seed: 1, ...input });
    expect(twice).toEqual(once);
    expect(planSimulation({ seed: 2, ...input }).steps).not.toEqual(planSimulation({ seed: 1, ...input }).steps);
  });

  it('places every order once inside the whole Riyadh days before today, and takes no step at or after now', () => {
    expect(placed).toHaveLength(20_000);
    expect(plan.window.to).toBe(Date.parse('2025-06-15T00:00:00+03:00'));
    expect(plan.window.from).toBe(plan.window.to - 91 * DAY);
    expect(placed.filter((at) => at < plan.window.from || at >= plan.window.to)).toEqual([]);
    expect(plan.steps.filter(({ at }) => at >= NOW)).toEqual([]);
    const instants = plan.steps.map((timed) => timed.at);
    expect(instants).toEqual([...instants].sort((a, b) => a - b));
  });

  it('is busier on the Saudi weekend (Friday, Saturday) and in the evening than in the small hours', () => {
    const perDay = new Map<string, number>();
    const perHour = new Array<number>(24).fill(0);
    for (const at of placed) {
      const { weekday, hour } = weekdayAndHour(at);
      perDay.set(weekday ?? '', (perDay.get(weekday ?? '') ?? 0) + 1);
      perHour[hour] = (perHour[hour] ?? 0) + 1;
    }
    const weekend = ((perDay.get('Fri') ?? 0) + (perDay.get('Sat') ?? 0)) / 2;
    const weekdays = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu'].reduce((sum, day) => sum + (perDay.get(day) ?? 0), 0) / 5;
    expect(weekend).toBeGreaterThan(weekdays * 1.2);
    const evening = (perHour[20] ?? 0) + (perHour[21] ?? 0) + (perHour[22] ?? 0);
    const night = (perHour[3] ?? 0) + (perHour[4] ?? 0) + (perHour[5] ?? 0);
    expect(evening).toBeGreaterThan(night * 5);
  });

  it("takes each order's steps in the order its states allow: cart, place, declines, pay, then cancel or fulfil, then refund or review", () => {
    const byOrder = new Map<string, string[]>();
    for (const { step } of plan.steps) {
      if (step.kind === 'abandon') continue;
      const reference = step.order.reference;
      const name = step.kind === 'fulfil' ? step.next : step.kind;
      byOrder.set(reference, [...(byOrder.get(reference) ?? []), name]);
    }
    const allowed = /^place( fail-payment)*( cancel| pay( cancel| shipped( delivered( review| refund)*)?| delivered( review| refund)*)?)?$/;
    expect(byOrder.size).toBe(20_000);
    expect([...byOrder].filter(([, steps]) => !allowed.test(steps.join(' ')))).toEqual([]);
    const recovered = plan.steps.filter((timed) => timed.step.kind === 'place' && timed.step.order.cart !== null);
    expect(recovered.length).toBeGreaterThan(0);
    for (const timed of recovered) {
      if (timed.step.kind !== 'place' || !timed.step.order.cart) continue;
      expect(timed.step.order.cart.at).toBeLessThan(timed.at);
      expect(timed.step.order.cart.customer).toBe(timed.step.order.customer);
    }
  });
});
