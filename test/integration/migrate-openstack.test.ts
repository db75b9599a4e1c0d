/**
 * `ccm migrate --provider openstack`, then `ccm run`: taking over the Octavia load balancers of
 * cloud-provider-openstack's openstack-cloud-controller-manager, against one real kube-apiserver and
 * the OpenStack simulator.
 *
 * The cloud is seeded through the simulator's own Octavia and Neutron API (OctaviaState.route and
 * .neutron, the handlers its HTTP server calls), with the requests kubernetes/cloud-provider-openstack
 * (commit c453fb7) sends:
 * - manifests/controller-manager/openstack-cloud-controller-manager-ds.yaml: DaemonSet
 *   kube-system/openstack-cloud-controller-manager, --cluster-name=kubernetes, Secret cloud-config.
 * - pkg/openstack/loadbalancer.go createOctaviaLoadBalancer: one fully populated create, the load
 *   balancer named kube_service_<cluster>_<namespace>_<name> (lbFormat), described "Kubernetes external
 *   service <ns>/<name> from cluster <cluster>", tagged [its name]; per port a listener
 *   listener_<i>_<lb name> (buildListenerCreateOpt: protocol, port, connection_limit -1, tags [lb name])
 *   with a pool pool_<i>_<lb name> (buildPoolCreateOpt: ROUND_ROBIN, no persistence) whose members are
 *   the Nodes' InternalIPs on the node port (buildCreateMemberOpts: name, address, protocol_port, subnet).
 * - ensureFloatingIP: a floating IP on the VIP port of floating-network-id, described "Floating IP for
 *   Kubernetes external service <ns>/<name> from cluster <cluster>".
 * - the Service annotated loadbalancer.openstack.org/load-balancer-id, finalised with
 *   service.kubernetes.io/load-balancer-cleanup (k8s.io/cloud-provider service/helpers/helper.go).
 */
