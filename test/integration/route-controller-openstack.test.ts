/**
 * The route controller (`ccm run --controllers route`) against a real kube-apiserver and the
 * OpenStack simulator's Neutron routers and ports: routes for Nodes with podCIDRs, the
 * NetworkUnavailable condition, deletion bounded by ownership and --cluster-cidr, a failing cloud,
 * a restart that writes nothing, and two replicas of which only the leader writes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/cli/doctor.js';
import { renderManifests } from '../../src/cli/manifests.js';
import type { RunInput } from '../../src/cli/run.js';
import { loadProvider } from '../../src/providers/registry.js';
import type { Provider } from '../../src/providers/types.js';
import type { SimPort, SimRouter } from '../clouds/openstack/neutron-routes.js';
import { OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { fixtureApi, fixtureApply, internalIPs, nodeObject } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import {
  freePort,
  type InProcess,
  leaderElection,
  moreRoutePasses,
  routeControllerInput,
  runInput,
  startInProcess,
  until,
} from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

const CLUSTER = 'routes-test';
const CLUSTER_CIDR = '10.244.0.0/16';
const conf = () =>
  readFileSync(fileURLToPath(new URL('../fixtures/openstack/occm-cloud-config', import.meta.url)), 'utf8')
    .replace('http://192.128.1.15:5000/v3', sim.authUrl)
    .concat(`\n[Route]\nrouter-id=${router.id}\n`);

let cp: ControlPlane;
let api: CoreV1Api;
let sim: OpenStackSimulator;
let router: SimRouter;
const running: InProcess[] = [];

beforeAll(async () => {
  [cp, sim] = await Promise.all([startControlPlane(), new OpenStackSimulator().start()]);
  api = fixtureApi(cp.kubeconfigPath);
});
afterAll(async () => {
  await Promise.all([cp?.stop(), sim?.stop()]);
});
beforeEach(async () => {
  await api.deleteCollectionNode({});
  sim.routing.routers.clear();
  sim.routing.ports.clear();
  sim.servers.clear();
  sim.routing.extensions.add('extraroute-atomic');
  sim.requests.length = 0;
  sim.clearFaults();
  router = sim.routing.addRouter({ subnets: ['10.0.0.0/24'], ips: ['10.0.0.1'] });
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
});

function input(overrides: Partial<RunInput> = {}): RunInput {
  const file = join(tempDir('ccm-routes-'), 'cloud.conf');
  writeFileSync(file, conf());
  const route = routeControllerInput(CLUSTER, CLUSTER_CIDR);
  return runInput(cp.kubeconfigPath, file, {
    provider: 'openstack',
    ...route,
    ...overrides,
    controllerOptions: {
      ...route.controllerOptions,
      ...overrides.controllerOptions,
    } as RunInput['controllerOptions'],
  });
}

async function start(
  overrides: Partial<RunInput> = {},
  wrap?: (p: Provider) => Provider,
): Promise<InProcess> {
  const ccm = await startInProcess(input(overrides), wrap ? { wrapProvider: wrap } : {});
  running.push(ccm);
  return ccm;
}

/** The provider ID of the server a port belongs to (its device_id). */
const serverID = (port: SimPort) => `openstack:///${port.device_id}`;

/**
 * The Nova server a port belongs to, named `name` (the Node's name, as a kubelet registers it), made
 * unless the test made that server already: ccm routes only to the server of the Node's name.
 */
function serverNamed(port: SimPort, name: string): void {
  if (!sim.servers.has(port.device_id)) sim.addServer({ id: port.device_id, name });
}

/**
 * A worker: its server's Neutron port at 10.0.0.<n>, its Node (that server's provider ID) with that
 * InternalIP and Pod CIDR 10.244.<n>.0/24.
 */
async function worker(n: number, podCIDR = `10.244.${n}.0/24`): Promise<SimPort> {
  const port = sim.routing.addPort({ ip: `10.0.0.${n}` });
  serverNamed(port, `w${n}`);
  const addresses = [
    { type: 'InternalIP', address: `10.0.0.${n}` },
    { type: 'Hostname', address: `w${n}` },
  ];
  await api.createNode({
    body: nodeObject({ name: `w${n}`, tainted: false, addresses, podCIDR, providerID: serverID(port) }),
  });
  return port;
}

function network(node: V1Node) {
  const c = node.status?.conditions?.find((x) => x.type === 'NetworkUnavailable');
  return c && { status: c.status, reason: c.reason };
}

const routeCreated = (name: string, timeoutMs = 15_000) =>
  until(
    `${name} NetworkUnavailable=False`,
    async () => {
      const node = await api.readNode({ name });
      return network(node)?.reason === 'RouteCreated' && node;
    },
    timeoutMs,
  );

const routesOf = () => router.routes.map((r) => `${r.destination} via ${r.nexthop}`).sort();

const writes = () => sim.requests.filter((r) => r.method !== 'GET' && r.path.startsWith('/network')).length;

/**
 * A Node with one InternalIP and one Pod CIDR, on the server of `port` (no port of its own: the test
 * makes it, or not).
 */
