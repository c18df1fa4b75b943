import { type Random, weightedPicker } from '../random';

/*
 * When simulated shoppers act: over the N whole days of the store's time zone before today, busier
 * on the weekend (Friday and Saturday in Saudi Arabia) and in the evening
 * (docs/decisions/0045-store-simulator.md).
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

/** The weekend in Saudi Arabia: Friday (5) and Saturday (6), as `getUTCDay` numbers them. */
const WEEKEND: ReadonlySet<number> = new Set([5, 6]);
const WEEKEND_FACTOR = 1.4;

/**
 * Relative activity per local hour, 00:00 to 23:00: quiet before dawn, a midday lift, and the peak
 * after the evening prayer (20:00–22:00), when Saudi shoppers buy online most.
 */
const HOUR_WEIGHTS: readonly number[] = [4, 3, 2, 1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 6, 5, 5, 6, 7, 8, 10, 12, 13, 12, 8];

/** A growing store: the first day is this much as busy as the average, the last day as much above it. */
const GROWTH = 0.15;
/** Day-to-day noise around the trend (± this share). */
const DAY_NOISE = 0.15;

/** The offset of the time zone from UTC at `instant`, in ms (Asia/Riyadh: +3 h all year). */
export function utcOffsetMs(timeZone: string, instant: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(instant);
  const field = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((part) => part.type === type)?.value);
  const wallClock = Date.UTC(field('year'), field('month') - 1, field('day'), field('hour'), field('minute'), field('second'));
  return wallClock - Math.floor(instant / 1000) * 1000;
}

/** The simulated period: `from` is the first day's local midnight, `to` today's (exclusive). */
export interface SimulationWindow {
  readonly from: number;
  readonly to: number;
  /** Draws an instant in the window: a day by its weight, then an hour by its weight, then any moment of that hour. */
  readonly instant: (random: Random) => number;
}

/**
 * The `days` whole local days before the one `now` falls in. Whole days, so that every follow-up of
 * an activity (payment, shipping, review) has room before `now` and no day is counted half.
 * The offset is taken at `now`: the store's zone (Asia/Riyadh) has no daylight saving.
 */
export function simulationWindow(now: number, days: number, offsetMs: number, random: Random): SimulationWindow {
  const to = Math.floor((now + offsetMs) / DAY_MS) * DAY_MS - offsetMs;
  const from = to - days * DAY_MS;
  const dayWeights = Array.from({ length: days }, (_, day) => {
    const weekday = new Date(from + day * DAY_MS + offsetMs).getUTCDay();
    const trend = 1 - GROWTH + (2 * GROWTH * (day + 0.5)) / days;
    const noise = 1 - DAY_NOISE + 2 * DAY_NOISE * random();
    return trend * noise * (WEEKEND.has(weekday) ? WEEKEND_FACTOR : 1);
  });
  const pickDay = weightedPicker(dayWeights);
  const pickHour = weightedPicker(HOUR_WEIGHTS);
  return {
    from,
    to,
    instant: (draw) => from + pickDay(draw) * DAY_MS + pickHour(draw) * HOUR_MS + Math.floor(draw() * HOUR_MS),
  };
}