import { AppsV1Api, type CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { FLOATING_NETWORK_ID, SUBNET_ID } from '../clouds/openstack/octavia.js';
import type { OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { createNodes, fixtureClient } from '../controlplane/fixtures.js';
import type { ControlPlane } from '../controlplane/harness.js';
import { ccm as cli } from '../helpers/cli.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import {
  ADOPTED,
  deleteUntilCleanupLooked,
  expectCleanDryRun,
  officialOpenStackDaemonSet,
  recordServedByOfficial,
  untilHandOverRefused,
} from '../helpers/official-controllers.js';
import { adoptingOfficial, until } from '../helpers/run.js';
import { lbService, MERGE_PATCH } from '../helpers/services.js';

const LB_ID = 'loadbalancer.openstack.org/load-balancer-id';
const NS = 'default';

// The tests build on one another's cluster: the Nodes of the first stay for the next.
const world = useCloudWorld('openstack', { keep: true, services: true });
// The world's parts, by their short names.
let cp: ControlPlane;
let api: CoreV1Api;
let sim: OpenStackSimulator;
beforeAll(async () => {
  ({ cp, api, sim } = world);
  // The official Secret cloud-config (which migrate reads too), as ccm run's own.
  await world.runProvider();
  await fixtureClient(world.kubeconfig, AppsV1Api).createNamespacedDaemonSet({
    namespace: 'kube-system',
    body: officialOpenStackDaemonSet(),
  });
});

const migrate = (...args: string[]) =>
  cli(world.args(['migrate', '--credentials-secret', 'kube-system/cloud-config', ...args], []));

/** Octavia and Neutron as the simulator's HTTP server calls them (not logged as requests). */
function octavia(method: string, path: string, body?: unknown): Record<string, unknown> {
  const [status, answer] = sim.octavia.route(method, path, new URL(`http://sim${path}`), body);
  if (status >= 300) throw new Error(`${method} ${path}: ${status}`);
  return answer as Record<string, unknown>;
}

/** Advances Octavia's provisioning worker until the load balancer is ACTIVE again. */
const settle = (id: string) => {
  for (let i = 0; i < 4; i++) octavia('GET', `/loadbalancers/${id}`);
};

/** Creates a load balancer (as one fully populated create) and waits until Octavia's worker finished it. */
function createLoadBalancer(loadbalancer: Record<string, unknown>): Record<string, unknown> {
  const answer = octavia('POST', '/loadbalancers', { loadbalancer }) as {
    loadbalancer: Record<string, unknown>;
  };
  settle(answer.loadbalancer.id as string);
  return answer.loadbalancer;
}

/** The official controller's listener `i` and its pool: the members are `nodes` on the node port. */
function listener(
  lbName: string,
  port: number,
  nodePort: number,
  i = 0,
  nodes = [{ name: 'k8s-worker-1', ip: '10.0.0.11' }],
) {
  return {
    name: `listener_${i}_${lbName}`,
    protocol: 'TCP',
    protocol_port: port,
    connection_limit: -1,
    tags: [lbName],
    default_pool: {
      name: `pool_${i}_${lbName}`,
      protocol: 'TCP',
      lb_algorithm: 'ROUND_ROBIN',
      members: nodes.map((n) => ({
        name: n.name,
        address: n.ip,
        protocol_port: nodePort,
        subnet_id: SUBNET_ID,
      })),
    },
  };
}

/** A floating IP on the load balancer's VIP port (ensureFloatingIP); returns its address. */
function fipFor(lb: Record<string, unknown>, description: string): string {
  const [, a] = sim.octavia.neutron('POST', '/v2.0/floatingips', new URL('http://sim/v2.0/floatingips'), {
    floatingip: { floating_network_id: FLOATING_NETWORK_ID, port_id: lb.vip_port_id, description },
  });
  return (a as { floatingip: { floating_ip_address: string } }).floatingip.floating_ip_address;
}

/** The official controller's record of a Service it serves: its load balancer and its address. */
const markServed = (name: string, lbId: string, ip: string) =>
  recordServedByOfficial(api, name, { annotations: { [LB_ID]: lbId }, ingress: { ip } });

/** A Service and its load balancer, as openstack-cloud-controller-manager builds and records them. */
async function seedOfficial(name: string, nodes: { name: string; ip: string }[]) {
  const created = await api.createNamespacedService({ namespace: NS, body: lbService(name) });
  const nodePort = created.spec?.ports?.[0]?.nodePort as number;
  const lbName = `kube_service_kubernetes_${NS}_${name}`;
  const from = `Kubernetes external service ${NS}/${name} from cluster kubernetes`;
  const loadbalancer = createLoadBalancer({
    name: lbName,
    description: from,
    vip_subnet_id: SUBNET_ID,
    tags: [lbName],
    listeners: [listener(lbName, 80, nodePort, 0, nodes)],
  });
  const ip = fipFor(loadbalancer, `Floating IP for ${from}`);
  await markServed(name, loadbalancer.id as string, ip);
  return {
    id: loadbalancer.id as string,
    name: lbName,
    ip,
    svc: await api.readNamespacedService({ name, namespace: NS }),
  };
}

const lbOf = (id: string) => sim.octavia.loadBalancers.get(id)?.lb as Record<string, unknown>;
const cloudWrites = () => sim.requests.filter((r) => r.method !== 'GET' && !r.path.endsWith('/auth/tokens'));

/** Until the pool of the load balancer's first listener has exactly the members at `addresses`. */
const untilMembers = (id: string, addresses: string) =>
  until(
    `${addresses} the members of the official pool`,
    async () =>
      sim.octavia
        .tree(id)[0]
        ?.members.map((m) => m.address)
        .sort()
        .join() === addresses,
    30_000,
  );

/**
 * Workers k8s-worker-1, -2 … of this cluster at 10.0.0.11, .12 …: their servers, each with its Neutron
 * port on the subnet SUBNET_ID, and initialised Nodes.
 */
async function addWorkers(count: number): Promise<void> {
  const servers = Array.from({ length: count }, (_, i) =>
    sim.addServer({
      name: `k8s-worker-${i + 1}`,
      addresses: { private: [{ addr: `10.0.0.1${i + 1}` }] },
    }),
  );
  servers.forEach((s, i) => {
    sim.routing.addPort({ ip: `10.0.0.1${i + 1}`, deviceID: s.id as string, subnetID: SUBNET_ID });
  });
  await createNodes(
    api,
    servers.map((s, i) => ({
      name: `k8s-worker-${i + 1}`,
      providerID: `openstack:///${s.id}`,
      tainted: false,
      addresses: [{ type: 'InternalIP', address: `10.0.0.1${i + 1}` }],
    })),
  );
}

/** A worker Node of this cluster (10.0.0.11), made once for the tests that need one. */
async function ensureWorker(): Promise<void> {
  const nodes = await api.listNode();
  if (!nodes.items.some((n) => n.metadata?.name === 'k8s-worker-1')) await addWorkers(1);
}

describe('ccm migrate --provider openstack', () => {
  it("dry run writes nothing; --yes adds ccm's tag next to the official one; ccm run keeps the load balancer, its name and floating IP and updates its members in place; --rollback restores tags and annotations byte for byte", async () => {
    await addWorkers(2);
    const web = await seedOfficial('web', [{ name: 'k8s-worker-1', ip: '10.0.0.11' }]);
    const before = structuredClone(web.svc.metadata?.annotations);
    const tagsBefore = structuredClone(lbOf(web.id).tags);
    expect(tagsBefore).toEqual([web.name]);

    // Dry run: nothing written to Kubernetes or to the cloud.
    sim.requests.length = 0;
    const { plan } = await expectCleanDryRun(migrate, cp);
    expect(plan.from).toBe('openstack-cloud-controller-manager');
    expect(plan.officialCluster).toBe('kubernetes');
    expect(plan.officialClusterFrom).toBe('DaemonSet kube-system/openstack-cloud-controller-manager');
    expect(plan.workloads).toEqual([
      expect.objectContaining({
        kind: 'DaemonSet',
        name: 'openstack-cloud-controller-manager',
        clusterName: 'kubernetes',
      }),
    ]);
    expect(plan.secrets).toEqual([{ name: 'cloud-config', exists: true, compatible: true }]);
    expect(plan.services).toEqual([
      expect.objectContaining({
        name: 'web',
        action: 'adopt',
        loadBalancer: { id: web.id, name: web.name, addresses: [web.ip], tags: [web.name] },
        tags: [`ccm-cluster:${plan.clusterID}`],
      }),
    ]);
    expect(cloudWrites()).toEqual([]);

    // --yes: ccm's tag beside the official one (one PUT), the hand-over on the Service.
    const yes = await migrate('--yes', '-o', 'json');
    expect(yes.exitCode).toBe(0);
    expect(cloudWrites().map((r) => `${r.method} ${r.path}`)).toEqual([
      `PUT /load-balancer/v2.0/lbaas/loadbalancers/${web.id}`,
    ]);
    expect(lbOf(web.id).tags).toEqual([web.name, `ccm-cluster:${plan.clusterID}`]);
    const adopted = await api.readNamespacedService({ name: 'web', namespace: NS });
    expect(adopted.metadata?.annotations).toEqual({ ...before, [ADOPTED]: web.id });

    // ccm run: the second Node joins the same pool; nothing created or deleted.
    sim.requests.length = 0;
    const ccm = await world.run();
    await untilMembers(web.id, '10.0.0.11,10.0.0.12');
    const created = cloudWrites().filter(
      (r) => r.method === 'POST' && /\/(loadbalancers|listeners|pools|floatingips)$/.test(r.path),
    );
    const deleted = cloudWrites().filter((r) => r.method === 'DELETE');
    expect(created).toEqual([]);
    expect(deleted).toEqual([]);
    expect(sim.octavia.loadBalancers.size).toBe(1);
    expect(sim.octavia.floatingIps.size).toBe(1);
    expect(lbOf(web.id).name).toBe(web.name);
    expect(sim.octavia.tree(web.id)[0]?.listener.name).toBe(`listener_0_${web.name}`);
    const svc = await api.readNamespacedService({ name: 'web', namespace: NS });
    expect(svc.status?.loadBalancer?.ingress).toEqual([expect.objectContaining({ ip: web.ip })]);
    await ccm.stop();

    // --rollback: tags and annotations exactly as before.
    const back = await migrate('--rollback', '--yes', '-o', 'json');
    expect(back.exitCode).toBe(0);
    expect(JSON.stringify(lbOf(web.id).tags)).toBe(JSON.stringify(tagsBefore));
    const restored = await api.readNamespacedService({ name: 'web', namespace: NS });
    expect(JSON.stringify(restored.metadata?.annotations)).toBe(JSON.stringify(before));
    expect(sim.octavia.loadBalancers.size).toBe(1);
  }, 120_000);

  it('ccm run --adopt-official finds the official load balancer by kube_service_kubernetes_<ns>_<name> and its tag, and keeps it', async () => {
    const api1 = await seedOfficial('api', [{ name: 'k8s-worker-1', ip: '10.0.0.11' }]);
    // Without the load-balancer-id annotation (as a Service whose annotation someone removed): only the
    // name and the tag can find it.
    await api.patchNamespacedService(
      { name: 'api', namespace: NS, body: { metadata: { annotations: { [LB_ID]: null } } } },
      MERGE_PATCH,
    );
    // The same Service in a cluster named "other" (another cluster sharing the project) is not taken.
    octavia('POST', '/loadbalancers', {
      loadbalancer: {
        name: `kube_service_other_${NS}_api`,
        vip_subnet_id: SUBNET_ID,
        tags: [`kube_service_other_${NS}_api`],
      },
    });
    const before = sim.octavia.loadBalancers.size;
    sim.requests.length = 0;
    await world.run(adoptingOfficial('kubernetes'));
    await until(
      'api handed over',
      async () =>
        (await api.readNamespacedService({ name: 'api', namespace: NS })).metadata?.annotations?.[ADOPTED] ===
        api1.id,
      30_000,
    );
    await untilMembers(api1.id, '10.0.0.11,10.0.0.12');
    expect(sim.octavia.loadBalancers.size).toBe(before);
    expect(
      cloudWrites().filter((r) => r.method === 'DELETE' || /\/(loadbalancers|floatingips)$/.test(r.path)),
    ).toEqual([]);
    const svc = await api.readNamespacedService({ name: 'api', namespace: NS });
    expect(svc.status?.loadBalancer?.ingress).toEqual([expect.objectContaining({ ip: api1.ip })]);

    // Deleted later, the Service goes, but not its load balancer nor its floating IP: ccm did not
    // create them, and no ccm migrate --yes recorded the hand-over (issue 43, item 7).
    const fipOf = (ip: string) =>
      [...sim.octavia.floatingIps.values()].find((f) => f.floating_ip_address === ip);
    await api.deleteNamespacedService({ name: 'api', namespace: NS });
    await until(
      'api gone',
      async () =>
        !(await api.listNamespacedService({ namespace: NS })).items.some((s) => s.metadata?.name === 'api'),
      30_000,
    );
    const left = (await api.listNamespacedEvent({ namespace: NS })).items.filter(
      (e) => e.involvedObject.name === 'api' && e.reason === 'DeletingLoadBalancer' && e.type === 'Warning',
    );
    expect({
      lb: sim.octavia.loadBalancers.has(api1.id),
      fip: fipOf(api1.ip) !== undefined,
      deletes: cloudWrites().filter((r) => r.method === 'DELETE'),
    }).toEqual({ lb: true, fip: true, deletes: [] });
    expect(left.map((e) => e.message)).toEqual([
      expect.stringContaining(`load balancer ${api1.id} was taken over with --adopt-official`),
    ]);
  }, 60_000);

  it("the ccm.io/adopted-load-balancer annotation alone hands nothing over: plain ccm run neither rewires another cluster's load balancer nor deletes it (cascade) with the Service", async () => {
    await ensureWorker();
    const other = 'kube_service_prod_shop_api';
    const id = createLoadBalancer({
      name: other,
      vip_subnet_id: SUBNET_ID,
      tags: [other],
      listeners: [listener(other, 443, 31443, 0, [{ name: 'k8s-worker-1', ip: '10.9.9.9' }])],
    }).id as string;
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('evil', NS, { [ADOPTED]: id }),
    });
    await untilHandOverRefused(await world.run(), 'evil');
    const tree = sim.octavia
      .tree(id)
      .map((t) => `${t.listener.protocol_port}:${t.members.map((m) => m.address).join(',')}`);
    // ccm's cleanup of the deleted Service looks for its load balancer (one listing).
    await deleteUntilCleanupLooked(
      api,
      'evil',
      sim.requests,
      (r) => r.method === 'GET' && /lbaas\/loadbalancers/.test(r.path),
    );
    expect(tree).toEqual(['443:10.9.9.9']);
    expect(sim.octavia.loadBalancers.has(id)).toBe(true);
  }, 90_000);

  it('a load balancer shared by two Services (upstream loadbalancer.go: each manages only the listeners tagged with its name) is handed to neither: --yes succeeds, and ccm run leaves both listeners', async () => {
    await ensureWorker();
    const web = await api.createNamespacedService({ namespace: NS, body: lbService('web') });
    const web2 = await api.createNamespacedService({
      namespace: NS,
      body: lbService('web2', NS, undefined, [{ name: 'alt', port: 8080 }]),
    });
    const n1 = web.spec?.ports?.[0]?.nodePort as number;
    const n2 = web2.spec?.ports?.[0]?.nodePort as number;
    const name1 = `kube_service_kubernetes_${NS}_web`;
    const name2 = `kube_service_kubernetes_${NS}_web2`;
    const loadbalancer = createLoadBalancer({
      name: name1,
      vip_subnet_id: SUBNET_ID,
      tags: [name1],
      listeners: [listener(name1, 80, n1)],
    });
    const id = loadbalancer.id as string;
    // web2 attaches (annotation): the official controller adds its listener, tagged with web2's load
    // balancer name, and tags the load balancer with that name too (ensureOctaviaLoadBalancer).
    octavia('POST', '/listeners', { listener: { ...listener(name2, 8080, n2), loadbalancer_id: id } });
    settle(id);
    octavia('PUT', `/loadbalancers/${id}`, { loadbalancer: { tags: [name1, name2] } });
    settle(id);
    const ip = fipFor(
      loadbalancer,
      `Floating IP for Kubernetes external service ${NS}/web from cluster kubernetes`,
    );
    await markServed('web', id, ip);
    await markServed('web2', id, ip);

    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    const adopting = plan.services.filter((s: { action: string }) => s.action === 'adopt');
    const shared = plan.services.filter((s: { note?: string }) => /shared/.test(s.note ?? ''));
    expect(shared.map((s: { name: string }) => s.name).sort()).toEqual(['web', 'web2']);
    const yes = await migrate('--yes');
    await world.run();
    // ccm gives each Service a load balancer of its own (the shared one is not handed over).
    await until(
      'both Services synced by ccm',
      async () => {
        const svcs = await Promise.all(
          ['web', 'web2'].map((n) => api.readNamespacedService({ name: n, namespace: NS })),
        );
        return svcs.every((s) => {
          const lbId = s.metadata?.annotations?.[LB_ID];
          return lbId !== undefined && lbId !== id;
        });
      },
      60_000,
    );
    const ports = sim.octavia
      .tree(id)
      .map((t) => t.listener.protocol_port)
      .sort();
    expect(yes.exitCode).toBe(0);
    expect(ports).toEqual([80, 8080]);
    expect(adopting.length).toBeLessThan(2);
    expect(sim.octavia.loadBalancers.has(id)).toBe(true);
  }, 120_000);

  it('a load balancer the official controller did not create (not named kube_service_…, e.g. made by Terraform) that a Service points at is never handed over, and outlives the Service under ccm run', async () => {
    await ensureWorker();
    const svc = await api.createNamespacedService({ namespace: NS, body: lbService('byo') });
    const np = svc.spec?.ports?.[0]?.nodePort as number;
    const loadbalancer = createLoadBalancer({
      name: 'shared-edge-lb-made-by-terraform',
      vip_subnet_id: SUBNET_ID,
      tags: ['terraform'],
      listeners: [listener(`kube_service_kubernetes_${NS}_byo`, 80, np)],
    });
    const id = loadbalancer.id as string;
    const ip = fipFor(loadbalancer, 'made by terraform');
    await markServed('byo', id, ip);
    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    const byo = plan.services.find((s: { name: string }) => s.name === 'byo');
    expect(byo.action).toBe('mismatch');
    expect(byo.note).toMatch(/not created by openstack-cloud-controller-manager/);
    expect((await migrate('--yes')).exitCode).toBe(0);
    await world.run();
    await until(
      'byo synced by ccm',
      async () => {
        const s = await api.readNamespacedService({ name: 'byo', namespace: NS });
        const lbId = s.metadata?.annotations?.[LB_ID];
        return lbId !== undefined && lbId !== id;
      },
      60_000,
    );
    await api.deleteNamespacedService({ name: 'byo', namespace: NS });
    await until(
      'byo gone (ccm cleaned up and removed its finalizer)',
      async () =>
        !(await api.listNamespacedService({ namespace: NS })).items.some((s) => s.metadata?.name === 'byo'),
      60_000,
    );
    expect(sim.octavia.loadBalancers.has(id)).toBe(true);
  }, 120_000);

  it('--yes waits for a load balancer that Octavia is still updating (PENDING_UPDATE answers a change with 409) instead of failing half-way', async () => {
    await ensureWorker();
    const web = await seedOfficial('tagme', [{ name: 'k8s-worker-1', ip: '10.0.0.11' }]);
    // The official controller's last change is still being applied.
    octavia('PUT', `/loadbalancers/${web.id}`, { loadbalancer: { description: 'changed just now' } });
    expect(lbOf(web.id).provisioning_status).toBe('PENDING_UPDATE');
    const yes = await migrate('--yes');
    expect(yes.stderr).toBe('');
    expect(yes.exitCode).toBe(0);
    expect(lbOf(web.id).tags).toEqual([web.name, expect.stringMatching(/^ccm-cluster:/)]);
    expect(
      (await api.readNamespacedService({ name: 'tagme', namespace: NS })).metadata?.annotations?.[ADOPTED],
    ).toBe(web.id);
  }, 60_000);
});

