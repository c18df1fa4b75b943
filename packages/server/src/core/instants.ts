import { ApiError } from './errors';

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:[Zz]|([+-])(\d{2}):?(\d{2})?)$/;

/** An RFC 3339 date-time read: its instant in epoch ms, or what is wrong with the text. */
export type DateTimeReading = { instant: number } | { problem: 'not a valid date-time' | 'not a date-time that exists' };

/** Reads an RFC 3339 date-time in any offset; a day or time that does not exist (2026-02-30, 24:00) is a problem too. */
export function readDateTime(text: string): DateTimeReading {
  const match = RFC3339.exec(text);
  if (!match) return { problem: 'not a valid date-time' };
  const [, year, month, day, hour, minute, second, fraction = '', sign, offsetHours = '0', offsetMinutes = '0'] = match;
  const milliseconds = Math.floor(Number(`0${fraction}`) * 1000);
  const local = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second), milliseconds);
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
  const instant = local - (sign === undefined ? 0 : offset);
  const calendar = new Date(local);
  const real = calendar.getUTCFullYear() === Number(year) && calendar.getUTCMonth() === Number(month) - 1 && calendar.getUTCDate() === Number(day);
  if (!real || Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59 || Number(offsetHours) > 23 || Number(offsetMinutes) > 59) {
    return { problem: 'not a date-time that exists' };
  }
  if (!Number.isFinite(instant)) return { problem: 'not a valid date-time' };
  return { instant };
}

/**
 * An RFC 3339 date-time filter value as epoch ms; 400 INVALID_FILTER naming the filter when it is
 * not one, or names a day or time that does not exist (2026-02-30, 24:00).
 */
export function parseDateTimeFilter(filter: string, text: string): number {
  const reading = readDateTime(text);
  if ('problem' in reading) throw new ApiError('INVALID_FILTER', `The filter '${filter}' is ${reading.problem}.`);
  return reading.instant;
}

const CALENDAR_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_MS = 86_400_000;

/**
 * A `YYYY-MM-DD` calendar date as its day number (days since 1970-01-01); undefined when it is not
 * one or names a day that does not exist (2026-02-30, month 13), which `Date` would roll over.
 */
export function dayNumberOf(text: string): number | undefined {
  const match = CALENDAR_DATE.exec(text);
  if (!match) return undefined;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  // setUTCFullYear, not Date.UTC, which reads years 0 to 99 as 1900 to 1999.
  const midnight = new Date(0);
  midnight.setUTCFullYear(year, month - 1, day);
  const real = midnight.getUTCFullYear() === year && midnight.getUTCMonth() === month - 1 && midnight.getUTCDate() === day;
  return real ? midnight.getTime() / DAY_MS : undefined;
}

/** The `YYYY-MM-DD` calendar date of a day number (days since 1970-01-01). */
export const dateOfDayNumber = (dayNumber: number): string => new Date(dayNumber * DAY_MS).toISOString().slice(0, 10);
