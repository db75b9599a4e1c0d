import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  budgetedProvider,
  EveryBudget,
  SlidingWindows,
  TokenBucket,
} from '../../../src/controllers/cloud-budget.js';
import { createMetrics } from '../../../src/controllers/metrics.js';
import {
  DIGITALOCEAN_HOURLY_PACE,
  DIGITALOCEAN_RATE_LIMITS,
} from '../../../src/providers/digitalocean/index.js';
import { NotFoundError, RetryableError, UnauthorizedError } from '../../../src/providers/errors.js';
import { TRITON_REQUEST_BUDGET } from '../../../src/providers/triton/index.js';
import type { LoadBalancers } from '../../../src/providers/types.js';
import { mostInAnyWindow } from '../../helpers/rate-windows.js';
import { makeInstance, makeProvider } from './fixtures.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('the cloud request budget', () => {
  it('lets a burst through at once, then makes work wait at qps; nothing fails', async () => {
    const bucket = new TokenBucket(20, 3);
    const started = performance.now();
    const done: number[] = [];
    await Promise.all(
      Array.from({ length: 7 }, async () => {
        await bucket.take();
        done.push(performance.now() - started);
      }),
    );
    done.sort((a, b) => a - b);
    // the burst of 3 needs no wait; the 4th waits for a token (50 ms at 20/s), the 7th for four
    expect((done[3] as number) - (done[2] as number)).toBeGreaterThanOrEqual(40);
    expect(done[6]).toBeGreaterThanOrEqual(180);
  });

  it("at DigitalOcean's defaults, an endless demand gets 240 in the first minute, never more than 240 in any minute or 4,900 in any hour, and never stalls", async () => {
    vi.useFakeTimers({ loopLimit: 200_000 });
    const windows = new SlidingWindows(
      DIGITALOCEAN_RATE_LIMITS.map((l) => ({ windowMs: l.windowMs, max: l.max - l.margin })),
      () => Date.now(),
    );
    const pace = new TokenBucket(DIGITALOCEAN_HOURLY_PACE.qps, DIGITALOCEAN_HOURLY_PACE.burst, () =>
      Date.now(),
    );
    const budget = new EveryBudget([pace, windows]);
    const times: number[] = [];
    const twoHours = 7_200_000;
    const start = Date.now();
    const demand = (async () => {
      while (Date.now() - start < twoHours) {
        (await budget.take()).done();
        times.push(Date.now());
      }
    })();
    await vi.runAllTimersAsync();
    await demand;
    const within = times.filter((t) => t - start < twoHours);
    expect(mostInAnyWindow(within, 60_000)).toBe(240);
    expect(mostInAnyWindow(within, 3_600_000)).toBeLessThanOrEqual(4900);
    // The whole minute's allowance at once (300 creates need 2 minutes' worth, not 3.7 at a bucket's pace) ...
    expect(within.filter((t) => t - start < 1000)).toHaveLength(240);
    // ... 1,300 at the minute's pace (a minute's wait at most), then the hour's: one a second, never
    // the 40 minutes of nothing that spending the hour's 4,900 in 20 minutes would leave ...
    const gaps = within.slice(1).map((t, i) => t - (within[i] as number));
    expect(Math.max(...gaps)).toBeLessThanOrEqual(60_001);
    const later = within.filter((t) => t - start > 600_000);
    expect(Math.max(...later.slice(1).map((t, i) => t - (later[i] as number)))).toBeLessThanOrEqual(1001);
    // ... and nearly all the two hours allow.
    expect(within.length).toBeGreaterThanOrEqual(1300 + 7100);
  });

  it('a window holds on a rate-limit answer, and within every budget, each is waited for', async () => {
    vi.useFakeTimers();
    const windows = new SlidingWindows([{ windowMs: 1000, max: 2 }], () => Date.now());
    const bucket = new TokenBucket(1, 1, () => Date.now());
    const both = new EveryBudget([bucket, windows]);
    const t0 = Date.now();
    const times: number[] = [];
    windows.hold(500);
    const takes = Array.from({ length: 3 }, async () => {
      (await both.take()).done();
      times.push(Date.now() - t0);
    });
    await vi.runAllTimersAsync();
    await Promise.all(takes);
    // The hold (500 ms), then the bucket's pace (1 a second), which is under the window's 2 a second.
    expect(times).toEqual([500, 1000, 2000]);
    expect(windows.countIn(1000)).toBe(1);
  });

  it('a request counts in the window from its turn until a window after its answer: one slow to answer frees nothing early', async () => {
    vi.useFakeTimers();
    const windows = new SlidingWindows([{ windowMs: 1000, max: 2 }], () => Date.now());
    const t0 = Date.now();
    const slow = await windows.take();
    const slower = await windows.take();
    const times: number[] = [];
    const third = windows.take().then((turn) => {
      times.push(Date.now() - t0);
      turn.done();
    });
    // Answered after 5 s and 8 s: until then both count, whatever was sent when.
    setTimeout(() => slow.done(), 5000);
    setTimeout(() => slower.done(), 8000);
    await vi.runAllTimersAsync();
    await third;
    // A window (1 s) after the first answer, not after the turn (which would have been 1 s).
    expect(times).toEqual([6001]);
    expect(windows.countIn(1000)).toBe(1);
  });

  it("at Triton's default, an endless demand is never refused by CloudAPI's throttle (10 a second, bursts of 30)", async () => {
    vi.useFakeTimers({ loopLimit: 100_000 });
    const { qps, burst } = TRITON_REQUEST_BUDGET;
    const bucket = new TokenBucket(qps, burst, () => Date.now());
    // CloudAPI's bucket as restify's throttle keeps it: full at 30, 10 a second, a refusal takes nothing.
    let cloud = 30;
    let cloudAt = Date.now();
    let refused = 0;
    const times: number[] = [];
    const start = Date.now();
    const demand = (async () => {
      while (Date.now() - start < 600_000) {
        await bucket.take();
        const now = Date.now();
        cloud = Math.min(30, cloud + ((now - cloudAt) / 1000) * 10);
        cloudAt = now;
        if (cloud >= 1) cloud -= 1;
        else refused++;
        times.push(now);
      }
    })();
    await vi.runAllTimersAsync();
    await demand;
    expect(refused).toBe(0);
    // ... and not far under: the burst, then 8 a second.
    expect(mostInAnyWindow(times, 1000)).toBeGreaterThanOrEqual(burst);
    expect(times.length).toBeGreaterThanOrEqual(burst + Math.floor(qps * 599));
  });

  it('holds every request after a rate-limit answer for the wait asked, with no burst saved up meanwhile', async () => {
    vi.useFakeTimers();
    const bucket = new TokenBucket(10, 5, () => Date.now());
    const t0 = Date.now();
    bucket.hold(2000);
    const times: number[] = [];
    const takes = Array.from({ length: 3 }, async () => {
      await bucket.take();
      times.push(Date.now() - t0);
    });
    await vi.runAllTimersAsync();
    await Promise.all(takes);
    // The first a token (100 ms) after the 2 s, then one each 100 ms: no burst was saved up on the hold.
    expect(times).toEqual([2100, 2200, 2300]);
  });

  it('counts each cloud call by operation and outcome, through the current provider', async () => {
    const metrics = createMetrics();
    const first = makeProvider([makeInstance()], async () => {
      throw new NotFoundError('gone');
    });
    const holder = { current: first };
    const provider = budgetedProvider(holder, new TokenBucket(1000, 100), metrics);
    await provider.instances.list();
    await expect(provider.instances.get('cloudlycke://x')).rejects.toThrow('gone');
    holder.current = makeProvider([], async () => {
      throw new UnauthorizedError('401');
    });
    await expect(provider.instances.get('cloudlycke://x')).rejects.toThrow('401');
    expect(first.listCalls).toBe(1);
    const text = await metrics.registry.metrics();
    expect(text).toContain('ccm_cloud_requests_total{provider="cloudlycke",operation="list",code="ok"} 1');
    expect(text).toContain(
      'ccm_cloud_requests_total{provider="cloudlycke",operation="get",code="not_found"} 1',
    );
    expect(text).toContain(
      'ccm_cloud_requests_total{provider="cloudlycke",operation="get",code="unauthorized"} 1',
    );
  });

  it('asks the leader gate after the budget wait, before each load balancer change: a replica that waited past its Lease changes nothing', async () => {
    const calls: string[] = [];
    const balancers = {
      get: async () => {
        calls.push('get');
        return undefined;
      },
      ensure: async () => {
        calls.push('ensure');
        return { ingress: [] };
      },
      updateNodes: async () => {
        calls.push('updateNodes');
      },
      delete: async () => {
        calls.push('delete');
      },
    } as unknown as LoadBalancers;
    const holder = { current: { ...makeProvider(), loadBalancers: balancers } };
    let leading = true;
    // one token a second and none left: every call waits its turn
    const bucket = new TokenBucket(20, 1);
    await bucket.take();
    const provider = budgetedProvider(holder, bucket, undefined, () => leading);
    const req = {} as Parameters<LoadBalancers['ensure']>[0];
    const waiting = provider.loadBalancers?.ensure(req);
    leading = false; // the Lease runs out while the call waits for the budget
    await expect(waiting).rejects.toThrow(RetryableError);
    await expect(provider.loadBalancers?.ensure(req)).rejects.toThrow(
      'lb_ensure refused: this replica is not the leader',
    );
    await expect(provider.loadBalancers?.updateNodes(req)).rejects.toThrow('not the leader');
    await expect(provider.loadBalancers?.delete(req)).rejects.toThrow('not the leader');
    await provider.loadBalancers?.get(req);
    expect(calls).toEqual(['get']);
  });
});
