import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { OpenApiDocument } from './bundle';
import { redocly } from './bundle';
import { readGuidePages } from './guides';
import { buildMachineDocs } from './llms';
import { locations, repoRoot } from './paths';

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

/** Where the console is, relative to the Redoc page. */
export const CONSOLE_DIR = 'console';
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);

/**
 * The console's address of an operation, from the Redoc page: `?operation=` (the console turns it
 * into Swagger UI's deep link; Redoc takes a link with a fragment for one of its own sections).
 */
export const consoleLink = (operationId: string) => `${CONSOLE_DIR}/?operation=${encodeURIComponent(operationId)}`;

/**
 * The document as the site shows it: each operation's description starts with a link to try it in
 * the console. The served `/openapi.json` stays as it is: the link is the site's.
 */
export function withConsoleLinks(document: OpenApiDocument): OpenApiDocument {
  const paths: OpenApiDocument['paths'] = {};
  for (const [route, pathItem] of Object.entries(document.paths)) {
    paths[route] = Object.fromEntries(
      Object.entries(pathItem as Record<string, unknown>).map(([method, value]) => {
        const operation = value as { operationId?: string; description?: string };
        if (!HTTP_METHODS.has(method) || !operation.operationId) return [method, value];
        const link = `[Try it in the console](${consoleLink(operation.operationId)})`;
        return [method, { ...operation, description: `${link}\n\n${operation.description ?? ''}` }];
      }),
    );
  }
  return { ...document, paths };
}

/** Swagger UI's files the console loads, copied from swagger-ui-dist (pinned in package.json), with its licence. */
const SWAGGER_UI_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css', 'LICENSE', 'NOTICE'];
/** The console's own page, script and styles (tools/codegen/console). */
const CONSOLE_SOURCES = path.join(repoRoot, 'tools', 'codegen', 'console');

/** Writes the console beside the Redoc page: its own files and Swagger UI's, nothing loaded from the network. */
export function buildConsole(siteDir: string = path.dirname(locations.docsSite)): { dir: string; files: number } {
  const dir = path.join(siteDir, CONSOLE_DIR);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const swaggerUi = path.dirname(require.resolve('swagger-ui-dist/package.json'));
  for (const file of SWAGGER_UI_FILES) fs.copyFileSync(path.join(swaggerUi, file), path.join(dir, file));
  for (const file of fs.readdirSync(CONSOLE_SOURCES)) fs.copyFileSync(path.join(CONSOLE_SOURCES, file), path.join(dir, file));
  // The bundle and the stylesheet point at source maps not copied: a browser's tools would ask for them.
  for (const file of ['swagger-ui-bundle.js', 'swagger-ui.css']) {
    const copy = path.join(dir, file);
    fs.writeFileSync(copy, fs.readFileSync(copy, 'utf8').replace(/\n?\/[/*]# sourceMappingURL=[^\s*]+(?: \*\/|\*\/)?\s*$/, '\n'));
  }
  return { dir, files: fs.readdirSync(dir).length };
}

/**
 * Builds docs/site/index.html from the bundled spec with the Redoc scripts inlined, so the page
 * works with no network, from the server's /docs and straight from disk (file://); beside it the
 * console (docs/site/console), which calls the service it is served by, and the docs for machines
 * (llms.txt, llms-full.txt and the pages as Markdown in docs/site/guides).
 */
export function buildDocsSite(): { file: string; bytes: number } {
  fs.mkdirSync(path.dirname(locations.docsSite), { recursive: true });
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-docs-'));
  try {
    const forTheSite = path.join(scratch, 'openapi.json');
    const bundled = JSON.parse(fs.readFileSync(locations.bundledSpec, 'utf8')) as OpenApiDocument;
    fs.writeFileSync(forTheSite, JSON.stringify(withConsoleLinks(bundled)));
    redocly(['build-docs', forTheSite, '--output', locations.docsSite, '--inlineBundle', '--title', 'Store Management Service API']);
    buildMachineDocs(path.dirname(locations.docsSite), bundled, readGuidePages());
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  buildConsole();
  const html = withSectionLinks(withoutRemoteAssets(fs.readFileSync(locations.docsSite, 'utf8')));
  const remote = html.match(/https:\/\/cdn\.redoc(?:ly)?\.(?:ly|com)[^"'`\s)]*/g);
  if (remote) throw new Error(`The docs site would load from the network: ${[...new Set(remote)].join(', ')}`);
  fs.writeFileSync(locations.docsSite, html);
  return { file: locations.docsSite, bytes: Buffer.byteLength(html) };
}
