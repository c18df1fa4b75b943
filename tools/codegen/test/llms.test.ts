import path from 'node:path';
import type { GuidePage } from '../guides';
import { llmsText, markdownPage, summaryOf } from '../llms';
import { locations } from '../paths';

const page = (address: string, title: string, body: string, group: GuidePage['group'] = 'Guides'): GuidePage => ({
  file: `/repo/docs/guides/${address}.md`,
  title,
  address,
  group,
  body,
});

describe('the docs for machines', () => {
  it('sum each page up by the first sentence of its first paragraph, links as their text, or by its sections', () => {
    expect(summaryOf(page('a', 'A', '```sh\nx\n```\n\nSee [Paging](04-paging.md) first. Then more.'))).toBe('See Paging first.');
    expect(summaryOf(page('b', 'B', '## Unreleased\n\n- one\n\n## 0.1.0\n\n- two'))).toBe('its sections: Unreleased, 0.1.0');
    expect(summaryOf(page('c', 'C', `${'word '.repeat(80)}.`)).length).toBe(240);
  });

  it('write each page as Markdown whose links to the other pages are their files', () => {
    const paging = { ...page('paging', 'Paging', 'Lists.'), file: path.join(locations.guidesDir, '04-paging.md') };
    const start = {
      ...page('getting-started', 'Getting started', 'Read [Paging](04-paging.md#syncing) and [the walk](../../packages/example-app/src/reconcile.ts).'),
      file: path.join(locations.guidesDir, '01-getting-started.md'),
    };
    expect(markdownPage(start, [start, paging])).toBe(
      '# Getting started\n\nRead [Paging](paging.md) and the walk (`packages/example-app/src/reconcile.ts` in the repository).\n',
    );
  });

  it('list the guides, the reference and the rest, in the llmstxt.org form', () => {
    const text = llmsText(
      { openapi: '3.1.0', info: { title: 'Svc', summary: 'A store API.', version: '2026-10-15', description: 'Bearer tokens.' }, paths: {} },
      [page('getting-started', 'Getting started', 'Start here.'), page('svc-client', '@svc/client', 'The SDK.', 'Further reading')],
    );
    expect(text).toMatch(
      /^# Svc\n\n> A store API\. Date version 2026-10-15\.\n\nBearer tokens\.\n\n## Guides\n\n- \[Getting started\]\(guides\/getting-started\.md\): Start here\.\n/,
    );
    expect(text).toContain('## Optional\n\n- [@svc/client](guides/svc-client.md): The SDK.\n- [Everything above in one file](llms-full.txt)');
  });
});
