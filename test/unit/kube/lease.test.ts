/** LeaderElector's waits against a Lease held in memory: nothing accumulates on its stop signal. */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { KubeApiError } from '../../../src/kube/errors.js';
import { LeaderElector } from '../../../src/kube/lease.js';
import type { KubeTransport } from '../../../src/kube/transport.js';

/** The API server's part: one Lease, with resourceVersion checks as on a real server. */
function leaseStore() {
  let lease: { metadata: { resourceVersion?: string } } | undefined;
  let version = 0;
  let requests = 0;
  const transport = {
    async request(req: { method: string; body?: unknown }) {
      requests++;
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
  return { transport, requests: () => requests };
}

describe('leader election', () => {
  it('leaves no abort listener behind per retry period (a leak of ~25 MB a day at 2 s)', async () => {
    const store = leaseStore();
    const elector = new LeaderElector({
      transport: store.transport,
      namespace: 'kube-system',
      name: 'ccm-test',
      identity: 'me',
      leaseDurationMs: 1000,
      renewDeadlineMs: 500,
      retryPeriodMs: 2,
    });
    const signal = (elector as unknown as { stopper: AbortController }).stopper.signal;
    const running = elector.run();
    const renewed = async (n: number) => {
      while (store.requests() < n) await new Promise((r) => setTimeout(r, 5));
    };
    await renewed(200);
    expect(elector.isLeader()).toBe(true);
    // At most the wait in progress holds one.
    expect(getEventListeners(signal, 'abort').length).toBeLessThanOrEqual(1);
    elector.stop();
    expect(await running).toBe('stopped');
  });
});
