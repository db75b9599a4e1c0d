/** CI's chaos run on OpenStack: a fixed seed, 2.5 minutes (test/chaos/run.ts; docs/chaos.md). */
import { expect, it } from 'vitest';
import { CI_RUN, chaosRun } from './run.js';

it(`a ${CI_RUN.minutes}-minute chaos run on OpenStack (seed ${CI_RUN.seed}) keeps every invariant`, async () => {
  const result = await chaosRun({ cloud: 'openstack', ...CI_RUN });
  expect(result.violations).toEqual([]);
});
