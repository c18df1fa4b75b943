import fs from 'node:fs';
import path from 'node:path';
import type { OpenApiDocument } from './bundle';
import { type GuidePage, withPublishedLinks } from './guides';

/**
 * The docs for machines, beside the site (served at /docs): `llms.txt` (the llmstxt.org form: a
 * title, a summary, then sections of links, each with what it holds), every page of the site as
 * plain Markdown in `guides/` (the guides, the changelog and the READMEs they link to, linking to
 * each other as `.md` files), and `llms-full.txt`, all of them in one file.
 */

/** Where the plain Markdown pages are, relative to the site. */
export const MARKDOWN_DIR = 'guides';
export const LLMS_FILE = 'llms.txt';
export const LLMS_FULL_FILE = 'llms-full.txt';

const markdownFile = (page: GuidePage) => `${page.address}.md`;

/** A page as plain Markdown: its title, then its body with links to the other pages as `.md` files beside it. */
export function markdownPage(page: GuidePage, pages: readonly GuidePage[]): string {
  return `# ${page.title}\n\n${withPublishedLinks(page, pages, markdownFile)}\n`;
}

/** The longest line a summary takes. */
const SUMMARY_CHARACTERS = 240;

/**
 * What a page holds, in a line: the first sentence of its first paragraph (to its full stop: a
 * colon there introduces what the page then lists), links as their text; a page that opens with
 * a list (a package's changelog) says what its sections are.
 */
export function summaryOf(page: GuidePage): string {
  const paragraph = page.body
    .split(/\n\s*\n/)
    .map((block) => block.trim())
    .find((block) => block !== '' && !/^(#|```|\||<!--|- |\d+\. |>)/.test(block));
  if (paragraph === undefined) return `its sections: ${[...page.body.matchAll(/^## (.+)$/gm)].map((heading) => heading[1]).join(', ')}`;
  const text = paragraph
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\s+/g, ' ')
    .trim();
  const sentence = /^(.+?\.)(\s|$)/.exec(text)?.[1] ?? text;
  return sentence.length > SUMMARY_CHARACTERS ? `${sentence.slice(0, SUMMARY_CHARACTERS - 1)}…` : sentence;
}

/** The llms.txt of the site: the document's summary and conventions, then every page and the reference, linked. */
export function llmsText(document: { readonly [key: string]: unknown; readonly info?: unknown }, pages: readonly GuidePage[]): string {
  const info = (document.info ?? {}) as { title?: string; summary?: string; description?: string; version?: string };
  const links = (group: GuidePage['group']) =>
    pages.filter((page) => page.group === group).map((page) => `- [${page.title}](${MARKDOWN_DIR}/${markdownFile(page)}): ${summaryOf(page)}`);
  return [
    `# ${info.title ?? 'API'}`,
    '',
    `> ${info.summary ?? ''} Date version ${info.version ?? ''}.`,
    '',
    (info.description ?? '').trim(),
    '',
    '## Guides',
    '',
    ...links('Guides'),
    '',
    '## Reference',
    '',
    '- [OpenAPI document](/openapi.json): every operation, parameter, schema, example and error, with samples in curl, TypeScript, Python, PHP and Go (`x-codeSamples`); no token needed',
    '- [API reference](./): the same document rendered, with the guides',
    '- [Console](console/): every operation sent from the page, after an OAuth sign-in or with a pasted token',
    '',
    '## Optional',
    '',
    ...links('Further reading'),
    `- [Everything above in one file](${LLMS_FULL_FILE}): every page of this list, in order`,
    '',
  ].join('\n');
}

/** Writes llms.txt, llms-full.txt and the Markdown pages into the site. */
export function buildMachineDocs(siteDir: string, document: OpenApiDocument, pages: readonly GuidePage[]): { files: number } {
  const dir = path.join(siteDir, MARKDOWN_DIR);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const markdown = pages.map((page) => markdownPage(page, pages));
  for (const [index, page] of pages.entries()) fs.writeFileSync(path.join(dir, markdownFile(page)), markdown[index] as string);
  fs.writeFileSync(path.join(siteDir, LLMS_FILE), llmsText(document, pages));
  fs.writeFileSync(path.join(siteDir, LLMS_FULL_FILE), markdown.join('\n'));
  return { files: pages.length + 2 };
}
