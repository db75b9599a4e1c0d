/**
 * `ccm run --provider triton` end to end: one real kube-apiserver, the CloudAPI simulator (every
 * request's signature verified with http-signature), and the credentials read from ccm's Secret
 * `kube-system/triton` (the provider's credential schema: url, account, key-material, key-passphrase).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { FINALIZER_LOAD_BALANCER_CLEANUP } from '../../src/kube/well-known.js';
import type { SimMachine } from '../clouds/triton/server.js';
import { createNodes } from '../controlplane/fixtures.js';
import { expectCloudNode, tritonWorker } from '../helpers/cloud-nodes.js';
import { tritonSecret, useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, until, untilInitialised } from '../helpers/run.js';
import {
  expectLoadBalancerDeletedEvents,
  expectLoadBalancerEnsuredEvents,
  lbService,
  untilIngress,
  untilServiceGone,
} from '../helpers/services.js';

const SERVICES = 'triton.cns.services';
const NAME_ANNOTATION = 'triton.ccm.io/cns-service-name';
const NS = 'default';

const world = useCloudWorld('triton', { services: true });
let ccm: InProcess | undefined;

beforeAll(() => {
  // The Secret `ccm run` reads here: the provider's credential schema, with its own keys.
  const secret = tritonSecret({
    url: world.sim.url,
    account: 'demo',
    keyMaterial: world.key.privateKey,
    keyPassphrase: world.key.passphrase as string,
  });
  expect(Object.keys(secret.stringData).sort()).toEqual(['account', 'key-material', 'key-passphrase', 'url']);
});

const initialised = (name: string) => untilInitialised(world.api, name);
const hostnameOf = (name: string, timeoutMs = 20_000) =>
  untilIngress(world.api, NS, name, timeoutMs, 'hostname');
const nodePort = async (name: string) =>
  (await world.api.readNamespacedService({ name, namespace: NS })).spec?.ports?.[0]?.nodePort;
const services = (m: SimMachine) => m.tags[SERVICES];
const ownerTags = (m: SimMachine) => Object.keys(m.tags).filter((k) => k.startsWith('ccm.cns.'));

describe('ccm run --provider triton', () => {
  it('two replicas: the standby, which never lists, is Ready within 10 s as the leader is (issue 23, item 2)', () =>
    world.expectTwoReadyReplicas());

  it('initialises new Nodes; Services tag exactly their machines, get the CNS host name, share a machine and leave the rest on delete', async () => {
    const m1 = world.sim.addMachine(tritonWorker('worker-1', { [SERVICES]: 'manual:8080', role: 'web' }));
    const m2 = world.sim.addMachine({ name: 'worker-2', ips: ['10.10.0.12'] });
    // A machine of the account that is no Node of this cluster.
    const m3 = world.sim.addMachine({ name: 'db', ips: ['10.10.0.13'], tags: { [SERVICES]: 'db:5432' } });
    const untouched = structuredClone(m3.tags);
    // Nothing of the machine running the tests leaks in: the Secret is the only source.
    ccm = await world.run({ env: {} });
    const t0 = Date.now();
    await createNodes(world.api, [{ name: 'worker-1' }, { name: 'worker-2' }]);
    const [one, two] = [await initialised('worker-1'), await initialised('worker-2')];
    const initialisedMs = Date.now() - t0;
    expect(two.spec?.providerID).toBe(`triton://${m2.id}`);
    expectCloudNode(one, {
      providerID: `triton://${m1.id}`,
      labels: { 'node.kubernetes.io/instance-type': 'k8s-8g', 'topology.kubernetes.io/region': 'us-test-1' },
      addresses: [
        { type: 'InternalIP', address: '10.10.0.11' },
        { type: 'ExternalIP', address: '165.225.130.11' },
        { type: 'Hostname', address: 'worker-1' },
      ],
    });

    const t1 = Date.now();
    await world.api.createNamespacedService({
      namespace: NS,
      body: lbService('web', NS, { [NAME_ANNOTATION]: 'web' }),
    });
    const web = await hostnameOf('web');
    const ingressMs = Date.now() - t1;
    expect(web.status?.loadBalancer?.ingress).toEqual([
      expect.objectContaining({ hostname: `web.svc.${world.sim.account.id}.us-test-1.triton.zone` }),
    ]);
    expect(web.metadata?.finalizers).toContain(FINALIZER_LOAD_BALANCER_CLEANUP);
    const webPort = await nodePort('web');
    await until('web entries on both machines', async () => services(m2) === `web:${webPort}`);
    expect(services(m1)).toBe(`manual:8080,web:${webPort}`);
    expect(m3.tags).toEqual(untouched);
    await expectLoadBalancerEnsuredEvents(world.api, NS, 'web');

    // A second Service on the same machines: both entries stay.
    await world.api.createNamespacedService({
      namespace: NS,
      body: lbService('api', NS, { [NAME_ANNOTATION]: 'api' }),
    });
    const api2 = await hostnameOf('api');
    expect(api2.status?.loadBalancer?.ingress?.[0]?.hostname).toBe(
      `api.svc.${world.sim.account.id}.us-test-1.triton.zone`,
    );
    const apiPort = await nodePort('api');
    await until('api entries', async () => services(m2) === `web:${webPort},api:${apiPort}`);
    expect(services(m1)).toBe(`manual:8080,web:${webPort},api:${apiPort}`);
    expect(ownerTags(m1)).toHaveLength(2);

    // Deleting one leaves the other's entries, the person's entry and every other tag.
    await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
    await untilServiceGone(world.api, NS, 'web', 20_000);
    expect(services(m1)).toBe(`manual:8080,api:${apiPort}`);
    expect(services(m2)).toBe(`api:${apiPort}`);
    expect(ownerTags(m1)).toHaveLength(1);
    expect(m1.tags.role).toBe('web');
    expect(m3.tags).toEqual(untouched);
    await expectLoadBalancerDeletedEvents(world.api, NS, 'web');

    // The last one gone: what ccm put on the machines is gone, nothing else.
    await world.api.deleteNamespacedService({ name: 'api', namespace: NS });
    await untilServiceGone(world.api, NS, 'api', 20_000);
    expect(m1.tags).toEqual({ [SERVICES]: 'manual:8080', role: 'web' });
    expect(ownerTags(m2)).toEqual([]);
    expect(services(m2) ?? '').toBe('');
    expect(m3.tags).toEqual(untouched);
    // Every request was signed with the Secret's (encrypted ECDSA) key and verified; none refused.
    expect(
      world.sim.requests
        .filter((r) => !(r.status < 400 && r.algorithm === 'ECDSA-SHA256'))
        .map((r) => `${r.method} ${r.path} ${r.status}`),
    ).toEqual([]);
    const logs = ccm.logs.join('\n');
    expect(logs).not.toContain('a passphrase nobody may see');
    expect(logs).not.toContain(world.key.privateKey.split('\n')[1]?.slice(0, 24) ?? 'never');
    console.log(`triton: Nodes initialised in ${initialisedMs} ms, ingress in ${ingressMs} ms`);
  }, 60_000);
});
