import { createHash } from 'node:crypto';
import fs from 'node:fs';
import type { RequestHandler } from 'express';
import { bundledSpecPath } from '../core/paths';

/**
 * How long a reader may keep the document without asking again. A new spec comes only with a new
 * deploy, and a client that asks again with `If-None-Match` gets a 304 while it is unchanged.
 */
export const SPEC_MAX_AGE_SECONDS = 300;

/**
 * `GET /openapi.json`: the bundled document of `@svc/contract`, the one the server validates
 * against, for generating clients and for tools. It is public (the spec is), so any origin may read
 * it and no token is asked for. Its ETag is a hash of its bytes.
 */
export function specDocument(): RequestHandler {
  const body = fs.readFileSync(bundledSpecPath);
  const etag = `"${createHash('sha256').update(body).digest('base64url')}"`;
  return (req, res) => {
    res.set({
      'Content-Type': 'application/json; charset=utf-8',
      'Cache-Control': `public, max-age=${SPEC_MAX_AGE_SECONDS}`,
      ETag: etag,
      'Access-Control-Allow-Origin': '*',
    });
    if (req.fresh) {
      res.status(304).end();
      return;
    }
    res.send(body);
  };
}
