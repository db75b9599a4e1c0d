/** What the tests of the SDK programs (test/integration/sdk-*.test.ts) share. */
import { afterAll, beforeAll, expect } from 'vitest';
import { buildSdkProgram, type SdkRun } from '../helpers/go-sdk.js';

/**
 * Starts a simulator and builds test/sdk/<cloud> side by side before the file's tests (a first
 * build downloads the SDK: up to 15 minutes), and stops the simulator after them. The fields of
 * the object it returns are set once the tests run.
 */
export function useSdkProgram<S>(
  cloud: string,
  start: () => Promise<S>,
  stop: (sim: S) => Promise<void>,
): { sim: S; program: string } {
  const world = {} as { sim: S; program: string };
  beforeAll(async () => {
    [world.sim, world.program] = await Promise.all([start(), buildSdkProgram(cloud)]);
  }, 900_000);
  afterAll(async () => {
    if (world.sim) await stop(world.sim);
  });
  return world;
}

/**
 * What a run of an SDK program (test/sdk/<cloud>/main.go) must show: the `ok <check>` line of every
 * check, in order (shared/check.go prints `FAIL <check>: <error>` instead for one that failed, and
 * that line then shows in the diff), and exit code 0.
 */
export function expectChecks(run: SdkRun, checks: readonly string[]): void {
  expect(run.stdout.split('\n').filter(Boolean)).toEqual(checks);
  expect(run.exitCode).toBe(0);
}