describe("ccm migrate --provider openstack, a Service naming another's load balancer", () => {
  it('a tenant Service that names the victim\'s load balancer in loadbalancer.openstack.org/load-balancer-id does not make it "shared": the victim is still handed over (review 2, R2-5)', async () => {
    const web = await seedOfficial('web', [{ name: 'k8s-worker-1', ip: '10.0.0.11' }]);
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('evil', NS, { [LB_ID]: web.id }),
    });
    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    const webPlan = plan.services.find((s: { name: string }) => s.name === 'web');
    expect(webPlan.action).toBe('adopt');
  }, 60_000);
});

describe('ccm run --adopt-official, another cluster with the same official names on another network (issue 43, item 7)', () => {
  /** Another cluster's network: the same private range as this cluster's, on a subnet of its own. */
  const OTHER_SUBNET = '5f1e8a3c-0d4b-4e6a-9c27-1b8f3d2e4a60';

  /**
   * Another cluster's load balancer for its Service default/`service`, also run with the official
   * default --cluster-name: its member is that cluster's server at 10.0.0.11, the address of this
   * cluster's k8s-worker-1, on its own subnet.
   */
  function otherClusters(service: string): string {
    sim.octavia.subnets.add(OTHER_SUBNET);
    const theirs = sim.addServer({
      name: `their-${service}`,
      addresses: { private: [{ addr: '10.0.0.11' }] },
    });
    sim.routing.addPort({ ip: '10.0.0.11', deviceID: theirs.id as string, subnetID: OTHER_SUBNET });
    const name = `kube_service_kubernetes_${NS}_${service}`;
    const l = listener(name, 443, 31443);
    return createLoadBalancer({
      name,
      vip_subnet_id: OTHER_SUBNET,
      tags: [name],
      listeners: [
        {
          ...l,
          default_pool: {
            ...l.default_pool,
            members: l.default_pool.members.map((m) => ({ ...m, subnet_id: OTHER_SUBNET })),
          },
        },
      ],
    }).id as string;
  }

  const membersOf = (id: string) =>
    sim.octavia.tree(id).flatMap((t) => t.members.map((m) => `${m.address}:${m.protocol_port}`));

  it("does not take it by its members' addresses: they are on another subnet, not this cluster's Nodes", async () => {
    await ensureWorker();
    const theirs = otherClusters('pay');
    const before = membersOf(theirs);
    await api.createNamespacedService({ namespace: NS, body: lbService('pay') });
    await world.run(adoptingOfficial('kubernetes'));
    const svc = await until(
      'pay served by a load balancer of ccm',
      async () => {
        const s = await api.readNamespacedService({ name: 'pay', namespace: NS });
        return (s.status?.loadBalancer?.ingress?.length ?? 0) > 0 ? s : undefined;
      },
      60_000,
    );
    expect({
      adopted: svc.metadata?.annotations?.[ADOPTED],
      lb: svc.metadata?.annotations?.[LB_ID],
      members: membersOf(theirs),
    }).toEqual({ adopted: undefined, lb: expect.not.stringMatching(`^${theirs}$`), members: before });
  }, 90_000);

  it('of two load balancers of the official name, takes the one the Service’s status shows, not the first listed', async () => {
    await ensureWorker();
    const theirs = otherClusters('cart');
    const before = membersOf(theirs);
    const cart = await seedOfficial('cart', [{ name: 'k8s-worker-1', ip: '10.0.0.11' }]);
    // Found by name (as a Service whose load-balancer-id annotation someone removed).
    await api.patchNamespacedService(
      { name: 'cart', namespace: NS, body: { metadata: { annotations: { [LB_ID]: null } } } },
      MERGE_PATCH,
    );
    await world.run(adoptingOfficial('kubernetes'));
    const adopted = await until(
      'cart handed over',
      async () =>
        (await api.readNamespacedService({ name: 'cart', namespace: NS })).metadata?.annotations?.[ADOPTED],
      30_000,
    );
    expect({ adopted, theirs: membersOf(theirs) }).toEqual({ adopted: cart.id, theirs: before });
  }, 60_000);
});
