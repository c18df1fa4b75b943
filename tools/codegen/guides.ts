import fs from 'node:fs';
import path from 'node:path';
import type { OpenApiDocument } from './bundle';
import { locations, repoRoot } from './paths';

/** A Markdown page shown in the docs site as a section of its own (a Redoc trait tag). */
export interface GuidePage {
  readonly file: string;
  readonly title: string;
  /** The section's address in the site, `#/<address>`. */
  readonly address: string;
  readonly group: 'Guides' | 'Further reading';
  readonly body: string;
}

type Tag = { name: string; description?: string; 'x-traitTag'?: boolean; 'x-displayName'?: string };

/** An inline Markdown link or image: its text and its target (up to the closing parenthesis). */
const MARKDOWN_LINK = /\[([^\]]*)\]\(([^)\s]+)\)/g;

const display = (file: string) => path.relative(repoRoot, file);

/**
 * A section's address: the title (without a subtitle after a colon) in lower case with every run of
 * other characters as one hyphen. Redoc makes the reference's addresses from tag names the same way
 * (`Product SEO` → `product-seo`), and a page's tag is named by its address so that Redoc keeps it.
 */
export const sectionAddress = (title: string) =>
  (title.split(':')[0] as string)
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

/** The repository file a link's target names (relative to the page `from`, fragment left out); undefined for an address. */
function repositoryTarget(from: string, target: string): { file: string } | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('/') || target.startsWith('#')) return undefined;
  return { file: path.resolve(path.dirname(from), decodeURI(target.split('#')[0] as string)) };
}

/** The name in the nearest package.json above a file inside packages/, if any. */
function packageNameOf(file: string): string | undefined {
  for (let dir = path.dirname(file); dir.startsWith(path.join(repoRoot, 'packages')); dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (fs.existsSync(manifest)) return (JSON.parse(fs.readFileSync(manifest, 'utf8')) as { name?: string }).name;
  }
  return undefined;
}

function readPage(file: string, group: GuidePage['group'], titles: ReadonlySet<string>, texts: ReadonlyMap<string, string>): GuidePage {
  const text = texts.get(file) ?? fs.readFileSync(file, 'utf8');
  const heading = /^# (.+)\n/.exec(text);
  if (!heading?.[1]) throw new Error(`${display(file)} must start with a "# " title.`);
  let title = heading[1].trim();
  // Each package has a CHANGELOG.md titled "Changelog", like the interface's: its package tells them apart.
  const packageName = packageNameOf(file);
  if (titles.has(title) && packageName) title = `${title} of ${packageName}`;
  if (titles.has(title)) throw new Error(`${display(file)} has the title "${title}" of another page of the docs site.`);
  return { file, title, address: sectionAddress(title), group, body: text.slice(heading[0].length).trim() };
}

/**
 * The guides in reading order (their file names start with their place) and the interface's
 * changelog, then every Markdown file of the repository that a page links to, in the order the
 * links are met: the site has a section for each, so that no link of the site leads out of it.
 * `texts` stands in for files whose generated parts are not written yet (the versions guide's table).
 */
export function readGuidePages(texts: ReadonlyMap<string, string> = new Map()): GuidePage[] {
  const guides = fs
    .readdirSync(locations.guidesDir)
    .filter((name) => /^\d\d-.+\.md$/.test(name))
    .sort()
    .map((name) => path.join(locations.guidesDir, name));
  const pages: GuidePage[] = [];
  const titles = new Set<string>();
  const add = (file: string, group: GuidePage['group']) => {
    const page = readPage(file, group, titles, texts);
    titles.add(page.title);
    pages.push(page);
  };
  for (const file of [...guides, locations.changelog]) add(file, 'Guides');
  for (let i = 0; i < pages.length; i++) {
    const page = pages[i] as GuidePage;
    for (const [, , target] of page.body.matchAll(MARKDOWN_LINK)) {
      const linked = repositoryTarget(page.file, target as string)?.file;
      if (!linked?.endsWith('.md') || pages.some((other) => other.file === linked)) continue;
      if (!fs.existsSync(linked)) throw new Error(`${display(page.file)} links to ${target}, which does not exist.`);
      if (path.relative(repoRoot, linked).startsWith('..')) throw new Error(`${display(page.file)} links to ${target}, outside the repository.`);
      add(linked, 'Further reading');
    }
  }
  return pages;
}

/** Redoc's address of a section in the built site (hash routing, so it works from disk too). */
export const sectionHref = (address: string) => `#/${address}`;

/**
 * Rewrites the page's repository links for where it is published: a link to another published page
 * goes where `hrefOf` says that page is; a link to any other file (source, folders) becomes that
 * file's path as code, since the site ships without the repository. Addresses (with a scheme,
 * absolute, fragments) stay.
 */
export function withPublishedLinks(page: GuidePage, pages: readonly GuidePage[], hrefOf: (other: GuidePage) => string): string {
  return page.body.replace(MARKDOWN_LINK, (link, text: string, target: string) => {
    const linked = repositoryTarget(page.file, target);
    if (!linked) return link;
    const other = pages.find((candidate) => candidate.file === linked.file);
    // The site's address of a heading (`#/paging/1.-the-first-page`) is not GitHub's (`#1-the-first-page`): such a link goes to the page.
    if (other) return `[${text}](${hrefOf(other)})`;
    if (!fs.existsSync(linked.file)) throw new Error(`${display(page.file)} links to ${target}, which does not exist.`);
    const named = display(linked.file);
    // A link whose text is the path already says it: the text stays, without the link.
    return text.replace(/^`|\/?`$|\/$/g, '') === named ? text : `${text} (\`${named}\` in the repository)`;
  });
}

/**
 * The bundled document with the pages as trait tags (sections without operations, whose Markdown
 * Redoc renders) grouped ahead of the reference, so `docs/guides/`, `CHANGELOG.md` and the files they
 * link to are the one source of both the repository's documents and the site's. A page's tag is
 * named by its address and shows its title (`x-displayName`), so the address is the one the links
 * were written with.
 */
export function withGuides(document: OpenApiDocument, pages: readonly GuidePage[]): OpenApiDocument {
  const referenceTags = (document.tags as Tag[] | undefined) ?? [];
  const taken = new Map(referenceTags.map((tag) => [sectionAddress(tag.name), tag.name]));
  for (const page of pages) {
    const clash = taken.get(page.address);
    if (clash !== undefined) throw new Error(`${display(page.file)} would have the address #/${page.address} of "${clash}".`);
    taken.set(page.address, page.title);
  }
  const guideTag = (page: GuidePage): Tag => ({
    name: page.address,
    'x-displayName': page.title,
    description: withPublishedLinks(page, pages, (other) => sectionHref(other.address)),
    'x-traitTag': true,
  });
  const groups = (['Guides', 'Further reading'] as const)
    .map((name) => ({ name, tags: pages.filter((page) => page.group === name).map((page) => page.address) }))
    .filter((group) => group.tags.length > 0);
  return {
    ...document,
    tags: [...pages.map(guideTag), ...referenceTags],
    'x-tagGroups': [...groups, { name: 'API reference', tags: referenceTags.map((tag) => tag.name) }],
  };
}
