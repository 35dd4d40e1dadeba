/** @type {import('jest').Config} */
const transform = {
  '^.+\\.ts$': ['ts-jest', { diagnostics: false }],
  // The page's modules (web/sse.js, which the tests share with the page) are ES modules; jest runs CommonJS.
  '^.+/web/[^/]+\\.js$': ['ts-jest', { diagnostics: false, tsconfig: { allowJs: true } }],
};

module.exports = {
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      slowTestThreshold: 30,
    },
    {
      displayName: 'e2e',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
  testTimeout: 60_000,
  maxWorkers: 2,
};
