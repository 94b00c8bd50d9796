import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Generous: a test's limit catches a hang, not a slow machine (CI's 2 cores have been seen
    // to start Node in 1.7 s and DynamoDB Local in 26 s). Speed is the benchmarks' to measure.
    testTimeout: 180_000,
    hookTimeout: 600_000,
    // Two cores: keep the worker count small so DynamoDB Local is not starved.
    maxWorkers: 2,
  },
});
