/**
 * The service controller in `ccm run`, against the real kube-apiserver, with Cloudlycke's address pool
 * as the cloud. The provider is wrapped in-process to count load balancer calls and inject failures.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CoreV1Api, PatchStrategy, setHeaderOptions, type V1Service } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { RetryableError } from '../../src/providers/errors.js';
import type { LoadBalancerRequest, LoadBalancers, Provider } from '../../src/providers/types.js';
import { createNodes, deleteAllNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { type InProcess, runInput, startInProcess, until } from '../helpers/run.js';
import { eventReasons } from '../helpers/services.js';

const FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';
const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
const NS = 'default';

let cp: ControlPlane;
let api: CoreV1Api;
let ccm: InProcess | undefined;
let dir: string;
let inventory: string;

interface Call {
  op: keyof LoadBalancers;
  service: string;
  nodes: string[];
  ports: number[];
}
let calls: Call[];
/** Set by a test: runs before each ensure and may throw. */
let beforeEnsure: ((req: LoadBalancerRequest) => void) | undefined;

function recording(p: Provider): Provider {
  const lbs = p.loadBalancers as LoadBalancers;
  const record = (op: keyof LoadBalancers, req: LoadBalancerRequest) =>
    calls.push({
      op,
      service: req.service.name,
      nodes: req.nodes.map((n) => n.name),
      ports: req.ports.map((x) => x.port),
    });
  return {
    ...p,
    loadBalancers: {
      get: (req) => lbs.get(req),
      ensure: async (req) => {
        record('ensure', req);
        beforeEnsure?.(req);
        return lbs.ensure(req);
      },
      updateNodes: async (req) => {
        record('updateNodes', req);
        return lbs.updateNodes(req);
      },
      delete: async (req) => {
        record('delete', req);
        return lbs.delete(req);
      },
      observe: (services) => lbs.observe?.(services),
    },
  };
}

function writeCloud(pool: string) {
  writeFileSync(
    inventory,
    stringify({
      defaults: { type: 't', region: 'r', zone: 'z' },
      loadBalancerPool: pool,
      instances: ['n1', 'n2', 'n3'].map((id) => ({ id })),
    }),
  );
}

async function start(extra: Parameters<typeof runInput>[2] = {}) {
  ccm = await startInProcess(runInput(cp.kubeconfigPath, inventory, { controllers: 'service', ...extra }), {
    wrapProvider: recording,
  });
}

beforeAll(async () => {
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
  dir = mkdtempSync(join(tmpdir(), 'ccm-service-'));
  inventory = join(dir, 'inventory.yaml');
});
afterAll(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  calls = [];
  beforeEnsure = undefined;
  writeCloud('10.99.0.1-10.99.0.3');
  await deleteAllNodes(api);
  await createNodes(
    api,
    ['n1', 'n2', 'n3'].map((name) => ({ name, providerID: `cloudlycke://${name}`, tainted: false })),
  );
});
afterEach(async () => {
  await ccm?.stop();
  ccm = undefined;
  for (const s of (await api.listNamespacedService({ namespace: NS })).items) {
    if (s.metadata?.name === 'kubernetes') continue;
    if (s.metadata?.finalizers?.length) {
      await api.patchNamespacedService(
        {
          name: s.metadata.name ?? '',
          namespace: NS,
          body: [{ op: 'remove', path: '/metadata/finalizers' }],
        },
        JSON_PATCH,
      );
    }
    await api.deleteNamespacedService({ name: s.metadata?.name ?? '', namespace: NS });
  }
});

function lbService(
  name: string,
  extra: Partial<V1Service['spec']> = {},
  annotations?: Record<string, string>,
): V1Service {
  return {
    metadata: { name, namespace: NS, ...(annotations ? { annotations } : {}) },
    spec: {
      type: 'LoadBalancer',
      ports: [{ name: 'http', port: 80, targetPort: 8080 }],
      selector: { app: name },
      ...extra,
    },
  };
}

const read = (name: string) => api.readNamespacedService({ name, namespace: NS });
const ip = async (name: string) => (await read(name)).status?.loadBalancer?.ingress?.[0]?.ip;
const withIngress = (name: string) => until(`ingress of ${name}`, () => ip(name), 20_000);

const reasons = (name: string) => eventReasons(api, NS, name);

