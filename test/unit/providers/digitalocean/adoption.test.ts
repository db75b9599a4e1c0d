import { beforeEach, describe, expect, it } from 'vitest';
import { adoptable } from '../../../../src/controllers/service-sync.js';
import type {
  LoadBalancerAdoption,
  LoadBalancerRequest,
  LoadBalancers,
} from '../../../../src/providers/types.js';
import { quickProvider, useDigitalOceanSim } from './helpers.js';

/**
 * Finding the load balancers of digitalocean-cloud-controller-manager (do/loadbalancers.go: named
 * DefaultLoadBalancerName or do-loadbalancer-name, tagged k8s:<DO_CLUSTER_ID> only when that is set,
 * recorded in kubernetes.digitalocean.com/load-balancer-id), and using one handed over.
 */
const UID = '0b5f5a57-1b3c-4d2e-9f60-7c8d9e0f1a2b';
const NAME = 'a0b5f5a571b3c4d2e9f607c8d9e0f1a2';

const sim = useDigitalOceanSim();
let adoption: LoadBalancerAdoption;
let lbs: LoadBalancers;

beforeEach(() => {
  const provider = quickProvider(sim);
  lbs = provider.loadBalancers as LoadBalancers;
  adoption = lbs.adoption as LoadBalancerAdoption;
});

function request(annotations: Record<string, string> = {}, adoptedID?: string): LoadBalancerRequest {
  return {
    name: NAME,
    clusterID: 'k8s-ccm',
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: [],
    ...(adoptedID ? { adoptedID } : {}),
    service: {
      namespace: 'default',
      name: 'web',
      uid: UID,
      annotations,
      loadBalancerSourceRanges: [],
      externalTrafficPolicy: 'Cluster',
      sessionAffinity: 'None',
      ipFamilies: ['IPv4'],
    },
  };
}

