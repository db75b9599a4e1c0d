/** LeaderElector's waits against a Lease held in memory: nothing accumulates on its stop signal. */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { KubeApiError, KubeUnreachableError } from '../../../src/kube/errors.js';
import { LeaderElector } from '../../../src/kube/lease.js';
import type { KubeTransport } from '../../../src/kube/transport.js';

/** The API server's part: one Lease, with resourceVersion checks as on a real server. */
function leaseStore() {
  let lease: { metadata: { resourceVersion?: string }; spec?: Record<string, unknown> } | undefined;
  let version = 0;
  let requests = 0;
  let down = false;
  const transport = {
    async request(req: { method: string; body?: unknown }) {
      requests++;
      if (down) throw new KubeUnreachableError('connect ECONNREFUSED 127.0.0.1:6443');
      if (req.method === 'GET') {
        if (!lease) throw new KubeApiError('not found', 404);
        return structuredClone(lease);
      }
      const body = structuredClone(req.body) as { metadata: { resourceVersion?: string } };
      if (req.method === 'PUT' && body.metadata.resourceVersion !== lease?.metadata.resourceVersion)
        throw new KubeApiError('conflict', 409);
      body.metadata.resourceVersion = String(++version);
      lease = body;
      return structuredClone(lease);
    },
  } as unknown as KubeTransport;
  return {
    transport,
    requests: () => requests,
    lease: () => lease,
    /** Another client rewrites the record (kubectl, or a replica that re-created a deleted Lease). */
    rewrite: (spec: Record<string, unknown>) => {
      if (lease) lease = { metadata: { resourceVersion: String(++version) }, spec };
    },
    setDown: (value: boolean) => {
      down = value;
    },
  };
}

/** The elector of identity `me` on the store's Lease, with these timings (ms). */
const electorOn = (
  store: { transport: KubeTransport },
  leaseDurationMs: number,
  renewDeadlineMs: number,
  retryPeriodMs: number,
) =>
  new LeaderElector({
    transport: store.transport,
    namespace: 'kube-system',
    name: 'ccm-test',
    identity: 'me',
    leaseDurationMs,
    renewDeadlineMs,
    retryPeriodMs,
  });

const until = async (what: string, fn: () => boolean, timeoutMs = 5000) => {
  const end = Date.now() + timeoutMs;
  while (!fn()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('leader election', () => {
  it('leaves no abort listener behind per retry period (a leak of ~25 MB a day at 2 s)', async () => {
    const store = leaseStore();
    const elector = electorOn(store, 1000, 500, 2);
    const signals = () => {
      const { stopper, waking } = elector as unknown as { stopper: AbortController; waking: AbortController };
      return [stopper.signal, waking.signal];
    };
    const running = elector.run();
    const renewed = async (n: number) => {
      while (store.requests() < n) await new Promise((r) => setTimeout(r, 5));
    };
    await renewed(200);
    expect(elector.isLeader()).toBe(true);
    // At most the wait in progress holds one.
    for (const signal of signals()) expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
    elector.stop();
    expect(await running).toBe('stopped');
  });

  it('after losing the Lease in an outage, runs again under the same identity and takes back the Lease that still names it at the first try', async () => {
    const store = leaseStore();
    const elector = electorOn(store, 600, 400, 100);
    void elector.run();
    await until('leading', () => elector.isLeader());
    const acquired = store.lease()?.spec?.acquireTime;
    store.setDown(true);
    expect(await elector.run()).toBe('lost');
    expect(elector.isLeader()).toBe(false);
    store.setDown(false);
    const before = store.requests();
    const running = elector.run();
    await until('leading again', () => elector.isLeader());
    // one GET and one PUT: the record names this identity, so nothing is waited out
    expect(store.requests() - before).toBe(2);
    expect(store.lease()?.spec).toMatchObject({
      holderIdentity: 'me',
      acquireTime: acquired,
      leaseTransitions: 0,
    });
    elector.stop();
    expect(await running).toBe('stopped');
  });

  it('wake() ends the wait between tries: back from an outage it does not sit out the retry period', async () => {
    const store = leaseStore();
    store.setDown(true);
    const elector = electorOn(store, 120_000, 90_000, 60_000);
    const running = elector.run();
    await until('first try', () => store.requests() > 0);
    store.setDown(false);
    elector.wake();
    await until('leading', () => elector.isLeader(), 2000);
    elector.stop();
    expect(await running).toBe('stopped');
  });

  it('stops leading as soon as a read shows another holder, not at the renew deadline', async () => {
    const store = leaseStore();
    const elector = electorOn(store, 60_000, 40_000, 50);
    const running = elector.run();
    await until('leading', () => elector.isLeader());
    store.rewrite({ holderIdentity: 'other', leaseDurationSeconds: 60, leaseTransitions: 1 });
    const started = Date.now();
    expect(await running).toBe('lost');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(elector.isLeader()).toBe(false);
    expect(elector.holder).toBe('other');
  });
});
