import { describe, expect, it } from 'vitest';
import { InstanceCache } from '../../../src/controllers/instance-cache.js';
import { RetryableError } from '../../../src/providers/errors.js';
import type { Instance } from '../../../src/providers/types.js';
import { makeInstance, makeNode } from './fixtures.js';

function counting(result: () => Instance[], ms = 20) {
  const calls = { n: 0 };
  const list = async () => {
    calls.n++;
    await new Promise((r) => setTimeout(r, ms));
    return result();
  };
  return { calls, list };
}

describe('the shared instance cache', () => {
  it('serves many concurrent misses with one listing, and at most one per minimum interval', async () => {
    const { calls, list } = counting(() => [makeInstance()]);
    const cache = new InstanceCache({ list, nodes: () => [], minIntervalMs: 100 });
    await Promise.all(Array.from({ length: 50 }, () => cache.requestRefresh()));
    expect(calls.n).toBe(1);
    const started = performance.now();
    await Promise.all(Array.from({ length: 50 }, () => cache.requestRefresh()));
    expect(calls.n).toBe(2);
    expect(performance.now() - started).toBeGreaterThanOrEqual(60);
    expect(cache.view().index.size).toBe(1);
  });

  it('refreshes only when older than the period, whoever asks', async () => {
    const { calls, list } = counting(() => [makeInstance()], 1);
    const cache = new InstanceCache({ list, nodes: () => [] });
    await cache.refreshIfOlderThan(60_000);
    await cache.refreshIfOlderThan(60_000);
    await Promise.all(Array.from({ length: 100 }, () => cache.refreshIfOlderThan(60_000)));
    expect(calls.n).toBe(1);
  });

  it('a failed listing is a failed view (nothing from it is trusted), retried sooner than the period', async () => {
    let fail = true;
    const { calls, list } = counting(() => {
      if (fail) throw new RetryableError('503 Service Unavailable');
      return [makeInstance({ providerID: 'cloudlycke://i-1' })];
    }, 1);
    const node = makeNode({ providerID: 'cloudlycke://i-1' });
    const cache = new InstanceCache({ list, nodes: () => [node] });
    const view = await cache.refreshIfOlderThan(0);
    expect(view.listingError).toContain('503');
    expect(view.index.size).toBe(0);
    fail = false;
    const again = await cache.refreshIfOlderThan(0);
    expect(calls.n).toBe(2);
    expect(again.listingError).toBeUndefined();
    expect(again.listingKnowsCluster).toBe(true);
  });

  it('after invalidate (credentials changed) trusts nothing listed with the old ones, in flight or done', async () => {
    let account = 'old';
    const release: (() => void)[] = [];
    const list = async () => {
      const from = account;
      await new Promise<void>((r) => release.push(r));
      return [makeInstance({ providerID: `cloudlycke://${from}-1` })];
    };
    const cache = new InstanceCache({ list, nodes: () => [] });
    const first = cache.refreshIfOlderThan(0);
    release.shift()?.();
    expect((await first).index.size).toBe(1);

    // A listing with the old credentials is in flight when they change.
    const stale = cache.refreshIfOlderThan(0);
    account = 'new';
    const fresh = cache.invalidate('credentials changed');
    expect(cache.view().listingError).toContain('credentials changed');
    expect(cache.view().index.size).toBe(0);
    release.shift()?.(); // the old listing lands: dropped
    await new Promise((r) => setTimeout(r, 5));
    expect(cache.view().listingError).toContain('credentials changed');
    release.shift()?.();
    const view = await fresh;
    expect(view.index.instances.map((i) => i.providerID)).toEqual(['cloudlycke://new-1']);
    // Whoever waited on the dropped listing gets the new one's view.
    expect(await stale).toBe(view);
  });
});
