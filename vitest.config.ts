import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    reporters: ['default', './test/helpers/skip-reasons.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'suite',
          include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
          // Removes the temp folders made by test/helpers/tmp.ts outside a test, after each file.
          setupFiles: ['test/helpers/cleanup.ts'],
          // Integration tests each start their own etcd + kube-apiserver and then mostly wait (for a Lease
          // to run out, a period to pass): two workers kept two cores 46% busy (8.4 CPU-minutes in a 9-minute
          // suite), and the files took no longer with six at once (README, "Test").
          maxWorkers: 6,
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          // The chaos runs (test/chaos, docs/chaos.md): in `npm test` one short run per cloud with a
          // fixed seed, beside the suite; with CHAOS_RUN=1 (`npm run test:chaos`) only the long run.
          name: 'chaos',
          include: process.env.CHAOS_RUN ? ['test/chaos/run.test.ts'] : ['test/chaos/ci-*.test.ts'],
          setupFiles: ['test/helpers/cleanup.ts'],
          // The suite's: vitest runs projects of one group (the suite's, so beside it) only with one
          // maxWorkers; the chaos project has two files, so it takes two workers of the six.
          maxWorkers: 6,
          testTimeout: 15 * 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        extends: true,
        test: {
          // The real kubeadm cluster (test/cluster): one machine-wide cluster, so one file at a time, after
          // the rest of the suite; its global teardown takes the cluster down.
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          setupFiles: ['test/helpers/cleanup.ts'],
          globalSetup: ['test/cluster/global-setup.ts'],
          maxWorkers: 1,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          testTimeout: 300_000,
          hookTimeout: 900_000,
        },
      },
    ],
  },
});
