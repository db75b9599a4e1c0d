/**
 * The route controller on Triton: the static routes of the Nodes' fabric network (UpdateFabricNetwork),
 * owned through tags on the Nodes' machines, against a real kube-apiserver and the CloudAPI simulator.
 */
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FabricNetworks, type SimFabricNetwork } from '../clouds/triton/fabric-networks.js';
import type { TritonSim } from '../clouds/triton/server.js';
import { internalIPs, nodeObject } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { moreRoutePasses, routeControllerInput, until } from '../helpers/run.js';

const CLUSTER = 'triton-routes';
// The credentials Secret kube-system/triton of `ccm run`, signed with an ECDSA key without passphrase.
const world = useCloudWorld('triton', { keep: true, key: { type: 'ecdsa', bits: 256 } });
let api: CoreV1Api;
let sim: TritonSim;
let network: SimFabricNetwork;

beforeAll(() => {
  ({ api, sim } = world);
});
beforeEach(async () => {
  await api.deleteCollectionNode({});
  sim.machines.clear();
  sim.fabrics.networks.clear();
  sim.fabrics.beforeUpdate = undefined;
  sim.requests.length = 0;
  sim.tagDelayMs = 0;
  network = sim.fabrics.add({ vlan: 2, subnet: '192.168.128.0/22' });
});

/** ccm run --controllers route on the world's Secret, the route network from TRITON_ROUTE_NETWORK. */
function start(
  env: Record<string, string> = { TRITON_ROUTE_NETWORK: `2/${network.id}` },
  clusterCIDR = '10.244.0.0/16',
) {
  return world.run({ ...routeControllerInput(CLUSTER, clusterCIDR), env });
}

/** A worker machine at 192.168.128.<n> and its Node, provider ID set, Pod CIDR 10.244.<n>.0/24. */
async function worker(
  n: number,
  podCIDR: string | string[] = `10.244.${n}.0/24`,
  ips = [`192.168.128.${n}`],
) {
  const machine = sim.addMachine({ name: `w${n}`, ips });
  const node = nodeObject({
    name: `w${n}`,
    tainted: false,
    providerID: `triton://${machine.id}`,
    addresses: internalIPs(...ips),
    podCIDR,
  });
  await api.createNode({ body: node });
  return machine;
}

/** Until Node `name` is NoRouteCreated and a FailedToCreateRoute event says `why`. */
async function untilNoRoute(name: string, why: string): Promise<void> {
  await until(
    `${name} NoRouteCreated`,
    async () => reason(await api.readNode({ name })) === 'NoRouteCreated',
  );
  await until('the event', async () =>
    (await api.listNamespacedEvent({ namespace: 'default' })).items.some(
      (e) => e.reason === 'FailedToCreateRoute' && e.message?.includes(why),
    ),
  );
}

/** Worker `n` and ccm run, once its Node is RouteCreated. */
async function routedWorker(n: number) {
  const machine = await worker(n);
  await start();
  await routeCreated(`w${n}`);
  return machine;
}

const reason = (node: V1Node) =>
  node.status?.conditions?.find((c) => c.type === 'NetworkUnavailable')?.reason;
const routeCreated = (name: string) =>
  until(`${name} RouteCreated`, async () => reason(await api.readNode({ name })) === 'RouteCreated');

