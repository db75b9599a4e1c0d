/**
 * InstanceCache under load (an outside review's stress test; it held on b7eebaf). Many callers a second (cache misses and
 * first-seen tainted Nodes), periodic refreshes and invalidations, listings that are slow, fail, or
 * ignore their AbortSignal. Checked: no caller hangs, every caller of requestRefresh/viewSince is
 * served by a listing started at or after its ask, and cache misses are coalesced (at most one
 * listing per minInterval beside those the periodic refresh and invalidate() start).
 */
import { describe, expect, it } from 'vitest';
import { monotonicMs } from '../../../src/clock.js';
import { InstanceCache } from '../../../src/controllers/instance-cache.js';
import type { Instance } from '../../../src/providers/types.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function seeded(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function stress(opts: { seed: number; invalidates: boolean; periodic: boolean; durationMs: number }) {
  const rnd = seeded(opts.seed);
  const MIN = 100;
  let listings = 0;
  const cache = new InstanceCache({
    minIntervalMs: MIN,
    nodes: () => [],
    list: (signal) => {
      listings++;
      const ms = 5 + rnd() * 120;
      const fails = rnd() < 0.1;
      const honoursAbort = rnd() < 0.5;
      return new Promise<Instance[]>((resolve, reject) => {
        const t = setTimeout(() => (fails ? reject(new Error('cloud 500')) : resolve([])), ms);
        if (honoursAbort)
          signal.addEventListener('abort', () => {
            clearTimeout(t);
            reject(new Error('aborted'));
          });
      });
    },
  });
  const violations: string[] = [];
  const calls: Promise<void>[] = [];
  let hung = 0;
  let invalidations = 0;
  let periodicStarts = 0;
  const end = monotonicMs() + opts.durationMs;
  let nextPeriodic = monotonicMs();
  let nextInvalidate = monotonicMs() + 300;
  while (monotonicMs() < end) {
    // ~50 callers a second, in bursts.
    const burst = 1 + Math.floor(rnd() * 3);
    for (let i = 0; i < burst; i++) {
      const asked = monotonicMs();
      const p = rnd() < 0.5 ? cache.requestRefresh() : cache.viewSince(asked);
      calls.push(
        Promise.race([p.then((v) => v), sleep(5000).then(() => 'hung' as const)]).then((v) => {
          if (v === 'hung') hung++;
          else if (!((v.listedAt ?? Number.NEGATIVE_INFINITY) >= asked))
            violations.push(`asked at ${asked.toFixed(1)}, served by a listing of ${v.listedAt}`);
        }),
      );
    }
    if (opts.periodic && monotonicMs() >= nextPeriodic) {
      const before = listings;
      void cache.refreshIfOlderThan(250);
      await Promise.resolve();
      if (listings > before) periodicStarts++;
      nextPeriodic = monotonicMs() + 250;
    }
    if (opts.invalidates && monotonicMs() >= nextInvalidate) {
      void cache.invalidate('reload');
      invalidations++;
      nextInvalidate = monotonicMs() + 300 + rnd() * 700;
    }
    await sleep(20 + rnd() * 40);
  }
  await Promise.all(calls);
  return { listings, hung, violations, invalidations, periodicStarts, callers: calls.length };
}

describe('InstanceCache under load', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: cache misses only`, async () => {
      const r = await stress({ seed, invalidates: false, periodic: false, durationMs: 3000 });
      expect(r.hung).toBe(0);
      expect(r.violations.slice(0, 3)).toEqual([]);
      // One listing per 100 ms at most, plus the first.
      expect(r.listings).toBeLessThanOrEqual(Math.ceil(3000 / 100) + 2);
    }, 20_000);
    it(`seed ${seed}: with periodic refreshes and invalidations`, async () => {
      const r = await stress({ seed, invalidates: true, periodic: true, durationMs: 4000 });
      expect(r.hung).toBe(0);
      expect(r.violations.slice(0, 3)).toEqual([]);
      expect(r.listings).toBeLessThanOrEqual(Math.ceil(4000 / 100) + 2 + r.invalidations + r.periodicStarts);
    }, 20_000);
  }
});
