/**
 * The cluster tests (`make test-cluster`): Klea on a real Temporal cluster (runtime/cluster.ts: PostgreSQL and the
 * server's four services), with worker hosts of its own. Kept out of jest.config.js: they need the server build
 * (scripts/install-temporal-server.sh, KLEA_TEMPORAL_SERVER_DIR) and PostgreSQL.
 * @type {import('jest').Config}
 */
const transform = { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] };

module.exports = {
  projects: [
    {
      displayName: 'cluster',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/cluster/**/*.test.ts'],
      globalSetup: '<rootDir>/test/cluster/global-setup.ts',
      globalTeardown: '<rootDir>/test/cluster/global-teardown.ts',
      slowTestThreshold: 120,
    },
  ],
  testTimeout: 300_000,
  // One cluster on a small machine: the files run one after another.
  maxWorkers: 1,
};
