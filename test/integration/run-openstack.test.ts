/**
 * `ccm run --provider openstack` end to end: one real kube-apiserver, the OpenStack simulator
 * (Keystone, Nova, Neutron, Octavia), and the official controller's cloud.conf read from the Secret
 * `kube-system/cloud-config` key `cloud.conf`, the layout of the official controller's docs.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../src/kube/well-known.js';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, reconcileErrors, until, untilInitialised } from '../helpers/run.js';
import {
  eventMessages,
  eventReasons,
  expectLoadBalancerDeletedEvents,
  lbService,
  untilIngress,
  untilServiceGone,
} from '../helpers/services.js';
import { tempDir } from '../helpers/tmp.js';

const NS = 'default';

const world = useCloudWorld('openstack', { services: true });
let ccm: InProcess | undefined;

async function start() {
  ccm = await world.run();
}

const initialised = (name: string) => untilInitialised(world.api, name);
const ingressOf = (name: string, timeoutMs?: number) => untilIngress(world.api, NS, name, timeoutMs);

const errors = (controller: string) => reconcileErrors(ccm, controller);

function octaviaCounts() {
  const o = world.sim.octavia;
  return {
    loadBalancers: o.loadBalancers.size,
    listeners: o.listeners.size,
    pools: o.pools.size,
    monitors: o.monitors.size,
    floatingIps: o.floatingIps.size,
  };
}

describe('ccm run --provider openstack', () => {
  it('two replicas: the standby, which never lists, is Ready within 10 s as the leader is (issue 23, item 2)', () =>
    world.expectTwoReadyReplicas());

  it('initialises new Nodes; a LoadBalancer Service gets its floating IP through an expired token; delete removes it all', async () => {
    const w1 = world.sim.addServer({
      name: 'k8s-worker-1',
      az: 'az-1',
      flavor: 'm1.large',
      addresses: { private: [{ addr: '10.0.0.11' }, { addr: '172.24.4.11', type: 'floating' }] },
    });
    const w2 = world.sim.addServer({
      name: 'k8s-worker-2',
      az: 'az-2',
      addresses: { private: [{ addr: '10.0.0.12' }] },
    });
    await start();
    const t0 = Date.now();
    await createNodes(world.api, [{ name: 'k8s-worker-1' }, { name: 'k8s-worker-2' }]);
    const [one, two] = [await initialised('k8s-worker-1'), await initialised('k8s-worker-2')];
    const initialisedMs = Date.now() - t0;
    expect(one.spec?.providerID).toBe(`openstack:///${w1.id}`);
    expect(two.spec?.providerID).toBe(`openstack:///${w2.id}`);
    expect(one.metadata?.labels).toMatchObject({
      'node.kubernetes.io/instance-type': 'm1.large',
      'topology.kubernetes.io/zone': 'az-1',
      'topology.kubernetes.io/region': 'RegionOne',
    });
    expect(one.status?.addresses).toEqual(
      expect.arrayContaining([
        { type: 'InternalIP', address: '10.0.0.11' },
        { type: 'ExternalIP', address: '172.24.4.11' },
      ]),
    );

    // Keystone revokes every token mid-run, right after Octavia accepted the load balancer.
    world.sim.expireTokensAfter(/\/v2\.0\/lbaas\/loadbalancers$/);
    const tokensBefore = world.sim.requestsTo(/\/auth\/tokens$/, 'POST').length;
    const t1 = Date.now();
    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    const svc = await ingressOf('web');
    const ingressMs = Date.now() - t1;
    const fips = [...world.sim.octavia.floatingIps.values()];
    expect(fips).toHaveLength(1);
    expect(svc.status?.loadBalancer?.ingress).toEqual([
      expect.objectContaining({ ip: fips[0]?.floating_ip_address as string }),
    ]);
    expect(svc.metadata?.finalizers).toContain(FINALIZER_LOAD_BALANCER_CLEANUP);
    expect(octaviaCounts()).toEqual({
      loadBalancers: 1,
      listeners: 1,
      pools: 1,
      monitors: 0,
      floatingIps: 1,
    });
    const [record] = [...world.sim.octavia.loadBalancers.values()];
    expect(svc.metadata?.annotations?.['loadbalancer.openstack.org/load-balancer-id']).toBe(record?.lb.id);
    expect(fips[0]?.port_id).toBe(record?.lb.vip_port_id);
    const reasons = await until('EnsuredLoadBalancer', async () => {
      const r = await eventReasons(world.api, NS, 'web');
      return r.includes('EnsuredLoadBalancer') ? r : undefined;
    });
    expect(reasons).toContain('EnsuringLoadBalancer');

    // The expiry was one 401, one new token, the same call again: nothing failed because of it.
    const unauthorized = world.sim.requests.filter((r) => r.status === 401);
    expect(unauthorized).toHaveLength(1);
    expect(world.sim.requestsTo(/\/auth\/tokens$/, 'POST').length).toBe(tokensBefore + 1);
    // Octavia's PENDING_CREATE was waited for within the call: no Warning on the way.
    expect(await eventMessages(world.api, NS, 'web', 'SyncLoadBalancerFailed')).toEqual([]);
    const complaints = (ccm?.logs ?? [])
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.level >= 40 && /\btoken\b|authenticat|\b401\b/i.test(l.msg));
    expect(complaints).toEqual([]);
    expect(await errors('cloud-node')).toBe(0);

    // A Node created after the expiry as well: initialised, no failed reconcile.
    world.sim.expireTokens();
    world.sim.addServer({ name: 'k8s-worker-3', addresses: { private: [{ addr: '10.0.0.13' }] } });
    await createNodes(world.api, [{ name: 'k8s-worker-3' }]);
    await initialised('k8s-worker-3');
    expect(await errors('cloud-node')).toBe(0);
    // The new Node joins the pool in one update, waited for within the call: no Warning.
    await until(
      'k8s-worker-3 in the pool',
      async () =>
        world.sim.octavia.tree(String(record?.lb.id))[0]?.members.some((m) => m.address === '10.0.0.13'),
      20_000,
    );
    await until('UpdatedLoadBalancer', async () =>
      (await eventReasons(world.api, NS, 'web')).includes('UpdatedLoadBalancer'),
    );
    expect(await eventMessages(world.api, NS, 'web', 'UpdateLoadBalancerFailed')).toEqual([]);

    await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
    await untilServiceGone(world.api, NS, 'web', 30_000);
    // One cascade delete, waited for: the finalizer went only once Octavia had removed the load
    // balancer with its listeners and pools; the floating IP ccm created is released.
    expect(
      world.sim.requestsTo(/\/v2\.0\/lbaas\/loadbalancers\/[^/?]+\?cascade=true$/, 'DELETE'),
    ).toHaveLength(1);
    expect(octaviaCounts()).toEqual({
      loadBalancers: 0,
      listeners: 0,
      pools: 0,
      monitors: 0,
      floatingIps: 0,
    });
    await expectLoadBalancerDeletedEvents(world.api, NS, 'web');
    console.log(`openstack: Nodes initialised in ${initialisedMs} ms, ingress in ${ingressMs} ms`);
  }, 60_000);

  it('Octavia ERROR → a SyncLoadBalancerFailed Warning, and a retry that finishes once it is fixed', async () => {
    world.sim.addServer({ name: 'k8s-worker-1', addresses: { private: [{ addr: '10.0.0.11' }] } });
    await start();
    await createNodes(world.api, [{ name: 'k8s-worker-1' }]);
    await initialised('k8s-worker-1');
    world.sim.octavia.failNextProvisioning = true;
    await world.api.createNamespacedService({ namespace: NS, body: lbService('broken') });
    const warning = await until(
      'the ERROR warning',
      async () =>
        (await eventMessages(world.api, NS, 'broken', 'SyncLoadBalancerFailed')).find((m) =>
          m.includes('provisioning status ERROR'),
        ),
      20_000,
    );
    expect(warning).toMatch(
      /^Error syncing load balancer: Octavia load balancer ccm_\S+ \(\S+\) is in provisioning status ERROR; ccm retries/,
    );
    const gets = () => world.sim.requestsTo(/\/v2\.0\/lbaas\/loadbalancers/, 'GET').length;
    const before = gets();
    // An operator fixes it (a failover): the retry, with the Service backoff, takes it from there.
    const record = [...world.sim.octavia.loadBalancers.values()].find(
      (r) => r.lb.provisioning_status === 'ERROR',
    );
    expect(record).toBeDefined();
    if (record) record.lb.provisioning_status = 'ACTIVE';
    const svc = await ingressOf('broken', 30_000);
    expect(gets()).toBeGreaterThan(before);
    expect(svc.status?.loadBalancer?.ingress?.[0]?.ip).toBe(
      [...world.sim.octavia.floatingIps.values()][0]?.floating_ip_address,
    );
    expect(octaviaCounts().loadBalancers).toBe(1);
    expect(await eventReasons(world.api, NS, 'broken')).toContain('EnsuredLoadBalancer');
  }, 60_000);
});

// An outside review's reproduction (RV-4, failed on 3644dc2): files the cloud config names are
// watched as the config itself is.
describe('credentials in clouds.yaml', () => {
  it('RV-4: a rotated clouds.yaml (use-clouds=true, clouds-file) is picked up like a rotated Secret', async () => {
    const dir = tempDir('ccm-rv4-');
    const cloudsFile = join(dir, 'clouds.yaml');
    const clouds = (password: string) =>
      stringify({
        clouds: {
          rv4: {
            auth: { auth_url: world.sim.authUrl, username: 'admin', password, domain_id: 'default' },
            region_name: 'RegionOne',
          },
        },
      });
    writeFileSync(cloudsFile, clouds('passw0rd'));
    const conf = `[Global]\nuse-clouds=true\nclouds-file=${cloudsFile}\ncloud=rv4\n`;
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'cloud-config-rv4', namespace: 'kube-system' },
      data: { 'cloud.conf': Buffer.from(conf).toString('base64') },
    };
    await world.api.createNamespacedSecret({ namespace: 'kube-system', body: secret }).catch(() => {});
    world.sim.addServer({ name: 'rv4-a', addresses: { private: [{ addr: '10.0.0.41' }] } });
    ccm = await world.run({ credentialsSecret: 'kube-system/cloud-config-rv4' });
    await createNodes(world.api, [{ name: 'rv4-a' }]);
    await untilInitialised(world.api, 'rv4-a');

    // The operator rotates the password: clouds.yaml (a mounted Secret) gets the new one.
    writeFileSync(cloudsFile, clouds('rotated-pw'));
    await new Promise((r) => setTimeout(r, 3000)); // ten reload periods (300 ms)
    const reloaded = ccm.logs.some((l) => l.includes('changed; using them from now on'));
    const triedNew = world.sim.requests.some((r) => JSON.stringify(r.body ?? '').includes('rotated-pw'));
    expect({ reloaded, triedNew }, 'the rotated clouds.yaml was never read again').toEqual({
      reloaded: true,
      triedNew: true,
    });
  }, 60_000);
});