async function writesTo(name: string, since: number) {
  return (await cp.writes(CCM_USER))
    .slice(since)
    .filter((w) => w.objectRef?.resource === 'services' && w.objectRef?.name === name);
}

describe('the service controller', () => {
  it('create → ingress IP and finalizer; ports change → ensured again; Nodes → only backends updated', async () => {
    await start();
    await api.createNamespacedService({ namespace: NS, body: lbService('web') });
    expect(await withIngress('web')).toBe('10.99.0.1');
    const svc = await read('web');
    expect(svc.metadata?.finalizers).toContain(FINALIZER);
    await until('Ensured event', async () => (await reasons('web')).includes('EnsuredLoadBalancer'));
    expect(await reasons('web')).toEqual(['EnsuringLoadBalancer', 'EnsuredLoadBalancer']);
    expect(calls.filter((c) => c.op === 'ensure').at(-1)?.nodes).toEqual(['n1', 'n2', 'n3']);

    await api.patchNamespacedService(
      {
        name: 'web',
        namespace: NS,
        body: [{ op: 'replace', path: '/spec/ports/0/port', value: 8443 }],
      },
      JSON_PATCH,
    );
    await until('ensure with the new port', async () =>
      calls.some((c) => c.op === 'ensure' && c.ports[0] === 8443),
    );

    // A ClusterIP Service beside it: never touched.
    await api.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'plain' }, spec: { ports: [{ port: 80 }], selector: { app: 'x' } } },
    });
    const before = (await cp.writes(CCM_USER)).length;
    calls = [];
    await api.patchNode(
      {
        name: 'n2',
        body: [
          {
            op: 'add',
            path: '/metadata/labels',
            value: { 'node.kubernetes.io/exclude-from-external-load-balancers': '' },
          },
        ],
      },
      JSON_PATCH,
    );
    await until('backends without n2', async () => calls.some((c) => c.op === 'updateNodes'));
    expect(calls).toEqual([{ op: 'updateNodes', service: 'web', nodes: ['n1', 'n3'], ports: [8443] }]);
    await createNodes(api, [{ name: 'n4', providerID: 'cloudlycke://n4', tainted: false }]);
    await until('backends with n4', async () => calls.at(-1)?.nodes.includes('n4'));
    expect(calls.at(-1)).toEqual({
      op: 'updateNodes',
      service: 'web',
      nodes: ['n1', 'n3', 'n4'],
      ports: [8443],
    });
    await until('UpdatedLoadBalancer event', async () =>
      (await reasons('web')).includes('UpdatedLoadBalancer'),
    );
    expect(await writesTo('plain', before)).toEqual([]);
    // Node updates wrote only events: the Service itself is unchanged.
    expect((await writesTo('web', before)).filter((w) => w.objectRef?.resource === 'services')).toEqual([]);
  });

  it('type → ClusterIP releases the address, removes finalizer and status; delete does the same', async () => {
    await start();
    await api.createNamespacedService({ namespace: NS, body: lbService('a') });
    await api.createNamespacedService({ namespace: NS, body: lbService('b') });
    const [ipA, ipB] = [await withIngress('a'), await withIngress('b')];
    expect(ipA).not.toBe(ipB);

    await api.patchNamespacedService(
      {
        name: 'a',
        namespace: NS,
        body: [
          { op: 'replace', path: '/spec/type', value: 'ClusterIP' },
          { op: 'remove', path: '/spec/ports/0/nodePort' },
        ],
      },
      JSON_PATCH,
    );
    await until(
      'finalizer of a gone',
      async () => !(await read('a')).metadata?.finalizers?.includes(FINALIZER),
    );
    expect((await read('a')).status?.loadBalancer?.ingress ?? []).toEqual([]);
    // DeletedLoadBalancer follows the finalizer's removal (the reference order).
    await until('DeletedLoadBalancer of a', async () => (await reasons('a')).includes('DeletedLoadBalancer'));
    expect(await reasons('a')).toEqual(
      expect.arrayContaining(['DeletingLoadBalancer', 'DeletedLoadBalancer']),
    );

    // The released address goes to the next Service.
    await api.createNamespacedService({ namespace: NS, body: lbService('c') });
    expect(await withIngress('c')).toBe(ipA);

    await api.deleteNamespacedService({ name: 'b', namespace: NS });
    await until(
      'b deleted',
      async () =>
        (await api.listNamespacedService({ namespace: NS, fieldSelector: 'metadata.name=b' })).items
          .length === 0,
    );
    expect(calls.some((c) => c.op === 'delete' && c.service === 'b')).toBe(true);
  });

  it('never touches a Service of another loadBalancerClass; owns the one it is told to', async () => {
    await start({
      controllerOptions: { ...runInput('', '').controllerOptions, loadBalancerClass: 'ccm.io/ours' },
    });
    const before = (await cp.writes(CCM_USER)).length;
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('theirs', { loadBalancerClass: 'example.com/other' }),
    });
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('ours', { loadBalancerClass: 'ccm.io/ours' }),
    });
    await withIngress('ours');
    expect(await writesTo('theirs', before)).toEqual([]);
    expect(calls.some((c) => c.service === 'theirs')).toBe(false);
  });

  it('keeps every address across a restart (a new leader): allocations come back from the Services', async () => {
    await start();
    for (const name of ['s1', 's2', 's3'])
      await api.createNamespacedService({ namespace: NS, body: lbService(name) });
    const first = [await withIngress('s1'), await withIngress('s2'), await withIngress('s3')];
    expect(new Set(first).size).toBe(3);
    await ccm?.stop();
    const before = (await cp.writes(CCM_USER)).length;
    await start();
    // The pool is full: a fourth Service waits, and nobody's address moves.
    await api.createNamespacedService({ namespace: NS, body: lbService('s4') });
    await until('pool exhausted warning', async () =>
      (await reasons('s4')).includes('SyncLoadBalancerFailed'),
    );
    expect([await ip('s1'), await ip('s2'), await ip('s3')]).toEqual(first);
    expect(await ip('s4')).toBeUndefined();
    // A restart over an unchanged cluster writes nothing to the three Services.
    for (const name of ['s1', 's2', 's3']) expect(await writesTo(name, before)).toEqual([]);
    const events = await api.listNamespacedEvent({ namespace: NS, fieldSelector: 'involvedObject.name=s4' });
    expect(events.items.find((e) => e.reason === 'SyncLoadBalancerFailed')?.message).toMatch(
      /pool 10.99.0.1-10.99.0.3 is exhausted/,
    );
    // A freed address goes to the waiting Service on its retry.
    await api.deleteNamespacedService({ name: 's2', namespace: NS });
    expect(await until('s4 gets an address', () => ip('s4'), 30_000)).toBe(first[1]);
  });

  it('two replicas: the standby that takes over keeps every address and never hands one out twice', async () => {
    const replica = (identity: string) =>
      startInProcess(
        runInput(cp.kubeconfigPath, inventory, {
          controllers: 'service',
          leaderElect: true,
          lease: {
            durationMs: 4000,
            renewDeadlineMs: 3000,
            retryPeriodMs: 500,
            name: 'ccm-svc',
            namespace: 'kube-system',
          },
        }),
        { wrapProvider: recording, identity },
      );
    const leads = async (r: InProcess) => (await r.handle.metrics.leader.get()).values[0]?.value === 1;
    const a = await replica('replica-a');
    await until('a leads', () => leads(a));
    const b = await replica('replica-b');
    ccm = b;
    for (const name of ['r1', 'r2'])
      await api.createNamespacedService({ namespace: NS, body: lbService(name) });
    const first = [await withIngress('r1'), await withIngress('r2')];
    await a.stop();
    await until('b leads', () => leads(b), 10_000);
    await api.createNamespacedService({ namespace: NS, body: lbService('r3') });
    const third = await withIngress('r3');
    expect([await ip('r1'), await ip('r2')]).toEqual(first);
    expect(first).not.toContain(third);
  }, 40_000);

  it('a provider failure → SyncLoadBalancerFailed and a retry that succeeds; a retry-after is honoured', async () => {
    await start();
    const attempts: number[] = [];
    beforeEnsure = (req) => {
      if (req.service.name !== 'flaky') return;
      attempts.push(Date.now());
      if (attempts.length === 1) throw new RetryableError('cloud says: slow down', 1500);
      if (attempts.length === 2) throw new Error('cloud says: internal error');
    };
    await api.createNamespacedService({ namespace: NS, body: lbService('flaky') });
    expect(await until('flaky ingress', () => ip('flaky'), 30_000)).toBe('10.99.0.1');
    expect(attempts).toHaveLength(3);
    expect((attempts[1] as number) - (attempts[0] as number)).toBeGreaterThanOrEqual(1500);
    // The plain failure waits the Service backoff (5 s), not less.
    expect((attempts[2] as number) - (attempts[1] as number)).toBeGreaterThanOrEqual(4900);
    const events = await api.listNamespacedEvent({
      namespace: NS,
      fieldSelector: 'involvedObject.name=flaky',
    });
    const failed = events.items.filter((e) => e.reason === 'SyncLoadBalancerFailed').map((e) => e.message);
    expect(failed).toEqual(
      expect.arrayContaining([
        'Error syncing load balancer: cloud says: slow down',
        'Error syncing load balancer: cloud says: internal error',
      ]),
    );
  }, 40_000);

  it('a Service failing the same way is warned about once, again when the reason changes, and once synced again', async () => {
    await start();
    let failure: string | undefined = 'cloud says: no capacity';
    let attempts = 0;
    beforeEnsure = (req) => {
      if (req.service.name !== 'stuck') return;
      attempts++;
      if (failure) throw new RetryableError(failure, 200);
    };
    const warnings = () =>
      (ccm?.logs ?? [])
        .map((l) => JSON.parse(l))
        .filter((l) => l.level === 40 && l.service === `${NS}/stuck` && /not synced/.test(l.msg));
    await api.createNamespacedService({ namespace: NS, body: lbService('stuck') });
    await until('retried', async () => attempts >= 4);
    expect(warnings().map((w) => w.msg)).toEqual([
      `load balancer of Service ${NS}/stuck not synced: cloud says: no capacity`,
    ]);

    failure = 'cloud says: quota exceeded';
    const seen = attempts;
    await until('retried with the new reason', async () => attempts >= seen + 3);
    expect(warnings()).toHaveLength(2);

    failure = undefined;
    await withIngress('stuck');
    await until('synced again logged', async () =>
      ccm?.logs.some((l) => l.includes(`Service ${NS}/stuck synced again`)),
    );
    expect(warnings()).toHaveLength(2);
  }, 40_000);

  it('a Service deleted in a Terminating namespace: the load balancer and the finalizer go, though every Event is refused', async () => {
    await start();
    const ns = `doomed-${Date.now().toString(36)}`;
    await api.createNamespace({ body: { metadata: { name: ns } } });
    await api.createNamespacedService({
      namespace: ns,
      body: { ...lbService('web'), metadata: { name: 'web', namespace: ns } },
    });
    await until(
      'web ingress',
      async () =>
        (await api.readNamespacedService({ name: 'web', namespace: ns })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
      20_000,
    );
    await api.deleteNamespace({ name: ns });
    // The namespace is Terminating: NamespaceLifecycle refuses every create in it, Events included.
    await expect(
      api.createNamespacedEvent({
        namespace: ns,
        body: {
          metadata: { generateName: 'probe.' },
          involvedObject: { kind: 'Service', name: 'web', namespace: ns },
        },
      }),
    ).rejects.toThrow();
    // What the namespace controller does next: delete what the namespace holds.
    await api.deleteNamespacedService({ name: 'web', namespace: ns });
    await until(
      'the Service gone (its finalizer removed)',
      async () => (await api.listNamespacedService({ namespace: ns })).items.length === 0,
      20_000,
    );
    expect(calls.filter((c) => c.op === 'delete' && c.service === 'web')).toHaveLength(1);
  }, 60_000);

  it('an invalid annotation → a Warning naming it; the load balancer stays as it was', async () => {
    await start();
    await api.createNamespacedService({ namespace: NS, body: lbService('web') });
    const before = await withIngress('web');
    await api.patchNamespacedService(
      {
        name: 'web',
        namespace: NS,
        body: [
          {
            op: 'add',
            path: '/metadata/annotations',
            value: { 'cloudlycke.ccm.io/load-balancer-ip': '192.0.2.1' },
          },
        ],
      },
      JSON_PATCH,
    );
    await until('warning', async () => (await reasons('web')).includes('SyncLoadBalancerFailed'));
    const events = await api.listNamespacedEvent({ namespace: NS, fieldSelector: 'involvedObject.name=web' });
    expect(events.items.find((e) => e.reason === 'SyncLoadBalancerFailed')?.message).toBe(
      'Error syncing load balancer: annotation cloudlycke.ccm.io/load-balancer-ip "192.0.2.1" is not an address of the pool 10.99.0.1-10.99.0.3; ask for one of its addresses or remove it',
    );
    expect(await ip('web')).toBe(before);
  });
});