describe('DigitalOcean: the official controller’s load balancers', () => {
  it('by name without a k8s: tag on a self-managed cluster; never ccm’s own of the same name, nor another cluster’s', async () => {
    sim.addLoadBalancer({ name: NAME, tags: ['k8s:k8s-ccm'] });
    sim.addLoadBalancer({ name: NAME, tags: ['k8s:other-doks-cluster'] });
    const official = sim.addLoadBalancer({ name: NAME, tags: [] });
    const found = await adoption.findOfficial([request()], '');
    expect(found.get(UID)).toEqual({ id: official.id, name: NAME, addresses: [official.ip], tags: [] });
  });

  it('with DO_CLUSTER_ID (--official-cluster-name): only the one tagged k8s:<it>', async () => {
    sim.addLoadBalancer({ name: NAME, tags: [] });
    const official = sim.addLoadBalancer({ name: NAME, tags: ['k8s:doks-1'] });
    expect((await adoption.findOfficial([request()], 'doks-1')).get(UID)?.id).toBe(official.id);
    expect((await adoption.findOfficial([request()], 'doks-2')).size).toBe(0);
  });

  it('by the load-balancer-id annotation first, by do-loadbalancer-name otherwise; either only when named by the Service’s UID or shown in its status (issue 43, item 7)', async () => {
    const byId = sim.addLoadBalancer({ name: 'renamed-by-hand', tags: [] });
    const byName = sim.addLoadBalancer({ name: 'shop-lb', tags: [] });
    const defaultNamed = sim.addLoadBalancer({ name: NAME, tags: [] });
    const shown = (lb: Record<string, unknown>) => ({ ownIngress: [lb.ip as string], others: [] });
    const find = async (req: LoadBalancerRequest) => (await adoption.findOfficial([req], '')).get(UID)?.id;
    const id = (lb: Record<string, unknown>) => ({
      'kubernetes.digitalocean.com/load-balancer-id': lb.id as string,
    });
    const named = { 'service.beta.kubernetes.io/do-loadbalancer-name': 'shop-lb' };
    // The annotations are anyone's who may edit the Service: they alone find nothing.
    expect(await find(request(id(byId)))).toBeUndefined();
    expect(await find({ ...request(named), name: 'a-uid-that-has-no-load-balancer' })).toBeUndefined();
    // The default name of the Service's UID, which no one chooses.
    expect(await find(request(id(defaultNamed)))).toBe(defaultNamed.id);
    expect(await find(request(named))).toBe(defaultNamed.id);
    // The Service's status, which only a controller writes, shows it.
    expect(await find({ ...request(id(byId)), claims: shown(byId) })).toBe(byId.id);
    expect(await find({ ...request(named), name: 'a-uid-that-has-none', claims: shown(byName) })).toBe(
      byName.id,
    );
  });

  it('no tag is added (DigitalOcean takes tags at creation only), and none can be changed', async () => {
    const lb = sim.addLoadBalancer({ name: NAME, tags: [] });
    const found = (await adoption.findOfficial([request()], '')).get(UID);
    if (!found) throw new Error('not found');
    expect(adoption.ownershipTags(found, 'k8s-ccm').add).toEqual([]);
    await adoption.setTags(found, []);
    await expect(adoption.setTags(found, ['k8s:k8s-ccm'])).rejects.toThrow(/cannot change the tags/);
    expect(sim.requests.filter((r) => r.method !== 'GET')).toEqual([]);
    expect(lb.tags).toEqual([]);
  });

  it('a handed-over load balancer is the Service’s, untagged, under its own name; one that is gone is not', async () => {
    const lb = sim.addLoadBalancer({ name: 'shop-lb', tags: [] });
    const handed = request(
      { 'kubernetes.digitalocean.com/load-balancer-id': lb.id as string },
      lb.id as string,
    );
    expect(await lbs.get(handed)).toEqual({
      ingress: [{ ip: lb.ip }],
      annotations: { 'kubernetes.digitalocean.com/load-balancer-id': lb.id },
    });
    // Without the hand-over, the official one is not ccm's.
    expect(
      await lbs.get(request({ 'kubernetes.digitalocean.com/load-balancer-id': lb.id as string })),
    ).toBeUndefined();
    sim.loadBalancers.delete(lb.id as string);
    expect(await lbs.get(request({}, lb.id as string))).toBeUndefined();
  });
});

describe('DigitalOcean: the backends of the official controller’s load balancer (review adopt, finding 2)', () => {
  it('a droplet the account no longer has is departed: no one’s Node, it neither cancels nor makes the adoption', async () => {
    const [d1, d2] = sim.addDroplets({ name: 'n1' }, { name: 'n2' });
    const ids = [d1?.id as number, d2?.id as number];
    const lb = sim.addLoadBalancer({ name: NAME, tags: [], droplet_ids: ids });
    sim.removeDroplet(ids[1] as number);
    const found = (await adoption.findOfficial([request()], '', undefined, { withBackends: true })).get(UID);
    expect({ backends: found?.backends, departed: found?.departed }).toEqual({
      backends: [`digitalocean://${ids[0]}`],
      departed: [`digitalocean://${ids[1]}`],
    });
    const node = (id: number) => ({ providerID: `digitalocean://${id}` });
    expect(found && adoptable(found, [node(ids[0] as number)])).toBe(true);
    // A droplet that still exists and is no Node of this cluster still refuses it.
    const [other] = sim.addDroplets({ name: 'elsewhere' });
    lb.droplet_ids = [ids[0], other?.id];
    const again = (await adoption.findOfficial([request()], '', undefined, { withBackends: true })).get(UID);
    expect(again && adoptable(again, [node(ids[0] as number)])).toBe(false);
    // All departed: nothing says it is this cluster's.
    lb.droplet_ids = [ids[1]];
    const gone = (await adoption.findOfficial([request()], '', undefined, { withBackends: true })).get(UID);
    expect(gone && adoptable(gone, [node(ids[0] as number)])).toBe(false);
  });
});
