import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../../src/controllers/queue.js';

const tick = (ms = 0) => new Promise((r) => setTimeout(r, ms));
async function eventually(check: () => boolean, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await tick(5);
}

/** A queue with one worker that records each key it is given, in order. */
function recordingQueue() {
  const q = new WorkQueue<string>();
  const seen: string[] = [];
  const run = q.run(1, async (k) => {
    seen.push(k);
  });
  return { q, seen, run };
}

describe('WorkQueue', () => {
  it('de-duplicates a key added while it waits', async () => {
    const q = new WorkQueue<string>();
    q.add('a');
    q.add('a');
    q.add('b');
    expect(q.length).toBe(2);
    const seen: string[] = [];
    const run = q.run(1, async (k) => {
      seen.push(k);
    });
    await eventually(() => seen.length === 2);
    await tick(20);
    q.shutDown();
    await run;
    expect(seen).toEqual(['a', 'b']);
  });

  it('never gives one key to two workers; a key added while in flight runs once more afterwards', async () => {
    const q = new WorkQueue<string>();
    let inFlight = 0;
    let maxInFlight = 0;
    let runs = 0;
    const run = q.run(4, async () => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      runs++;
      await tick(20);
      inFlight--;
    });
    q.add('n');
    await eventually(() => inFlight === 1);
    q.add('n');
    q.add('n');
    await eventually(() => runs === 2 && inFlight === 0);
    await tick(30);
    q.shutDown();
    await run;
    expect(maxInFlight).toBe(1);
    expect(runs).toBe(2);
  });

  it('backs off per key exponentially up to the maximum, and forgets on success', async () => {
    const q = new WorkQueue<string>({ baseDelayMs: 5, maxDelayMs: 40 });
    expect([0, 1, 2, 3, 4, 5].map((n) => q.backoffFor(n))).toEqual([5, 10, 20, 40, 40, 40]);
    const times: number[] = [];
    let failures = 3;
    const run = q.run(2, async () => {
      times.push(performance.now());
      if (failures-- > 0) throw new Error('boom');
    });
    q.add('k');
    await eventually(() => times.length === 4);
    await tick(60);
    expect(times.length).toBe(4);
    const gaps = times.slice(1).map((t, i) => t - (times[i] as number));
    expect(gaps[0]).toBeGreaterThanOrEqual(4);
    expect(gaps[2]).toBeGreaterThanOrEqual(19);
    expect(q.retries('k')).toBe(0);
    q.shutDown();
    await run;
  });

  it('keeps the backoff of a handler that records its own failure and puts the key back itself', async () => {
    // The service controller's way: it never throws, it records the failure and calls addRateLimited.
    const q = new WorkQueue<string>({ baseDelayMs: 1, maxDelayMs: 1000 });
    const retriesSeen: number[] = [];
    const run = q.run(1, async (k) => {
      retriesSeen.push(q.retries(k));
      if (retriesSeen.length < 4) q.addRateLimited(k);
    });
    q.add('svc');
    await eventually(() => retriesSeen.length === 4);
    q.shutDown();
    await run;
    // The delay doubles (1, 2, 4 ms) instead of starting again at the base each time; the success
    // at the end forgets it.
    expect(retriesSeen).toEqual([0, 1, 2, 3]);
    expect(q.retries('svc')).toBe(0);
  });

  it('addAfter delays a key; shutDown drops waiting keys and ends the workers', async () => {
    const { q, seen, run } = recordingQueue();
    q.addAfter('later', 30);
    await tick(10);
    expect(seen).toEqual([]);
    await eventually(() => seen.length === 1);
    expect(seen).toEqual(['later']);
    q.addAfter('never', 30);
    q.shutDown();
    await run;
    await tick(40);
    expect(seen).toEqual(['later']);
  });

  it('addAfter keeps the earliest pending delay of a key, not the first one given', async () => {
    const { q, seen, run } = recordingQueue();
    q.addAfter('sooner-second', 600_000);
    q.addAfter('sooner-second', 1);
    q.addAfter('sooner-first', 1);
    q.addAfter('sooner-first', 600_000);
    // Ten minutes is the test's upper bound many times over: both keys are due within milliseconds.
    await eventually(() => seen.length === 2, 10_000);
    expect(seen.sort()).toEqual(['sooner-first', 'sooner-second']);
    q.shutDown();
    await run;
  });

  it('retryBackoffNow: keys in backoff run at once with their backoff forgotten; a given delay is kept', async () => {
    const q = new WorkQueue<string>({ baseDelayMs: 60_000, maxDelayMs: 600_000 });
    const seen: string[] = [];
    const run = q.run(1, async (k) => {
      seen.push(k);
    });
    q.addRateLimited('failing');
    q.addRateLimited('failing');
    q.addAfter('retry-after', 60_000);
    expect(q.retries('failing')).toBe(2);
    expect(q.retryBackoffNow()).toBe(1);
    await eventually(() => seen.length === 1);
    expect(seen).toEqual(['failing']);
    expect(q.retries('failing')).toBe(0);
    // One retry per call: nothing waits in backoff now.
    expect(q.retryBackoffNow()).toBe(0);
    q.shutDown();
    await run;
  });
});
