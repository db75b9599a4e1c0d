/**
 * `ccm migrate --provider brightbox`, then `ccm run`: taking over what brightbox/brightbox-cloud-controller-manager
 * (commit daf9121) built for a Service, against one real kube-apiserver and the Brightbox simulator.
 *
 * Seeded into the simulator's state (its maps, and its own adders for the cloud IP, server group and
 * firewall policy) exactly as the official controller leaves them:
 * - config/cloud-controller.yml: DaemonSet kube-system/brightbox-cloud-controller-manager with
 *   --cluster-name=brightbox-k8s, the API client in Secret brightbox-credentials.
 * - brightbox/load_balancer_cloud.go GetLoadBalancerName: everything named `<name>.<namespace>.<cluster>`:
 *   the cloud IP (ensureAllocatedCloudIP), the load balancer (load_balancer.go buildLoadBalancerOptions:
 *   listeners tcp <port> → <nodePort>, its nodes the backend servers), the server group and its
 *   firewall policy with one rule (load_balancer_firewall.go ensureFirewallRules: tcp from 10.0.0.0/8
 *   to the node ports, described with the policy's name); the cloud IP mapped to the load balancer.
 * - toLoadBalancerStatus: the Service's ingress is the cloud IP's reverse DNS name; no annotation.
 * - k8s.io/cloud-provider service/helpers/helper.go: the finalizer service.kubernetes.io/load-balancer-cleanup.
 */

import { beforeAll, describe, expect, it } from 'vitest';
import type { SimServer } from '../clouds/brightbox/simulator.js';
import { createNodes } from '../controlplane/fixtures.js';
import { ccm as cli } from '../helpers/cli.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import {
  ADOPTED,
  deleteUntilCleanupLooked,
  expectCleanDryRun,
  recordServedByOfficial,
  untilHandOverRefused,
} from '../helpers/official-controllers.js';
import { adoptingOfficial, until } from '../helpers/run.js';
import { lbService } from '../helpers/services.js';

const NS = 'default';
const CLUSTER = 'brightbox-k8s';

// The tests build on one another's cloud: the earlier tests' balancers stay in the simulator.
const world = useCloudWorld('brightbox', { keep: true, services: true });
// The official controller's Secret brightbox-credentials (which migrate reads too), as ccm run's own.
beforeAll(() => world.runProvider());

const migrate = (...args: string[]) => cli(world.args(['migrate', ...args], []));

const writes = () => world.sim.requests.filter((r) => r.method !== 'GET' && !r.path.startsWith('/token'));

/** Servers of this cluster, and their initialised Nodes (named as the servers). */
async function workers<N extends string[]>(...names: N): Promise<{ [K in keyof N]: SimServer }> {
  const servers = names.map((name) => world.sim.addServer({ name })) as { [K in keyof N]: SimServer };
  await createNodes(
    world.api,
    servers.map((s) => ({ name: s.name, providerID: `brightbox://${s.id}`, tainted: false })),
  );
  return servers;
}

/** A worker Node of this cluster, made once for the tests that need one. */
async function ensureWorker(): Promise<void> {
  const nodes = await world.api.listNode();
  if (!nodes.items.some((n) => n.metadata?.name === 'my-worker-1')) await workers('my-worker-1');
}

/**
 * A load balancer as the official controller builds it (buildLoadBalancerOptions): one tcp listener
 * `port` → `nodePort`, health-checked on the node port, balancing to `nodes`.
 */
function officialBalancer(id: string, name: string, port: number, nodePort: number, nodes: string[]) {
  world.sim.addLoadBalancer({
    id,
    name,
    status: 'active',
    listeners: [{ protocol: 'tcp', in: port, out: nodePort, timeout: 50_000, proxy_protocol: null }],
    healthcheck: { port: nodePort },
    nodes,
    readsLeft: 0,
  });
}

/** Another cluster's balancer and its cloud IP, on that cluster's own server. */
function otherClustersBalancer(id: string, name: string) {
  const theirs = world.sim.addServer({ name: `their-worker-${id}` });
  officialBalancer(id, name, 443, 31443, [theirs.id]);
  const cip = world.sim.addCloudIP({ name, mappedTo: id });
  return { theirs, cip };
}

