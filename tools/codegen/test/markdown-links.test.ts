import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../paths';

/**
 * Every relative link in the repository's Markdown lands somewhere: `[text](path)` on a file or a
 * folder that exists, `[text](path#anchor)` and `[text](#anchor)` on a heading of that Markdown file
 * (its GitHub slug) or an explicit `<a id>`/`<a name>` there. Links in code are not links, and links
 * with a scheme (`https:`, `mailto:`) are not checked. The files are those git knows (committed, or
 * new and not ignored), so a renamed or deleted document is caught wherever it is cited.
 */

/** Markdown files of the repository: what git tracks or would track, minus the built site. */
function markdownFiles(): string[] {
  const listed = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z', '--', '*.md'], { cwd: repoRoot, encoding: 'utf8' });
  return [...new Set(listed.split('\0').filter(Boolean))]
    .filter((file) => !file.split('/').includes('node_modules') && !file.startsWith('docs/site/'))
    .filter((file) => fs.existsSync(path.join(repoRoot, file)))
    .sort();
}

/** The text with fenced code blocks and inline code spans blanked (lines kept, so positions stay). */
function withoutCode(markdown: string): string {
  const lines = markdown.split('\n');
  let fence: string | null = null;
  const kept = lines.map((line) => {
    const opening = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (opening && opening[1]?.[0] === fence[0] && (opening[1]?.length ?? 0) >= fence.length && line.trim() === opening[1]) fence = null;
      return '';
    }
    if (opening?.[1]) {
      fence = opening[1];
      return '';
    }
    return line.replace(/(`+)[\s\S]*?\1/g, '');
  });
  return kept.join('\n');
}

/** GitHub's anchor for a heading (github-slugger): lower case, punctuation dropped, spaces to hyphens. */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1') // images: their alt text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // links: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`([^`]*)`/g, '$1') // code spans: their text
    .replace(/(^|[^\p{L}\p{N}])[*_]{1,3}(?=\S)|(?<=\S)[*_]{1,3}(?=$|[^\p{L}\p{N}])/gu, '$1') // emphasis
    .trim();
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors a Markdown file offers: its headings' slugs (repeats numbered as GitHub does) and explicit ids. */
function anchorsOf(markdown: string): Set<string> {
  const text = withoutCode(markdown);
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const add = (heading: string) => {
    const slug = githubSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  };
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    const atx = /^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$/.exec(line);
    if (atx) add(atx[1] ?? '');
    else if (index > 0 && /^ {0,3}(=+|-+)\s*$/.test(line) && lines[index - 1]?.trim() && !/^ {0,3}([-*+]\s|#)/.test(lines[index - 1] ?? '')) {
      add(lines[index - 1]?.trim() ?? '');
    }
  });
  // Explicit anchors, as GitHub keeps them: <a id="…"> and <a name="…">.
  for (const match of markdown.matchAll(/<a\s+[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']/gi)) if (match[1]) anchors.add(match[1]);
  return anchors;
}

/** The link destinations of a Markdown text: inline links and images, and reference definitions. */
function linkTargets(markdown: string): string[] {
  const text = withoutCode(markdown);
  const targets: string[] = [];
  // [text](dest) and ![alt](dest), dest plain or <in angle brackets>, with an optional "title"; one level of nested brackets in the text.
  for (const match of text.matchAll(/!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*(<[^>\n]*>|[^\s)]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)/g)) {
    const destination = match[1] ?? '';
    targets.push(destination.startsWith('<') ? destination.slice(1, -1) : destination);
  }
  for (const match of text.matchAll(/^ {0,3}\[[^\]]+\]:\s*(<[^>\n]*>|\S+)/gm)) {
    const destination = match[1] ?? '';
    targets.push(destination.startsWith('<') ? destination.slice(1, -1) : destination);
  }
  return targets;
}

/** How the checker sees the repository: a file's text, and whether a path is there and a folder. */
interface Repository {
  read(file: string): string;
  exists(file: string): boolean;
  isDirectory(file: string): boolean;
}

const onDisk: Repository = {
  read: (file) => fs.readFileSync(path.join(repoRoot, file), 'utf8'),
  exists: (file) => fs.existsSync(path.join(repoRoot, file)),
  isDirectory: (file) => fs.statSync(path.join(repoRoot, file)).isDirectory(),
};

/** What is wrong with one file's relative links, as `target: reason`; empty when every one lands. */
function brokenLinks(file: string, repository: Repository = onDisk): string[] {
  const broken: string[] = [];
  for (const target of linkTargets(repository.read(file))) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue; // https:, mailto:, a protocol-relative URL
    const hash = target.indexOf('#');
    const linkPath = decodeURIComponent(hash === -1 ? target : target.slice(0, hash)).replace(/\?.*$/, '');
    const anchor = hash === -1 ? null : decodeURIComponent(target.slice(hash + 1));
    const resolved =
      linkPath === '' ? file : path.posix.normalize(linkPath.startsWith('/') ? linkPath.slice(1) : path.posix.join(path.posix.dirname(file), linkPath));
    if (resolved.startsWith('../')) {
      broken.push(`${target}: outside the repository`);
      continue;
    }
    if (!repository.exists(resolved)) {
      broken.push(`${target}: no such file`);
      continue;
    }
    if (anchor === null || anchor === '' || !resolved.endsWith('.md') || repository.isDirectory(resolved)) continue;
    const anchors = anchorsOf(repository.read(resolved));
    if (!anchors.has(anchor) && !anchors.has(anchor.toLowerCase())) broken.push(`${target}: no heading with the anchor #${anchor} in ${resolved}`);
  }
  return broken;
}

describe('the repository’s Markdown links', () => {
  const files = markdownFiles();

  it('are read from every Markdown file, the decision records included', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', 'CHANGELOG.md', 'docs/decisions/README.md', 'docs/guides/01-getting-started.md']));
    expect(files.some((file) => file.startsWith('docs/site/') || file.includes('node_modules'))).toBe(false);
  });

  it.each(files)('%s: every relative link lands on a file, and every #anchor on a heading', (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });
});

describe('the link checker', () => {
  it('makes GitHub’s heading anchors', () => {
    expect(githubSlug('0070. Webhook queues: recovery at fleet pace')).toBe('0070-webhook-queues-recovery-at-fleet-pace');
    expect(githubSlug('API quotas on rate-limiter-flexible; SQLite has one server process (issue 21 part 3)')).toBe(
      'api-quotas-on-rate-limiter-flexible-sqlite-has-one-server-process-issue-21-part-3',
    );
    expect(githubSlug('`express-openapi-validator` 5.6.2 is *patched*')).toBe('express-openapi-validator-562-is-patched');
    expect(githubSlug('Codes you do not know yet')).toBe('codes-you-do-not-know-yet');
    expect(githubSlug('The [SDK](x.md) — for every runtime')).toBe('the-sdk--for-every-runtime');
    expect(githubSlug('snake_case stays')).toBe('snake_case-stays');
    expect([...anchorsOf('# Same\n\ntext\n\n## Same\n\n```\n# not a heading\n```\n\nSetext\n------\n')]).toEqual(['same', 'same-1', 'setext']);
  });

  it('finds links outside code only, and refuses a missing file or heading', () => {
    const files: Record<string, string> = {
      'docs/a.md': [
        '# A',
        'See [b](b.md#two), [b again](./b.md#missing), [gone](gone.md), [top](#a), [nowhere](#nowhere),',
        '[the web](https://example.com/x.md), [mail](mailto:x@example.com), ![img](../README.md "title").',
        '`[not a link](gone.md)`',
        '```',
        '[not a link either](gone.md)',
        '```',
        '[ref]: <b.md#one>',
      ].join('\n'),
      'docs/b.md': '# One\n\n## Two\n',
    };
    const repository: Repository = {
      read: (file) => files[file] ?? onDisk.read(file),
      exists: (file) => file in files || onDisk.exists(file),
      isDirectory: (file) => !(file in files) && onDisk.isDirectory(file),
    };
    expect(brokenLinks('docs/a.md', repository)).toEqual([
      './b.md#missing: no heading with the anchor #missing in docs/b.md',
      'gone.md: no such file',
      '#nowhere: no heading with the anchor #nowhere in docs/a.md',
    ]);
  });
});
