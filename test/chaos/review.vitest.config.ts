// Review 45b: runs the hand-made chaos scenarios (test/chaos/review-*.test.ts), one world at a time.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/chaos/review-*.test.ts'],
    setupFiles: ['test/helpers/cleanup.ts'],
    maxWorkers: 1,
    fileParallelism: false,
    testTimeout: 15 * 60_000,
    hookTimeout: 120_000,
  },
});