/**
 * A LoadBalancer Service and what the official controller built for it: balancer `lbId` named
 * `<service>.<namespace>.<cluster>` to `servers`, its cloud IP mapped; with `recorded`, the Service
 * finalised and its ingress the cloud IP's reverse DNS name.
 */
async function seedOfficial(service: string, lbId: string, servers: { id: string }[], recorded = true) {
  const created = await world.api.createNamespacedService({ namespace: NS, body: lbService(service) });
  const nodePort = created.spec?.ports?.[0]?.nodePort as number;
  const name = `${service}.${NS}.${CLUSTER}`;
  officialBalancer(
    lbId,
    name,
    80,
    nodePort,
    servers.map((s) => s.id),
  );
  const cip = world.sim.addCloudIP({ name, mappedTo: lbId });
  if (recorded) await recordServedByOfficial(world.api, service, { ingress: { hostname: cip.reverseDNS } });
  return { name, nodePort, cip };
}

/** Until Service `service` has the cloud IP as its ingress; returns it. */
const untilServedBy = (service: string, cip: { publicIPv4: string }) =>
  until(
    `${service} ingress with the cloud IP`,
    async () => {
      const s = await world.api.readNamespacedService({ name: service, namespace: NS });
      return s.status?.loadBalancer?.ingress?.some((i) => i.ip === cip.publicIPv4) ? s : undefined;
    },
    30_000,
  );

