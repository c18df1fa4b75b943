/** One jest run for the whole workspace: contract, server and client tests. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/tools'],
  testMatch: ['**/test/**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.base.json' }],
  },
  moduleFileExtensions: ['ts', 'js', 'json'],
  testTimeout: 30000,
  maxWorkers: 2,
  // The skipped list first, then jest's summary with its failures, then the one plain line.
  reporters: ['<rootDir>/tools/jest/summary-reporter.js', 'default'],
};
