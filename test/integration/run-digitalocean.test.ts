/**
 * `ccm run --provider digitalocean` end to end: one real kube-apiserver, the DigitalOcean simulator
 * (every request and answer checked against DigitalOcean's OpenAPI document), and the token read from
 * the Secret exactly as DigitalOcean's own getting-started guide writes it.
 */
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../src/kube/well-known.js';
import { createNodes, deleteAllNodes } from '../controlplane/fixtures.js';
import { CCM_USER } from '../controlplane/harness.js';
import { DIGITALOCEAN_WORKER_1, expectCloudNode } from '../helpers/cloud-nodes.js';
import { digitalOceanSecret, useCloudWorld } from '../helpers/cloud-world.js';
import { setLeaseHolder } from '../helpers/kube-admin.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import { type InProcess, leaderElection, until, untilInitialised, untilLeading } from '../helpers/run.js';
import {
  eventReasons,
  expectLoadBalancerDeletedEvents,
  lbService,
  MERGE_PATCH,
  serviceControllerEvents,
  untilIngress,
  untilServiceGone,
} from '../helpers/services.js';

const LB_ID_ANNOTATION = 'kubernetes.digitalocean.com/load-balancer-id';
const NS = 'default';

// The token is read from the Secret exactly as DigitalOcean's getting-started guide writes it.
const world = useCloudWorld('digitalocean', {
  services: true,
  afterEachTest: (w) => {
    expect(w.sim.takeViolations()).toEqual([]);
  },
});
let ccm: InProcess | undefined;

async function start(secret: string | undefined = 'kube-system/digitalocean') {
  ccm = await world.run({ credentialsSecret: secret });
}

const node = (name: string): Promise<V1Node> => world.api.readNode({ name });
const tainted = (n: V1Node) =>
  (n.spec?.taints ?? []).some((t) => t.key === 'node.cloudprovider.kubernetes.io/uninitialized');

