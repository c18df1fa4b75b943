import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { recordSkip } from '../../../packages/server/test/support/skips';

interface Skip {
  testPath: string;
  suite: string;
  reason: string;
  howToRun: string;
}
type Results = {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  numRuntimeErrorTestSuites: number;
  testResults: { testFilePath: string; testResults: { status: string; fullName: string }[] }[];
};
const reporter = require('../summary-reporter.js') as {
  skippedLines(results: Results, skips: Skip[], options: { rootDir: string; filtered: boolean }): string[];
  countLine(results: Results): string;
  readSkips(file: string): Skip[];
  REGISTRY_VARIABLE: string;
};

const root = path.resolve(__dirname, '..', '..', '..');
const file = (name: string) => path.join(root, 'packages', 'server', 'test', name);

const results = (testResults: Results['testResults'], counts: Partial<Results> = {}): Results => ({
  numPassedTests: 10,
  numFailedTests: 0,
  numPendingTests: 0,
  numTodoTests: 0,
  numRuntimeErrorTestSuites: 0,
  testResults,
  ...counts,
});
const ran = (name: string, statuses: string[] = ['passed']) => ({
  testFilePath: file(name),
  testResults: statuses.map((status, i) => ({ status, fullName: `${name} test ${i}` })),
});

describe('the skipped list and the last line', () => {
  const browser = { suite: 'the docs site in a browser', reason: 'no Chromium at /usr/bin/chromium', howToRun: 'set CHROMIUM_PATH to a Chromium binary' };
  const postgres = { suite: 'its runs on PostgreSQL', reason: 'TEST_DATABASE_URL is not set', howToRun: 'set TEST_DATABASE_URL to a postgres:// URL' };

  it('name each skipped suite under its reason and what to set; the last line counts as CI reads it', () => {
    const run = results([ran('docs-site.test.ts', ['passed', 'pending']), ran('a.test.ts'), ran('b.test.ts')], { numPendingTests: 1 });
    const lines = reporter.skippedLines(
      run,
      [
        { testPath: file('docs-site.test.ts'), ...browser },
        { testPath: file('b.test.ts'), ...postgres },
        { testPath: file('a.test.ts'), ...postgres },
        { testPath: file('a.test.ts'), ...postgres },
      ],
      { rootDir: root, filtered: false },
    );
    expect(lines).toEqual([
      'Skipped:',
      '  no Chromium at /usr/bin/chromium; set CHROMIUM_PATH to a Chromium binary:',
      '    packages/server/test/docs-site.test.ts: the docs site in a browser',
      '  TEST_DATABASE_URL is not set; set TEST_DATABASE_URL to a postgres:// URL:',
      '    packages/server/test/a.test.ts: its runs on PostgreSQL',
      '    packages/server/test/b.test.ts: its runs on PostgreSQL',
    ]);
    expect(reporter.countLine(run)).toBe('jest: 10 passed, 0 failed, 1 skipped');
  });

  it('name a test skipped with no note by its full name, unless the run was filtered by name', () => {
    const run = results([ran('idempotency.test.ts', ['passed', 'pending'])], { numPendingTests: 1 });
    expect(reporter.skippedLines(run, [], { rootDir: root, filtered: false })).toEqual([
      'Skipped:',
      '  skipped by the test itself:',
      '    packages/server/test/idempotency.test.ts: idempotency.test.ts test 1',
    ]);
    expect(reporter.skippedLines(run, [], { rootDir: root, filtered: true })).toEqual([]);
  });

  it('leave out notes of files that did not run; a file that failed to run counts as a failure', () => {
    const run = results([ran('a.test.ts')], { numFailedTests: 2, numRuntimeErrorTestSuites: 1 });
    expect(reporter.skippedLines(run, [{ testPath: file('x.test.ts'), ...browser }], { rootDir: root, filtered: false })).toEqual([]);
    expect(reporter.countLine(run)).toBe('jest: 10 passed, 3 failed, 0 skipped');
  });
});

describe('a skip note', () => {
  it('is written by the test support where the reporter reads it, with the test file it comes from', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-skips-test-'));
    const registry = path.join(dir, 'skips.jsonl');
    const before = process.env[reporter.REGISTRY_VARIABLE];
    process.env[reporter.REGISTRY_VARIABLE] = registry;
    try {
      recordSkip({ suite: 'a suite', reason: 'a reason', howToRun: 'set A_VARIABLE' });
    } finally {
      if (before === undefined) delete process.env[reporter.REGISTRY_VARIABLE];
      else process.env[reporter.REGISTRY_VARIABLE] = before;
    }
    expect(reporter.readSkips(registry)).toEqual([{ testPath: __filename, suite: 'a suite', reason: 'a reason', howToRun: 'set A_VARIABLE' }]);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reaches the end of a jest run from its workers', async () => {
    const cacheDirectory = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-skips-jest-'));
    const config = {
      rootDir: root,
      roots: ['<rootDir>/tools/jest/test/fixtures'],
      testMatch: ['**/*.fixture.ts'],
      transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.base.json' }] },
      reporters: ['<rootDir>/tools/jest/summary-reporter.js', 'default'],
      cacheDirectory,
    };
    const env = { ...process.env };
    delete env[reporter.REGISTRY_VARIABLE];
    try {
      // Two files and no timings from earlier runs: jest runs them in workers, not in its own process.
      const { stderr } = await promisify(execFile)(process.execPath, [require.resolve('jest/bin/jest'), '--config', JSON.stringify(config), '--maxWorkers=2'], {
        cwd: root,
        env,
      });
      const lines = stderr.trim().split('\n');
      const skippedAt = lines.indexOf('Skipped:');
      expect(lines.slice(skippedAt, skippedAt + 5)).toEqual([
        'Skipped:',
        '  no Chromium at /nowhere/chromium; set CHROMIUM_PATH to a Chromium binary:',
        '    tools/jest/test/fixtures/no-browser.fixture.ts: a suite in a browser',
        '  TEST_DATABASE_URL is not set; set TEST_DATABASE_URL to a postgres:// URL:',
        '    tools/jest/test/fixtures/no-postgres.fixture.ts: its runs on PostgreSQL',
      ]);
      // jest's own summary after the list, where a reader looks last; the plain line ends the run.
      const summaryAt = lines.findIndex((line) => line.startsWith('Test Suites:'));
      expect(summaryAt).toBeGreaterThan(skippedAt);
      expect(lines.at(-1)).toBe('jest: 2 passed, 0 failed, 2 skipped');
    } finally {
      fs.rmSync(cacheDirectory, { recursive: true, force: true });
    }
  }, 120_000);
});
