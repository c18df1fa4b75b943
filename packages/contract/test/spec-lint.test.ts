/**
 * The spec conventions are lint rules (.spectral.yaml, functions in tools/spectral/functions):
 * Spectral with the project's ruleset fails on a copy of the bundle that breaks each of them, at
 * the place where the broken schema or operationId is written, and passes the bundle as it is.
 * One Spectral run lints both documents (a few seconds).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundledSpecPath } from '../src/node';
import { type JsonObject, spec } from './spec-helpers';

const root = path.join(__dirname, '..', '..', '..');
const spectralBin = path.join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'spectral.cmd' : 'spectral');

interface SpectralResult {
  code: string;
  message: string;
  path: (string | number)[];
  severity: number; // 0 error, 1 warn, 2 info, 3 hint
  source: string;
}

/** Each mutation: the rule it breaks, where (a path in the bundle), and how. */
const mutations: { rule: string; at: (string | number)[]; apply: (node: JsonObject) => void }[] = [
  {
    // A component schema that many operations reference: reported once, where it is defined.
    rule: 'svc-closed-objects',
    at: ['components', 'schemas', 'Product'],
    apply: (node) => {
      expect(node.additionalProperties).toBe(false);
      delete node.additionalProperties;
    },
  },
  {
    // An inline query parameter's schema.
    rule: 'svc-bounded-strings',
    at: ['paths', '/stores/{storeId}/v1/products', 'get', 'parameters', 3, 'schema'],
    apply: (node) => {
      expect(node).toMatchObject({ type: 'string', maxLength: 100 });
      delete node.maxLength;
    },
  },
  {
    // A property of a component schema.
    rule: 'svc-bounded-arrays',
    at: ['components', 'schemas', 'Me', 'properties', 'scopes'],
    apply: (node) => {
      expect(node).toMatchObject({ type: 'array' });
      expect(node.maxItems).toBeDefined();
      delete node.maxItems;
    },
  },
  {
    rule: 'svc-operation-id-style',
    at: ['paths', '/stores/{storeId}/v1/products', 'get'],
    apply: (node) => {
      expect(node.operationId).toBe('products.list');
      node.operationId = 'listProducts';
    },
  },
];
/** Where the operationId rule reports: the operationId itself. */
const reportedAt = (mutation: (typeof mutations)[number]) =>
  (mutation.rule === 'svc-operation-id-style' ? [...mutation.at, 'operationId'] : mutation.at).join('/');

let dir: string;
let brokenPath: string;
let results: SpectralResult[];
let status: number | null;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spec-lint-'));
  const broken = structuredClone(spec);
  for (const { at, apply } of mutations) {
    const node = at.reduce<unknown>((parent, key) => (parent as Record<string | number, unknown>)[key], broken) as JsonObject;
    apply(node);
  }
  brokenPath = path.join(dir, 'openapi.broken.json');
  fs.writeFileSync(brokenPath, JSON.stringify(broken, null, 2));
  const output = path.join(dir, 'results.json');
  // The same flags as `pnpm lint:spectral`, on the bundle and the broken copy at once.
  const run = spawnSync(
    spectralBin,
    [
      'lint',
      '--quiet',
      '--fail-severity=warn',
      '--ruleset',
      path.join(root, '.spectral.yaml'),
      '--format',
      'json',
      '--output',
      output,
      bundledSpecPath,
      brokenPath,
    ],
    { cwd: root, encoding: 'utf8' },
  );
  status = run.status;
  if (!fs.existsSync(output)) throw new Error(`spectral wrote no results (status ${run.status}): ${run.stderr}${run.error ?? ''}`);
  results = JSON.parse(fs.readFileSync(output, 'utf8')) as SpectralResult[];
}, 120_000);

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const failing = (source: string) => results.filter((r) => path.resolve(r.source) === path.resolve(source) && r.severity <= 1);

describe('spectral with .spectral.yaml', () => {
  it('fails (exit status 1)', () => {
    expect(status).toBe(1);
  });

  it('reports nothing at warn or error on the bundle as it is', () => {
    expect(failing(bundledSpecPath).map((r) => `${r.code} ${r.path.join('/')}: ${r.message}`)).toEqual([]);
  });

  it.each(mutations)('reports $rule where the broken copy breaks it, and nowhere else', (mutation) => {
    const reported = failing(brokenPath).filter((r) => r.code === mutation.rule);
    expect(reported.map((r) => r.path.join('/'))).toEqual([reportedAt(mutation)]);
    expect(reported[0]!.severity).toBe(0);
    expect(reported[0]!.message).toMatch(/convention/);
  });

  it('reports nothing else on the broken copy', () => {
    expect(
      failing(brokenPath)
        .map((r) => r.code)
        .sort(),
    ).toEqual(mutations.map((m) => m.rule).sort());
  });
});
