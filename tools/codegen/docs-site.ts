import fs from 'node:fs';
import path from 'node:path';
import { redocly } from './bundle';
import { locations } from './paths';

/**
 * Builds docs/site/index.html from the bundled spec with the Redoc scripts inlined, so the page
 * works with no network, from the server's /docs and straight from disk (file://).
 */
export function buildDocsSite(): { file: string; bytes: number } {
  fs.mkdirSync(path.dirname(locations.docsSite), { recursive: true });
  redocly([
    'build-docs',
    locations.bundledSpec,
    '--output',
    locations.docsSite,
    '--inlineBundle',
    '--title',
    'Store Management Service API',
  ]);
  const html = fs.readFileSync(locations.docsSite, 'utf8');
  const external = html.match(/<(?:script|link)[^>]+(?:src|href)="https?:\/\/[^"]+"/g);
  if (external) throw new Error(`The docs site would load from the network: ${external.join(', ')}`);
  return { file: locations.docsSite, bytes: Buffer.byteLength(html) };
}
