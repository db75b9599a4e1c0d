/**
 * Review 48: odd --cloud-qps values. `ccm run` accepts any number above 0 (src/commands/run.ts), and
 * the token bucket (src/controllers/cloud-budget.ts TokenBucket.take) sleeps
 * `(1 - tokens) / qps * 1000` ms with one setTimeout. Past 2^31 - 1 ms (24.8 days; a qps below about
 * 4.7e-7) Node's setTimeout fires after 1 ms instead (TimeoutOverflowWarning), and the bucket goes on
 * into debt: an operator's "almost nothing" becomes no limit at all (on DigitalOcean the cloud's
 * windows still apply; on OpenStack, Brightbox, Triton and Cloudlycke nothing else does).
 */
import { describe, expect, it } from 'vitest';
import { CloudBudget } from '../../src/cli/run/cloud.js';
import { TokenBucket } from '../../src/controllers/cloud-budget.js';

describe('review 48: --cloud-qps below what one setTimeout can wait', () => {
  it('a bucket of 1e-7 a second lets a second request wait, not through after a millisecond', async () => {
    const bucket = new TokenBucket(1e-7, 1);
    await bucket.take(); // the burst
    const second = bucket.take().then(() => 'sent');
    const soon = new Promise((r) => setTimeout(() => r('still waiting'), 300));
    expect(await Promise.race([second, soon])).toBe('still waiting');
  });

  it('the same through the run budget (the flags as `ccm run --cloud-qps 1e-7 --cloud-burst 1` make it)', async () => {
    const budget = new CloudBudget({ qps: 1e-7, burst: 1 });
    let sent = 0;
    const all = Array.from({ length: 20 }, () => budget.takeToken().then(() => sent++));
    await new Promise((r) => setTimeout(r, 300));
    expect(sent).toBe(1);
    void all;
  });
});
