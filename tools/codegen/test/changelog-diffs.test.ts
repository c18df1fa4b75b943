import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ApiVersionEntry } from '../../../packages/contract/src/generated/versions';
import { gateDiffBlock, readReleasedDocuments, withChangelogDiffs } from '../changelog-diffs';

const entry = (version: string): ApiVersionEntry => ({ version, released: version, deprecated: null, sunset: null, changelog: version });
const OLD = entry('2026-10-15');
const NEW = entry('2027-04-01');

/** A document of one version: two operations, one of them with a query parameter. */
function documentOf(version: string, change: (paths: Record<string, unknown>) => void = () => undefined): unknown {
  const answer = { '200': { description: 'ok', content: { 'application/json': { schema: { type: 'object', properties: { id: { type: 'string' } } } } } } };
  const paths: Record<string, unknown> = {
    '/things': {
      get: { operationId: 'things.list', parameters: [{ name: 'limit', in: 'query', schema: { type: 'integer', maximum: 100 } }], responses: answer },
    },
    '/things/{id}': {
      delete: { operationId: 'things.delete', parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], responses: answer },
    },
  };
  change(paths);
  return { openapi: '3.1.0', info: { title: 'Things', version }, paths };
}

const CHANGELOG = `# Changelog\n\nIntro.\n\n## ${NEW.version}\n\nWhat moved.\n\n## ${OLD.version}\n\nThe first version.\n`;

describe("the changelog's diff of each version against the previous release", () => {
  it('opens each version’s entry: the first has nothing to compare with, a later one lists the gate’s breaking changes', () => {
    const released = new Map<string, unknown>([
      [OLD.version, documentOf(OLD.version)],
      [NEW.version, documentOf(NEW.version, (paths) => delete paths['/things/{id}'])],
    ]);
    const written = withChangelogDiffs(CHANGELOG, [OLD, NEW], released);
    const entryOf = (version: string) => written.slice(written.indexOf(`## ${version}`)).split('\n## ')[0] as string;
    expect(entryOf(OLD.version)).toContain('the first version, with no earlier release to compare with.');
    const newer = entryOf(NEW.version);
    expect(newer).toContain(`1 breaking change(s) from ${OLD.version}.`);
    expect(newer).toMatch(/\| DELETE \/things\/\{id\} \| .+ \|/);
    // Written again, it is the same: the blocks are replaced, not added.
    expect(withChangelogDiffs(written, [OLD, NEW], released)).toBe(written);
    expect(written).toContain('What moved.');
  });

  it('says so when a version has no break, or is not released yet', () => {
    expect(gateDiffBlock(NEW.version, OLD.version, [])).toContain(`no breaking change from ${OLD.version}.`);
    const unreleased = withChangelogDiffs(CHANGELOG, [OLD, NEW], new Map([[OLD.version, documentOf(OLD.version)]]));
    expect(unreleased).toContain(`${NEW.version} is not released yet (\`spec/released/${NEW.version}.json\`).`);
  });

  it('refuses a version without its entry in the changelog', () => {
    expect(() => withChangelogDiffs('# Changelog\n', [OLD], new Map())).toThrow(`has no "## ${OLD.version}" entry for ${OLD.version}`);
  });

  it('reads the released documents the registry names', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-released-'));
    try {
      fs.writeFileSync(path.join(dir, `${OLD.version}.json`), JSON.stringify(documentOf(OLD.version)));
      expect([...readReleasedDocuments([OLD, NEW], dir).keys()]).toEqual([OLD.version]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