describe('ccm migrate --provider brightbox', () => {
  it('adopts the official load balancer, cloud IP, server group and firewall policy by their name; ccm run adds the new server in place and creates or deletes nothing; --rollback restores the annotations', async () => {
    const [s1, s2] = await workers('worker-1', 'worker-2');
    const lbId = 'lba-off01';
    // Balancing to worker-1 alone: worker-2 joined the cluster after the official controller stopped.
    const { name, nodePort, cip } = await seedOfficial('web', lbId, [s1]);
    const group = world.sim.addServerGroup({ name, description: name, servers: [s1.id] });
    const policy = world.sim.addFirewallPolicy({ name, description: name, serverGroup: group.id });
    world.sim.firewallRules.set('fwr-off01', {
      id: 'fwr-off01',
      policy: policy.id,
      protocol: 'tcp',
      source: '10.0.0.0/8',
      sourcePort: null,
      destination: null,
      destinationPort: String(nodePort),
      icmpTypeName: null,
      description: name,
    });
    const before = structuredClone(
      (await world.api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.annotations,
    );

    // The dry run.
    world.sim.requests.length = 0;
    const { plan } = await expectCleanDryRun(migrate, world.cp);
    expect(plan.officialCluster).toBe(CLUSTER);
    expect(plan.configMaps).toEqual([{ name: 'brightbox-cloud-controller-manager', exists: false }]);
    expect(plan.services).toEqual([
      expect.objectContaining({
        name: 'web',
        action: 'adopt',
        ingress: [cip.reverseDNS],
        tags: [],
        loadBalancer: expect.objectContaining({ id: lbId, name, tags: [] }),
      }),
    ]);
    expect(plan.services[0].loadBalancer.addresses).toContain(cip.publicIPv4);
    expect(writes()).toEqual([]);

    // --yes: nothing to tag on Brightbox; the Service records the hand-over.
    const yes = await migrate('--yes', '-o', 'json');
    expect(yes.exitCode).toBe(0);
    expect(writes()).toEqual([]);
    expect(
      (await world.api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.annotations,
    ).toEqual({
      ...(before ?? {}),
      [ADOPTED]: lbId,
    });

    // ccm run: worker-2 joins the official group and balancer; the same cloud IP stays mapped.
    const ccm = await world.run();
    await until(
      'worker-2 behind the official balancer and in its server group',
      async () =>
        world.sim.loadBalancers.get(lbId)?.nodes.includes(s2.id) &&
        world.sim.serverGroups.get(group.id)?.servers.includes(s2.id),
      30_000,
    );
    const svc = await untilServedBy('web', cip);
    expect(svc.status?.loadBalancer?.ingress).toContainEqual(expect.objectContaining({ ip: cip.publicIPv4 }));
    const posts = writes().filter(
      (r) =>
        r.method === 'POST' &&
        /^\/1\.0\/(load_balancers|cloud_ips|server_groups|firewall_policies|firewall_rules)$/.test(r.path),
    );
    expect(posts).toEqual([]);
    expect(writes().filter((r) => r.method === 'DELETE')).toEqual([]);
    expect(world.sim.loadBalancers.size).toBe(1);
    expect(world.sim.loadBalancers.get(lbId)?.name).toBe(name);
    expect([...world.sim.cloudIPs.values()].map((c) => [c.id, c.mappedTo])).toEqual([[cip.id, lbId]]);
    expect(world.sim.serverGroups.size).toBe(1);
    expect(world.sim.firewallPolicies.size).toBe(1);
    await ccm.stop();

    const back = await migrate('--rollback', '--yes', '-o', 'json');
    expect(back.exitCode).toBe(0);
    const restored = await world.api.readNamespacedService({ name: 'web', namespace: NS });
    expect(JSON.stringify(restored.metadata?.annotations)).toBe(JSON.stringify(before));
    expect(world.sim.loadBalancers.size).toBe(1);
  }, 120_000);

  it('ccm run --adopt-official finds the official load balancer by <name>.<namespace>.brightbox-k8s and keeps its cloud IP', async () => {
    const [s1] = await workers('worker-a');
    const lbId = 'lba-off02';
    // The official controller balanced to this cluster's server (--adopt-official takes a load
    // balancer only when every backend is one of this cluster's Nodes); not yet recorded on the Service.
    const { cip } = await seedOfficial('shop', lbId, [s1], false);
    const lbsBefore = world.sim.loadBalancers.size;
    const cipsBefore = world.sim.cloudIPs.size;
    await world.run(adoptingOfficial(CLUSTER));
    await until(
      'shop handed over, worker-a behind it',
      async () =>
        (await world.api.readNamespacedService({ name: 'shop', namespace: NS })).metadata?.annotations?.[
          ADOPTED
        ] === lbId && world.sim.loadBalancers.get(lbId)?.nodes.includes(s1.id),
      30_000,
    );
    const svc = await untilServedBy('shop', cip);
    expect(svc.status?.loadBalancer?.ingress).toContainEqual(expect.objectContaining({ ip: cip.publicIPv4 }));
    expect(world.sim.loadBalancers.size).toBe(lbsBefore);
    expect(world.sim.cloudIPs.size).toBe(cipsBefore);
    expect(world.sim.cloudIPs.get(cip.id)?.mappedTo).toBe(lbId);
  }, 60_000);

  it("the ccm.io/adopted-load-balancer annotation alone hands nothing over: plain ccm run neither takes another cluster's balancer nor deletes it (or its cloud IP) with the Service", async () => {
    await ensureWorker();
    const { theirs, cip } = otherClustersBalancer('lba-other2', 'world.api.prod.other-cluster');
    await world.api.createNamespacedService({
      namespace: NS,
      body: lbService('evil', NS, { [ADOPTED]: 'lba-other2' }),
    });
    await untilHandOverRefused(await world.run(), 'evil');
    const nodes = world.sim.loadBalancers.get('lba-other2')?.nodes;
    await deleteUntilCleanupLooked(
      world.api,
      'evil',
      world.sim.requests,
      (r) => r.method === 'GET' && r.path.includes('load_balancers'),
    );
    const deletes = world.sim.requests.filter((r) => r.method === 'DELETE').map((r) => r.path);
    expect(nodes).toEqual([theirs.id]);
    expect(deletes).toEqual([]);
    expect(world.sim.loadBalancers.get('lba-other2')?.status).toBe('active');
    expect(world.sim.cloudIPs.has(cip.id)).toBe(true);
  }, 60_000);

  it("ccm run --adopt-official does not take another cluster's web.default.brightbox-k8s (the official default cluster name): its backends are not this cluster's servers", async () => {
    await ensureWorker();
    // Named for a Service that no earlier test of this file gave an official load balancer.
    const { theirs } = otherClustersBalancer('lba-other1', `storefront.${NS}.brightbox-k8s`);
    await world.api.createNamespacedService({ namespace: NS, body: lbService('storefront') });
    await world.run(adoptingOfficial('brightbox-k8s'));
    // ccm builds this Service a load balancer of its own instead, and reports its address.
    const svc = await until(
      'storefront served by a load balancer of ccm',
      async () => {
        const s = await world.api.readNamespacedService({ name: 'storefront', namespace: NS });
        return (s.status?.loadBalancer?.ingress?.length ?? 0) > 0 ? s : undefined;
      },
      60_000,
    );
    expect(world.sim.loadBalancers.get('lba-other1')?.nodes).toEqual([theirs.id]);
    expect(svc.metadata?.annotations?.[ADOPTED]).toBeUndefined();
  }, 90_000);
});

describe('ccm migrate --provider brightbox, another cluster with the same official names', () => {
  it("after ccm migrate --yes hands over lba-mine7, ccm run acts on it by its id: deleting the Service deletes it, never another cluster's store.default.brightbox-k8s or its cloud IP (review 2, R2-7)", async () => {
    // Named `store`, ids lba-*7: the earlier tests' balancers (lba-other1 among them) stay in the simulator.
    const { name, cip } = await seedOfficial('store', 'lba-mine7', await workers('mine-1'));
    // Another cluster in the account, also run with the official default cluster name (the case the
    // --adopt-official backend check is there for), also with a Service default/store.
    const other = otherClustersBalancer('lba-other7', name);
    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    expect(plan.services[0]).toMatchObject({ action: 'adopt', loadBalancer: { id: 'lba-mine7' } });
    expect((await migrate('--yes')).exitCode).toBe(0);
    await world.run();
    await untilServedBy('store', cip);
    await world.api.deleteNamespacedService({ name: 'store', namespace: NS });
    await until(
      'lba-mine7 deleted',
      async () =>
        !world.sim.loadBalancers.has('lba-mine7') ||
        world.sim.loadBalancers.get('lba-mine7')?.status === 'deleted',
      30_000,
    );
    await new Promise((r) => setTimeout(r, 3000));
    const deletes = writes()
      .filter((r) => r.method === 'DELETE')
      .map((r) => r.path);
    console.log('R2-7 deletes', JSON.stringify(deletes));
    expect(deletes).not.toContain('/1.0/load_balancers/lba-other7');
    expect(deletes).not.toContain(`/1.0/cloud_ips/${other.cip.id}`);
  }, 90_000);
});

describe('ccm run --adopt-official, two load balancers of the official name (issue 43, item 7)', () => {
  it("takes the one the Service's status shows, not the first the API lists (another cluster's, run with the same default cluster name)", async () => {
    // Listed first: another cluster's depot.default.brightbox-k8s, on its own server.
    const other = otherClustersBalancer('lba-other9', `depot.${NS}.${CLUSTER}`);
    const mine = await workers('mine-9');
    const { cip } = await seedOfficial('depot', 'lba-mine9', mine);
    await world.run(adoptingOfficial(CLUSTER));
    const adopted = await until(
      'depot served',
      async () => {
        const s = await world.api.readNamespacedService({ name: 'depot', namespace: NS });
        return s.status?.loadBalancer?.ingress?.some((i) => i.ip) ? s : undefined;
      },
      60_000,
    );
    expect({
      adopted: adopted.metadata?.annotations?.[ADOPTED],
      ingress: adopted.status?.loadBalancer?.ingress?.some((i) => i.ip === cip.publicIPv4),
      theirs: world.sim.loadBalancers.get('lba-other9')?.nodes,
    }).toEqual({ adopted: 'lba-mine9', ingress: true, theirs: [other.theirs.id] });
  }, 90_000);
});
