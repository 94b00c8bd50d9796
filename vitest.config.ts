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
    // One module graph per worker, not per file: the AWS SDK, client-node and aws-cdk-lib each
    // take seconds to load on CI's 2 cores, and re-importing them for every file cost a third of
    // the run (measured: 905 s instead of about 1,500 s for the same suite). Tests share no
    // mutable module state: each makes its own tables, servers, fakes and clock, and restores
    // what it stubs.
    isolate: false,
  },
});
