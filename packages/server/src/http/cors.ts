import fs from 'node:fs';
import { operationTable, resolveLocalRef } from '@svc/contract';
import cors from 'cors';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { bundledSpecPath } from '../core/paths';
import { METADATA_PATH } from '../oauth/metadata';
import { type Logger, requestIds } from './request-log';

/**
 * Cross-origin access (docs/decisions/0047-cors.md):
 *
 * - The store API (`/stores/...`): an access token is a confidential app's server-side credential,
 *   so by default no origin may call it from a browser. An operator may list exact origins
 *   (CORS_ORIGINS); those get the allow headers, no others.
 * - OAuth (`/oauth/...`): never. The token, launch and operations endpoints take the client secret,
 *   which a browser must never hold; `/oauth/authorize` is a page the browser navigates to.
 * - `/openapi.json` and the OAuth metadata (`/.well-known/oauth-authorization-server`): any origin
 *   may read them (public documents, as a browser-based tool discovers them); their preflight is
 *   allowed too.
 *
 * Every preflight gets a deliberate 204 here, before request validation (which would answer 405 to
 * the undeclared OPTIONS): with the allow headers for a listed origin on the store API, without any
 * `Access-Control-Allow-*` header otherwise, so the browser refuses the real request. A 403 would
 * say no more: a preflight's answer never reaches the page's script, and the browser's console
 * already names the missing header.
 */
export interface CorsOptions {
  /** Exact origins (`https://app.example.com`) allowed to call the store API. */
  readonly origins: readonly string[];
  /** Where a refused preflight is noted, at debug. */
  readonly logger: Logger;
}

/**
 * The request headers a browser app may send to the store API. Authorization and Content-Type
 * (JSON is not a CORS-safelisted type) on every call, the concurrency and idempotency headers, the
 * API version a caller pins, the SDK's `X-Client-User-Agent` (a page cannot set `User-Agent`) and
 * W3C trace context (`traceparent`, `tracestate`) that a traced page passes on.
 */
export const STORE_API_REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  'Idempotency-Key',
  'If-Match',
  'If-None-Match',
  'API-Version',
  'X-Client-User-Agent',
  'traceparent',
  'tracestate',
] as const;

/** How long a browser may reuse a preflight's answer (Chromium caps it at 7200). */
export const PREFLIGHT_MAX_AGE_SECONDS = 600;

const STORE_API = '/stores/';

/** The response headers a page may always read (Fetch's CORS-safelisted response-header names), in lower case. */
const SAFELISTED_RESPONSE_HEADERS = new Set(['cache-control', 'content-language', 'content-length', 'content-type', 'expires', 'last-modified', 'pragma']);

/** The methods the store API's operations use. */
export function storeApiMethods(): string[] {
  const methods = Object.values(operationTable)
    .filter((entry) => entry.path.startsWith(STORE_API))
    .map((entry) => entry.method.toUpperCase());
  return [...new Set(methods)].sort();
}

type Responses = Record<string, { headers?: Record<string, unknown> }>;
type PathItems = Record<string, Record<string, { responses?: Responses }>>;

let exposed: readonly string[] | undefined;

/**
 * The response headers the spec declares on the store API's answers (ETag, X-Request-Id, the
 * RateLimit fields, Retry-After, Idempotent-Replayed, WWW-Authenticate...), read once: a header the
 * spec adds is exposed to browser apps without a change here.
 */
export function storeApiResponseHeaders(): readonly string[] {
  if (exposed) return exposed;
  const document = JSON.parse(fs.readFileSync(bundledSpecPath, 'utf8')) as { paths: PathItems };
  const names = new Map<string, string>();
  for (const [template, pathItem] of Object.entries(document.paths)) {
    if (!template.startsWith(STORE_API)) continue;
    for (const operation of Object.values(pathItem)) {
      for (const response of Object.values(operation?.responses ?? {})) {
        const headers = resolveLocalRef<{ headers?: Record<string, unknown> }>(document, response).headers ?? {};
        for (const name of Object.keys(headers)) {
          if (!SAFELISTED_RESPONSE_HEADERS.has(name.toLowerCase())) names.set(name.toLowerCase(), name);
        }
      }
    }
  }
  exposed = [...names.values()].sort();
  return exposed;
}

const isPreflight = (req: Request): boolean =>
  req.method === 'OPTIONS' && req.headers.origin !== undefined && req.headers['access-control-request-method'] !== undefined;

/** An answer that allows nothing: it still varies by Origin, as the allowed answers do, for caches between. */
function refusePreflight(res: Response): void {
  res.vary('Origin');
  res.status(204).set('Content-Length', '0').end();
}

export function corsPolicy({ origins, logger }: CorsOptions): RequestHandler {
  const listed = new Set(origins);
  const storeApi = cors({
    origin: [...listed],
    methods: storeApiMethods(),
    allowedHeaders: [...STORE_API_REQUEST_HEADERS],
    exposedHeaders: [...storeApiResponseHeaders()],
    maxAge: PREFLIGHT_MAX_AGE_SECONDS,
    credentials: false,
  });
  // Reading the public document needs no credentials; If-None-Match is what makes a tool's request preflighted.
  const specDocument = cors({ origin: '*', methods: ['GET', 'HEAD'], allowedHeaders: ['If-None-Match'], maxAge: PREFLIGHT_MAX_AGE_SECONDS });
  return (req: Request, res: Response, next: NextFunction) => {
    const preflight = isPreflight(req);
    if (req.path.startsWith(STORE_API) && listed.size > 0) {
      // cors answers a preflight itself and only adds headers to other requests; it takes any OPTIONS for a preflight.
      if (preflight ? listed.has(req.headers.origin as string) : req.method !== 'OPTIONS') return storeApi(req, res, next);
    }
    if (!preflight) return next();
    if (req.path === '/openapi.json' || req.path === METADATA_PATH) return specDocument(req, res, next);
    logger.debug({ ...requestIds(res), origin: String(req.headers.origin).slice(0, 200), path: req.path }, 'refused a CORS preflight');
    refusePreflight(res);
  };
}
