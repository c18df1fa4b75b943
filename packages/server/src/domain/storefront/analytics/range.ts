import { ApiError, type ErrorDetail } from '../../../core/errors';
import { dateOfDayNumber, dayNumberOf } from '../../../core/instants';

/** How many days `from` may be before `to`: 367 days in all, a leap year and one more (the spec's `maxItems` of daily points). */
export const MAX_RANGE_DAYS = 366;

/** An analytics range of Asia/Riyadh calendar days, both ends inclusive, checked. */
export interface AnalyticsRange {
  /** `YYYY-MM-DD`, as requested. */
  readonly from: string;
  /** `YYYY-MM-DD`, as requested; never before `from`. */
  readonly to: string;
  /** Every day of the range, oldest first. */
  readonly days: readonly string[];
}

export interface RangeQuery {
  from: string;
  to: string;
}

const invalidRequest = (details: ErrorDetail[]) => new ApiError('VALIDATION_FAILED', 'The request is not valid.', { details });
const invalidRange = (message: string) =>
  new ApiError('VALIDATION_FAILED', `The range is not valid: \`from\` must not be after \`to\`, and the range must be at most ${MAX_RANGE_DAYS} days.`, {
    details: [{ location: 'query', field: 'from', message }],
  });

/**
 * The range `from`..`to`, or 400 VALIDATION_FAILED naming the parameter: a day that does not exist
 * (the validator's `format: date` checks only the shape), `from` after `to`, or more than
 * MAX_RANGE_DAYS between them.
 */
export function analyticsRangeOf({ from, to }: RangeQuery): AnalyticsRange {
  const first = dayNumberOf(from);
  const last = dayNumberOf(to);
  if (first === undefined || last === undefined) {
    const unreal = [first === undefined ? 'from' : undefined, last === undefined ? 'to' : undefined].filter((field) => field !== undefined);
    throw invalidRequest(unreal.map((field) => ({ location: 'query', field, message: 'must be a calendar day that exists (YYYY-MM-DD)' })));
  }
  if (first > last) {
    throw invalidRange(`must not be after \`to\` (${to})`);
  }
  if (last - first > MAX_RANGE_DAYS) {
    throw invalidRange(`must be at most ${MAX_RANGE_DAYS} days before \`to\` (${to})`);
  }
  return { from, to, days: Array.from({ length: last - first + 1 }, (_, offset) => dateOfDayNumber(first + offset)) };
}
