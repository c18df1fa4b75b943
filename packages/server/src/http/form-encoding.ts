import express, { type RequestHandler } from 'express';
import { emptyRecord } from '../core/records';

export type FormFields = Record<string, string | string[]>;

/**
 * Reads `application/x-www-form-urlencoded` text (a query string or a form body) as `URLSearchParams`
 * does, and so as browsers and HTTP clients write it: `+` and `%20` are spaces, `%2B` is a plus. A
 * name given more than once has its values in an array (where the spec expects one value the
 * validator refuses it). The record has no prototype, so every name, `__proto__` and `constructor`
 * included, is a key like any other, which the validator refuses when the operation does not take it.
 */
export function parseFormEncoded(text: string | null | undefined): FormFields {
  const fields = emptyRecord<string | string[]>();
  for (const [name, value] of new URLSearchParams(text ?? '')) {
    const earlier = fields[name];
    if (earlier === undefined) fields[name] = value;
    else if (Array.isArray(earlier)) earlier.push(value);
    else fields[name] = [earlier, value];
  }
  return fields;
}

/**
 * A form body parsed by {@link parseFormEncoded}; body-parser's own form parser (qs) silently drops a
 * `__proto__` field, which would let a key the endpoint does not take pass unnoticed.
 */
export function formBody(limit: number): RequestHandler {
  const readText = express.text({ type: 'application/x-www-form-urlencoded', limit, defaultCharset: 'utf-8' });
  return (req, res, next) =>
    readText(req, res, (error?: unknown) => {
      if (error !== undefined && error !== null) return next(error);
      if (typeof req.body === 'string') req.body = parseFormEncoded(req.body);
      return next();
    });
}
