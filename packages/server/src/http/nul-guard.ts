import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../core/errors';

/** The JSON pointer of the first string (or key) holding U+0000, or undefined. */
function nulAt(value: unknown, pointer = '', depth = 0): string | undefined {
  if (typeof value === 'string') return value.includes('\u0000') ? pointer || '/' : undefined;
  if (depth > 32 || value === null || typeof value !== 'object') return undefined;
  for (const [key, item] of Object.entries(value)) {
    const here = `${pointer}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    if (key.includes('\u0000')) return here;
    const found = nulAt(item, here, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/**
 * Refuses U+0000 anywhere in the query or body before anything else sees it: PostgreSQL cannot store
 * it in text, and no field of the interface has a use for it. Refused before the router, so an
 * Idempotency-Key is not spent on it.
 */
export function refuseNulCharacters(req: Request, _res: Response, next: NextFunction): void {
  const inBody = nulAt(req.body);
  const inQuery = inBody ? undefined : nulAt(req.query);
  if (!inBody && !inQuery) {
    next();
    return;
  }
  const oauth = req.path.startsWith('/oauth');
  next(
    new ApiError(oauth ? 'INVALID_REQUEST' : 'VALIDATION_FAILED', 'The request contains a NUL character (U+0000), which no field accepts.', {
      details: [
        inBody
          ? { location: 'body', field: inBody, message: 'contains U+0000' }
          : { location: 'query', field: (inQuery as string).slice(1), message: 'contains U+0000' },
      ],
    }),
  );
}
