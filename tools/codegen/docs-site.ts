import fs from 'node:fs';
import path from 'node:path';
import { redocly } from './bundle';
import { locations } from './paths';

/** The Redoc badge's logo, drawn inline instead of fetched from Redocly's CDN. */
const BADGE_LOGO =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' width='16' height='16'%3E%3Crect width='16' height='16' rx='3' fill='%230044D4'/%3E%3C/svg%3E";

/** Redoc's bundle points a few optional assets at Redocly's CDN; keep them on this machine. */
export function withoutRemoteAssets(html: string): string {
  return html.replace(/https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini(?:-full)?\.svg/g, BADGE_LOGO).replace(/https:\/\/cdn\.redocly\.com\/icons\//g, './icons/');
}

/**
 * Redoc routes by the fragment (`#/paging`), the one kind of address that works both at /docs and
 * from disk. Its server rendering writes each section's link as a path from the host root
 * (`href="/paging"`), which hydration leaves in place: opened in a new tab or bookmarked, such a link
 * missed the page. They are written as the fragments the page answers.
 */
export function withSectionLinks(html: string): string {
  const sections = new Set([...html.matchAll(/data-section-id="(\/[^"]*)"/g)].map((match) => match[1]));
  if (!sections.has('/')) throw new Error('The docs site has no sections: Redoc no longer marks them with data-section-id.');
  // Only a section's own address: `/oauth/token` is the service's, even though `/oauth` is a section.
  return html.replace(/href="(\/[^"#?]*)"/g, (attribute, target: string) => (sections.has(target) ? `href="#${target}"` : attribute));
}

/**
 * Builds docs/site/index.html from the bundled spec with the Redoc scripts inlined, so the page
 * works with no network, from the server's /docs and straight from disk (file://).
 */
export function buildDocsSite(): { file: string; bytes: number } {
  fs.mkdirSync(path.dirname(locations.docsSite), { recursive: true });
  redocly(['build-docs', locations.bundledSpec, '--output', locations.docsSite, '--inlineBundle', '--title', 'Store Management Service API']);
  const html = withSectionLinks(withoutRemoteAssets(fs.readFileSync(locations.docsSite, 'utf8')));
  const remote = html.match(/https:\/\/cdn\.redoc(?:ly)?\.(?:ly|com)[^"'`\s)]*/g);
  if (remote) throw new Error(`The docs site would load from the network: ${[...new Set(remote)].join(', ')}`);
  fs.writeFileSync(locations.docsSite, html);
  return { file: locations.docsSite, bytes: Buffer.byteLength(html) };
}
