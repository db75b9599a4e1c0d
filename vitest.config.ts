import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
    // Removes the temp folders made by test/helpers/tmp.ts outside a test, after each file.
    setupFiles: ['test/helpers/cleanup.ts'],
    // Integration tests each start their own etcd + kube-apiserver; two cores fit two at a time.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ['default', './test/helpers/skip-reasons.ts'],
  },
});
