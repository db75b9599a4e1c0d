/**
 * `ccm run`'s lifecycle stage (runLifecycle) against the real kube-apiserver: controllers run while
 * leading (at once without leader election), a lost Lease stops them but not the process, and one
 * orderly shutdown releases the Lease and ends with the exit status.
 */
import { CoordinationV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/cli/log.js';
import type { Controllers } from '../../src/cli/run/controllers.js';
import type { Informers } from '../../src/cli/run/kube.js';
import { Leadership } from '../../src/cli/run/leadership.js';
import { runLifecycle } from '../../src/cli/run/lifecycle.js';
import type { RunPhase } from '../../src/cli/run/types.js';
import { createMetrics } from '../../src/controllers/metrics.js';
import { serve } from '../../src/controllers/server.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createInformer } from '../../src/kube/informer.js';
import { slimNode } from '../../src/kube/slim-node.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { logSink, shortLease, until } from '../helpers/run.js';

let cp: ControlPlane;
let leases: CoordinationV1Api;
beforeAll(async () => {
  cp = await startControlPlane();
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  kc.setCurrentContext('fixtures');
  leases = kc.makeApiClient(CoordinationV1Api);
});
afterAll(async () => {
  await cp?.stop();
});

const holderOf = async (name: string) =>
  (await leases.readNamespacedLease({ name, namespace: 'kube-system' })).spec?.holderIdentity;

/** The stage with the other stages' parts it ends: what they are asked to do is recorded in `steps`. */
async function stage(leaderElect: boolean, leaseName: string) {
  const steps: string[] = [];
  const sink = logSink();
  const log = createLogger('debug', { destination: sink.stream, pretty: false });
  const transport = new KubeTransport(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
  const informers: Informers = {};
  informers.nodes = createInformer({
    transport,
    log,
    path: '/api/v1/nodes',
    resource: 'nodes',
    slim: slimNode,
  });
  informers.nodes.start();
  const metrics = createMetrics();
  const served = await serve({
    bindAddress: '127.0.0.1',
    port: 0,
    plain: true,
    healthz: [],
    readyz: [],
    registry: metrics.registry,
  });
  const controllers: Controllers = {
    startTerm: () => void steps.push('start term'),
    stopTerm: async () => void steps.push('stop term'),
    abort: () => void steps.push('abort controllers'),
  };
  const phase: RunPhase = { current: 'running' };
  const leadership = new Leadership(leaderElect);
  const handle = runLifecycle(
    { leaderElect, lease: shortLease(leaseName, 3000, 2000, 200) },
    {
      identity: `${leaseName}-me`,
      log,
      leadership,
      phase,
      transport,
      informers,
      cloud: { stopListing: () => void steps.push('stop listing') },
      controllers,
      reloads: { stop: () => void steps.push('stop reloads') },
      serving: {
        url: served.url,
        close: async () => {
          steps.push('close server');
          await served.close();
        },
      },
      metrics,
    },
  );
  const said = () => sink.lines.map((l) => JSON.parse(l) as { level: number; msg: string });
  const leader = async () => (await metrics.leader.get()).values[0]?.value;
  return { handle, steps, said, leadership, phase, transport, informers, leader };
}

describe('runLifecycle', () => {
  it('without leader election, runs the controllers at once and shuts down in order, exit 0', async () => {
    const s = await stage(false, 'lifecycle-off');
    expect(s.steps).toEqual(['start term']);
    expect(s.handle.url).toMatch(/^http:\/\/127\.0\.0\.1:/);
    const shutdown = s.handle.shutdown('SIGTERM received');
    expect(s.phase.current).toBe('stopping');
    expect(await shutdown).toBe(0);
    expect(await s.handle.done).toBe(0);
    expect(s.steps).toEqual([
      'start term',
      'stop reloads',
      'abort controllers',
      'stop listing',
      'stop term',
      'close server',
    ]);
    expect(s.said().map((l) => l.msg)).toEqual(['SIGTERM received: shutting down']);
    expect(await s.leader()).toBe(0);
  });

  it('with leader election, runs the controllers only once leading, and releases the Lease at shutdown', async () => {
    const s = await stage(true, 'lifecycle-on');
    expect(s.said()[0]).toMatchObject({ msg: 'waiting for the leader Lease kube-system/lifecycle-on' });
    await until('leading', async () => s.leadership.leading);
    expect(s.steps).toEqual(['start term']);
    expect(await s.leader()).toBe(1);
    expect(s.leadership.mayWrite()).toBe(true);
    expect(await holderOf('lifecycle-on')).toBe('lifecycle-on-me');

    expect(await s.handle.shutdown('SIGINT received')).toBe(0);
    expect((await holderOf('lifecycle-on')) ?? '').toBe('');
    expect(s.leadership.mayWrite()).toBe(false);
    expect(await s.leader()).toBe(0);
  });

  it('a lost Lease stops the controllers, not the process; it leads again once it can', async () => {
    const s = await stage(true, 'lifecycle-lost');
    try {
      await until('leading', async () => s.leadership.leading);
      // Another replica takes the Lease as a stolen or expired one is taken.
      const fixtures = new KubeTransport(
        loadKubeConfig({ kubeconfig: cp.kubeconfigPath, context: 'fixtures', env: {} }),
      );
      const path = '/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/lifecycle-lost';
      const lease = (await fixtures.request({ method: 'GET', path })) as { spec: Record<string, unknown> };
      const microTime = new Date().toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
      await fixtures.request({
        method: 'PUT',
        path,
        body: {
          ...lease,
          spec: { ...lease.spec, holderIdentity: 'thief', leaseDurationSeconds: 2, renewTime: microTime },
        },
      });
      await fixtures.close();
      await until('lost', async () => !s.leadership.leading);
      await until('stopped', async () => s.steps.includes('stop term'));
      expect(await s.leader()).toBe(0);
      expect(
        s
          .said()
          .filter((l) => l.level === 50)
          .map((l) => l.msg),
      ).toEqual([
        'lost the leader Lease: stopped writing and the controllers; a candidate again as lifecycle-lost-me',
      ]);
      // The thief never renews: this replica takes the Lease back and starts a new term.
      await until('leading again', async () => s.leadership.leading, 15_000);
      expect(s.steps).toEqual(['start term', 'stop term', 'start term']);
    } finally {
      await s.handle.shutdown('test done');
    }
  }, 60_000);

  it('an unexpected error is one line and the same shutdown, exit 1; a second shutdown says nothing more', async () => {
    const s = await stage(false, 'lifecycle-fail');
    const failing = s.handle.fail(new Error('boom\n    at somewhere (file.js:1:1)'));
    const again = s.handle.shutdown('SIGTERM received');
    expect(await failing).toBe(1);
    expect(await again).toBe(1);
    expect(await s.handle.done).toBe(1);
    expect(s.said().map((l) => [l.level, l.msg])).toEqual([[50, 'unexpected error: boom; shutting down']]);
    expect(s.steps.filter((step) => step === 'stop term')).toHaveLength(1);
  });
});
