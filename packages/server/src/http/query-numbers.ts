import type { Request } from 'express';
import { parseFormEncoded } from './form-encoding';

interface Problem {
  path: string;
  message: string;
  errorCode: string;
}

/** Shaped as the spec validator's errors are, so the error mapper names it as it names theirs (VALIDATION_FAILED, INVALID_FILTER). */
class LooseNumberError extends Error {
  readonly status = 400;

  constructor(readonly errors: Problem[]) {
    super('A query number is not written as a plain decimal number.');
  }
}

const queryStringOf = (url: string): string => {
  const start = url.indexOf('?');
  return start < 0 ? '' : (url.slice(start + 1).split('#')[0] ?? '');
};

/**
 * Query numbers as plain decimals only. The validator turns a query value into a number with
 * `+value`, so `1e309` (Infinity), `0x10`, ` 5` and `1e2` pass as numbers, and Infinity then passes
 * `maximum` too and reaches the database. A number is taken only when its text is the number's own
 * decimal form (`25`, not `025` or `2.5e1`).
 */
export function refuseLooseNumbers(req: Request): void {
  const numbers = Object.entries(req.query as Record<string, unknown>).filter(([, value]) => typeof value === 'number');
  if (numbers.length === 0) return; // most requests: nothing to read the query string again for
  const sent = parseFormEncoded(queryStringOf(req.originalUrl));
  // A number the client did not send is the parameter's default, filled in by the validator.
  const problems = numbers.flatMap(([name, value]) =>
    typeof value === 'number' && Object.hasOwn(sent, name) && sent[name] !== String(value)
      ? [{ path: `/query/${name}`, message: 'must be a plain decimal number', errorCode: 'format.openapi.validation' }]
      : [],
  );
  if (problems.length > 0) throw new LooseNumberError(problems);
}
