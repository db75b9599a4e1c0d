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
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  type BrightboxSimulator,
  SIM_CLIENT,
  startBrightboxSimulator,
} from '../clouds/brightbox/simulator.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm as cli } from '../helpers/cli.js';
import { type InProcess, runInput, startInProcess, until } from '../helpers/run.js';
import { lbService, MERGE_PATCH, removeServices } from '../helpers/services.js';

const FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';
const ADOPTED = 'ccm.io/adopted-load-balancer';
const NS = 'default';
const CLUSTER = 'brightbox-k8s';

let cp: ControlPlane;
let api: CoreV1Api;
let sim: BrightboxSimulator;
let ccm: InProcess | undefined;

beforeAll(async () => {
  [cp, sim] = await Promise.all([startControlPlane(), startBrightboxSimulator()]);
  api = fixtureApi(cp.kubeconfigPath);
  await api.createNamespacedSecret({
    namespace: 'kube-system',
    body: {
      metadata: { name: 'brightbox-credentials', namespace: 'kube-system' },
      type: 'Opaque',
      stringData: {
        'controller-client': SIM_CLIENT.id,
        'controller-client-secret': SIM_CLIENT.secret,
        apiurl: sim.url,
      },
    },
  });
}, 120_000);
afterAll(async () => {
  await Promise.all([cp?.stop(), sim?.close()]);
});
afterEach(async () => {
  await ccm?.stop();
  ccm = undefined;
  await removeServices(api, NS);
});

const migrate = (...args: string[]) =>
  cli(['migrate', '--provider', 'brightbox', '--kubeconfig', cp.kubeconfigPath, ...args]);

const writes = () => sim.requests.filter((r) => r.method !== 'GET' && !r.path.startsWith('/token'));

/** A worker Node of this cluster, made once for the tests that need one. */
async function ensureWorker(): Promise<void> {
  const nodes = await api.listNode();
  if (nodes.items.some((n) => n.metadata?.name === 'my-worker-1')) return;
  const mine = sim.addServer({ name: 'my-worker-1' });
  await createNodes(api, [{ name: 'my-worker-1', providerID: `brightbox://${mine.id}`, tainted: false }]);
}

/** Another cluster's balancer and its cloud IP, on that cluster's own server. */
function otherClustersBalancer(id: string, name: string) {
  const theirs = sim.addServer({ name: `their-worker-${id}` });
  sim.loadBalancers.set(id, {
    id,
    name,
    status: 'active',
    locked: false,
    policy: 'least-connections',
    httpsRedirect: false,
    domains: [],
    acme: {},
    acmeReadsLeft: 0,
    listeners: [{ protocol: 'tcp', in: 443, out: 31443, timeout: 50_000, proxy_protocol: null }],
    healthcheck: {
      type: 'tcp',
      port: 31443,
      request: '/',
      interval: 5000,
      timeout: 5000,
      threshold_up: 3,
      threshold_down: 3,
    },
    nodes: [theirs.id],
    readsLeft: 0,
  });
  const cip = sim.addCloudIP({ name, mappedTo: id });
  return { theirs, cip };
}

function startCcm(adoptOfficial?: { clusterName: string }) {
  return startInProcess(
    runInput(cp.kubeconfigPath, '', {
      provider: 'brightbox',
      'cloud-config': undefined,
      credentialsSecret: 'kube-system/brightbox-credentials',
      ...(adoptOfficial
        ? {
            controllerOptions: {
              concurrency: 4,
              deletionGracePeriodMs: 0,
              nodeMonitorPeriodMs: 200,
              nodeStatusUpdateFrequencyMs: 60_000,
              cloudListPeriodMs: 500,
              adoptOfficial,
            },
          }
        : {}),
    }),
  );
}