async function nodeWith(name: string, ip: string, podCIDR: string, port: SimPort): Promise<void> {
  serverNamed(port, name);
  await api.createNode({
    body: nodeObject({
      name,
      tainted: false,
      addresses: [{ type: 'InternalIP', address: ip }],
      podCIDR,
      providerID: serverID(port),
    }),
  });
}
const reason = async (name: string) => network(await api.readNode({ name }))?.reason;
/** The Node's FailedToCreateRoute events, once there is one. */
const failedToCreate = (name: string) =>
  until(`a FailedToCreateRoute event for ${name}`, async () => {
    const list = await api.listNamespacedEvent({ namespace: 'default' });
    const found = list.items.filter(
      (e) => e.reason === 'FailedToCreateRoute' && e.involvedObject.name === name,
    );
    return found.length ? found : undefined;
  });
const morePasses = moreRoutePasses;

/** Sets the Node's NetworkUnavailable=False with `reason`, as a CNI or another route controller would. */
async function networkAvailable(name: string, reason: string, message: string): Promise<void> {
  const n = await api.readNodeStatus({ name });
  const conditions = (n.status?.conditions ?? []).filter((c) => c.type !== 'NetworkUnavailable');
  const now = new Date();
  conditions.push({
    type: 'NetworkUnavailable',
    status: 'False',
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  await api.replaceNodeStatus({ name, body: { ...n, status: { ...n.status, conditions } } });
}

/** The DaemonSet (and RBAC) of `ccm manifests`, as deployed with this --cluster-cidr (or without one). */
async function deployCcm(clusterCIDR: string | undefined): Promise<void> {
  const objects = renderManifests(await loadProvider('openstack'), {
    image: 'registry.example.com/ccm:0.1.0',
    namespace: 'kube-system',
    controllers: '*',
    cronjob: false,
    leaseName: 'cloud-controller-manager',
    clusterName: CLUSTER,
    ...(clusterCIDR ? { clusterCIDR } : {}),
  });
  const apply = fixtureApply(cp.kubeconfigPath);
  for (const object of objects) await apply(object);
}

/**
 * `ccm doctor`'s routes check of this cluster, with `--controllers controllers`, ccm deployed as the
 * in-process one runs (with --cluster-cidr) unless `deployed` says otherwise.
 */
async function doctorRoutes(
  controllers = '*',
  deployed: { clusterCIDR?: string } = { clusterCIDR: CLUSTER_CIDR },
) {
  await deployCcm(deployed.clusterCIDR);
  const file = join(tempDir('ccm-doctor-'), 'cloud.conf');
  writeFileSync(file, conf());
  const report = await runDoctor({
    kubeconfig: cp.kubeconfigPath,
    provider: 'openstack',
    'cloud-config': file,
    namespace: 'kube-system',
    lease: 'cloud-controller-manager',
    'service-account': 'ccm',
    controllers,
    'cluster-name': CLUSTER,
    env: {},
  });
  return report.checks.find((c) => c.id === 'routes');
}

/** w11 (worker 11) and ccm run, once w11 is RouteCreated. */
async function routedW11(): Promise<{ port: SimPort; ccm: InProcess }> {
  const port = await worker(11);
  const ccm = await start();
  await routeCreated('w11');
  return { port, ccm };
}

/**
 * w11 routed, then removed in the usual order of a VM's removal: Nova deletes the server and its
 * port, then the node-lifecycle controller deletes the Node; then `n` more route passes.
 */
async function serverThenNodeDeleted(n: number): Promise<InProcess> {
  const { port, ccm } = await routedW11();
  sim.routing.ports.delete(port.id);
  await api.deleteNode({ name: 'w11' });
  await morePasses(ccm, n);
  return ccm;
}

describe('route controller, OpenStack', () => {
  it('Nodes with podCIDRs get their routes (add_extraroutes), address pairs and NetworkUnavailable=False; a restart writes nothing', async () => {
    const p1 = await worker(11);
    const p2 = await worker(12);
    let ccm = await start();
    const one = await routeCreated('w11');
    await routeCreated('w12');
    expect(network(one)).toEqual({ status: 'False', reason: 'RouteCreated' });
    expect(routesOf()).toEqual(['10.244.11.0/24 via 10.0.0.11', '10.244.12.0/24 via 10.0.0.12']);
    expect(p1.allowed_address_pairs).toEqual([{ ip_address: '10.244.11.0/24', mac_address: p1.mac_address }]);
    expect(p2.tags).toEqual([`ccm-cluster:${CLUSTER}`, 'ccm-route:10.244.12.0_24']);
    const adds = sim.requests.filter((r) => r.method === 'PUT' && r.path.endsWith('/add_extraroutes'));
    expect(adds).toHaveLength(2);
    expect(adds[0]?.body).toEqual({
      router: {
        routes: [
          { destination: expect.stringMatching(/^10\.244\.1[12]\.0\/24$/), nexthop: expect.any(String) },
        ],
      },
    });
    // The extension list is asked once, though the first creates run side by side.
    expect(sim.requests.filter((r) => r.path.endsWith('/v2.0/extensions'))).toHaveLength(1);
    const ops = await ccm.handle.metrics.routeOperations.get();
    expect(
      ops.values.find((v) => v.labels.operation === 'create' && v.labels.result === 'success')?.value,
    ).toBe(2);

    // A restart over an unchanged cluster: passes run, nothing is written to the cloud or to the Nodes.
    await ccm.stop();
    running.splice(0);
    const before = writes();
    const versions = (await api.listNode()).items.map((n) => n.metadata?.resourceVersion);
    ccm = await start();
    await until('two passes after the restart', async () => {
      const m = await ccm.handle.metrics.reconciles.get();
      return (
        (m.values.find((v) => v.labels.controller === 'route' && v.labels.result === 'success')?.value ??
          0) >= 2
      );
    });
    expect(writes()).toBe(before);
    expect((await api.listNode()).items.map((n) => n.metadata?.resourceVersion)).toEqual(versions);
  });

  it('a deleted Node loses its route and its address pair; routes of another cluster, untagged ones and ones outside --cluster-cidr are never touched', async () => {
    // Another cluster's route through its own port, a hand-made route, and one of ours outside the range.
    const other = sim.routing.addPort({
      ip: '10.0.0.50',
      tags: ['ccm-cluster:other', 'ccm-route:10.244.50.0_24'],
    });
    const outside = sim.routing.addPort({
      ip: '10.0.0.60',
      tags: [`ccm-cluster:${CLUSTER}`, 'ccm-route:192.168.60.0_24'],
    });
    router.routes.push(
      { destination: '10.244.50.0/24', nexthop: '10.0.0.50' },
      { destination: '10.244.70.0/24', nexthop: '10.0.0.70' },
      { destination: '192.168.60.0/24', nexthop: '10.0.0.60' },
    );
    const p1 = await worker(11);
    await worker(12);
    await start();
    await routeCreated('w11');
    await routeCreated('w12');
    await api.deleteNode({ name: 'w11' });
    await until('the route of w11 deleted', async () => !routesOf().includes('10.244.11.0/24 via 10.0.0.11'));
    await until('its address pair removed', async () => p1.allowed_address_pairs.length === 0);
    await until('its tags removed', async () => p1.tags.length === 0);
    expect(routesOf()).toEqual([
      '10.244.12.0/24 via 10.0.0.12',
      '10.244.50.0/24 via 10.0.0.50',
      '10.244.70.0/24 via 10.0.0.70',
      '192.168.60.0/24 via 10.0.0.60',
    ]);
    expect(other.tags).toEqual(['ccm-cluster:other', 'ccm-route:10.244.50.0_24']);
    expect(outside.tags).toEqual([`ccm-cluster:${CLUSTER}`, 'ccm-route:192.168.60.0_24']);
    const removes = sim.requests.filter((r) => r.path.endsWith('/remove_extraroutes'));
    expect(removes.map((r) => r.body)).toEqual([
      { router: { routes: [{ destination: '10.244.11.0/24', nexthop: '10.0.0.11' }] } },
    ]);
  });

  it('a Node whose CIDR another cluster already routes is NoRouteCreated, and its route is not claimed', async () => {
    sim.routing.addPort({ ip: '10.0.0.50', tags: ['ccm-cluster:other', 'ccm-route:10.244.11.0_24'] });
    router.routes.push({ destination: '10.244.11.0/24', nexthop: '10.0.0.50' });
    const p1 = await worker(11);
    await start();
    await until(
      'NoRouteCreated',
      async () => network(await api.readNode({ name: 'w11' }))?.reason === 'NoRouteCreated',
    );
    expect(routesOf()).toEqual(['10.244.11.0/24 via 10.0.0.50']);
    expect(p1.tags).toEqual([]);
  });

  it('a cloud failure gives NoRouteCreated, a FailedToCreateRoute event and a retry that succeeds', async () => {
    // Until cleared: the HTTP client's own retries of the PUT fail too.
    sim.fault({ method: 'PUT', path: /add_extraroutes$/, status: 500 });
    await worker(11);
    await start();
    await until(
      'NoRouteCreated',
      async () => network(await api.readNode({ name: 'w11' }))?.reason === 'NoRouteCreated',
    );
    const events = await until('a FailedToCreateRoute event', async () => {
      const list = await api.listNamespacedEvent({ namespace: 'default' });
      const found = list.items.filter(
        (e) => e.reason === 'FailedToCreateRoute' && e.involvedObject.name === 'w11',
      );
      return found.length ? found : undefined;
    });
    expect(events[0]?.type).toBe('Warning');
    expect(events[0]?.source?.component).toBe('route_controller');
    expect(events[0]?.message).toMatch(/Could not create route .* 10\.244\.11\.0\/24 for node w11/);
    expect(router.routes).toEqual([]);
    sim.clearFaults();
    const node = await routeCreated('w11', 30_000);
    expect(network(node)).toEqual({ status: 'False', reason: 'RouteCreated' });
    expect(routesOf()).toEqual(['10.244.11.0/24 via 10.0.0.11']);
  });

  it('a failed address-pair update undoes the route and is retried: no Node is RouteCreated while its port drops Pod traffic, and doctor agrees', async () => {
    // The port update (allowed_address_pairs) fails; the route itself and the tags succeed.
    sim.fault({ method: 'PUT', path: /\/v2\.0\/ports\/[^/]+$/, status: 500 });
    const port = await worker(11);
    const ccm = await start();
    await until('the route is on the router', async () =>
      routesOf().includes('10.244.11.0/24 via 10.0.0.11'),
    );
    // The create failed for good (after the client's own retries): a FailedToCreateRoute pass.
    await until(
      'a failed create',
      async () =>
        ((await ccm.handle.metrics.routeOperations.get()).values.find(
          (v) => v.labels.operation === 'create' && v.labels.result === 'error',
        )?.value ?? 0) >= 1,
      30_000,
    );
    // The cloud recovers.
    sim.clearFaults();
    await morePasses(ccm, 4);
    // Upstream (cloud-provider-openstack routes.go CreateRoute) unwinds the route when the pairs update
    // fails, so the next pass creates both again.
    const state = { reason: await reason('w11'), pairs: port.allowed_address_pairs.map((p) => p.ip_address) };
    const doctor = await doctorRoutes();
    expect(state).not.toEqual({ reason: 'RouteCreated', pairs: [] });
    expect(state.pairs).toEqual(['10.244.11.0/24']);
    expect(state.reason).toBe('RouteCreated');
    expect(doctor?.status).toBe('pass');
  }, 60_000);

  it('a route whose address pair went missing (a create cut short, then a restart) is made whole again before its Node is RouteCreated', async () => {
    // What a lost answer between the route call and the pairs call leaves: the tags and the route, no pair.
    const port = sim.routing.addPort({
      ip: '10.0.0.11',
      tags: [`ccm-cluster:${CLUSTER}`, 'ccm-route:10.244.11.0_24'],
    });
    router.routes.push({ destination: '10.244.11.0/24', nexthop: '10.0.0.11' });
    await nodeWith('w11', '10.0.0.11', '10.244.11.0/24', port);
    await start();
    await routeCreated('w11');
    expect(port.allowed_address_pairs.map((p) => p.ip_address)).toEqual(['10.244.11.0/24']);
    expect(routesOf()).toEqual(['10.244.11.0/24 via 10.0.0.11']);
  }, 60_000);

  it('a server deleted before its Node (its port gone, then its Node deleted) leaves no route on the router', async () => {
    await serverThenNodeDeleted(4);
    // Upstream ListRoutes returns every route of the router; a next hop with no Node is a Blackhole
    // route that DeleteRoute removes (cloud-provider-openstack routes.go, route_controller.go).
    expect(routesOf()).toEqual([]);
  }, 60_000);

  it('the Pod CIDR of a deleted server, given by node IPAM to a new Node, gets its route to the new Node', async () => {
    const ccm = await serverThenNodeDeleted(2);
    // IPAM hands the released 10.244.11.0/24 to a new Node.
    await worker(12, '10.244.11.0/24');
    await morePasses(ccm, 4);
    expect({ reason: await reason('w12'), routes: routesOf() }).toEqual({
      reason: 'RouteCreated',
      routes: ['10.244.11.0/24 via 10.0.0.12'],
    });
  }, 60_000);

  it("a new server given the deleted one's IP and Pod CIDR: the exact route already there is accepted", async () => {
    const ccm = await serverThenNodeDeleted(2);
    // Same fixed IP (Neutron reuses freed addresses), same Pod CIDR.
    const port = sim.routing.addPort({ ip: '10.0.0.11' });
    await nodeWith('w11b', '10.0.0.11', '10.244.11.0/24', port);
    await morePasses(ccm, 4);
    expect(await reason('w11b')).toBe('RouteCreated');
  }, 60_000);

  it('switching from the official OpenStack controller: its exact routes are adopted (port tagged), and no Node turns NetworkUnavailable=True', async () => {
    // What cloud-provider-openstack's route controller left: the route, the address pair, and the
    // Node condition False/RouteCreated. No ccm tags (the official controller has none).
    const port = await worker(11);
    router.routes.push({ destination: '10.244.11.0/24', nexthop: '10.0.0.11' });
    port.allowed_address_pairs.push({ ip_address: '10.244.11.0/24', mac_address: port.mac_address });
    await networkAvailable('w11', 'RouteCreated', 'RouteController created a route');
    const versions: string[] = [];
    const ccm = await start();
    await morePasses(ccm, 4);
    versions.push((await api.readNode({ name: 'w11' })).metadata?.resourceVersion ?? '');
    // NetworkUnavailable=True makes the node lifecycle controller taint the Node
    // node.kubernetes.io/network-unavailable:NoSchedule although Pod traffic is routed.
    expect(network(await api.readNode({ name: 'w11' }))).toEqual({ status: 'False', reason: 'RouteCreated' });
    expect(routesOf()).toEqual(['10.244.11.0/24 via 10.0.0.11']);
    expect(port.tags.sort()).toEqual([`ccm-cluster:${CLUSTER}`, 'ccm-route:10.244.11.0_24'].sort());
    expect(port.allowed_address_pairs.map((p) => p.ip_address)).toEqual(['10.244.11.0/24']);
    // Adopted once: later passes find it ccm's and write nothing more.
    await morePasses(ccm, 2);
    expect((await api.readNode({ name: 'w11' })).metadata?.resourceVersion).toBe(versions[0]);
  }, 60_000);

  it('a Node whose podCIDR is 0.0.0.0/0 (outside --cluster-cidr) gets no default route on the router and no 0.0.0.0/0 address pair, but NoRouteCreated and an event', async () => {
    await worker(11);
    const hostile = await worker(13, '0.0.0.0/0');
    const ccm = await start();
    await routeCreated('w11');
    await morePasses(ccm, 3);
    const made = { routes: routesOf(), pairs: hostile.allowed_address_pairs.map((p) => p.ip_address) };
    const refused = { reason: await reason('w13'), tags: [...hostile.tags] };
    const events = await until('a FailedToCreateRoute event for w13', async () => {
      const list = await api.listNamespacedEvent({ namespace: 'default' });
      const found = list.items.filter(
        (e) => e.reason === 'FailedToCreateRoute' && e.involvedObject.name === 'w13',
      );
      return found.length ? found : undefined;
    });
    // And when the Node goes, what ccm made for it goes too (ccm made it, it is tagged as ccm's).
    await api.deleteNode({ name: 'w13' });
    await morePasses(ccm, 4);
    const after = { routes: routesOf(), pairs: hostile.allowed_address_pairs.map((p) => p.ip_address) };
    expect({ made, after }).toEqual({
      made: { routes: ['10.244.11.0/24 via 10.0.0.11'], pairs: [] },
      after: { routes: ['10.244.11.0/24 via 10.0.0.11'], pairs: [] },
    });
    expect(refused).toEqual({ reason: 'NoRouteCreated', tags: [] });
    expect(events[0]?.message).toMatch(/0\.0\.0\.0\/0 .*default route/);
  }, 60_000);

  it("a Node reporting another VM's fixed IP as its InternalIP gets nothing: no route, and that VM's port keeps its anti-spoofing and tags (issue 43, item 4)", async () => {
    await worker(11);
    // A VM of the project that is no Node (a database server), and a Node on a server of its own
    // whose kubelet reports the database's address as its InternalIP.
    const victim = sim.routing.addPort({ ip: '10.0.0.40', tags: ['db'] });
    const before = structuredClone(victim);
    const own = sim.routing.addPort({ ip: '10.0.0.13' });
    await nodeWith('h43', '10.0.0.40', '10.244.13.0/24', own);
    const ccm = await start();
    await routeCreated('w11');
    await morePasses(ccm, 3);
    const touched = sim.requests
      .filter((r) => r.method !== 'GET' && (r.path.includes(victim.id) || r.path.includes(own.id)))
      .map((r) => `${r.method} ${r.path}`);
    expect({
      routes: routesOf(),
      victim,
      own: { pairs: own.allowed_address_pairs, tags: own.tags },
      touched,
      reason: await reason('h43'),
    }).toEqual({
      routes: ['10.244.11.0/24 via 10.0.0.11'],
      victim: before,
      own: { pairs: [], tags: [] },
      touched: [],
      reason: 'NoRouteCreated',
    });
    const events = await failedToCreate('h43');
    expect(events[0]?.message).toMatch(
      new RegExp(`InternalIP 10\\.0\\.0\\.40 is not an address of its server ${own.device_id}`),
    );
  }, 60_000);

  it("a Node naming another VM's server as its provider ID, with that VM's address, gets nothing: the server is not of the Node's name (outside review 2, finding 1)", async () => {
    await worker(11);
    // A database VM of the project, no Node: server "db", its port at 10.0.0.40. Before, provider
    // ID and address agreeing was enough: the router sent 10.244.13.0/24 to the database, whose port
    // got the pair (anti-spoofing off for a /24) and ccm's tags.
    const victim = sim.routing.addPort({ ip: '10.0.0.40', tags: ['db'] });
    sim.addServer({ id: victim.device_id, name: 'db' });
    const before = structuredClone(victim);
    await nodeWith('h43', '10.0.0.40', '10.244.13.0/24', victim);
    const ccm = await start();
    await routeCreated('w11');
    await morePasses(ccm, 3);
    const touched = sim.requests
      .filter((r) => r.method !== 'GET' && r.path.includes(victim.id))
      .map((r) => `${r.method} ${r.path}`);
    expect({ routes: routesOf(), victim, touched, reason: await reason('h43') }).toEqual({
      routes: ['10.244.11.0/24 via 10.0.0.11'],
      victim: before,
      touched: [],
      reason: 'NoRouteCreated',
    });
    // h43 is also an earlier test's Node: its events are still there, so look for this one's.
    const why = new RegExp(`provider ID names server ${victim.device_id}, whose name is db, not h43`);
    const events = await failedToCreate('h43');
    await until('the event naming both names', async () =>
      (await failedToCreate('h43')).some((e) => why.test(e.message ?? '')),
    );
    expect(events.length).toBeGreaterThan(0);
  }, 60_000);

  it('a server named as its Node in other case (the kubelet lowercases its hostname) is routed', async () => {
    const port = sim.routing.addPort({ ip: '10.0.0.31' });
    sim.addServer({ id: port.device_id, name: 'W31' });
    await nodeWith('w31', '10.0.0.31', '10.244.31.0/24', port);
    await start();
    await routeCreated('w31');
    expect(routesOf()).toEqual(['10.244.31.0/24 via 10.0.0.31']);
  }, 60_000);

  it("a Node whose InternalIP its server holds only on another network (reusing the router's range) gets no route to the VM holding it on the router's subnet (review adopt, finding 3)", async () => {
    await worker(11);
    // A VM that is no Node holds 10.0.0.5 on the router's subnet. The Node's server has 10.0.0.13
    // there, and 10.0.0.5 on an isolated storage network that reuses the range.
    const victim = sim.routing.addPort({ ip: '10.0.0.5', tags: ['db'] });
    const before = structuredClone(victim);
    const own = sim.routing.addPort({ ip: '10.0.0.13' });
    const storage = sim.routing.addPort({
      ip: '10.0.0.5',
      deviceID: own.device_id,
      subnetID: '5e1f0c1d-0000-4000-8000-00000000beef',
    });
    await nodeWith('h45', '10.0.0.5', '10.244.13.0/24', own);
    const ccm = await start();
    await routeCreated('w11');
    await morePasses(ccm, 3);
    expect({
      routes: routesOf(),
      victim,
      storage: { pairs: storage.allowed_address_pairs, tags: storage.tags },
      reason: await reason('h45'),
    }).toEqual({
      routes: ['10.244.11.0/24 via 10.0.0.11'],
      victim: before,
      storage: { pairs: [], tags: [] },
      reason: 'NoRouteCreated',
    });
    const events = await failedToCreate('h45');
    expect(events[0]?.message).toMatch(/only on a subnet router .* has no port on/);
  }, 60_000);

  it('a Node without an OpenStack provider ID is not routed (its server is unknown), and says why', async () => {
    sim.routing.addPort({ ip: '10.0.0.14' });
    await api.createNode({
      body: nodeObject({
        name: 'n44',
        tainted: false,
        addresses: [{ type: 'InternalIP', address: '10.0.0.14' }],
        podCIDR: '10.244.14.0/24',
      }),
    });
    const ccm = await start();
    await morePasses(ccm, 2);
    expect({ routes: routesOf(), reason: await reason('n44') }).toEqual({
      routes: [],
      reason: 'NoRouteCreated',
    });
    const events = await failedToCreate('n44');
    expect(events[0]?.message).toMatch(/Node n44 has no OpenStack provider ID/);
  }, 60_000);

  describe('a delete cut short leaves nothing behind for good (outside review 2, finding 4): pair first, route next, tags last', () => {
    /** The port as the tests compare it: its pairs and tags, and the router's routes. */
    const state = (port: SimPort) => ({
      routes: routesOf(),
      pairs: port.allowed_address_pairs.map((p) => p.ip_address),
      tags: port.tags,
    });

    it('the address-pair removal failing (and the old undo failing too) leaves the route listed, and it is deleted again, pair and tags with it', async () => {
      // The reviewer's case: one 409 on the port update, one 409 on add_extraroutes (the old undo).
      // Before, the route went first and the failed undo was swallowed: no pass listed the route any
      // more, and the pair 10.244.11.0/24 and ccm's tags stayed on the port for good.
      const { port, ccm } = await routedW11();
      sim.fault({
        method: 'PUT',
        path: new RegExp(`^/network/v2\\.0/ports/${port.id}$`),
        status: 409,
        times: 1,
      });
      sim.fault({ method: 'PUT', path: /add_extraroutes$/, status: 409, times: 1 });
      await api.deleteNode({ name: 'w11' });
      await until('the route gone', async () => routesOf().length === 0);
      await morePasses(ccm, 3);
      expect(state(port)).toEqual({ routes: [], pairs: [], tags: [] });
    }, 60_000);

    it('an address-pair removal failing for a while: the route stays until its pair is gone, then everything goes', async () => {
      const { port, ccm } = await routedW11();
      sim.fault({ method: 'PUT', path: /\/v2\.0\/ports\/[^/]+$/, status: 500 });
      await api.deleteNode({ name: 'w11' });
      await morePasses(ccm, 3);
      // Nothing half-done: the route still there is still listed as ccm's.
      expect(state(port)).toEqual({
        routes: ['10.244.11.0/24 via 10.0.0.11'],
        pairs: ['10.244.11.0/24'],
        tags: expect.arrayContaining(['ccm-route:10.244.11.0_24']),
      });
      sim.clearFaults();
      await until('the route gone', async () => routesOf().length === 0);
      await morePasses(ccm, 2);
      expect(state(port)).toEqual({ routes: [], pairs: [], tags: [] });
    }, 60_000);

    it('the route removal failing: its pair is gone, the route and tags stay listed, and the next pass deletes it', async () => {
      const { port, ccm } = await routedW11();
      sim.fault({ method: 'PUT', path: /remove_extraroutes$/, status: 409, times: 1 });
      await api.deleteNode({ name: 'w11' });
      await until('the route gone', async () => routesOf().length === 0);
      await morePasses(ccm, 2);
      expect(state(port)).toEqual({ routes: [], pairs: [], tags: [] });
    }, 60_000);

    it('the tag removal failing after the route is gone: the next listing finds the tagged port without a route and takes the tags off', async () => {
      const { port, ccm } = await routedW11();
      sim.fault({ method: 'DELETE', path: /\/tags\/ccm-route/, status: 500, times: 1 });
      await api.deleteNode({ name: 'w11' });
      await until('the route gone', async () => routesOf().length === 0);
      await morePasses(ccm, 3);
      expect(state(port)).toEqual({ routes: [], pairs: [], tags: [] });
    }, 60_000);

    it('a create cut short after tagging (the route add failing for good) leaves no tags once its Node is gone', async () => {
      const port = await worker(11);
      sim.fault({ method: 'PUT', path: /add_extraroutes$/, status: 500 });
      const ccm = await start();
      await until(
        'the port tagged, its route add failed',
        async () =>
          port.tags.includes('ccm-route:10.244.11.0_24') &&
          sim.requests.some((r) => r.path.endsWith('add_extraroutes')),
      );
      await morePasses(ccm, 1);
      await api.deleteNode({ name: 'w11' });
      await morePasses(ccm, 3);
      expect(state(port)).toEqual({ routes: [], pairs: [], tags: [] });
    }, 60_000);
  });

  it('the shared budget (--cloud-qps 1 --cloud-burst 1) bounds the Neutron requests, one token per request (4 a route, as docs/routes.md counts them)', async () => {
    for (let n = 11; n <= 20; n++) await worker(n);
    const ccm = await start({ cloudQps: 1, cloudBurst: 1 });
    const t0 = Date.now();
    const neutronRequests = () => sim.requests.filter((r) => r.path.startsWith('/network')).length;
    // Waits for requests, not for time: at 1 a second, 8 of them take at least 6 s.
    await until('8 Neutron requests', async () => neutronRequests() >= 8, 30_000);
    const seconds = (Date.now() - t0) / 1000;
    const neutron = neutronRequests();
    const waited = (await ccm.handle.metrics.cloudBudgetWaitSeconds.get()).values.reduce(
      (a, v) => a + v.value,
      0,
    );
    // One token a second (plus the burst of 1).
    expect(neutron).toBeLessThanOrEqual(Math.ceil(seconds) + 2);
    expect(waited).toBeGreaterThan(0);
  }, 60_000);

  it("without extraroute-atomic, a route someone else adds between ccm's read and its write survives (If-Match: revision_number)", async () => {
    sim.routing.extensions.delete('extraroute-atomic');
    const handle = sim.routing.handle.bind(sim.routing);
    let gets = 0;
    // Another tool adds its route right after ccm read the router in its read-modify-write (the 2nd GET
    // of the router: the 1st is the pass's listing).
    sim.routing.handle = (method, path, url, body) => {
      const answer = handle(method, path, url, body);
      if (method === 'GET' && path === `/v2.0/routers/${router.id}` && ++gets === 2)
        router.routes.push({ destination: '172.16.0.0/16', nexthop: '10.0.0.99' });
      return answer;
    };
    try {
      await worker(11);
      await start();
      await routeCreated('w11');
      expect(routesOf()).toContain('172.16.0.0/16 via 10.0.0.99');
      expect(routesOf()).toContain('10.244.11.0/24 via 10.0.0.11');
      expect(
        sim.requests.some(
          (r) => r.method === 'PUT' && r.path.endsWith(`/routers/${router.id}`) && r.status === 412,
        ),
      ).toBe(true);
    } finally {
      sim.routing.handle = handle;
    }
  }, 60_000);

  it("an address pair another tool adds to the Node's port while ccm creates a route survives (e.g. a kube-vip VIP), and so do its tags", async () => {
    const port = await worker(11);
    port.tags.push('kube-vip');
    const handle = sim.routing.handle.bind(sim.routing);
    // The other tool adds its VIP right after ccm looked the port up by its address.
    sim.routing.handle = (method, path, url, body) => {
      const answer = handle(method, path, url, body);
      if (method === 'GET' && path === '/v2.0/ports' && url.searchParams.has('fixed_ips'))
        if (!port.allowed_address_pairs.some((p) => p.ip_address === '10.0.0.250'))
          port.allowed_address_pairs.push({ ip_address: '10.0.0.250', mac_address: port.mac_address });
      return answer;
    };
    try {
      await start();
      await routeCreated('w11');
      expect(port.allowed_address_pairs.map((p) => p.ip_address).sort()).toEqual([
        '10.0.0.250',
        '10.244.11.0/24',
      ]);
      expect(port.tags.sort()).toEqual(
        [`ccm-cluster:${CLUSTER}`, 'ccm-route:10.244.11.0_24', 'kube-vip'].sort(),
      );
    } finally {
      sim.routing.handle = handle;
    }
  }, 60_000);

  it('NetworkUnavailable=False/CalicoIsUp is rewritten to RouteCreated once, as upstream does (status and reason compared)', async () => {
    await worker(11);
    await networkAvailable('w11', 'CalicoIsUp', 'Calico is running on this node');
    const ccm = await start();
    await morePasses(ccm, 3);
    // Upstream updateNetworkingCondition (route_controller.go) compares status and reason too.
    expect(await reason('w11')).toBe('RouteCreated');
  }, 60_000);

  it('a Node re-registered under its name with a new podCIDR: old route, pair and tag go, new ones come', async () => {
    const { port, ccm } = await routedW11();
    await api.deleteNode({ name: 'w11' });
    await nodeWith('w11', '10.0.0.11', '10.244.99.0/24', port);
    await until('the new route only', async () => routesOf().join() === '10.244.99.0/24 via 10.0.0.11');
    await morePasses(ccm, 3);
    expect(routesOf()).toEqual(['10.244.99.0/24 via 10.0.0.11']);
    expect(port.allowed_address_pairs.map((p) => p.ip_address)).toEqual(['10.244.99.0/24']);
    expect(port.tags.sort()).toEqual([`ccm-cluster:${CLUSTER}`, 'ccm-route:10.244.99.0_24'].sort());
    expect(await reason('w11')).toBe('RouteCreated');
  }, 60_000);

  it('dual stack: both Pod CIDRs through the one port keep both tags and both address pairs', async () => {
    sim.routing.addInterface(router, { cidr: 'fd00:10::/64', subnetID: 'ipv6-subnet' });
    const port = sim.routing.addPort({ ip: '10.0.0.21' });
    serverNamed(port, 'w21');
    port.fixed_ips.push({ subnet_id: 'ipv6-subnet', ip_address: 'fd00:10::21' });
    const podCIDRs = ['10.244.21.0/24', 'fd00:10:244:21::/64'];
    const node = nodeObject({
      name: 'w21',
      tainted: false,
      addresses: internalIPs('10.0.0.21', 'fd00:10::21'),
      podCIDR: podCIDRs,
      providerID: serverID(port),
    });
    await api.createNode({ body: node });
    await start({
      controllerOptions: { ...input().controllerOptions, clusterCIDR: '10.244.0.0/16,fd00:10:244::/56' },
    });
    await routeCreated('w21');
    expect(routesOf()).toEqual(['10.244.21.0/24 via 10.0.0.21', 'fd00:10:244:21::/64 via fd00:10::21']);
    expect(port.tags.sort()).toEqual(
      [`ccm-cluster:${CLUSTER}`, 'ccm-route:10.244.21.0_24', 'ccm-route:fd00:10:244:21::_64'].sort(),
    );
    expect(port.allowed_address_pairs.map((p) => p.ip_address).sort()).toEqual(podCIDRs.sort());
  });

  it('without extraroute-atomic, routes are a read-modify-write of the router', async () => {
    sim.routing.extensions.delete('extraroute-atomic');
    router.routes.push({ destination: '172.16.0.0/16', nexthop: '10.0.0.99' });
    await worker(11);
    await worker(12);
    await start();
    await routeCreated('w11');
    await routeCreated('w12');
    expect(routesOf()).toEqual([
      '10.244.11.0/24 via 10.0.0.11',
      '10.244.12.0/24 via 10.0.0.12',
      '172.16.0.0/16 via 10.0.0.99',
    ]);
    expect(sim.requests.some((r) => r.path.includes('extraroutes'))).toBe(false);
    expect(
      sim.requests.filter((r) => r.method === 'PUT' && r.path.endsWith(`/routers/${router.id}`)),
    ).toHaveLength(2);
  });

  it('`ccm doctor` passes with every route there, and names the Pod CIDR whose route is missing', async () => {
    await worker(11);
    await worker(12);
    await start();
    await routeCreated('w11');
    await routeCreated('w12');
    const doctor = doctorRoutes;
    expect(await doctor()).toMatchObject({ status: 'pass' });
    await Promise.all(running.splice(0).map((r) => r.stop()));
    router.routes = router.routes.filter((r) => r.nexthop !== '10.0.0.12');
    expect(await doctor()).toMatchObject({ status: 'fail', items: ['w12 10.244.12.0/24'] });
    // A cluster whose --controllers leaves the route controller out has no routes to check.
    expect(await doctor('*,-route')).toBeUndefined();
  });

  it('`ccm doctor` looks for no route where ccm is deployed without --cluster-cidr (a kubeadm cluster whose CNI never sets NetworkUnavailable)', async () => {
    await worker(11);
    await worker(12);
    // No route in the cloud, no condition on the Nodes, and the DaemonSet runs `ccm run` without routes.
    const off = await doctorRoutes('*', {});
    expect(off).toMatchObject({
      status: 'pass',
      message:
        'the route controller is off (DaemonSet kube-system/ccm runs `ccm run` without --cluster-cidr): no cloud routes to check',
    });
    // Deployed with --cluster-cidr, the same cluster misses both routes.
    expect(await doctorRoutes()).toMatchObject({
      status: 'fail',
      items: ['w11 10.244.11.0/24', 'w12 10.244.12.0/24'],
    });
  });

  it('without [Route] router-id, or without --cluster-cidr, --controllers route says so in one line and calls nothing', async () => {
    await worker(11);
    const file = join(tempDir('ccm-noroute-'), 'cloud.conf');
    writeFileSync(file, conf().split('[Route]')[0] as string);
    const base = input();
    const noRouter = await start({ 'cloud-config': file, controllerOptions: base.controllerOptions });
    await until('the one line', async () => noRouter.logs.some((l) => l.includes('has no routes')));
    const said = (logs: string[]) =>
      logs.filter((l) => l.includes('"controller":"route"') && !l.includes('"msg":"started"'));
    expect(said(noRouter.logs)).toEqual([
      expect.stringContaining(
        'the openstack provider has no routes (cloud.conf has no [Route] router-id); the route controller does nothing',
      ),
    ]);
    const noCIDR = await start({ controllerOptions: { ...base.controllerOptions, clusterCIDR: undefined } });
    await until('the one line', async () => noCIDR.logs.some((l) => l.includes('no --cluster-cidr')));
    expect(said(noCIDR.logs)).toHaveLength(1);
    expect(sim.requests.filter((r) => r.path.startsWith('/network/'))).toEqual([]);
    expect(network(await api.readNode({ name: 'w11' }))).toBeUndefined();
  });

  it('two replicas: only the leader calls the cloud for routes', async () => {
    await worker(11);
    const calls = { a: 0, b: 0 };
    const counting =
      (id: 'a' | 'b') =>
      (p: Provider): Provider => ({
        ...p,
        instances: p.instances,
        ...(p.routes
          ? {
              routes: {
                list: (c, s) => {
                  calls[id]++;
                  return (p.routes as NonNullable<Provider['routes']>).list(c, s);
                },
                create: (c, h, r, s) => {
                  calls[id]++;
                  return (p.routes as NonNullable<Provider['routes']>).create(c, h, r, s);
                },
                delete: (c, r, s) => {
                  calls[id]++;
                  return (p.routes as NonNullable<Provider['routes']>).delete(c, r, s);
                },
              },
            }
          : {}),
      });
    const lease = {
      durationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2000,
      name: 'ccm-routes',
      namespace: 'kube-system',
    };
    const [a, b] = await Promise.all(
      (['a', 'b'] as const).map(async (id) =>
        start({ leaderElect: true, lease, securePort: await freePort() }, counting(id)),
      ),
    );
    await routeCreated('w11', 30_000);
    const leader = (await leaderElection(a as InProcess)) === 'leading' ? 'a' : 'b';
    expect(await leaderElection((leader === 'a' ? b : a) as InProcess)).toMatch(/^standby/);
    const standby = leader === 'a' ? 'b' : 'a';
    expect(calls[leader]).toBeGreaterThan(0);
    // Several more passes of the leader: the standby still has not called the cloud.
    const seen = calls[leader];
    await until('more leader passes', async () => calls[leader] >= seen + 3);
    expect(calls[standby]).toBe(0);
  });
});
