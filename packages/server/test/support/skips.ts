import fs from 'node:fs';

/** Something a test file did not run, for the run's closing lines. */
export interface Skip {
  /** What did not run: a describe block's title, or a part of the file such as its runs on PostgreSQL. */
  readonly suite: string;
  readonly reason: string;
  /** The environment variable to set, in words: `set CHROMIUM_PATH to a Chromium binary`. */
  readonly howToRun: string;
}

/**
 * Notes a skip where tools/jest/summary-reporter.js reads it (the file it names in SVC_TEST_SKIPS),
 * so that the run ends by naming every skipped suite, why, and what to set: jest's own summary
 * only counts them. Outside a run with that reporter, nothing is noted.
 */
export function recordSkip(skip: Skip): void {
  const registry = process.env.SVC_TEST_SKIPS;
  if (!registry) return;
  const { testPath } = expect.getState();
  fs.appendFileSync(registry, `${JSON.stringify({ testPath, ...skip })}\n`);
}