describe('ccm run --provider digitalocean', () => {
  it('two replicas: the standby, which never lists, is Ready within 10 s as the leader is', () =>
    world.expectTwoReadyReplicas());

  it("gives a Node whose droplet was recreated under the same name the new droplet's identity, not the cached listing's (issue 23, item 5)", async () => {
    const [old] = world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.21' });
    // Nothing refreshes the listing on a schedule during the test: only the rule under test can.
    ccm = await world.run({
      controllerOptions: {
        concurrency: 4,
        deletionGracePeriodMs: 0,
        nodeMonitorPeriodMs: 200,
        nodeStatusUpdateFrequencyMs: 600_000,
        cloudListPeriodMs: 600_000,
      },
    });
    await createNodes(world.api, [{ name: 'worker-1' }]);
    expect((await untilInitialised(world.api, 'worker-1')).spec?.providerID).toBe(
      `digitalocean://${old?.id}`,
    );

    // The Node is deleted and its droplet recreated with the same name: a new id, a new address.
    await world.api.deleteNode({ name: 'worker-1' });
    await until(
      'worker-1 gone',
      async () => (await world.api.listNode({ fieldSelector: 'metadata.name=worker-1' })).items.length === 0,
    );
    world.sim.removeDroplet(old?.id as number);
    const [recreated] = world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.22' });
    await createNodes(world.api, [{ name: 'worker-1' }]);
    const second = await untilInitialised(world.api, 'worker-1');
    expect(second.spec?.providerID).toBe(`digitalocean://${recreated?.id}`);
    expect(second.status?.addresses).toContainEqual({ type: 'InternalIP', address: '10.114.0.22' });
    expect(second.status?.addresses).not.toContainEqual({ type: 'InternalIP', address: '10.114.0.21' });
  });

  it('without --credentials-secret or a token, reads the Secret secret create writes, and says so', async () => {
    world.sim.addDroplets({ name: 'worker-s', privateIP: '10.114.0.8' });
    await start(undefined);
    await createNodes(world.api, [{ name: 'worker-s' }]);
    await untilInitialised(world.api, 'worker-s');
    expect(
      ccm?.logs.some((l) => JSON.parse(l).msg === 'cloud credentials from Secret kube-system/digitalocean'),
    ).toBe(true);
  });

  it('initialises new Nodes, gives a LoadBalancer Service the LB IP once active, and deletes the LB with the Service', async () => {
    const [w1, w2] = world.sim.addDroplets(DIGITALOCEAN_WORKER_1, {
      name: 'worker-2',
      size: 's-2vcpu-4gb',
      region: 'fra1',
      privateIP: '10.114.0.3',
    });
    await start();
    const writesBefore = (await world.cp.writes(CCM_USER)).length;
    const t0 = Date.now();
    // Created after start: the watch shows them, no provider ID yet (matched by droplet name).
    await createNodes(world.api, [{ name: 'worker-1' }, { name: 'worker-2' }]);
    const one = await untilInitialised(world.api, 'worker-1');
    const two = await untilInitialised(world.api, 'worker-2');
    const initialisedMs = Date.now() - t0;
    expectCloudNode(one, {
      providerID: `digitalocean://${w1?.id}`,
      labels: {
        'node.kubernetes.io/instance-type': 's-4vcpu-8gb',
        'beta.kubernetes.io/instance-type': 's-4vcpu-8gb',
        'topology.kubernetes.io/region': 'fra1',
      },
      addresses: [
        { type: 'InternalIP', address: '10.114.0.2' },
        { type: 'ExternalIP', address: '203.0.113.21' },
        { type: 'Hostname', address: 'worker-1' },
      ],
    });
    expectCloudNode(two, {
      providerID: `digitalocean://${w2?.id}`,
      addresses: [
        { type: 'InternalIP', address: '10.114.0.3' },
        { type: 'Hostname', address: 'worker-2' },
      ],
    });
    // One address write per Node: the watch event of the taint's removal, which comes before the
    // status write's, did not make ccm write the same addresses again.
    await new Promise((r) => setTimeout(r, 1000));
    const statusWrites = (await world.cp.writes(CCM_USER))
      .slice(writesBefore)
      .filter((w) => w.objectRef?.resource === 'nodes' && w.objectRef.subresource === 'status');
    expect(statusWrites.map((w) => w.objectRef?.name).sort()).toEqual(['worker-1', 'worker-2']);
    // Every call carried the Secret's token.
    expect(world.sim.requests.every((r) => r.authorization === `Bearer ${world.sim.token}`)).toBe(true);

    const t1 = Date.now();
    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    // Created `new`: no address until DigitalOcean reports it active, on the provider's retry.
    await until('the load balancer created', async () => world.sim.loadBalancers.size === 1);
    const [lb] = [...world.sim.loadBalancers.values()];
    const svc = await untilIngress(world.api, NS, 'web', 30_000);
    const ingressMs = Date.now() - t1;
    expect(lb?.status).toBe('active');
    expect(svc.status?.loadBalancer?.ingress).toEqual([expect.objectContaining({ ip: lb?.ip as string })]);
    expect(svc.metadata?.finalizers).toContain(FINALIZER_LOAD_BALANCER_CLEANUP);
    expect(svc.metadata?.annotations?.[LB_ID_ANNOTATION]).toBe(lb?.id);
    expect([...((lb?.droplet_ids ?? []) as number[])].sort()).toEqual([w1?.id, w2?.id].sort());
    expect(lb?.tags).toEqual([expect.stringMatching(/^k8s:/)]);
    const create = world.sim.requestsTo('POST', '/v2/load_balancers');
    expect(create).toHaveLength(1);
    expect(create[0]?.status).toBe(202);
    const reasons = await until('EnsuredLoadBalancer', async () => {
      const r = await eventReasons(world.api, NS, 'web');
      return r.includes('EnsuredLoadBalancer') ? r : undefined;
    });
    expect(reasons).toContain('EnsuringLoadBalancer');
    // The one retry was the `new` state, said as such.
    const warnings = (await serviceControllerEvents(world.api, NS, 'web'))
      .filter((e) => e.type === 'Warning')
      .map((e) => e.message);
    expect(warnings.length).toBeGreaterThanOrEqual(1);
    expect(
      warnings.filter((m) => !/is still being set up at DigitalOcean \(status new\)/.test(m ?? '')),
    ).toEqual([]);
    // In the log a normal create is news, not a warning: "being set up" at info, then "is ready".
    const lines = (ccm?.logs ?? []).map((l) => JSON.parse(l) as { level: number; msg: string });
    const aboutWeb = lines.filter((l) => l.msg.startsWith(`load balancer of Service ${NS}/web`));
    expect(aboutWeb.filter((l) => l.level >= 40)).toEqual([]);
    expect(aboutWeb.map((l) => l.msg.replace(/: .*/, ''))).toEqual([
      `load balancer of Service ${NS}/web`,
      `load balancer of Service ${NS}/web is ready`,
    ]);

    await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
    await untilServiceGone(world.api, NS, 'web', 20_000);
    expect(world.sim.loadBalancers.size).toBe(0);
    expect(world.sim.requestsTo('DELETE', `/v2/load_balancers/${lb?.id}`)).toHaveLength(1);
    await expectLoadBalancerDeletedEvents(world.api, NS, 'web');
    console.log(`digitalocean: Nodes initialised in ${initialisedMs} ms, ingress in ${ingressMs} ms`);
  }, 50_000);

  it('a one-Node kubeadm cluster, its Node excluded from load balancers: the load balancer is made in the configured region without backends, and why is said once', async () => {
    world.sim.addDroplets({ name: 'cp-1', region: 'fra1', privateIP: '10.114.0.40' });
    // The region as the Secret holds it (`ccm secret create --provider digitalocean --set region=fra1`).
    const secret = digitalOceanSecret(world.sim.token);
    await world.api
      .createNamespacedSecret({
        namespace: 'kube-system',
        body: { ...secret, stringData: { ...secret.stringData, region: 'fra1' } },
      })
      .catch(() =>
        world.api.patchNamespacedSecret(
          { name: 'digitalocean', namespace: 'kube-system', body: { stringData: { region: 'fra1' } } },
          MERGE_PATCH,
        ),
      );
    try {
      await start();
      // As kubeadm registers its only Node.
      await createNodes(world.api, [
        {
          name: 'cp-1',
          labels: {
            'node-role.kubernetes.io/control-plane': '',
            'node.kubernetes.io/exclude-from-external-load-balancers': '',
          },
        },
      ]);
      await untilInitialised(world.api, 'cp-1');
      await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
      const svc = await untilIngress(world.api, NS, 'web', 30_000);
      const [lb] = [...world.sim.loadBalancers.values()];
      expect(svc.status?.loadBalancer?.ingress).toEqual([expect.objectContaining({ ip: lb?.ip as string })]);
      expect(lb?.region).toMatchObject({ slug: 'fra1' });
      expect(lb?.droplet_ids).toEqual([]);

      // Synced once more (its `new` state was a retry already), by a change of the Service: still one
      // log line about the backends, and one Event.
      // (Its load balancer may be read from a listing of the last 10 s: a sync is told by ccm's count.)
      const looks = async () =>
        (await (ccm as InProcess).handle.metrics.reconciles.get()).values
          .filter((v) => v.labels.controller === 'service')
          .reduce((n, v) => n + v.value, 0);
      const before = await looks();
      await world.api.patchNamespacedService(
        { name: 'web', namespace: NS, body: { metadata: { annotations: { 'example.com/touched': '1' } } } },
        MERGE_PATCH,
      );
      await until('the Service synced again', async () => (await looks()) > before, 20_000);
      const unavailable = (await serviceControllerEvents(world.api, NS, 'web')).filter(
        (e) => e.reason === 'UnAvailableLoadBalancer',
      );
      expect(unavailable.map((e) => [e.type, e.message])).toEqual([
        [
          'Warning',
          'There are no available nodes for LoadBalancer: 1 Node(s) labelled node.kubernetes.io/exclude-from-external-load-balancers (kubeadm labels control-plane Nodes so): cp-1',
        ],
      ]);
      expect(ccm?.logs.filter((l) => l.includes('has no backend Node'))).toHaveLength(1);

      // A worker joins: it becomes the load balancer's backend.
      const [w1] = world.sim.addDroplets({ name: 'worker-1', region: 'fra1', privateIP: '10.114.0.41' });
      await createNodes(world.api, [{ name: 'worker-1' }]);
      await until(
        'worker-1 a backend',
        async () =>
          ((lb?.id && world.sim.loadBalancers.get(lb.id as string)?.droplet_ids) as number[])?.includes(
            w1?.id as number,
          ),
        30_000,
      );

      await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
      await untilServiceGone(world.api, NS, 'web', 20_000);
    } finally {
      await world.api.patchNamespacedSecret(
        { name: 'digitalocean', namespace: 'kube-system', body: { stringData: { region: null } } },
        MERGE_PATCH,
      );
    }
  }, 90_000);

  it("a Lease handover while the old leader's load balancer create is on its way: one load balancer is kept, the Service syncs, and none is left after it is deleted", async () => {
    world.sim.addDroplets(
      { name: 'w1', size: 's-2vcpu-4gb', region: 'fra1', privateIP: '10.114.0.2' },
      { name: 'w2', size: 's-2vcpu-4gb', region: 'fra1', privateIP: '10.114.0.3' },
    );
    const lease = { durationMs: 2000, renewDeadlineMs: 1500, retryPeriodMs: 300, namespace: 'kube-system' };
    const name = 'do-handover';
    const input = { leaderElect: true, logLevel: 'info', lease: { ...lease, name } } as const;
    const a = await world.run(input, { identity: 'do-a' });
    let b: InProcess | undefined;
    try {
      await untilLeading(a, 20_000);
      b = await world.run(input, { identity: 'do-b' });
      const next = b;
      await until('b standing by', async () => (await leaderElection(next)).startsWith('standby'), 20_000);
      await createNodes(world.api, [{ name: 'w1' }, { name: 'w2' }]);
      await untilInitialised(world.api, 'w1');
      await untilInitialised(world.api, 'w2');
      // A slow DigitalOcean API: A's create is answered (and made) 6 s after it was sent.
      world.sim.fault({ method: 'POST', path: '/v2/load_balancers', delayMs: 6000 });
      await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
      await until(
        'A sent its create',
        async () => world.sim.requestsTo('POST', '/v2/load_balancers').length === 1,
      );
      await setLeaseHolder(world.cp, name, 'do-b', 2);
      await untilLeading(next, 10_000);
      // B creates its own; A's lands after it: two of ccm's with one name, one of them an extra.
      await until(
        'both creates made',
        async () =>
          world.sim.requestsTo('POST', '/v2/load_balancers').every((r) => r.status === 202) &&
          world.sim.requestsTo('POST', '/v2/load_balancers').length === 2,
        20_000,
      );
      const svc = await untilIngress(world.api, NS, 'web', 40_000);
      await until('the extra load balancer deleted', async () => world.sim.loadBalancers.size === 1, 30_000);
      const [kept] = [...world.sim.loadBalancers.values()];
      expect(svc.metadata?.annotations?.[LB_ID_ANNOTATION]).toBe(kept?.id);
      expect(svc.status?.loadBalancer?.ingress).toEqual([
        expect.objectContaining({ ip: kept?.ip as string }),
      ]);

      await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
      await untilServiceGone(world.api, NS, 'web', 30_000);
      expect(world.sim.loadBalancers.size).toBe(0);
    } finally {
      // The standby first: stopped after the leader, it would take the released Lease meanwhile.
      await a.stop();
      await b?.stop();
    }
  }, 120_000);

  // An invalid token from the environment: nothing re-reads it, so only a restart could fix it. (One from
  // the watched Secret does not end the start: run-digitalocean-refused-at-start.test.ts.)
  it('an invalid token (DO_ACCESS_TOKEN): one clear line and exit 2 at start; revoked mid-run: a clear log line and no writes', async () => {
    world.sim.addDroplets({ name: 'worker-3', privateIP: '10.114.0.4' });
    await createNodes(world.api, [{ name: 'worker-3' }]);
    const run = await world.ccm(['run', '--leader-elect=false', '--secure-port', '-1'], {
      cloudFlags: [],
      env: { DO_OVERRIDE_URL: world.sim.url, DO_ACCESS_TOKEN: 'dop_v1_revoked000000000000000000' },
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/token is invalid or revoked; create one with read and write scope/);
    expect(run.stderr).not.toMatch(/dop_v1_revoked|\bat .*\.js:\d+/);
    expect(run.writes).toEqual([]);
    expect(tainted(await node('worker-3'))).toBe(true);

    // Mid-run: the Secret's token is replaced by a revoked one; ccm reloads it and stops writing.
    await deleteAllNodes(world.api);
    await start();
    await world.api.patchNamespacedSecret(
      {
        name: 'digitalocean',
        namespace: 'kube-system',
        body: { stringData: { 'access-token': 'dop_v1_revoked000000000000000000' } },
      },
      MERGE_PATCH,
    );
    try {
      await until('the reload', async () =>
        ccm?.logs.some((l) => l.includes('credentials from Secret kube-system/digitalocean changed')),
      );
      const before = (await world.cp.writes(CCM_USER)).length;
      await createNodes(world.api, [{ name: 'worker-3' }]);
      const line = await until('the 401 log line', async () =>
        ccm?.logs.find((l) => l.includes('token is invalid or revoked')),
      );
      const parsed = JSON.parse(line) as { level: number | string; msg: string };
      expect(parsed.msg).toMatch(/cloud listing failed: .*token is invalid or revoked/);
      expect(line).not.toContain('dop_v1_revoked');
      await new Promise((r) => setTimeout(r, 1500));
      expect((await world.cp.writes(CCM_USER)).slice(before)).toEqual([]);
      expect(tainted(await node('worker-3'))).toBe(true);
    } finally {
      await world.api.patchNamespacedSecret(
        {
          name: 'digitalocean',
          namespace: 'kube-system',
          body: { stringData: { 'access-token': world.sim.token } },
        },
        MERGE_PATCH,
      );
    }
  }, 40_000);
});

conformsToDigitalOceanOpenApi();
