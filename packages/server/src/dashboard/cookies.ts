/** Reads one cookie from a Cookie header (RFC 6265 §5.4 pairs; the first of a repeated name wins). */
export function readCookie(header: string | undefined, name: string): string | undefined {
  for (const pair of (header ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    if (pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}

export interface CookieOptions {
  maxAgeSeconds?: number;
  secure: boolean;
}

/** A Set-Cookie value: HttpOnly and SameSite=Lax always (the consent and login forms are same-site posts). */
export function setCookie(name: string, value: string, { maxAgeSeconds, secure }: CookieOptions): string {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (maxAgeSeconds !== undefined) parts.push(`Max-Age=${maxAgeSeconds}`);
  if (secure) parts.push('Secure');
  return parts.join('; ');
}

export const clearCookie = (name: string, secure: boolean): string => setCookie(name, '', { maxAgeSeconds: 0, secure });
