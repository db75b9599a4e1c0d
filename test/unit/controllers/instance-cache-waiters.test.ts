/**
 * InstanceCache waiters across invalidate(), with listings that ignore their AbortSignal and never
 * answer unless released: each waiter settles once a listing made after the last invalidate() lands,
 * and one started after a caller asked serves it without another. An outside review's reproductions
 * (RV-2b and RV-2d failed on 3644dc2).
 */
import { describe, expect, it } from 'vitest';
import { InstanceCache } from '../../../src/controllers/instance-cache.js';
import type { Instance } from '../../../src/providers/types.js';

interface Pending {
  gen: string;
  resolve: (i: Instance[]) => void;
  aborted: () => boolean;
}

function fixture(minIntervalMs = 100) {
  const listings: Pending[] = [];
  let gen = 'old';
  const cache = new InstanceCache({
    minIntervalMs,
    nodes: () => [],
    // Ignores the signal on purpose: an SDK that does not pass it on.
    list: (signal) =>
      new Promise<Instance[]>((resolve) => listings.push({ gen, resolve, aborted: () => signal.aborted })),
  });
  const inst = (id: string): Instance =>
    ({
      providerID: `cloudlycke://${id}`,
      id,
      name: id,
      addresses: [],
      state: 'running',
    }) as unknown as Instance;
  return {
    cache,
    listings,
    setGen: (g: string) => {
      gen = g;
    },
    inst,
  };
}

const settledWithin = async <T>(p: Promise<T>, ms: number): Promise<T | 'hung'> =>
  Promise.race([p, new Promise<'hung'>((r) => setTimeout(() => r('hung'), ms))]);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('waiters across invalidate()', () => {
  it('RV-2a: two invalidates in a row, both dropped listings hang: every waiter gets the third listing', async () => {
    const f = fixture();
    void f.cache.refreshIfOlderThan(0);
    const w0 = f.cache.viewSince(1);
    const w0b = f.cache.requestRefresh();
    f.setGen('new1');
    void f.cache.invalidate('one');
    const w1 = f.cache.viewSince(1);
    f.setGen('new2');
    void f.cache.invalidate('two');
    expect(f.listings.map((l) => [l.gen, l.aborted()])).toEqual([
      ['old', true],
      ['new1', true],
      ['new2', false],
    ]);
    f.listings[2]?.resolve([f.inst('x')]);
    const got = await Promise.all([w0, w1].map((p) => settledWithin(p, 500)));
    expect(got.map((v) => (v === 'hung' ? v : [f.cache.isCurrent(v), v.listingError]))).toEqual([
      [true, undefined],
      [true, undefined],
    ]);
    // The requestRefresh caller asked before both invalidates: served by a listing after them.
    await sleep(150);
    f.listings.at(-1)?.resolve([f.inst('x'), f.inst('y')]);
    const r = await settledWithin(w0b, 1000);
    expect(r === 'hung' ? r : r.listingError).toBeUndefined();
  });

  it("RV-2b: invalidate during the pending refresh's wait: served by the invalidate's listing (started after the ask), no extra listing", async () => {
    const f = fixture(300);
    void f.cache.refreshIfOlderThan(0);
    f.listings[0]?.resolve([f.inst('a')]);
    await sleep(10);
    const w = f.cache.requestRefresh(); // waits ~290 ms for the min interval
    await sleep(50);
    f.setGen('new');
    void f.cache.invalidate('rotated'); // L1: started after the ask
    f.listings.at(-1)?.resolve([f.inst('b')]);
    const got = await settledWithin(w, 1500);
    expect({ served: got === 'hung' ? 'hung' : 'served', listings: f.listings.length }).toEqual({
      served: 'served',
      listings: 2,
    });
  });

  it('RV-2c: the stale listing lands late (after the new one): it replaces nothing', async () => {
    const f = fixture();
    void f.cache.refreshIfOlderThan(0);
    f.setGen('new');
    void f.cache.invalidate('rotated');
    f.listings[1]?.resolve([f.inst('new')]);
    await sleep(10);
    f.listings[0]?.resolve([f.inst('old')]);
    await sleep(10);
    expect(f.cache.view().listingError).toBeUndefined();
    expect(f.cache.isCurrent(f.cache.view())).toBe(true);
  });

  it("RV-2d: a requestRefresh asked before an invalidate is served by the invalidate's listing, started after it", async () => {
    const f = fixture(300);
    void f.cache.refreshIfOlderThan(0); // L0, hangs
    const w = f.cache.requestRefresh(); // asked now; awaits L0
    await sleep(5);
    f.setGen('new');
    void f.cache.invalidate('rotated'); // L1 started after w asked
    f.listings[1]?.resolve([f.inst('b')]); // lands at once
    const got = await settledWithin(w, 1000);
    expect(
      { listings: f.listings.length, served: got === 'hung' ? 'hung' : 'served' },
      'L1 started after the ask and landed: serving it needs no further listing',
    ).toEqual({ listings: 2, served: 'served' });
  });
});
