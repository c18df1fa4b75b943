import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import helmet, { type HelmetOptions } from 'helmet';
import { METADATA_PATH } from '../oauth/metadata';

/**
 * The security headers of every answer, in one place (docs/decisions/0046-security-headers.md).
 * Each answer gets nosniff, `Referrer-Policy: no-referrer`, no framing and a
 * Content-Security-Policy for what it is:
 *
 * - JSON (the store API, OAuth, errors, `/openapi.json`): `default-src 'none'; frame-ancestors 'none'`.
 *   Nothing in a JSON answer should ever run or load, even if a browser is tricked into rendering it.
 * - `/docs`: the Redoc page's own inline scripts and style elements by SHA-256 (see `docsHeaders`).
 * - `/docs/sdk`: the SDK's TypeDoc reference, whose scripts and stylesheets are files of its own
 *   (see `sdkReferencePolicy`).
 * - `/docs/console`: the console, Swagger UI's files and its own (see `consolePolicy`).
 * - Server-rendered pages (the dashboard, the consent page) replace it with `pageHeaders`' policy.
 *
 * HSTS only in production and only on an answer that came over HTTPS (`req.secure`, which believes
 * `X-Forwarded-Proto` from TRUST_PROXY's peers only): a development server on plain HTTP at
 * localhost must not teach the browser to refuse HTTP there, and RFC 6797 §7.2 has browsers ignore
 * it over HTTP anyway.
 */
export interface SecurityHeaderOptions {
  /** Send Strict-Transport-Security on HTTPS answers (production). */
  readonly hsts: boolean;
  /** The built docs site served at `/docs`: its inline scripts and styles are hashed into its policy. */
  readonly docsSiteDir: string;
}

/** A year, as browsers' preload lists expect; no `preload`, which is the operator's decision for the whole domain. */
const HSTS_MAX_AGE_SECONDS = 31_536_000;

const NONE = "'none'";
const SELF = "'self'";

/** What every answer shares. COOP is left to `/docs`: a sign-in or consent page opened in an app's popup must keep its opener. */
const common = {
  strictTransportSecurity: false,
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: { policy: 'same-origin' },
  referrerPolicy: { policy: 'no-referrer' },
  xFrameOptions: { action: 'deny' },
} satisfies HelmetOptions;

const jsonPolicy = { useDefaults: false, directives: { defaultSrc: [NONE], frameAncestors: [NONE] } } as const;

const isUnder = (requestPath: string, prefix: string): boolean => requestPath === prefix || requestPath.startsWith(`${prefix}/`);

export function securityHeaders({ hsts, docsSiteDir }: SecurityHeaderOptions): RequestHandler {
  const json = helmet({ ...common, contentSecurityPolicy: jsonPolicy });
  // The spec and the OAuth metadata are public and fetched from other origins' tools: they may be embedded cross-origin too.
  const spec = helmet({ ...common, contentSecurityPolicy: jsonPolicy, crossOriginResourcePolicy: { policy: 'cross-origin' } });
  const docs = docsHeaders(docsSiteDir);
  const transportSecurity = helmet.strictTransportSecurity({ maxAge: HSTS_MAX_AGE_SECONDS, includeSubDomains: true });
  return (req: Request, res: Response, next: NextFunction) => {
    const publicDocument = req.path === '/openapi.json' || req.path === METADATA_PATH;
    const headers = isUnder(req.path, '/docs') ? docs(docsPart(req.path)) : publicDocument ? spec : json;
    headers(req, res, (error?: unknown) => {
      if (error) return next(error);
      if (hsts && req.secure) return transportSecurity(req, res, next);
      next();
    });
  };
}

/**
 * The policy of a server-rendered page (dashboard, consent): no scripts or outside assets, inline
 * styles, images from the dashboard, forms posted to the dashboard and redirected to the given
 * origins (Chromium applies `form-action` to the redirect after a form post too), and no caching
 * (the URLs and forms carry `state`, codes and CSRF tokens). It replaces the JSON policy that
 * `securityHeaders` set; nosniff, no-referrer and no framing stay from there.
 */
