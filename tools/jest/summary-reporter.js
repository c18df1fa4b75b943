const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/**
 * Where the tests note what they skip and why (packages/server/test/support/skips.ts), one JSON
 * object a line. The reporter names the file before jest starts its workers, which inherit the
 * environment; a test run without this reporter notes nothing.
 */
const REGISTRY_VARIABLE = 'SVC_TEST_SKIPS';

/** The skip notes in a registry: what did not run in which file, why, and what to set to run it. */
function readSkips(file) {
  let text = '';
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

/**
 * What was skipped, grouped by reason with what to set to run it (jest's own summary counts skipped
 * suites and tests but names none of them, and a suite's missing PostgreSQL runs it does not count
 * at all). Written before jest's summary, so that the summary and its failures stay the last thing
 * a reader sees.
 */
function skippedLines(results, skips, { rootDir, filtered }) {
  const relative = (file) => path.relative(rootDir, file) || file;
  const ran = new Set(results.testResults.map((file) => file.testFilePath));
  const groups = new Map();
  const explained = new Set();
  for (const skip of skips) {
    if (!ran.has(skip.testPath)) continue;
    const heading = `${skip.reason}; ${skip.howToRun}`;
    const entries = groups.get(heading) ?? new Set();
    entries.add(`${relative(skip.testPath)}: ${skip.suite}`);
    groups.set(heading, entries);
    explained.add(skip.testPath);
  }
  // A test skipped in its file (a variant that does not apply to one database) has no note: name
  // it, unless the run was filtered by name (-t), which skips the rest for its own reason.
  const unexplained = results.testResults.flatMap((file) =>
    filtered || explained.has(file.testFilePath)
      ? []
      : file.testResults
          .filter((test) => test.status === 'pending' || test.status === 'todo')
          .map((test) => `${relative(file.testFilePath)}: ${test.fullName}`),
  );
  // Workers note in the order they happen to run: sorted, the lines read the same every run.
  const sorted = [...groups].sort(([a], [b]) => a.localeCompare(b));
  if (unexplained.length > 0) sorted.push(['skipped by the test itself', new Set(unexplained)]);
  const lines = [];
  if (sorted.length > 0) lines.push('Skipped:');
  for (const [heading, entries] of sorted) lines.push(`  ${heading}:`, ...[...entries].sort().map((entry) => `    ${entry}`));
  return lines;
}

/** The run's last line, the one plain line that CI systems read whatever the test runner. */
function countLine(results) {
  const skipped = results.numPendingTests + results.numTodoTests;
  const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
  return `jest: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped`;
}

class SummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig?.rootDir ?? process.cwd();
    this.filtered = Boolean(globalConfig?.testNamePattern);
    this.registryDir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-test-skips-'));
    this.registry = path.join(this.registryDir, 'skips.jsonl');
    process.env[REGISTRY_VARIABLE] = this.registry;
  }

  /** Listed before jest's default reporter (jest.config.js): its summary comes after the skipped list. */
  onRunComplete(_contexts, results) {
    const skipped = skippedLines(results, readSkips(this.registry), { rootDir: this.rootDir, filtered: this.filtered });
    fs.rmSync(this.registryDir, { recursive: true, force: true });
    if (skipped.length > 0) process.stderr.write(`\n${skipped.join('\n')}\n`);
    // After jest's own summary, so that the plain line is the last line of the run.
    const last = countLine(results);
    process.once('exit', () => process.stderr.write(`\n${last}\n`));
  }
}

module.exports = SummaryReporter;
module.exports.skippedLines = skippedLines;
module.exports.countLine = countLine;
module.exports.readSkips = readSkips;
module.exports.REGISTRY_VARIABLE = REGISTRY_VARIABLE;