describe('ccm migrate --provider brightbox', () => {
  it('adopts the official load balancer, cloud IP, server group and firewall policy by their name; ccm run adds the new server in place and creates or deletes nothing; --rollback restores the annotations', async () => {
    const s1 = sim.addServer({ name: 'worker-1' });
    const s2 = sim.addServer({ name: 'worker-2' });
    await createNodes(api, [
      { name: 'worker-1', providerID: `brightbox://${s1.id}`, tainted: false },
      { name: 'worker-2', providerID: `brightbox://${s2.id}`, tainted: false },
    ]);
    const created = await api.createNamespacedService({ namespace: NS, body: lbService('web') });
    const nodePort = created.spec?.ports?.[0]?.nodePort as number;
    const name = `web.${NS}.${CLUSTER}`;
    const group = sim.addServerGroup({ name, description: name, servers: [s1.id] });
    const policy = sim.addFirewallPolicy({ name, description: name, serverGroup: group.id });
    sim.firewallRules.set('fwr-off01', {
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
    const lbId = 'lba-off01';
    sim.loadBalancers.set(lbId, {
      id: lbId,
      name,
      status: 'active',
      locked: false,
      policy: 'least-connections',
      httpsRedirect: false,
      domains: [],
      acme: {},
      acmeReadsLeft: 0,
      listeners: [{ protocol: 'tcp', in: 80, out: nodePort, timeout: 50_000, proxy_protocol: null }],
      healthcheck: {
        type: 'tcp',
        port: nodePort,
        request: '/',
        interval: 5000,
        timeout: 5000,
        threshold_up: 3,
        threshold_down: 3,
      },
      nodes: [s1.id],
      readsLeft: 0,
    });
    const cip = sim.addCloudIP({ name, mappedTo: lbId });
    await api.patchNamespacedService(
      { name: 'web', namespace: NS, body: { metadata: { finalizers: [FINALIZER] } } },
      MERGE_PATCH,
    );
    await api.patchNamespacedServiceStatus(
      {
        name: 'web',
        namespace: NS,
        body: { status: { loadBalancer: { ingress: [{ hostname: cip.reverseDNS }] } } },
      },
      MERGE_PATCH,
    );
    const before = structuredClone(
      (await api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.annotations,
    );

    // The dry run.
    sim.requests.length = 0;
    const writes0 = (await cp.writes(CCM_USER)).length;
    const dry = await migrate('-o', 'json');
    expect(dry.stderr).toBe('');
    expect(dry.exitCode).toBe(0);
    const plan = JSON.parse(dry.stdout);
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
    expect((await cp.writes(CCM_USER)).length).toBe(writes0);

    // --yes: nothing to tag on Brightbox; the Service records the hand-over.
    const yes = await migrate('--yes', '-o', 'json');
    expect(yes.exitCode).toBe(0);
    expect(writes()).toEqual([]);
    expect((await api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.annotations).toEqual({
      ...(before ?? {}),
      [ADOPTED]: lbId,
    });

    // ccm run: worker-2 joins the official group and balancer; the same cloud IP stays mapped.
    ccm = await startInProcess(
      runInput(cp.kubeconfigPath, '', {
        provider: 'brightbox',
        'cloud-config': undefined,
        credentialsSecret: 'kube-system/brightbox-credentials',
      }),
    );
    await until(
      'worker-2 behind the official balancer and in its server group',
      async () =>
        sim.loadBalancers.get(lbId)?.nodes.includes(s2.id) &&
        sim.serverGroups.get(group.id)?.servers.includes(s2.id),
      30_000,
    );
    const svc = await until(
      'web ingress with the cloud IP',
      async () => {
        const s = await api.readNamespacedService({ name: 'web', namespace: NS });
        return s.status?.loadBalancer?.ingress?.some((i) => i.ip === cip.publicIPv4) ? s : undefined;
      },
      30_000,
    );
    expect(svc.status?.loadBalancer?.ingress).toContainEqual(expect.objectContaining({ ip: cip.publicIPv4 }));
    const posts = writes().filter(
      (r) =>
        r.method === 'POST' &&
        /^\/1\.0\/(load_balancers|cloud_ips|server_groups|firewall_policies|firewall_rules)$/.test(r.path),
    );
    expect(posts).toEqual([]);
    expect(writes().filter((r) => r.method === 'DELETE')).toEqual([]);
    expect(sim.loadBalancers.size).toBe(1);
    expect(sim.loadBalancers.get(lbId)?.name).toBe(name);
    expect([...sim.cloudIPs.values()].map((c) => [c.id, c.mappedTo])).toEqual([[cip.id, lbId]]);
    expect(sim.serverGroups.size).toBe(1);
    expect(sim.firewallPolicies.size).toBe(1);
    await ccm.stop();
    ccm = undefined;

    const back = await migrate('--rollback', '-o', 'json');
    expect(back.exitCode).toBe(0);
    const restored = await api.readNamespacedService({ name: 'web', namespace: NS });
    expect(JSON.stringify(restored.metadata?.annotations)).toBe(JSON.stringify(before));
    expect(sim.loadBalancers.size).toBe(1);
  }, 120_000);

  it('ccm run --adopt-official finds the official load balancer by <name>.<namespace>.brightbox-k8s and keeps its cloud IP', async () => {
    const s1 = sim.addServer({ name: 'worker-a' });
    await createNodes(api, [{ name: 'worker-a', providerID: `brightbox://${s1.id}`, tainted: false }]);
    const created = await api.createNamespacedService({ namespace: NS, body: lbService('shop') });
    const nodePort = created.spec?.ports?.[0]?.nodePort as number;
    const name = `shop.${NS}.${CLUSTER}`;
    const lbId = 'lba-off02';
    sim.loadBalancers.set(lbId, {
      id: lbId,
      name,
      status: 'active',
      locked: false,
      policy: 'least-connections',
      httpsRedirect: false,
      domains: [],
      acme: {},
      acmeReadsLeft: 0,
      listeners: [{ protocol: 'tcp', in: 80, out: nodePort, timeout: 50_000, proxy_protocol: null }],
      healthcheck: {
        type: 'tcp',
        port: nodePort,
        request: '/',
        interval: 5000,
        timeout: 5000,
        threshold_up: 3,
        threshold_down: 3,
      },
      // The official controller balanced to this cluster's server (--adopt-official takes a load
      // balancer only when every backend is one of this cluster's Nodes).
      nodes: [s1.id],
      readsLeft: 0,
    });
    const cip = sim.addCloudIP({ name, mappedTo: lbId });
    const lbsBefore = sim.loadBalancers.size;
    const cipsBefore = sim.cloudIPs.size;
    ccm = await startInProcess(
      runInput(cp.kubeconfigPath, '', {
        provider: 'brightbox',
        'cloud-config': undefined,
        credentialsSecret: 'kube-system/brightbox-credentials',
        controllerOptions: {
          concurrency: 4,
          deletionGracePeriodMs: 0,
          nodeMonitorPeriodMs: 200,
          nodeStatusUpdateFrequencyMs: 60_000,
          cloudListPeriodMs: 500,
          adoptOfficial: { clusterName: CLUSTER },
        },
      }),
    );
    await until(
      'shop handed over, worker-a behind it',
      async () =>
        (await api.readNamespacedService({ name: 'shop', namespace: NS })).metadata?.annotations?.[
          ADOPTED
        ] === lbId && sim.loadBalancers.get(lbId)?.nodes.includes(s1.id),
      30_000,
    );
    const svc = await until(
      'shop ingress',
      async () => {
        const s = await api.readNamespacedService({ name: 'shop', namespace: NS });
        return s.status?.loadBalancer?.ingress?.some((i) => i.ip === cip.publicIPv4) ? s : undefined;
      },
      30_000,
    );
    expect(svc.status?.loadBalancer?.ingress).toContainEqual(expect.objectContaining({ ip: cip.publicIPv4 }));
    expect(sim.loadBalancers.size).toBe(lbsBefore);
    expect(sim.cloudIPs.size).toBe(cipsBefore);
    expect(sim.cloudIPs.get(cip.id)?.mappedTo).toBe(lbId);
  }, 60_000);

  it("the ccm.io/adopted-load-balancer annotation alone hands nothing over: plain ccm run neither takes another cluster's balancer nor deletes it (or its cloud IP) with the Service", async () => {
    await ensureWorker();
    const { theirs, cip } = otherClustersBalancer('lba-other2', 'api.prod.other-cluster');
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('evil', NS, { [ADOPTED]: 'lba-other2' }),
    });
    ccm = await startCcm();
    await until(
      'the hand-over refused',
      async () => ccm?.logs.some((l) => l.includes('evil') && /not handed to ccm for this Service/.test(l)),
      30_000,
    );
    const nodes = sim.loadBalancers.get('lba-other2')?.nodes;
    const seen = sim.requests.length;
    await api.deleteNamespacedService({ name: 'evil', namespace: NS });
    // ccm's cleanup of the deleted Service looks for its load balancer: it is done then.
    await until(
      'the cleanup looked',
      async () =>
        sim.requests.slice(seen).some((r) => r.method === 'GET' && r.path.includes('load_balancers')),
      30_000,
    );
    const deletes = sim.requests.filter((r) => r.method === 'DELETE').map((r) => r.path);
    expect(nodes).toEqual([theirs.id]);
    expect(deletes).toEqual([]);
    expect(sim.loadBalancers.get('lba-other2')?.status).toBe('active');
    expect(sim.cloudIPs.has(cip.id)).toBe(true);
  }, 60_000);

  it("ccm run --adopt-official does not take another cluster's web.default.brightbox-k8s (the official default cluster name): its backends are not this cluster's servers", async () => {
    await ensureWorker();
    // Named for a Service that no earlier test of this file gave an official load balancer.
    const { theirs } = otherClustersBalancer('lba-other1', `storefront.${NS}.brightbox-k8s`);
    await api.createNamespacedService({ namespace: NS, body: lbService('storefront') });
    ccm = await startCcm({ clusterName: 'brightbox-k8s' });
    // ccm builds this Service a load balancer of its own instead, and reports its address.
    const svc = await until(
      'storefront served by a load balancer of ccm',
      async () => {
        const s = await api.readNamespacedService({ name: 'storefront', namespace: NS });
        return (s.status?.loadBalancer?.ingress?.length ?? 0) > 0 ? s : undefined;
      },
      60_000,
    );
    expect(sim.loadBalancers.get('lba-other1')?.nodes).toEqual([theirs.id]);
    expect(svc.metadata?.annotations?.[ADOPTED]).toBeUndefined();
  }, 90_000);
});

describe('ccm migrate --provider brightbox, another cluster with the same official names', () => {
  it("after ccm migrate --yes hands over lba-mine7, ccm run acts on it by its id: deleting the Service deletes it, never another cluster's store.default.brightbox-k8s or its cloud IP (review 2, R2-7)", async () => {
    const mine = sim.addServer({ name: 'mine-1' });
    await createNodes(api, [{ name: 'mine-1', providerID: `brightbox://${mine.id}`, tainted: false }]);
    const created = await api.createNamespacedService({ namespace: NS, body: lbService('store') });
    const nodePort = created.spec?.ports?.[0]?.nodePort as number;
    // Named `store`, ids lba-*7: the earlier tests' balancers (lba-other1 among them) stay in the simulator.
    const name = `store.${NS}.${CLUSTER}`;
    sim.loadBalancers.set('lba-mine7', {
      id: 'lba-mine7',
      name,
      status: 'active',
      locked: false,
      policy: 'least-connections',
      httpsRedirect: false,
      domains: [],
      acme: {},
      acmeReadsLeft: 0,
      listeners: [{ protocol: 'tcp', in: 80, out: nodePort, timeout: 50_000, proxy_protocol: null }],
      healthcheck: {
        type: 'tcp',
        port: nodePort,
        request: '/',
        interval: 5000,
        timeout: 5000,
        threshold_up: 3,
        threshold_down: 3,
      },
      nodes: [mine.id],
      readsLeft: 0,
    });
    const cip = sim.addCloudIP({ name, mappedTo: 'lba-mine7' });
    // Another cluster in the account, also run with the official default cluster name (the case the
    // --adopt-official backend check is there for), also with a Service default/store.
    const other = otherClustersBalancer('lba-other7', name);
    await api.patchNamespacedService(
      { name: 'store', namespace: NS, body: { metadata: { finalizers: [FINALIZER] } } },
      MERGE_PATCH,
    );
    await api.patchNamespacedServiceStatus(
      {
        name: 'store',
        namespace: NS,
        body: { status: { loadBalancer: { ingress: [{ hostname: cip.reverseDNS }] } } },
      },
      MERGE_PATCH,
    );
    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    expect(plan.services[0]).toMatchObject({ action: 'adopt', loadBalancer: { id: 'lba-mine7' } });
    expect((await migrate('--yes')).exitCode).toBe(0);
    ccm = await startCcm();
    await until(
      'store served',
      async () =>
        (
          await api.readNamespacedService({ name: 'store', namespace: NS })
        ).status?.loadBalancer?.ingress?.some((i) => i.ip === cip.publicIPv4),
      30_000,
    );
    await api.deleteNamespacedService({ name: 'store', namespace: NS });
    await until(
      'lba-mine7 deleted',
      async () =>
        !sim.loadBalancers.has('lba-mine7') || sim.loadBalancers.get('lba-mine7')?.status === 'deleted',
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
