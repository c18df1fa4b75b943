/** Where time comes from: injected everywhere, so expiry rules are tested exactly, not by sleeping. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told to; for tests. */
export class ManualClock implements Clock {
  constructor(private current: number = Date.parse('2026-11-22T09:00:00Z')) {}

  now(): number {
    return this.current;
  }

  advance(milliseconds: number): void {
    this.current += milliseconds;
  }

  set(instant: number | string): void {
    this.current = typeof instant === 'string' ? Date.parse(instant) : instant;
  }
}

const DAY_MS = 86_400_000;
/** The instants `toISOString` writes with a four-digit year (0000-01-01 to 9999-12-31). */
const FOUR_DIGIT_YEARS = { first: -62_167_219_200_000, last: 253_402_300_799_999 };

const pad = (value: number, width: number) => String(value).padStart(width, '0');

let dayCached = Number.NaN;
let dayPrefix = '';

/**
 * `new Date(milliseconds).toISOString()`, faster: the date part (`2026-11-22T`) is kept for the
 * last day seen, since a page of resources holds instants of few days (50 per page of products).
 */
export function toIso(milliseconds: number): string {
  if (!Number.isInteger(milliseconds) || milliseconds < FOUR_DIGIT_YEARS.first || milliseconds > FOUR_DIGIT_YEARS.last) {
    return new Date(milliseconds).toISOString();
  }
  const day = Math.floor(milliseconds / DAY_MS);
  if (day !== dayCached) {
    dayPrefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    dayCached = day;
  }
  const inDay = milliseconds - day * DAY_MS;
  const hours = Math.floor(inDay / 3_600_000);
  const minutes = Math.floor(inDay / 60_000) % 60;
  const seconds = Math.floor(inDay / 1000) % 60;
  return `${dayPrefix}${pad(hours, 2)}:${pad(minutes, 2)}:${pad(seconds, 2)}.${pad(inDay % 1000, 3)}Z`;
}