describe('route controller, Triton (fabric network routes)', () => {
  it('routes each Pod CIDR via its Node on the fabric network, tags the machines, and a deleted Node loses its route; foreign routes stay', async () => {
    // Someone's own route, and one through a machine tagged for another cluster.
    const other = sim.addMachine({
      name: 'other',
      ips: ['192.168.128.50'],
      tags: { 'ccm-cluster': 'other', 'ccm-route-10.244.50.0_24': 'other' },
    });
    network.routes = { '10.244.50.0/24': '192.168.128.50', '10.244.60.0/24': '192.168.128.60' };
    const m11 = await worker(11);
    await worker(12);
    await start();
    await routeCreated('w11');
    await routeCreated('w12');
    expect(network.routes).toEqual({
      '10.244.50.0/24': '192.168.128.50',
      '10.244.60.0/24': '192.168.128.60',
      '10.244.11.0/24': '192.168.128.11',
      '10.244.12.0/24': '192.168.128.12',
    });
    expect(m11.tags).toEqual({ 'ccm-cluster': CLUSTER, 'ccm-route-10.244.11.0_24': CLUSTER });
    const puts = sim.requests.filter((r) => r.method === 'PUT' && r.path.includes('/fabrics/'));
    expect(puts).toHaveLength(2);

    await api.deleteNode({ name: 'w11' });
    await until('the route of w11 deleted', async () => network.routes['10.244.11.0/24'] === undefined);
    await until('its tag removed', async () => m11.tags['ccm-route-10.244.11.0_24'] === undefined);
    expect(network.routes).toEqual({
      '10.244.50.0/24': '192.168.128.50',
      '10.244.60.0/24': '192.168.128.60',
      '10.244.12.0/24': '192.168.128.12',
    });
    expect(other.tags).toEqual({ 'ccm-cluster': 'other', 'ccm-route-10.244.50.0_24': 'other' });
  });

  it('tags that CloudAPI applies late: the route is claimed again, not refused, and no route is written twice', async () => {
    sim.tagDelayMs = 700;
    await worker(11);
    const run = await start();
    await routeCreated('w11');
    await until('the tag shows', async () => [...sim.machines.values()][0]?.tags['ccm-cluster'] === CLUSTER);
    await moreRoutePasses(run, 2);
    expect(network.routes).toEqual({ '10.244.11.0/24': '192.168.128.11' });
    expect(sim.requests.filter((r) => r.method === 'PUT' && r.path.includes('/fabrics/'))).toHaveLength(1);
    expect(reason(await api.readNode({ name: 'w11' }))).toBe('RouteCreated');
  });

  it('a CIDR the network already routes elsewhere is NoRouteCreated and left as it is', async () => {
    network.routes = { '10.244.11.0/24': '192.168.128.99' };
    await worker(11);
    await start();
    await until(
      'NoRouteCreated',
      async () => reason(await api.readNode({ name: 'w11' })) === 'NoRouteCreated',
    );
    expect(network.routes).toEqual({ '10.244.11.0/24': '192.168.128.99' });
  });

  it('a machine destroyed before its Node is deleted leaks no route: the route is a blackhole, deleted with the Node, and its CIDR routed to the next Node given it', async () => {
    const m = await routedWorker(14);
    // Scale-down: the machine is destroyed first (CloudAPI keeps it as state "deleted", listed only
    // with tombstone), then the cloud-node-lifecycle controller deletes its Node.
    m.state = 'deleted';
    await api.deleteNode({ name: 'w14' });
    await until('the dead route deleted', async () => network.routes['10.244.14.0/24'] === undefined);
    // Node IPAM gives the freed CIDR to a new Node on a new machine.
    await worker(15, '10.244.14.0/24');
    await routeCreated('w15');
    expect(network.routes).toEqual({ '10.244.14.0/24': '192.168.128.15' });
  });

  it("a route whose machine lost the address it points to is ccm's still (listed before), and deleted with its Node", async () => {
    const m = await routedWorker(16);
    m.ips = ['192.168.128.116'];
    await api.deleteNode({ name: 'w16' });
    await until('the route deleted', async () => network.routes['10.244.16.0/24'] === undefined);
    expect(network.routes).toEqual({});
  });

  it('dual stack: the IPv6 Pod CIDR is refused in one line (Triton routes are IPv4 only) with no tag or network write, the IPv4 one is routed', async () => {
    const machine = await worker(
      17,
      ['10.244.17.0/24', 'fd00:10:244:17::/64'],
      ['192.168.128.17', 'fd00::17'],
    );
    const run = await start(undefined, '10.244.0.0/16,fd00:10:244::/56');
    await untilNoRoute('w17', 'IPv4 only');
    await until('the IPv4 route', async () => network.routes['10.244.17.0/24'] === '192.168.128.17');
    const tagPosts = () => sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/tags')).length;
    const posts = tagPosts();
    const lines = () =>
      run.logs.filter((l) => l.includes('fd00:10:244:17::/64') && l.includes('IPv4 only')).length;
    const seen = lines();
    await until('two more passes', async () => lines() >= seen + 2);
    expect(tagPosts()).toBe(posts);
    expect(machine.tags).toEqual({ 'ccm-cluster': CLUSTER, 'ccm-route-10.244.17.0_24': CLUSTER });
    expect(network.routes).toEqual({ '10.244.17.0/24': '192.168.128.17' });
    expect(sim.requests.filter((r) => r.method === 'PUT' && r.path.includes('/fabrics/'))).toHaveLength(1);
  });

  it("a Node whose first InternalIP is on another network is routed via its address inside the network's subnet; one with none there is NoRouteCreated with an event", async () => {
    await worker(18, undefined, ['10.10.0.5', '192.168.128.18']);
    const off = await worker(19, undefined, ['10.10.0.6']);
    await start();
    await routeCreated('w18');
    await untilNoRoute('w19', 'no InternalIP inside fabric network');
    expect(network.routes).toEqual({ '10.244.18.0/24': '192.168.128.18' });
    expect(off.tags).toEqual({});
  });

  it("a Node whose InternalIP is another machine's address is NoRouteCreated with an event: no route, no tag", async () => {
    const stranger = sim.addMachine({ name: 'stranger', ips: ['192.168.128.99'] });
    const m = sim.addMachine({ name: 'w20', ips: ['192.168.128.20'] });
    const node = nodeObject({
      name: 'w20',
      tainted: false,
      providerID: `triton://${m.id}`,
      addresses: [{ type: 'InternalIP', address: '192.168.128.99' }],
    });
    await api.createNode({
      body: { ...node, spec: { ...node.spec, podCIDR: '10.244.20.0/24', podCIDRs: ['10.244.20.0/24'] } },
    });
    const run = await start();
    await untilNoRoute('w20', 'is not an address of its machine');
    const lines = () => run.logs.filter((l) => l.includes('is not an address of its machine')).length;
    const seen = lines();
    await until('two more passes', async () => lines() >= seen + 2);
    expect(network.routes).toEqual({});
    expect(m.tags).toEqual({});
    expect(stranger.tags).toEqual({});
    expect(sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/tags'))).toHaveLength(0);
  });

  it("a machine carrying another cluster's ccm-cluster tag is never re-tagged or routed to, even by a Node of its name: NoRouteCreated with an event (outside review 2, finding 2)", async () => {
    // Another cluster's machine on the shared fabric network. Before, a Node naming it as its provider
    // ID with its address had the route written, and AddMachineTags (a merge) overwrote the other
    // cluster's ccm-cluster with this one's for good: that cluster's listing lost the machine.
    const db = sim.addMachine({
      name: 'db',
      ips: ['192.168.128.40'],
      tags: { 'ccm-cluster': 'other', role: 'db' },
    });
    const before = structuredClone(db.tags);
    await api.createNode({
      body: nodeObject({
        name: 'db',
        tainted: false,
        providerID: `triton://${db.id}`,
        addresses: internalIPs('192.168.128.40'),
        podCIDR: '10.244.13.0/24',
      }),
    });
    const run = await start();
    await untilNoRoute('db', `carries the tag ccm-cluster=other`);
    await moreRoutePasses(run, 2);
    await api.deleteNode({ name: 'db' });
    await moreRoutePasses(run, 2);
    expect({ routes: network.routes, tags: db.tags }).toEqual({ routes: {}, tags: before });
    expect(sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/tags'))).toHaveLength(0);
  });

  it("a Node whose provider ID names a machine of another name (a hostile Node's choice) is NoRouteCreated with an event naming both: no route, no tag (outside review 2, finding 1)", async () => {
    // A machine that is no Node (a database), and a Node "hostile" claiming it by provider ID with
    // its address: provider ID and address agree, but the machine is not the Node's.
    const db = sim.addMachine({ name: 'db', ips: ['192.168.128.40'], tags: { role: 'db' } });
    await worker(11);
    await api.createNode({
      body: nodeObject({
        name: 'hostile',
        tainted: false,
        providerID: `triton://${db.id}`,
        addresses: internalIPs('192.168.128.40'),
        podCIDR: '10.244.13.0/24',
      }),
    });
    const run = await start();
    await routeCreated('w11');
    await untilNoRoute('hostile', `names machine ${db.id}, whose name is db, not hostile`);
    await moreRoutePasses(run, 2);
    expect({ routes: network.routes, tags: db.tags }).toEqual({
      routes: { '10.244.11.0/24': '192.168.128.11' },
      tags: { role: 'db' },
    });
  });

  it('a machine named as its Node in other case (the kubelet lowercases its hostname) is routed', async () => {
    const m = sim.addMachine({ name: 'W30', ips: ['192.168.128.30'] });
    await api.createNode({
      body: nodeObject({
        name: 'w30',
        tainted: false,
        providerID: `triton://${m.id}`,
        addresses: internalIPs('192.168.128.30'),
        podCIDR: '10.244.30.0/24',
      }),
    });
    await start();
    await routeCreated('w30');
    expect(network.routes).toEqual({ '10.244.30.0/24': '192.168.128.30' });
  });

  it("a failed UpdateFabricNetwork is never resent with its stale body: ccm reads the network again, so an operator's route written meanwhile stays", async () => {
    let first = true;
    sim.fabrics.beforeUpdate = (n) => {
      if (!first) return undefined;
      first = false;
      // An operator's route lands between ccm's read and its write, whose answer is a 503.
      n.routes = { ...n.routes, '172.16.0.0/16': '192.168.128.1' };
      return { status: 503, code: 'ServiceUnavailable', message: 'try again' };
    };
    await worker(21);
    await start();
    await routeCreated('w21');
    expect(network.routes).toEqual({ '172.16.0.0/16': '192.168.128.1', '10.244.21.0/24': '192.168.128.21' });
    const puts = sim.requests.filter((r) => r.method === 'PUT' && r.path.includes('/fabrics/'));
    expect(puts.map((r) => r.status)).toEqual([503, 200]);
    expect(JSON.parse(puts[1]?.body ?? '{}').routes).toEqual(network.routes);
  });

  it('an UpdateFabricNetwork applied but answered with a failure is not made twice: the read before a second attempt finds it', async () => {
    let first = true;
    sim.fabrics.beforeUpdate = () => {
      if (!first) return undefined;
      first = false;
      return { status: 503, code: 'ServiceUnavailable', message: 'lost answer', applied: true };
    };
    await worker(22);
    await start();
    await routeCreated('w22');
    expect(network.routes).toEqual({ '10.244.22.0/24': '192.168.128.22' });
    expect(sim.requests.filter((r) => r.method === 'PUT' && r.path.includes('/fabrics/'))).toHaveLength(1);
  });

  it("a route ccm deleted that another writer's stale update puts back is ccm's still: deleted again, and its CIDR routed to the next Node given it", async () => {
    const m = await routedWorker(23);
    await api.deleteNode({ name: 'w23' });
    await until('its tag removed', async () => m.tags['ccm-route-10.244.23.0_24'] === undefined);
    expect(network.routes).toEqual({});
    // Another writer read the routes before ccm's delete and writes them back after it (no etag).
    network.routes = { '10.244.23.0/24': '192.168.128.23' };
    await until('deleted again', async () => network.routes['10.244.23.0/24'] === undefined);
    await worker(24, '10.244.23.0/24');
    await routeCreated('w24');
    expect(network.routes).toEqual({ '10.244.23.0/24': '192.168.128.24' });
  });

  it("a route exactly as ccm would make it (the Node's CIDR via its own address) is adopted as on OpenStack: tagged, not rewritten, RouteCreated, deleted with its Node", async () => {
    network.routes = { '10.244.25.0/24': '192.168.128.25' }; // written before ccm ran
    const m = await routedWorker(25);
    expect(m.tags).toEqual({ 'ccm-cluster': CLUSTER, 'ccm-route-10.244.25.0_24': CLUSTER });
    expect(sim.requests.filter((r) => r.method === 'PUT' && r.path.includes('/fabrics/'))).toHaveLength(0);
    await api.deleteNode({ name: 'w25' });
    await until('the adopted route deleted', async () => network.routes['10.244.25.0/24'] === undefined);
    expect(network.routes).toEqual({});
  });

  it('without TRITON_ROUTE_NETWORK the controller says so in one line; a malformed one is refused at start', async () => {
    await worker(11);
    const none = await start({});
    await until('the one line', async () => none.logs.some((l) => l.includes('has no routes')));
    expect(none.logs.find((l) => l.includes('has no routes'))).toContain(
      'the triton provider has no routes (TRITON_ROUTE_NETWORK names no fabric network)',
    );
    // Nothing lists the cloud here: no warning that a listing failed.
    expect(none.logs.filter((l) => l.includes('"level":40'))).toEqual([]);
    await none.stop();
    await expect(start({ TRITON_ROUTE_NETWORK: network.id })).rejects.toThrow(
      /TRITON_ROUTE_NETWORK ".*" is not VLAN\/NETWORK-UUID/,
    );
  });
});

describe('simulator: UpdateFabricNetwork routes as strict as NAPI', () => {
  const fail = (status: number, code: string, message: string) =>
    Object.assign(new Error(message), { status, code });
  const put = (routes: unknown, allowLinklocal = false) => {
    const fabrics = new FabricNetworks();
    fabrics.allowLinklocal = allowLinklocal;
    const n = fabrics.add({ vlan: 2, subnet: '192.168.128.0/22' });
    const r = fabrics.handle('PUT', 2, n.id, JSON.stringify({ routes }), () => undefined, fail);
    return (r.payload as { routes: Record<string, string> }).routes;
  };

  it('refuses an IPv6 route on an IPv4 fabric network, and a destination and next hop of different families', () => {
    expect(() => put({ 'fd00:10:244:1::/64': 'fd00::11' })).toThrow(/invalid route/);
    expect(() => put({ 'fd00::1': 'fd00::11' })).toThrow(/should match subnet type \(ipv4\)/);
    expect(() => put({ '10.244.1.0/24': 'fd00::11' })).toThrow(/address family of route and next-hop/);
  });

  it('refuses prefixes shorter than /8 (0.0.0.0/0 included) and stores a destination with host bits masked', () => {
    expect(() => put({ '0.0.0.0/0': '192.168.128.5' })).toThrow(/invalid route/);
    expect(() => put({ '10.0.0.0/4': '192.168.128.5' })).toThrow(/invalid route/);
    expect(put({ '10.244.1.5/24': '192.168.128.11', '10.0.0.0/8': '192.168.128.5' })).toEqual({
      '10.244.1.0/24': '192.168.128.11',
      '10.0.0.0/8': '192.168.128.5',
    });
  });

  it('stores a "linklocal" gateway where NAPI allows it, and refuses it where it does not', () => {
    expect(put({ '169.254.169.254': 'linklocal' }, true)).toEqual({ '169.254.169.254': 'linklocal' });
    expect(() => put({ '169.254.169.254': 'linklocal' })).toThrow(/invalid route/);
  });
});
