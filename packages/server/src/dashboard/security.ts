/**
 * Headers for every dashboard page: no framing (the consent page must not be clickjacked), no
 * scripts or outside assets, no caching, no referrer (URLs carry `state` and codes). Forms may
 * post to the dashboard and be redirected to the given origins (Chromium applies `form-action` to
 * the redirect after a form post too).
 */
export function pageHeaders(formTargets: readonly string[] = []): Record<string, string> {
  const origins = [...new Set(formTargets.map((url) => new URL(url).origin))];
  return {
    'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'${origins.map((origin) => ` ${origin}`).join('')}; frame-ancestors 'none'; base-uri 'none'`,
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cache-Control': 'no-store',
  };
}

/** Only same-origin paths are followed after sign-in (no open redirect). */
export const safeReturnTo = (value: unknown): string =>
  typeof value === 'string' && value.startsWith('/') && !value.startsWith('//') && !value.includes('\\') ? value : '/dashboard';