export function pageHeaders(formTargets: readonly string[] = []): Record<string, string> {
  const origins = [...new Set(formTargets.map((url) => new URL(url).origin))];
  return {
    'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'${origins.map((origin) => ` ${origin}`).join('')}; frame-ancestors 'none'; base-uri 'none'`,
    'Cache-Control': 'no-store',
  };
}

/** The sources of the docs page's inline content, each a CSP hash source. */
export interface InlineHashes {
  readonly scripts: readonly string[];
  readonly styles: readonly string[];
}

const hashSource = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/** Browsers hash an element's text as parsed, and the HTML parser turns CR LF and lone CR into LF. */
const asParsed = (text: string): string => text.replace(/\r\n?/g, '\n');

/** The hash sources of an HTML page's inline `<script>` (those without `src`) and `<style>` elements. */
export function inlineHashesOf(html: string): InlineHashes {
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi)]
    .filter(([, attributes = '']) => !/\ssrc\s*=/i.test(` ${attributes}`))
    .map(([, , body = '']) => hashSource(asParsed(body)));
  const styles = [...html.matchAll(/<style\b[^>]*>([\s\S]*?)<\/style\s*>/gi)].map(([, body = '']) => hashSource(asParsed(body)));
  return { scripts: [...new Set(scripts)], styles: [...new Set(styles)] };
}

/**
 * The `/docs` headers, their policy found by loading the page in Chromium with it on
 * (test/docs-site.test.ts holds it there):
 *
 * - scripts: only the page's own inline scripts, by hash; no `'unsafe-eval'`. Redoc's search
 *   (FlexSearch) probes for workers with `Function(...)` inside a try and, refused, searches in
 *   the page instead.
 * - `<style>` elements: the page's own by hash, and the empty one: styled-components creates empty
 *   `<style>` elements and fills them through the CSSOM, which CSP does not govern.
 * - style attributes: `'unsafe-inline'`. Redoc's highlighter writes `style="color: var(--...)"` for
 *   each kind of code token into innerHTML; hashing each would tie the server to Redoc's token
 *   list and make the header kilobytes long. An attribute can restyle, not run or fetch anything
 *   (every fetch directive is 'none' or `data:`).
 * - the icons and fonts Redoc inlines as `data:` URLs; nothing from the network, no fetches, no
 *   workers, no forms, no `<base>`, no framing.
 *
 * The hashes are taken again when the site's HTML changes (`pnpm run docs` while the server runs), so
 * the policy follows the page without a restart.
 */
function docsHeaders(siteDir: string): (part: DocsPart) => RequestHandler {
  // Each policy hashes its own pages: the Redoc page's stays exactly its own scripts.
  const docsHashes = hashesFollowing(siteDir, (name) => !name.startsWith(`${SDK_REFERENCE_DIR}${path.sep}`) && !name.startsWith(`${CONSOLE_DIR}${path.sep}`));
  const sdkHashes = hashesFollowing(path.join(siteDir, SDK_REFERENCE_DIR), () => true);
  const headers = (policy: object) => helmet({ ...common, contentSecurityPolicy: policy, crossOriginOpenerPolicy: { policy: 'same-origin' } });
  const consoleHeaders = headers(consolePolicy());
  let docs: { for: InlineHashes; headers: RequestHandler } | undefined;
  let sdk: { for: InlineHashes; headers: RequestHandler } | undefined;
  return (part) => {
    if (part === 'console') return consoleHeaders;
    if (part === 'sdk') {
      const current = sdkHashes();
      if (sdk?.for !== current) sdk = { for: current, headers: headers(sdkReferencePolicy(current)) };
      return sdk.headers;
    }
    const current = docsHashes();
    if (docs?.for !== current) docs = { for: current, headers: headers(docsPolicy(current)) };
    return docs.headers;
  };
}

/** Where the SDK's reference (TypeDoc's HTML, built by `pnpm run docs` into docs/site/sdk) is served. */
const SDK_REFERENCE = '/docs/sdk';
const SDK_REFERENCE_DIR = 'sdk';
/** Where the console (Swagger UI's, built into docs/site/console) is served. */
const CONSOLE = '/docs/console';
const CONSOLE_DIR = 'console';

/** The parts of the docs site, each under a policy of its own. */
type DocsPart = 'site' | 'sdk' | 'console';
const docsPart = (requestPath: string): DocsPart => (isUnder(requestPath, SDK_REFERENCE) ? 'sdk' : isUnder(requestPath, CONSOLE) ? 'console' : 'site');

/**
 * The console's policy, found by loading it in Chromium with it on (test/docs-console.test.ts): its
 * scripts and stylesheets are files beside the page (Swagger UI's bundle and the console's own
 * script, no inline script and no eval); Swagger UI writes style attributes and `<style>` elements
 * (inline styles: restyle, never run). It calls this service only (`connect-src 'self'`: the
 * document, the OAuth metadata and token endpoint, the store API), submits no form, and signs in by
 * navigating this window to `/oauth/authorize`, which comes back to it. No framing, no `<base>`.
 */
function consolePolicy() {
  return {
    useDefaults: false,
    directives: {
      defaultSrc: [NONE],
      scriptSrc: [SELF],
      styleSrc: [SELF, "'unsafe-inline'"],
      imgSrc: [SELF, 'data:'],
      fontSrc: [SELF, 'data:'],
      connectSrc: [SELF],
      baseUri: [NONE],
      formAction: [NONE],
      frameAncestors: [NONE],
    },
  };
}

/**
 * The SDK reference's policy, found by loading its pages in Chromium with it on (test/docs-site.test.ts):
 * TypeDoc loads its scripts, stylesheets and icon sprite as files beside the pages (`'self'`: the
 * reference and the Redoc page are this server's only HTML), and each page carries one inline
 * script (the theme), allowed by hash; inline styles (see below). Its navigation and search data are inflated in the page,
 * with no fetch. Nothing from the network, no forms, no `<base>`, no framing.
 */
function sdkReferencePolicy({ scripts }: InlineHashes) {
  return {
    useDefaults: false,
    directives: {
      defaultSrc: [NONE],
      scriptSrc: [SELF, ...scripts],
      // TypeDoc's script writes `<style>` elements and style attributes whose text follows the reader's
      // filter settings, so no fixed hash fits. Styles restyle, never run; they could fetch only from
      // this server or data: (img-src, font-src), and the reference shows no user's data.
      styleSrc: [SELF, "'unsafe-inline'"],
      imgSrc: [SELF, 'data:'],
      fontSrc: [SELF, 'data:'],
      baseUri: [NONE],
      formAction: [NONE],
      frameAncestors: [NONE],
    },
  };
}

function docsPolicy({ scripts, styles }: InlineHashes) {
  const styleElements = [...styles, hashSource('')];
  return {
    useDefaults: false,
    directives: {
      defaultSrc: [NONE],
      scriptSrc: scripts.length > 0 ? scripts : [NONE],
      // Browsers without the -elem/-attr split fall back to this one: elements by hash, no attributes.
      styleSrc: styleElements,
      styleSrcElem: styleElements,
      styleSrcAttr: ["'unsafe-inline'"],
      imgSrc: ['data:'],
      fontSrc: ['data:'],
      baseUri: [NONE],
      formAction: [NONE],
      frameAncestors: [NONE],
    },
  };
}

/** The hashes of the HTML files under `siteDir` that `include` takes (by relative name): the same object until one of them changes. */
function hashesFollowing(siteDir: string, include: (name: string) => boolean): () => InlineHashes {
  let fingerprint: string | undefined;
  let current: InlineHashes = { scripts: [], styles: [] };
  return () => {
    const files = htmlFilesUnder(siteDir, include);
    const next = files.map(({ file, stat }) => `${file}:${stat.size}:${stat.mtimeMs}`).join('\n');
    if (next === fingerprint) return current;
    try {
      const pages = files.map(({ file }) => inlineHashesOf(fs.readFileSync(file, 'utf8')));
      current = { scripts: [...new Set(pages.flatMap((page) => page.scripts))], styles: [...new Set(pages.flatMap((page) => page.styles))] };
      fingerprint = next;
    } catch {
      // A file removed while a rebuild runs: the next request reads the finished site.
    }
    return current;
  };
}

function htmlFilesUnder(siteDir: string, include: (name: string) => boolean): { file: string; stat: fs.Stats }[] {
  let names: string[];
  try {
    names = fs.readdirSync(siteDir, { recursive: true, encoding: 'utf8' });
  } catch {
    return []; // not built yet: /docs answers its own 404, which runs nothing
  }
  return names
    .filter((name) => name.endsWith('.html') && include(name))
    .sort()
    .flatMap((name) => {
      const file = path.join(siteDir, name);
      try {
        return [{ file, stat: fs.statSync(file) }];
      } catch {
        return []; // removed between the listing and the stat, by a rebuild
      }
    });
}
