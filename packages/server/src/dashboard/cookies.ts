import { parse } from 'cookie';
import type { CookieOptions, Request, Response } from 'express';

/** One cookie from a Cookie header (the first of a repeated name wins). */
export const readCookie = (header: string | undefined, name: string): string | undefined => (header ? parse(header)[name] : undefined);

/**
 * Every dashboard cookie: script-proof, sent with same-site posts (the login and consent forms) but
 * not with cross-site ones, for the whole origin, and only over HTTPS when the request came over it.
 */
const attributes = (req: Request): CookieOptions => ({ httpOnly: true, sameSite: 'lax', path: '/', secure: req.secure });

/** Sets a cookie that lasts `maxAgeMs`, or until the browser closes without it. */
export function setCookie(req: Request, res: Response, name: string, value: string, maxAgeMs?: number): void {
  res.cookie(name, value, { ...attributes(req), ...(maxAgeMs === undefined ? {} : { maxAge: maxAgeMs }) });
}

/**
 * Drops a cookie. Express 5's `res.clearCookie` sends only a past `Expires`; `Max-Age=0` (with which
 * the browser drops the cookie whatever its clock says) is kept by setting an empty cookie instead.
 */
export function clearCookie(req: Request, res: Response, name: string): void {
  res.cookie(name, '', { ...attributes(req), maxAge: 0 });
}
