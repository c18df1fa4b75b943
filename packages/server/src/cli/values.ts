import { InvalidArgumentError } from 'commander';
import { UUID_PATTERN } from '../core/ids';
import { dayNumberOf, readDateTime } from '../core/instants';
import { MONEY_PATTERN, toHalalas } from '../core/money';

/**
 * Readers of flag and argument values, given to commander as its parsers: a malformed value is a
 * malformed line (exit 2, with the usage), found before any command touches the database. Each
 * message leaves out its subject: the parser says which flag or argument it was.
 */

const refuse = (message: string): never => {
  throw new InvalidArgumentError(message);
};

/** Ids reach PostgreSQL's uuid columns only as UUIDs, so a typo is a usage error rather than a database error. */
export const uuid = (value: string): string => (UUID_PATTERN.test(value) ? value : refuse(`must be a UUID, not "${value}"`));

/** A whole number within bounds, written plainly (no sign, exponent or decimals). */
export const wholeNumber =
  ({ min, max }: { readonly min: number; readonly max: number }) =>
  (value: string): number => {
    const number = /^[0-9]{1,16}$/.test(value) ? Number(value) : Number.NaN;
    return number >= min && number <= max ? number : refuse(`must be a whole number from ${min} to ${max}, not "${value}"`);
  };

/** A count of any size; its range is the domain's rule, refused there in the domain's words. */
export const count = (value: string): number => (/^[0-9]{1,15}$/.test(value) ? Number(value) : refuse(`must be a whole number, not "${value}"`));

/** An amount (`15.00`) in hundredths; a value out of the coupon's range is the domain's refusal. */
export const amount = (value: string): number =>
  MONEY_PATTERN.test(value) ? toHalalas(value) : refuse(`must be an amount with two decimals, like 15.00, not "${value}"`);

/** An RFC 3339 date-time as epoch milliseconds. */
export function instant(value: string): number {
  const reading = readDateTime(value);
  return 'problem' in reading ? refuse(`is ${reading.problem} (RFC 3339, like 2027-03-09T20:59:59Z): "${value}"`) : reading.instant;
}

/** A date version (`2026-10-15`): a real day; whether the registry has it is the command's refusal. */
export const dateVersion = (value: string): string =>
  dayNumberOf(value) !== undefined ? value : refuse(`must be a date version like 2026-10-15, not "${value}"`);

/** An app's pin: a date version, or `none` to unpin it (the current version then applies). */
export const pinnedVersion = (value: string): string => (value === 'none' ? value : dateVersion(value));

/** Scope flags take one space-separated argument, the way OAuth writes scope lists. */
export const scopeList = (value: string): string[] => value.split(/\s+/).filter((scope) => scope !== '');

/** A flag given more than once keeps every value in order (commander keeps only the last of a plain flag). */
export const repeated = (value: string, previous: readonly string[] | undefined): readonly string[] => [...(previous ?? []), value];
