import { describe, expect, it } from 'vitest';
import { NextListing } from '../../../../src/providers/digitalocean/load-balancers.js';

/** A listing the test finishes by hand; `started` counts the listings begun. */
function manualListing() {
  const finishes: ((value: number) => void)[] = [];
  const listing = new NextListing(
    () =>
      new Promise<number>((resolve) => {
        finishes.push(resolve);
      }),
  );
  return { listing, finishes };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('the load balancer listing shared by the Services waiting', () => {
  it('answers everyone who asked before it started with one listing, and who asked later with the next', async () => {
    const { listing, finishes } = manualListing();
    const a = listing.next();
    const b = listing.next();
    await tick();
    expect(finishes).toHaveLength(1);
    // Asked while the first runs: it may predate what this caller must see, so the next one.
    const c = listing.next();
    const d = listing.next();
    await tick();
    expect(finishes).toHaveLength(1);
    finishes[0]?.(1);
    expect(await Promise.all([a, b])).toEqual([1, 1]);
    await tick();
    expect(finishes).toHaveLength(2);
    finishes[1]?.(2);
    expect(await Promise.all([c, d])).toEqual([2, 2]);
  });

  it('since: joins the listing under way when it started after the given time, else waits for the next', async () => {
    let clock = 0;
    const finishes: ((value: number) => void)[] = [];
    const listing = new NextListing(
      () => new Promise<number>((resolve) => finishes.push(resolve)),
      () => clock,
    );
    clock = 10;
    const first = listing.next();
    await tick(); // the first listing started at 10
    expect(finishes).toHaveLength(1);
    const anyone = listing.since(undefined); // never created anything: the one under way will do
    const createdBefore = listing.since(5); // its create was answered at 5, before the listing began
    const createdAfter = listing.since(12); // at 12: the listing under way may not show it
    await tick();
    expect(finishes).toHaveLength(1);
    finishes[0]?.(1);
    expect(await Promise.all([first, anyone, createdBefore])).toEqual([1, 1, 1]);
    await tick();
    expect(finishes).toHaveLength(2);
    finishes[1]?.(2);
    expect(await createdAfter).toBe(2);
    // None under way: a new one, even for a caller that created nothing.
    const later = listing.since(undefined);
    await tick();
    expect(finishes).toHaveLength(3);
    finishes[2]?.(3);
    expect(await later).toBe(3);
  });

  it("ends one caller's wait on its signal, not the listing the others wait for", async () => {
    const { listing, finishes } = manualListing();
    const stop = new AbortController();
    const gone = listing.next(stop.signal);
    const stays = listing.next();
    await tick();
    stop.abort(new Error('shutting down'));
    await expect(gone).rejects.toThrow('shutting down');
    finishes[0]?.(7);
    expect(await stays).toBe(7);
  });

  it('passes a failed listing to everyone who waited for it; the next caller gets a new one', async () => {
    let n = 0;
    const listing = new NextListing(async () => {
      n++;
      if (n === 1) throw new Error('503');
      return n;
    });
    const [a, b] = [listing.next(), listing.next()];
    await expect(a).rejects.toThrow('503');
    await expect(b).rejects.toThrow('503');
    expect(await listing.next()).toBe(2);
  });
});
