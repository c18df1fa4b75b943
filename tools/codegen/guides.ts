import fs from 'node:fs';
import path from 'node:path';
import type { OpenApiDocument } from './bundle';
import { locations, repoRoot } from './paths';

/** A Markdown page shown in the docs site as a section of its own (a Redoc trait tag). */
export interface GuidePage {
  readonly file: string;
  readonly title: string;
  readonly body: string;
}

type Tag = { name: string; description?: string; 'x-traitTag'?: boolean };

/** The guides in reading order (their file names start with their place), then the interface's changelog. */
export function readGuidePages(): GuidePage[] {
  const guides = fs
    .readdirSync(locations.guidesDir)
    .filter((name) => /^\d\d-.+\.md$/.test(name))
    .sort()
    .map((name) => path.join(locations.guidesDir, name));
  return [...guides, locations.changelog].map((file) => {
    const text = fs.readFileSync(file, 'utf8');
    const heading = /^# (.+)\n/.exec(text);
    if (!heading?.[1]) throw new Error(`${path.relative(repoRoot, file)} must start with a "# " title.`);
    return { file, title: heading[1].trim(), body: text.slice(heading[0].length).trim() };
  });
}

/** Redoc's anchor of a tag: `#tag/` and the name with spaces as hyphens. */
export const tagAnchor = (name: string) => `#tag/${name.trim().replace(/\s+/g, '-')}`;

/**
 * Rewrites the page's relative links for the site: a link to another page becomes a link to its
 * section, a link to any other file of the repository becomes that file's path as code (the site
 * is one file and ships without the repository). Links with a scheme and absolute paths stay.
 */
function forTheSite(page: GuidePage, pages: readonly GuidePage[]): string {
  const titles = new Map(pages.map((other) => [other.file, other.title]));
  return page.body.replace(/\[([^\]]*)\]\(([^)\s#]+\.md)(#[^)\s]*)?\)/g, (link, text: string, target: string) => {
    if (/^[a-z]+:/i.test(target) || target.startsWith('/')) return link;
    const file = path.resolve(path.dirname(page.file), target);
    const title = titles.get(file);
    if (title !== undefined) return `[${text}](${tagAnchor(title)})`;
    if (!fs.existsSync(file)) throw new Error(`${path.relative(repoRoot, page.file)} links to ${target}, which does not exist.`);
    const named = `\`${path.relative(repoRoot, file)}\``;
    return text === named ? named : `${text} (${named} in the repository)`;
  });
}

/**
 * The bundled document with the guides and the changelog as trait tags (sections without
 * operations, whose Markdown Redoc renders) grouped ahead of the reference, so `docs/guides/` and
 * `CHANGELOG.md` are the one source of both the repository's documents and the site's.
 */
export function withGuides(document: OpenApiDocument, pages: readonly GuidePage[]): OpenApiDocument {
  const referenceTags = (document.tags as Tag[] | undefined) ?? [];
  const guideTags: Tag[] = pages.map((page) => ({ name: page.title, description: forTheSite(page, pages), 'x-traitTag': true }));
  const clash = guideTags.find((guide) => referenceTags.some((tag) => tag.name === guide.name));
  if (clash) throw new Error(`The guide "${clash.name}" has the name of an operation tag.`);
  return {
    ...document,
    tags: [...guideTags, ...referenceTags],
    'x-tagGroups': [
      { name: 'Guides', tags: guideTags.map((tag) => tag.name) },
      { name: 'API reference', tags: referenceTags.map((tag) => tag.name) },
    ],
  };
}
