/** The event recorder: never waits, never throws; repeats and spam are not sent; its queue is bounded. */
import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../../src/kube/errors.js';
import { EventRecorder } from '../../../src/kube/event-recorder.js';
import type { KubeTransport } from '../../../src/kube/transport.js';

function transport(answer: () => Promise<void>) {
  const posted: { reason: string; name: string }[] = [];
  const http = {
    async request(req: { body: { reason: string; involvedObject: { name: string } } }) {
      posted.push({ reason: req.body.reason, name: req.body.involvedObject.name });
      await answer();
    },
  } as unknown as KubeTransport;
  return { http, posted };
}
const about = (name: string) => ({
  kind: 'Service',
  apiVersion: 'v1',
  namespace: 'ns',
  name,
  uid: `uid-${name}`,
});
const spec = (reason: string, message = reason) => ({
  type: 'Normal' as const,
  reason,
  message,
  component: 'ccm',
});

describe('EventRecorder', () => {
  it('returns at once and swallows a refusal (a Terminating namespace answers 403)', async () => {
    let refused = 0;
    const { http } = transport(async () => {
      refused++;
      throw new KubeApiError('forbidden: namespace is being terminated', 403);
    });
    const errors: string[] = [];
    const recorder = new EventRecorder(http, { onError: (m) => errors.push(m) });
    expect(recorder.record(about('web'), spec('DeletingLoadBalancer'))).toBe(true);
    await recorder.flush(1000);
    expect(refused).toBe(1);
    expect(errors[0]).toContain('event DeletingLoadBalancer about Service web not recorded: forbidden');
  });

  it('sends the same Event once in 10 minutes, and at most 25 per object, then one per 5 minutes', async () => {
    let now = 0;
    const { http, posted } = transport(async () => {});
    const recorder = new EventRecorder(http, { now: () => now });
    for (let i = 0; i < 5; i++) recorder.record(about('web'), spec('SyncLoadBalancerFailed', 'same message'));
    for (let i = 0; i < 40; i++) recorder.record(about('web'), spec('Ensuring', `attempt ${i}`));
    await recorder.flush(1000);
    expect(posted.filter((p) => p.reason === 'SyncLoadBalancerFailed')).toHaveLength(1);
    expect(posted).toHaveLength(25);
    now += 5 * 60_000;
    recorder.record(about('web'), spec('Ensuring', 'later'));
    recorder.record(about('web'), spec('Ensuring', 'later still'));
    recorder.record(about('other'), spec('Ensuring', 'another object has its own allowance'));
    await recorder.flush(1000);
    expect(posted.slice(25).map((p) => `${p.name} ${p.reason}`)).toEqual(['web Ensuring', 'other Ensuring']);
  });

  it('holds at most 1,000 Events while the API server is slow, dropping the oldest', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const { http, posted } = transport(() => gate);
    const recorder = new EventRecorder(http);
    for (let i = 0; i < 1500; i++) recorder.record(about(`svc-${i}`), spec('Ensuring'));
    release();
    await recorder.flush(5000);
    // The first was in flight; of the rest the newest 1,000 stayed.
    expect(posted).toHaveLength(1001);
    expect(posted.at(-1)?.name).toBe('svc-1499');
    expect(recorder.dropped).toBe(499);
  });

  it('forgets what its windows no longer need, oldest first, however many objects it saw', async () => {
    let now = 0;
    const { http } = transport(async () => {});
    const recorder = new EventRecorder(http, { now: () => now });
    const sizes = () => {
      const maps = recorder as unknown as { sent: Map<string, number>; buckets: Map<string, unknown> };
      return [maps.sent.size, maps.buckets.size];
    };
    for (let i = 0; i < 5000; i++) recorder.record(about(`node-${i}`), spec('Synced'));
    now += 6 * 60_000;
    for (let i = 0; i < 10; i++) recorder.record(about(`late-${i}`), spec('Synced'));
    // node-7 again, then 10 minutes after its first Event: sent again, and the 4,999 others forgotten.
    recorder.record(about('node-7'), spec('Synced'));
    now += 4 * 60_000;
    expect(recorder.record(about('node-7'), spec('Synced'))).toBe(true);
    expect(sizes()).toEqual([11, 5010]);
    // The late ones are still repeats for their 10 minutes.
    expect(recorder.record(about('late-3'), spec('Synced'))).toBe(false);
    // The spam filter's buckets go once they would be full again (25 × 5 minutes).
    now += 125 * 60_000;
    recorder.record(about('last'), spec('Synced'));
    expect(sizes()).toEqual([1, 1]);
    await recorder.flush(5000);
  });
});
