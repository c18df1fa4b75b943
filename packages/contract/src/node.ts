/**
 * `@svc/contract/node`: what only Node can use, kept off the main entry so that the main entry (and
 * the SDK that imports it) bundles for a browser, a worker or an edge runtime without a `node:`
 * import (docs/decisions/0065-sdk-for-every-runtime.md).
 */
import path from 'node:path';

/** Absolute path of the bundled OpenAPI document (generated from spec/). */
export const bundledSpecPath = path.join(__dirname, '..', 'openapi.json');
