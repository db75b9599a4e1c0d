import { describe, expect, it } from 'vitest';
import { mapLimit } from '../../../src/controllers/concurrency.js';

/** Resolves after the current macrotask queue drains a few times, so workers can interleave. */
const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

describe('mapLimit', () => {
  it('keeps the input order, whatever order the work finishes in', async () => {
    const delays = [30, 5, 20, 0, 10];
    const result = await mapLimit(delays, 3, async (ms, i) => {
      await new Promise((r) => setTimeout(r, ms));
      return `${i}:${ms}`;
    });
    expect(result).toEqual(['0:30', '1:5', '2:20', '3:0', '4:10']);
  });

  it('never has more than `limit` in flight, and uses the limit', async () => {
    for (const limit of [1, 2, 3, 7]) {
      let inFlight = 0;
      let peak = 0;
      const items = Array.from({ length: 12 }, (_, i) => i);
      const result = await mapLimit(items, limit, async (item) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        for (let k = 0; k < 1 + (item % 3); k++) await tick();
        inFlight--;
        return item * 2;
      });
      expect(result).toEqual(items.map((i) => i * 2));
      expect(peak, `limit ${limit}`).toBe(Math.min(limit, items.length));
    }
  });

  it('calls fn once per item with its index', async () => {
    const seen: [string, number][] = [];
    await mapLimit(['a', 'b', 'c'], 2, async (item, index) => {
      seen.push([item, index]);
    });
    expect(seen.sort()).toEqual([
      ['a', 0],
      ['b', 1],
      ['c', 2],
    ]);
  });

  it('returns an empty array for empty input without calling fn', async () => {
    let calls = 0;
    const result = await mapLimit([], 4, async () => {
      calls++;
    });
    expect(result).toEqual([]);
    expect(calls).toBe(0);
  });

  it('still makes progress with a limit below 1', async () => {
    expect(await mapLimit([1, 2, 3], 0, async (x) => x + 1)).toEqual([2, 3, 4]);
  });

  it('rejects when fn rejects', async () => {
    await expect(
      mapLimit([1, 2], 2, async (x) => {
        if (x === 2) throw new Error('boom');
        return x;
      }),
    ).rejects.toThrow('boom');
  });
});
