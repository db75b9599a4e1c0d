/**
 * Review 48: a request waiting for its turn of the shared budget ignores its caller's signal
 * (src/providers/http.ts attempts: `await this.options.takeToken?.()` before anything looks at
 * `opts.signal`). With DigitalOcean's windows a turn can be a minute away (the minute spent) or 40
 * (the hour spent): a shutdown, a lost Lease or a Service's sync that gave up keeps waiting until the
 * turn comes, and then spends it on a request it does not send (the signal is only read by the
 * transport, after the turn was counted). godo's rate limiter waits with the request's context
 * (godo.go: `c.rateLimiter.Wait(ctx)`).
 */
import { describe, expect, it } from 'vitest';
import { SlidingWindows } from '../../src/controllers/cloud-budget.js';
import { HttpClient } from '../../src/providers/http.js';

describe('review 48: a caller that gives up while waiting for the budget', () => {
  it('is answered at once with its abort, and spends no turn', async () => {
    // The minute spent: the next turn is a minute away.
    const windows = new SlidingWindows([{ windowMs: 60_000, max: 1 }]);
    (await windows.take()).done();
    let sent = 0;
    const client = new HttpClient({
      baseUrl: 'http://127.0.0.1:9',
      fetch: async () => {
        sent++;
        return new Response('{}', { status: 200 });
      },
      takeToken: async () => (await windows.take()).done,
    });
    const caller = new AbortController();
    const started = Date.now();
    const request = client.get('/v2/droplets', { signal: caller.signal }).then(
      () => 'answered',
      () => 'aborted',
    );
    setTimeout(() => caller.abort(new Error('shutting down')), 50);
    const outcome = await Promise.race([
      request,
      new Promise((r) => setTimeout(() => r('still waiting for the budget'), 2000)),
    ]);
    expect(outcome).toBe('aborted');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(sent).toBe(0);
  });
});
