/**
 * The real-model test (`make test-real-model`): Klea against llama.cpp's server with a small GGUF model, installed
 * by scripts/install-llama.sh. Kept out of jest.config.js so `npx jest` and the integration project never need it.
 * @type {import('jest').Config}
 */
const transform = { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] };

module.exports = {
  projects: [
    {
      displayName: 'real-model',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/real-model/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      slowTestThreshold: 120,
    },
  ],
  testTimeout: 600_000,
  // One model server on a small machine: the scenario's steps run one after another.
  maxWorkers: 1,
};
