/**
 * `ccm run --provider brightbox` end to end: one real kube-apiserver, the Brightbox API simulator
 * (token endpoint and /1.0 resources), and the API client read from the Secret
 * `kube-system/brightbox-credentials` with the official controller's keys.
 */
import { describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../src/kube/well-known.js';
import { SIM_CLIENT } from '../clouds/brightbox/simulator.js';
import { createNodes } from '../controlplane/fixtures.js';
import { addBrightboxWorkers } from '../helpers/cloud-nodes.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, reconcileErrors, until, untilInitialised } from '../helpers/run.js';
import {
  eventMessages,
  expectLoadBalancerDeletedEvents,
  expectLoadBalancerEnsuredEvents,
  lbService,
  untilIngress,
  untilServiceGone,
} from '../helpers/services.js';

const NS = 'default';

const world = useCloudWorld('brightbox', { services: true });
let ccm: InProcess | undefined;

const initialised = (name: string) => untilInitialised(world.api, name, 'ExternalIP');

const errors = (controller: string) => reconcileErrors(ccm, controller);

const counts = () => ({
  // A deleted load balancer shows `deleting` until Brightbox is done with it, then stays listed as
  // `deleted`, as the real API does.
  loadBalancers: [...world.sim.loadBalancers.values()].filter(
    (lb) => lb.status !== 'deleting' && lb.status !== 'deleted',
  ).length,
  cloudIPs: world.sim.cloudIPs.size,
  serverGroups: world.sim.serverGroups.size,
  firewallPolicies: world.sim.firewallPolicies.size,
  firewallRules: world.sim.firewallRules.size,
});

describe('ccm run --provider brightbox', () => {
  it('two replicas: the standby, which never lists, is Ready within 10 s as the leader is (issue 23, item 2)', () =>
    world.expectTwoReadyReplicas());

  it('initialises new Nodes; a LoadBalancer Service gets LB + mapped cloud IP + group + rule through an expired token; delete removes all', async () => {
    addBrightboxWorkers(world.sim);
    // Someone else's resources beside ours: never touched.
    world.sim.addCloudIP({ name: 'hand-made' });
    world.sim.addServerGroup({ name: 'hand-made' });
    const baseline = counts();
    ccm = await world.run();
    const t0 = Date.now();
    await createNodes(world.api, [{ name: 'srv-aaaaa' }, { name: 'worker-b' }]);
    const [a, b] = [await initialised('srv-aaaaa'), await initialised('worker-b')];
    const initialisedMs = Date.now() - t0;
    expect(a.spec?.providerID).toBe('brightbox://srv-aaaaa');
    expect(b.spec?.providerID).toBe('brightbox://srv-bbbbb');
    expect(a.metadata?.labels).toMatchObject({
      'node.kubernetes.io/instance-type': '2gb.ssd',
      'topology.kubernetes.io/zone': 'gb1-a',
      'topology.kubernetes.io/region': 'gb1',
    });
    expect(a.status?.addresses).toEqual(
      expect.arrayContaining([
        { type: 'ExternalIP', address: '10.241.0.10' },
        { type: 'ExternalDNS', address: 'srv-aaaaa.gb1.brightbox.com' },
      ]),
    );

    const t1 = Date.now();
    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    // The load balancer is still `creating` after the first pass; every token then expires.
    await until('the load balancer created', async () => world.sim.loadBalancers.size === 1);
    const tokens = world.sim.count('POST', /^\/token\/?$/);
    world.sim.expireTokens();
    const svc = await untilIngress(world.api, NS, 'web', 30_000);
    const ingressMs = Date.now() - t1;
    const [lb] = [...world.sim.loadBalancers.values()];
    const cip = [...world.sim.cloudIPs.values()].find((c) => c.mappedTo === lb?.id);
    expect(lb?.status).toBe('active');
    expect(cip).toBeDefined();
    expect(svc.status?.loadBalancer?.ingress?.map((i) => i.ip)).toEqual(
      expect.arrayContaining([cip?.publicIPv4]),
    );
    expect(svc.metadata?.finalizers).toContain(FINALIZER_LOAD_BALANCER_CLEANUP);
    expect(counts()).toEqual({
      loadBalancers: 1,
      cloudIPs: baseline.cloudIPs + 1,
      serverGroups: baseline.serverGroups + 1,
      firewallPolicies: 1,
      firewallRules: 1,
    });
    const group = [...world.sim.serverGroups.values()].find((g) => g.name !== 'hand-made');
    expect([...(group?.servers ?? [])].sort()).toEqual(['srv-aaaaa', 'srv-bbbbb']);
    expect([...(lb?.nodes ?? [])].sort()).toEqual(['srv-aaaaa', 'srv-bbbbb']);
    await expectLoadBalancerEnsuredEvents(world.api, NS, 'web');

    // The expiry cost one 401 and one new token; no warning is about it.
    expect(world.sim.count('POST', /^\/token\/?$/)).toBe(tokens + 1);
    expect(world.sim.requests.filter((r) => r.status === 401)).toHaveLength(1);
    const warnings = await eventMessages(world.api, NS, 'web', 'SyncLoadBalancerFailed');
    expect(warnings.filter((m) => !/still building load balancer/.test(m))).toEqual([]);
    expect(await errors('cloud-node')).toBe(0);

    // Expired again: a Node created now is initialised and the group follows, with no failure.
    world.sim.expireTokens();
    const failedBefore = await errors('service');
    world.sim.addServer({ id: 'srv-ccccc', ipv4: '10.241.0.12' });
    await createNodes(world.api, [{ name: 'srv-ccccc' }]);
    await initialised('srv-ccccc');
    await until('srv-ccccc in the group', async () => group?.servers.includes('srv-ccccc'), 20_000);
    expect(await errors('cloud-node')).toBe(0);
    expect(await errors('service')).toBe(failedBefore);

    await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
    await untilServiceGone(world.api, NS, 'web', 30_000);
    expect(counts()).toEqual(baseline);
    expect(world.sim.count('DELETE', `/1.0/load_balancers/${lb?.id}`)).toBe(1);
    expect([...world.sim.cloudIPs.values()].map((c) => c.name)).toEqual(['hand-made']);
    await expectLoadBalancerDeletedEvents(world.api, NS, 'web');
    for (const secret of [SIM_CLIENT.secret, ...world.sim.issuedTokens]) {
      expect(ccm?.logs.join('\n')).not.toContain(secret);
    }
    console.log(`brightbox: Nodes initialised in ${initialisedMs} ms, ingress in ${ingressMs} ms`);
  }, 60_000);
});
