/** One jest run for the whole workspace: contract, server and client tests. */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/packages', '<rootDir>/tools'],
  testMatch: ['**/test/**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.base.json' }],
    // oauth4webapi (the standard OAuth client of packages/server/test/oauth/standard-client.test.ts)
    // ships ES modules only, which jest on Node 20 cannot require: its one file is compiled to CommonJS.
    '/oauth4webapi/build/index\\.js$': ['ts-jest', { tsconfig: { allowJs: true, module: 'commonjs', target: 'ES2022', isolatedModules: true } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!\\.pnpm/oauth4webapi@|oauth4webapi/)'],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testTimeout: 30000,
  maxWorkers: 2,
  // The skipped list first, then jest's summary with its failures, then the one plain line.
  reporters: ['<rootDir>/tools/jest/summary-reporter.js', 'default'],
};
