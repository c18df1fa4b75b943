/**
 * Prints one plain closing line, `jest: N passed, N failed, N skipped`, that CI systems read
 * whatever the test runner (jest's own summary is not in a form they recognise).
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const line = `jest: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped`;
    // After jest's own summary, so that it is the last line of the run.
    process.once('exit', () => process.stderr.write(`\n${line}\n`));
  }
}

module.exports = SummaryReporter;
