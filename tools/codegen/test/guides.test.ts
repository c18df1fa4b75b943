import path from 'node:path';
import type { OpenApiDocument } from '../bundle';
import { type GuidePage, readGuidePages, sectionAddress, withGuides } from '../guides';
import { repoRoot } from '../paths';

const document = (tags: string[]): OpenApiDocument => ({
  openapi: '3.1.0',
  paths: {},
  components: {},
  tags: tags.map((name) => ({ name, description: name })),
});
const page = (file: string, title: string, body: string): GuidePage => ({
  file: path.join(repoRoot, file),
  title,
  address: sectionAddress(title),
  group: 'Guides',
  body,
});
type Tag = { name: string; description: string; 'x-displayName'?: string };

describe('the pages of the docs site', () => {
  const pages = readGuidePages();
  const byFile = (file: string) => pages.find((candidate) => candidate.file === path.join(repoRoot, file));

  it('are the guides in order and the changelog, then every Markdown file they link to, transitively', () => {
    expect(pages.filter((candidate) => candidate.group === 'Guides').map((candidate) => path.relative(repoRoot, candidate.file))).toEqual([
      ...[
        '01-getting-started',
        '02-oauth-and-tokens',
        '03-errors',
        '04-paging',
        '05-idempotency-and-concurrency',
        '06-webhooks',
        '07-rate-limits',
        '08-versions',
        '09-staying-in-sync',
      ].map((name) => `docs/guides/${name}.md`),
      'CHANGELOG.md',
    ]);
    // The SDK's README (from getting started), the packages' changelogs, and the contract's README (from the SDK's).
    for (const file of ['packages/client/README.md', 'packages/client/CHANGELOG.md', 'packages/contract/CHANGELOG.md', 'packages/contract/README.md']) {
      expect({ file, group: byFile(file)?.group }).toEqual({ file, group: 'Further reading' });
    }
  });

  it('have one title and address each: a package changelog is told apart by its package', () => {
    expect(byFile('packages/client/CHANGELOG.md')).toMatchObject({ title: 'Changelog of @svc/client', address: 'changelog-of-svc-client' });
    expect(sectionAddress('OAuth guide: installing an app and calling the store API')).toBe('oauth-guide');
    expect(byFile('docs/guides/05-idempotency-and-concurrency.md')?.address).toBe('idempotency-and-concurrency');
    expect(new Set(pages.map((candidate) => candidate.address)).size).toBe(pages.length);
  });
});

describe('the pages as sections of the document', () => {
  it('are tags named by their address and shown by their title, with repository links sent to sections', () => {
    const pages = [
      page(
        'docs/guides/01-first.md',
        'First steps',
        'See [the next](02-next.md#a-heading), [the code](../../tools/codegen/guides.ts) and [`tools/`](../../tools).',
      ),
      page('docs/guides/02-next.md', 'Next: more', 'Back to [first](01-first.md), or [the web](https://example.com/a.md) and [here](#/first-steps).'),
    ];
    const result = withGuides(document(['Products']), pages);
    const tags = result.tags as Tag[];
    expect(tags.map((tag) => [tag.name, tag['x-displayName']])).toEqual([
      ['first-steps', 'First steps'],
      ['next', 'Next: more'],
      ['Products', undefined],
    ]);
    expect(tags[0]?.description).toBe('See [the next](#/next), the code (`tools/codegen/guides.ts` in the repository) and `tools/`.');
    expect(tags[1]?.description).toBe('Back to [first](#/first-steps), or [the web](https://example.com/a.md) and [here](#/first-steps).');
    expect(result['x-tagGroups']).toEqual([
      { name: 'Guides', tags: ['first-steps', 'next'] },
      { name: 'API reference', tags: ['Products'] },
    ]);
  });

  it('refuse a page whose address is a reference tag’s, and a link to a file that does not exist', () => {
    expect(() => withGuides(document(['Product SEO']), [page('docs/guides/01-seo.md', 'Product SEO', 'Text.')])).toThrow(
      'docs/guides/01-seo.md would have the address #/product-seo of "Product SEO".',
    );
    expect(() => withGuides(document([]), [page('docs/guides/01-a.md', 'A', 'See [gone](gone.ts).')])).toThrow(
      'docs/guides/01-a.md links to gone.ts, which does not exist.',
    );
  });
});
