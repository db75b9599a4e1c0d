/**
 * `ccm migrate --provider digitalocean`, then `ccm run`: taking over load balancers that DigitalOcean's
 * own controller built, against one real kube-apiserver and the DigitalOcean simulator.
 *
 * The cluster and the cloud are seeded exactly as digitalocean/digitalocean-cloud-controller-manager
 * (commit 70d527e) leaves them:
 * - releases/digitalocean-cloud-controller-manager/v0.1.68.yml: Deployment
 *   kube-system/digitalocean-cloud-controller-manager (image digitalocean/digitalocean-cloud-controller-manager,
 *   --leader-elect=false), the token in Secret kube-system/digitalocean key access-token.
 * - cloud-controller-manager/do/loadbalancers.go: the load balancer is named
 *   cloudprovider.DefaultLoadBalancerName(service) ("a" + the UID without dashes, cut to 32;
 *   k8s.io/cloud-provider cloud.go) unless service.beta.kubernetes.io/do-loadbalancer-name names it;
 *   tags are `k8s:<DO_CLUSTER_ID>` only with DO_CLUSTER_ID set, so none on a self-managed cluster;
 *   forwarding rules tcp <port> → tcp <nodePort>; the health check http on kube-proxy's port 10256
 *   /healthz (healthCheckPathAndPort), interval 3 s, timeout 5 s, thresholds 3 and 5 (lb_annotations.go
 *   defaults); type REGIONAL.
 * - retrieveAndAnnotateLoadBalancer: the Service is annotated kubernetes.digitalocean.com/load-balancer-id
 *   (and service.beta.kubernetes.io/do-loadbalancer-type).
 * - k8s.io/cloud-provider service/helpers/helper.go: the service controller finalises the Service with
 *   service.kubernetes.io/load-balancer-cleanup, and writes the load balancer's IP as its ingress.
 */
import {
  AppsV1Api,
  type CoreV1Api,
  type V1LoadBalancerIngress,
  type V1Service,
} from '@kubernetes/client-node';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { createNodes, fixtureClient } from '../controlplane/fixtures.js';
import { CCM_USER, type ControlPlane } from '../controlplane/harness.js';
import { ccm as cli } from '../helpers/cli.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import {
  ADOPTED,
  deleteUntilCleanupLooked,
  expectCleanDryRun,
  LB_FINALIZER as FINALIZER,
  officialDigitalOceanDeployment,
  officialDigitalOceanLoadBalancer,
  recordServedByOfficial,
  untilHandOverRefused,
} from '../helpers/official-controllers.js';
import { adoptingOfficial, type InProcess, until } from '../helpers/run.js';
import { lbService, MERGE_PATCH, removeServices, serviceGone } from '../helpers/services.js';
import { Terminal } from '../helpers/terminal.js';

const LB_ID = 'kubernetes.digitalocean.com/load-balancer-id';
const LB_TYPE = 'service.beta.kubernetes.io/do-loadbalancer-type';
const NS = 'default';
const TENANT = 'tenant';

const world = useCloudWorld('digitalocean', {
  services: true,
  afterEachTest: async ({ api, sim }) => {
    await removeServices(api, TENANT);
    expect(sim.takeViolations()).toEqual([]);
  },
});
// The world's parts, by their short names.
let cp: ControlPlane;
let api: CoreV1Api;
let apps: AppsV1Api;
let sim: DigitalOceanSimulator;

beforeAll(async () => {
  ({ cp, api, sim } = world);
  apps = fixtureClient(cp.kubeconfigPath, AppsV1Api);
  // The official Secret digitalocean (which migrate reads too), as ccm run's own.
  await world.runProvider();
  await api.createNamespace({ body: { metadata: { name: TENANT } } });
  // The official Deployment, already scaled to 0 (the first step of the switch-over).
  await apps.createNamespacedDeployment({
    namespace: 'kube-system',
    body: officialDigitalOceanDeployment(0),
  });
});
beforeEach(async () => {
  await api
    .deleteNamespacedConfigMap({ name: 'ccm-migrate-backup', namespace: 'kube-system' })
    .catch(() => undefined);
});

const env = () => ({ DO_OVERRIDE_URL: sim.url });
const migrateArgs = (...args: string[]) => world.args(['migrate', ...args], []);
const migrate = (...args: string[]) => cli(migrateArgs(...args), env());

/** Droplets and initialised Nodes, as the official controller left them. */
async function seedNodes(): Promise<number[]> {
  const droplets = sim.addDroplets(
    { name: 'worker-1', region: 'fra1', privateIP: '10.114.0.2' },
    { name: 'worker-2', region: 'fra1', privateIP: '10.114.0.3' },
  );
  const ids = droplets.map((d) => d.id as number);
  await createNodes(
    api,
    ids.map((id, i) => ({ name: `worker-${i + 1}`, providerID: `digitalocean://${id}`, tainted: false })),
  );
  return ids;
}

/** The official controller's name of a Service's load balancer (cloudprovider.DefaultLoadBalancerName). */
const defaultLbName = (svc: V1Service) => `a${(svc.metadata?.uid ?? '').replace(/-/g, '')}`.slice(0, 32);

/**
 * A LoadBalancer Service and its load balancer, as the official controller builds and records them
 * (its ingress the load balancer's IP, unless `ingress` says otherwise).
 */
async function seedOfficial(
  name: string,
  dropletIds: number[],
  annotations?: Record<string, string>,
  ingress?: V1LoadBalancerIngress,
): Promise<{ svc: V1Service; lb: Record<string, unknown> }> {
  const created = await api.createNamespacedService({
    namespace: NS,
    body: lbService(name, NS, annotations),
  });
  const nodePort = created.spec?.ports?.[0]?.nodePort as number;
  const lb = sim.addLoadBalancer(
    officialDigitalOceanLoadBalancer(
      annotations?.['service.beta.kubernetes.io/do-loadbalancer-name'] ?? defaultLbName(created),
      dropletIds,
      nodePort,
    ),
  );
  await recordServedByOfficial(api, name, {
    annotations: { [LB_ID]: lb.id as string, [LB_TYPE]: 'REGIONAL' },
    ingress: ingress ?? { ip: lb.ip as string },
  });
  return { svc: await api.readNamespacedService({ name, namespace: NS }), lb };
}

/**
 * A load balancer of another cluster in the same account, balancing tcp `entryPort` to its own
 * droplets; by default a DOKS cluster's (tagged k8s:<its id>).
 */
function otherClustersLb(
  name = 'a0123456789abcdef0123456789abcde',
  tags = ['k8s:11111111-2222-3333-4444-555555555555'],
  dropletIds = [999001, 999002],
  [entryPort, targetPort] = [443, 31443],
) {
  return sim.addLoadBalancer({
    name,
    region: 'fra1',
    type: 'REGIONAL',
    droplet_ids: dropletIds,
    forwarding_rules: [
      { entry_protocol: 'tcp', entry_port: entryPort, target_protocol: 'tcp', target_port: targetPort },
    ],
    tags,
  });
}

const lbWrites = () => sim.requests.filter((r) => r.method !== 'GET');
const ccmWrites = async () => (await cp.writes(CCM_USER)).length;
const adoptedOf = async (name: string, namespace = NS) =>
  (await api.readNamespacedService({ name, namespace })).metadata?.annotations?.[ADOPTED];
const expectNoBackup = () =>
  expect(
    api.readNamespacedConfigMap({ name: 'ccm-migrate-backup', namespace: 'kube-system' }),
  ).rejects.toThrow();
const untilGone = (name: string, namespace: string, timeoutMs = 30_000) =>
  until(`${namespace}/${name} gone`, () => serviceGone(api, namespace, name), timeoutMs);

/** Until ccm built Service `name` a load balancer of its own (not `notId`) and recorded its id; returns it. */
const untilOwnLoadBalancer = (name: string, notId: string) =>
  until(
    `${name} synced with a load balancer of ccm`,
    async () => {
      const s = await api.readNamespacedService({ name, namespace: NS });
      const id = s.metadata?.annotations?.[LB_ID];
      return id && id !== notId ? s : undefined;
    },
    60_000,
  );

/** The terminal of `ccm migrate` (no --yes) once it asks, showing web's hand-over. */
async function askingTerminal(web: { lb: Record<string, unknown> }): Promise<Terminal> {
  const terminal = await Terminal.open(migrateArgs(), { width: 200, height: 50, env: env() });
  try {
    await terminal.waitFor('Hand these load balancers to ccm?');
    expect(await terminal.screen({ joined: true })).toContain(`default/web → ${web.lb.name} (${web.lb.ip})`);
    return terminal;
  } catch (err) {
    await terminal.close();
    throw err;
  }
}

describe('ccm migrate --provider digitalocean', () => {
  it('plans without writing, adopts with --yes, ccm run updates the same load balancers in place, --rollback gives back every annotation byte for byte', async () => {
    const [d1, d2] = await seedNodes();
    const web = await seedOfficial('web', [d1 as number, d2 as number]);
    const shop = await seedOfficial('shop', [d1 as number], {
      'service.beta.kubernetes.io/do-loadbalancer-name': 'shop-lb',
    });
    const before = {
      web: structuredClone(web.svc.metadata?.annotations),
      shop: structuredClone(shop.svc.metadata?.annotations),
    };
    const tagsBefore = [...sim.loadBalancers.values()].map((lb) => [lb.id, structuredClone(lb.tags)]);

    // The dry run: the plan, and not one write to either side.
    const { plan, writes: writes0 } = await expectCleanDryRun(migrate, cp);
    expect(plan.mode).toBe('dry-run');
    expect(plan.wrote).toBe(false);
    expect(plan.from).toBe('digitalocean-cloud-controller-manager');
    expect(plan.workloads).toEqual([
      {
        kind: 'Deployment',
        namespace: 'kube-system',
        name: 'digitalocean-cloud-controller-manager',
        replicas: 0,
      },
    ]);
    expect(plan.secrets).toEqual([{ name: 'digitalocean', exists: true, compatible: true }]);
    const byName = Object.fromEntries(plan.services.map((s: { name: string }) => [s.name, s]));
    expect(byName.web).toMatchObject({
      action: 'adopt',
      finalised: true,
      ingress: [web.lb.ip],
      loadBalancer: { id: web.lb.id, name: web.lb.name, addresses: [web.lb.ip], tags: [] },
      officialAnnotations: { [LB_ID]: web.lb.id, [LB_TYPE]: 'REGIONAL' },
    });
    expect(byName.shop).toMatchObject({ action: 'adopt', loadBalancer: { id: shop.lb.id, name: 'shop-lb' } });
    expect(lbWrites()).toEqual([]);
    // The human view says it is a dry run.
    const text = await migrate();
    expect(text.stdout).toMatch(/dry run, nothing written: 2 load balancers/);
    expect(await ccmWrites()).toBe(writes0);

    // --yes: the backup, then one annotation per Service; DigitalOcean cannot tag afterwards, so no cloud write.
    const yes = await migrate('--yes', '-o', 'json');
    expect(yes.exitCode).toBe(0);
    expect(JSON.parse(yes.stdout).wrote).toBe(true);
    expect(lbWrites()).toEqual([]);
    const adoptedWeb = await api.readNamespacedService({ name: 'web', namespace: NS });
    expect(adoptedWeb.metadata?.annotations).toEqual({ ...before.web, [ADOPTED]: web.lb.id });
    const writes = (await cp.writes(CCM_USER)).slice(writes0);
    expect(writes.map((w) => `${w.verb} ${w.objectRef?.resource}/${w.objectRef?.name}`).sort()).toEqual([
      'create configmaps/ccm-migrate-backup',
      'patch services/shop',
      'patch services/web',
    ]);
    // A second --yes has nothing to do.
    const again = await migrate('--yes', '-o', 'json');
    expect(JSON.parse(again.stdout).wrote).toBe(false);
    expect((await cp.writes(CCM_USER)).length).toBe(writes0 + 3);

    // ccm run, with a third Node: the same load balancers, updated in place.
    const [d3] = sim.addDroplets({ name: 'worker-3', region: 'fra1', privateIP: '10.114.0.4' });
    await createNodes(api, [{ name: 'worker-3', providerID: `digitalocean://${d3?.id}`, tainted: false }]);
    const ccm = await world.run();
    const want = [d1, d2, d3?.id as number].sort();
    for (const lb of [web.lb, shop.lb]) {
      await until(
        `${lb.name} balances to all three droplets`,
        async () =>
          JSON.stringify(
            [...((sim.loadBalancers.get(lb.id as string)?.droplet_ids ?? []) as number[])].sort(),
          ) === JSON.stringify(want),
        30_000,
      );
    }
    expect(sim.requestsTo('POST', '/v2/load_balancers')).toEqual([]);
    expect(sim.requestsTo('DELETE', /^\/v2\/load_balancers\/[^/]+$/)).toEqual([]);
    expect(sim.loadBalancers.size).toBe(2);
    expect(sim.loadBalancers.get(shop.lb.id as string)?.name).toBe('shop-lb');
    expect(sim.loadBalancers.get(web.lb.id as string)?.name).toBe(web.lb.name);
    for (const [name, lb] of [
      ['web', web.lb],
      ['shop', shop.lb],
    ] as const) {
      const svc = await api.readNamespacedService({ name, namespace: NS });
      expect(svc.status?.loadBalancer?.ingress).toEqual([expect.objectContaining({ ip: lb.ip })]);
      expect(sim.loadBalancers.get(lb.id as string)?.ip).toBe(lb.ip);
    }
    // Every change went to the adopted load balancers' own paths.
    expect(
      lbWrites().every((r) =>
        [web.lb.id, shop.lb.id].some((id) => r.url.startsWith(`/v2/load_balancers/${id}`)),
      ),
    ).toBe(true);
    await ccm.stop();

    // Not while a ccm Pod runs: its service controller would build load balancers of its own.
    await api.createNamespacedServiceAccount({
      namespace: 'kube-system',
      body: { metadata: { name: 'ccm' } },
    });
    const pod = await api.createNamespacedPod({
      namespace: 'kube-system',
      body: {
        metadata: {
          name: 'ccm-5d9f-abcde',
          labels: { 'app.kubernetes.io/name': 'ccm', 'app.kubernetes.io/component': 'controller' },
        },
        spec: {
          serviceAccountName: 'ccm',
          automountServiceAccountToken: false,
          containers: [{ name: 'ccm', image: 'registry.example.com/ccm:test' }],
        },
      },
    });
    await api.replaceNamespacedPodStatus({
      name: 'ccm-5d9f-abcde',
      namespace: 'kube-system',
      body: { ...pod, status: { phase: 'Running' } },
    });
    const writesBeforeRefusal = await ccmWrites();
    const refused = await migrate('--rollback', '--yes');
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.trim()).toBe(
      'ccm: ccm still runs (Pod kube-system/ccm-5d9f-abcde): stop it first (kubectl -n kube-system delete daemonset,deployment -l app.kubernetes.io/name=ccm,app.kubernetes.io/component=controller), then --rollback, or its service controller would build load balancers of its own',
    );
    expect(await ccmWrites()).toBe(writesBeforeRefusal);
    await api.deleteNamespacedPod({
      name: 'ccm-5d9f-abcde',
      namespace: 'kube-system',
      gracePeriodSeconds: 0,
    });
    await until(
      'the ccm Pod gone',
      async () =>
        (
          await api.listNamespacedPod({
            namespace: 'kube-system',
            labelSelector: 'app.kubernetes.io/name=ccm',
          })
        ).items.length === 0,
    );

    // --rollback alone is a plan, as `cluster prepare --rollback`: shown, nothing written.
    const writesBeforePlan = await ccmWrites();
    const rollbackPlan = await migrate('--rollback', '-o', 'json');
    expect(rollbackPlan.exitCode).toBe(0);
    expect(JSON.parse(rollbackPlan.stdout)).toMatchObject({ mode: 'rollback-dry-run', wrote: false });
    expect(JSON.parse(rollbackPlan.stdout).services.map((s: { action: string }) => s.action)).toEqual([
      'restore',
      'restore',
    ]);
    expect(await ccmWrites()).toBe(writesBeforePlan);
    expect((await migrate('--rollback')).stdout).toMatch(
      /^rollback plan, nothing written: 2 Services to give back to digitalocean-cloud-controller-manager; pass --yes to apply/,
    );

    // --rollback --yes: the annotations exactly as they were, the tags as they were, the backup gone.
    const back = await migrate('--rollback', '--yes', '-o', 'json');
    expect(back.exitCode).toBe(0);
    expect(JSON.parse(back.stdout).services.map((s: { action: string }) => s.action)).toEqual([
      'restore',
      'restore',
    ]);
    for (const name of ['web', 'shop'] as const) {
      const svc = await api.readNamespacedService({ name, namespace: NS });
      expect(JSON.stringify(svc.metadata?.annotations)).toBe(JSON.stringify(before[name]));
      expect(svc.metadata?.finalizers).toEqual([FINALIZER]);
    }
    expect([...sim.loadBalancers.values()].map((lb) => [lb.id, lb.tags])).toEqual(tagsBefore);
    await expectNoBackup();
  }, 120_000);

  it('on a terminal, without --yes, it shows the plan and asks: no writes nothing, yes applies', async () => {
    const [d1] = await seedNodes();
    const web = await seedOfficial('web', [d1 as number]);
    const ask = async (answer: string) => {
      const terminal = await askingTerminal(web);
      try {
        await terminal.type(answer, 'Enter');
        return { code: await terminal.exit(), screen: await terminal.screen({ joined: true }) };
      } finally {
        await terminal.close();
      }
    };
    const writes0 = await ccmWrites();
    const no = await ask('n');
    expect(no.code).toBe(0);
    expect(no.screen).toContain('dry run, nothing written');
    expect(await ccmWrites()).toBe(writes0);
    expect(await adoptedOf('web')).toBeUndefined();

    const yes = await ask('y');
    expect(yes.code).toBe(0);
    expect(yes.screen).toContain('1 load balancer of digitalocean-cloud-controller-manager handed to ccm');
    expect(await adoptedOf('web')).toBe(web.lb.id);
    expect(lbWrites()).toEqual([]);
  }, 120_000);

  it('--rollback on a terminal, without --yes, shows what it gives back and asks: no writes nothing, yes gives it back', async () => {
    const [d1] = await seedNodes();
    const web = await seedOfficial('web', [d1 as number]);
    const before = structuredClone(web.svc.metadata?.annotations);
    expect((await migrate('--yes')).exitCode).toBe(0);
    expect(await adoptedOf('web')).toBe(web.lb.id);
    const ask = async (answer: string) => {
      const terminal = await Terminal.open(migrateArgs('--rollback'), { width: 120, height: 40, env: env() });
      try {
        await terminal.waitFor('Give these back to the official controller?');
        expect(await terminal.screen({ joined: true })).toContain(`default/web ← ${web.lb.name}`);
        await terminal.type(answer, 'Enter');
        return { code: await terminal.exit(), screen: await terminal.screen({ joined: true }) };
      } finally {
        await terminal.close();
      }
    };
    const writes0 = await ccmWrites();
    const no = await ask('n');
    expect(no.code).toBe(0);
    expect(no.screen).toContain('rollback plan, nothing written');
    expect(await ccmWrites()).toBe(writes0);
    expect(await adoptedOf('web')).toBe(web.lb.id);

    const yes = await ask('y');
    expect(yes.code, yes.screen).toBe(0);
    expect(yes.screen).not.toContain('nothing written');
    expect(await adoptedOf('web')).toBeUndefined();
    const svc = await api.readNamespacedService({ name: 'web', namespace: NS });
    expect(JSON.stringify(svc.metadata?.annotations)).toBe(JSON.stringify(before));
    await expectNoBackup();
    expect(lbWrites()).toEqual([]);
  }, 120_000);

  it('ccm run --adopt-official takes over the official load balancer of a Service without ccm migrate', async () => {
    const [d1] = await seedNodes();
    const web = await seedOfficial('web', [d1 as number]);
    await world.run(adoptingOfficial(''));
    const svc = await until(
      'web adopted',
      async () => {
        const s = await api.readNamespacedService({ name: 'web', namespace: NS });
        return s.metadata?.annotations?.[ADOPTED] === web.lb.id ? s : undefined;
      },
      30_000,
    );
    await until(
      'both droplets behind it',
      async () => ((sim.loadBalancers.get(web.lb.id as string)?.droplet_ids ?? []) as number[]).length === 2,
      30_000,
    );
    expect(svc.status?.loadBalancer?.ingress).toEqual([expect.objectContaining({ ip: web.lb.ip })]);
    expect(sim.requestsTo('POST', '/v2/load_balancers')).toEqual([]);
    expect(sim.requestsTo('DELETE', /^\/v2\/load_balancers\/[^/]+$/)).toEqual([]);
    expect(sim.loadBalancers.size).toBe(1);
  }, 60_000);

  it('--adopt-official: a Node scaled down (cluster-autoscaler taints it, then deletes it and its droplet) leaves the adopted load balancer, which stays ccm’s to update (review adopt, finding 2)', async () => {
    const [d1, d2] = (await seedNodes()) as [number, number];
    const web = await seedOfficial('web', [d1, d2]);
    const ccm = await world.run(adoptingOfficial(''));
    await until('web adopted', async () => (await adoptedOf('web')) === web.lb.id, 30_000);
    const droplets = () => sim.loadBalancers.get(web.lb.id as string)?.droplet_ids as number[];
    // cluster-autoscaler's scale-down: the Node is tainted first (no longer a backend), then deleted.
    await api.patchNode(
      {
        name: 'worker-2',
        body: { spec: { taints: [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }] } },
      },
      MERGE_PATCH,
    );
    await until('worker-2 off the load balancer', async () => droplets().join() === String(d1), 30_000).catch(
      () => undefined,
    );
    expect(droplets()).toEqual([d1]);
    await api.deleteNode({ name: 'worker-2' });
    sim.removeDroplet(d2);
    // The next change of the Service is still applied to the adopted load balancer.
    await api.patchNamespacedService(
      {
        name: 'web',
        namespace: NS,
        body: {
          metadata: {
            annotations: { 'service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol': 'true' },
          },
        },
      },
      MERGE_PATCH,
    );
    await until(
      'proxy protocol on',
      async () => sim.loadBalancers.get(web.lb.id as string)?.enable_proxy_protocol === true,
      30_000,
    ).catch(() => undefined);
    expect({
      proxy: sim.loadBalancers.get(web.lb.id as string)?.enable_proxy_protocol,
      adopted: await adoptedOf('web'),
      refused: ccm.logs.filter((l) => /not handed to ccm|does not carry this cluster's tag/.test(l)),
    }).toEqual({ proxy: true, adopted: web.lb.id, refused: [] });
  }, 90_000);

  it('without --adopt-official or ccm migrate, ccm refuses the official load balancer and says how to hand it over', async () => {
    const [d1] = await seedNodes();
    await seedOfficial('web', [d1 as number]);
    const ccm = await world.run();
    await until(
      'the refusal logged',
      async () => ccm.logs.some((l) => /ccm migrate --provider digitalocean/.test(l)),
      30_000,
    );
    expect(sim.requestsTo('POST', '/v2/load_balancers')).toEqual([]);
    expect(lbWrites()).toEqual([]);
  }, 60_000);

  it("the ccm.io/adopted-load-balancer annotation alone (no ccm migrate) hands nothing over: plain ccm run neither rewires another cluster's load balancer nor deletes it with the Service", async () => {
    await seedNodes();
    const victim = otherClustersLb();
    const before = structuredClone(victim);
    // Anyone who may edit a Service in any namespace writes one annotation.
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('evil', NS, { [ADOPTED]: victim.id as string }),
    });
    await untilHandOverRefused(await world.run(), 'evil');
    const now = sim.loadBalancers.get(victim.id as string);
    const writes = sim.requests.filter((r) => r.method !== 'GET' && r.url.includes(victim.id as string));
    // Then the Service is deleted: ccm's cleanup must not take "its" load balancer with it. It looks
    // for its load balancer (one listing).
    await deleteUntilCleanupLooked(
      api,
      'evil',
      sim.requests,
      (r) => r.method === 'GET' && r.url.startsWith('/v2/load_balancers'),
    );
    const deletes = sim.requestsTo('DELETE', `/v2/load_balancers/${victim.id}`);
    expect({ droplets: now?.droplet_ids, rules: now?.forwarding_rules }).toEqual({
      droplets: before.droplet_ids,
      rules: before.forwarding_rules,
    });
    expect(writes).toEqual([]);
    expect(deletes).toEqual([]);
    expect(sim.loadBalancers.has(victim.id as string)).toBe(true);
  }, 60_000);

  it("ccm run --adopt-official does not take another cluster's load balancer that merely has the name a do-loadbalancer-name annotation asks for", async () => {
    await seedNodes();
    const victim = otherClustersLb('ingress');
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('web', NS, { 'service.beta.kubernetes.io/do-loadbalancer-name': 'ingress' }),
    });
    await world.run(adoptingOfficial(''));
    const svc = await untilOwnLoadBalancer('web', victim.id as string);
    expect(svc.metadata?.annotations?.[ADOPTED]).toBeUndefined();
    expect(sim.loadBalancers.get(victim.id as string)?.droplet_ids).toEqual([999001, 999002]);
  }, 90_000);

  it("ccm run --adopt-official does not take an untagged load balancer by the official name when its droplets are not this cluster's", async () => {
    await seedNodes();
    const created = await api.createNamespacedService({ namespace: NS, body: lbService('web', NS) });
    // Named for this Service, untagged (a self-managed cluster's official controller), but balancing
    // to droplets this cluster does not have.
    const stray = otherClustersLb(defaultLbName(created), [], [999001], [80, 31080]);
    await world.run(adoptingOfficial(''));
    const svc = await untilOwnLoadBalancer('web', stray.id as string);
    expect(svc.metadata?.annotations?.[ADOPTED]).toBeUndefined();
    expect(sim.loadBalancers.get(stray.id as string)?.droplet_ids).toEqual([999001]);
    expect(lbWrites().filter((r) => r.url.includes(stray.id as string))).toEqual([]);
  }, 60_000);

  it("migrate does not plan to adopt a load balancer tagged for another cluster (k8s:<other id>) that a Service's load-balancer-id annotation names", async () => {
    await seedNodes();
    const victim = otherClustersLb();
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('evil', NS, { [LB_ID]: victim.id as string }),
    });
    const dry = await migrate('-o', 'json');
    const plan = JSON.parse(dry.stdout);
    const evil = plan.services.find((s: { name: string }) => s.name === 'evil');
    expect(evil.action).not.toBe('adopt');
  }, 60_000);

  it('a Service the official controller serves with do-loadbalancer-hostname (ingress = that hostname, upstream loadbalancers.go getHostname) is adopted, not "mismatch"', async () => {
    const [d1] = await seedNodes();
    await seedOfficial(
      'web',
      [d1 as number],
      { 'service.beta.kubernetes.io/do-loadbalancer-hostname': 'web.example.com' },
      { hostname: 'web.example.com' },
    );
    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    const web = plan.services.find((s: { name: string }) => s.name === 'web');
    expect(web.action).toBe('adopt');
  }, 60_000);

  it('--rollback gives back only what --yes changed: annotation edits a person made after the migration stay', async () => {
    const [d1] = await seedNodes();
    await seedOfficial('web', [d1 as number], {
      'service.beta.kubernetes.io/do-loadbalancer-size-unit': '1',
    });
    expect((await migrate('--yes')).exitCode).toBe(0);
    // While ccm runs, the owner scales the load balancer up and adds a new setting.
    await api.patchNamespacedService(
      {
        name: 'web',
        namespace: NS,
        body: {
          metadata: {
            annotations: {
              'service.beta.kubernetes.io/do-loadbalancer-size-unit': '4',
              'service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol': 'true',
            },
          },
        },
      },
      MERGE_PATCH,
    );
    const back = await migrate('--rollback', '--yes');
    expect(back.exitCode).toBe(0);
    const ann = (await api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.annotations ?? {};
    expect(ann[ADOPTED]).toBeUndefined();
    expect(ann['service.beta.kubernetes.io/do-loadbalancer-size-unit']).toBe('4');
    expect(ann['service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol']).toBe('true');
  }, 60_000);

  it('the backup keeps only what --yes changes: Services with large annotations (last-applied-configuration) do not push it past the 1 MiB of one ConfigMap', async () => {
    const [d1] = await seedNodes();
    // 6 Services with a large (but legal: < 256 KiB per object) last-applied-configuration each.
    const big = JSON.stringify({ spec: { padding: 'x'.repeat(200_000) } });
    for (let i = 0; i < 6; i++) {
      await seedOfficial(`svc${i}`, [d1 as number], {
        'kubectl.kubernetes.io/last-applied-configuration': big,
      });
    }
    const yes = await migrate('--yes');
    expect(yes.exitCode).toBe(0);
    const backup = await api.readNamespacedConfigMap({
      name: 'ccm-migrate-backup',
      namespace: 'kube-system',
    });
    expect(Object.keys(backup.data ?? {})).toHaveLength(6);
    expect(JSON.stringify(backup.data).length).toBeLessThan(10_000);
  }, 120_000);

  it('--yes refuses while the official controller still runs (its Deployment at 1 replica), as --rollback refuses while ccm runs', async () => {
    // The official Deployment of beforeAll (at 0) is scaled back up, and down again afterwards.
    const scale = (replicas: number) =>
      apps.patchNamespacedDeployment(
        {
          name: 'digitalocean-cloud-controller-manager',
          namespace: 'kube-system',
          body: { spec: { replicas } },
        },
        MERGE_PATCH,
      );
    await scale(1);
    try {
      const [d1] = await seedNodes();
      await seedOfficial('web', [d1 as number]);
      const yes = await migrate('--yes');
      expect(await adoptedOf('web')).toBeUndefined();
      expect(yes.exitCode).not.toBe(0);
      expect(yes.stderr.trim().split('\n')).toHaveLength(1);
      expect(yes.stderr).toMatch(
        /official controller still runs .*kubectl -n kube-system scale deployment\/digitalocean-cloud-controller-manager --replicas=0/,
      );
      await expectNoBackup();
    } finally {
      await scale(0);
    }
  }, 60_000);

  it('--rollback of a Service that ccm later made ClusterIP (load balancer deleted, finalizer removed) gives its annotations back byte for byte', async () => {
    const [d1] = await seedNodes();
    const { lb } = await seedOfficial('web', [d1 as number]);
    const before = structuredClone(
      (await api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.annotations,
    );
    expect((await migrate('--yes')).exitCode).toBe(0);
    const ccm = await world.run();
    await until(
      'adopted lb in use',
      async () => sim.requests.some((r) => r.url.includes(lb.id as string)),
      30_000,
    );
    await api.patchNamespacedService(
      {
        name: 'web',
        namespace: NS,
        body: {
          spec: { type: 'ClusterIP', ports: [{ name: 'http', port: 80, targetPort: 8080, nodePort: null }] },
        },
      },
      MERGE_PATCH,
    );
    await until(
      'cleaned up',
      async () =>
        !(await api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.finalizers?.length,
      30_000,
    );
    await ccm.stop();
    const back = await migrate('--rollback', '--yes');
    expect(back.exitCode).toBe(0);
    expect(back.stdout).not.toMatch(/Service default\/web is gone since the migration/);
    const ann = (await api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.annotations;
    expect(JSON.stringify(ann)).toBe(JSON.stringify(before));
  }, 90_000);

  it('on a terminal, the plan applied is the plan confirmed: a Service that became adoptable while the question was asked is not handed over, and nothing is written', async () => {
    const [d1] = await seedNodes();
    const web = await seedOfficial('web', [d1 as number]);
    const terminal = await askingTerminal(web);
    try {
      // Meanwhile the official controller serves one more Service.
      const shop = await seedOfficial('shop', [d1 as number]);
      const writes0 = await ccmWrites();
      await terminal.type('y', 'Enter');
      const code = await terminal.exit();
      const screen = await terminal.screen({ joined: true });
      expect(code).toBe(2);
      expect(screen).toContain(`the plan changed since it was shown (now default/shop=${shop.lb.id})`);
      expect(await ccmWrites()).toBe(writes0);
      for (const name of ['web', 'shop']) expect(await adoptedOf(name)).toBeUndefined();
    } finally {
      await terminal.close();
    }
  }, 120_000);

  it('migrate does not call a ccm.io/adopted-load-balancer annotation that no --yes recorded "already handed over", and --yes does not record it', async () => {
    const [d1] = await seedNodes();
    const victim = otherClustersLb();
    const web = await seedOfficial('web', [d1 as number]);
    // A tenant points web's annotation at another cluster's load balancer.
    await api.patchNamespacedService(
      { name: 'web', namespace: NS, body: { metadata: { annotations: { [ADOPTED]: victim.id as string } } } },
      MERGE_PATCH,
    );
    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    const row = plan.services.find((s: { name: string }) => s.name === 'web');
    expect(row.action).toBe('mismatch');
    expect(row.note).toContain(`the official load balancer is ${web.lb.name}, ${web.lb.id}`);
    expect((await migrate('--yes')).exitCode).toBe(0);
    await expectNoBackup();
    expect(await adoptedOf('web')).toBe(victim.id);
  }, 60_000);

  it('the token never shows in the output of a dry run (json, yaml), --yes or --rollback', async () => {
    const [d1] = await seedNodes();
    await seedOfficial('web', [d1 as number]);
    const outs = [
      await migrate('-o', 'json'),
      await migrate('-o', 'yaml'),
      await migrate('--yes'),
      await migrate('--rollback', '--yes'),
    ];
    for (const o of outs) expect(`${o.stdout}${o.stderr}`).not.toContain(sim.token);
  }, 60_000);
});

describe("a tenant Service naming another Service's load balancer by kubernetes.digitalocean.com/load-balancer-id", () => {
  /**
   * Until ccm logged its refusal of the tenant's Service (it has looked at it, and said why): not
   * named for it, claimed by another Service, or (an official one) not of this cluster's tag.
   */
  const refusedClaim = (ccm: InProcess, name: string) =>
    until(
      `the claim of ${name} refused`,
      async () =>
        ccm.logs.some(
          (l) =>
            l.includes(name) && /neither changes nor deletes it|does not carry this cluster's tag/.test(l),
        ),
      30_000,
    );

  it("--adopt-official: the tenant's Service does not take over the victim's official load balancer, never rewires it, and deleting the tenant's Service leaves it (review 2, R2-1)", async () => {
    const [d1, d2] = await seedNodes();
    const web = await seedOfficial('web', [d1 as number, d2 as number]);
    // The tenant only edits Services in its own namespace; it writes the id of web's load balancer
    // (known from an earlier dump, a ticket, a screenshot: UUIDs are no secret) and asks for port 9999.
    await api.createNamespacedService({
      namespace: TENANT,
      body: lbService('evil', TENANT, { [LB_ID]: web.lb.id as string }, [{ name: 'x', port: 9999 }]),
    });
    await refusedClaim(await world.run(adoptingOfficial('')), 'evil');
    // web itself is adopted in place, as before.
    await until(
      'web adopted its own load balancer',
      async () => (await adoptedOf('web')) === web.lb.id,
      30_000,
    );
    const evil = await api.readNamespacedService({ name: 'evil', namespace: TENANT });
    expect(evil.metadata?.annotations?.[ADOPTED]).toBeUndefined();
    expect(evil.status?.loadBalancer?.ingress ?? []).not.toEqual([
      expect.objectContaining({ ip: web.lb.ip }),
    ]);
    // web's load balancer never got the tenant's forwarding rule.
    const puts = sim.requestsTo('PUT', `/v2/load_balancers/${web.lb.id}`);
    expect(puts.some((r) => JSON.stringify(r.body ?? '').includes('9999'))).toBe(false);
    expect(
      ((sim.loadBalancers.get(web.lb.id as string)?.forwarding_rules ?? []) as { entry_port: number }[]).some(
        (r) => r.entry_port === 9999,
      ),
    ).toBe(false);
    // Deleting the tenant's Service leaves web's load balancer (and web's address).
    await api.deleteNamespacedService({ name: 'evil', namespace: TENANT });
    await untilGone('evil', TENANT);
    expect(sim.requestsTo('DELETE', `/v2/load_balancers/${web.lb.id}`)).toEqual([]);
    expect(sim.loadBalancers.has(web.lb.id as string)).toBe(true);
  }, 90_000);

  it("plain ccm run: the tenant's Service does not add its port to another namespace's ccm-built load balancer, and deleting it leaves that load balancer (review 2, R2-6)", async () => {
    await seedNodes();
    await api.createNamespacedService({ namespace: NS, body: lbService('web', NS) });
    const ccm = await world.run();
    const webId = await until(
      'web has a load balancer of ccm',
      async () =>
        (await api.readNamespacedService({ name: 'web', namespace: NS })).metadata?.annotations?.[LB_ID],
      30_000,
    );
    await until(
      'web has its ingress',
      async () =>
        (
          (await api.readNamespacedService({ name: 'web', namespace: NS })).status?.loadBalancer?.ingress ??
          []
        ).length > 0,
      30_000,
    );
    await api.createNamespacedService({
      namespace: TENANT,
      body: lbService('evil', TENANT, { [LB_ID]: webId as string }, [{ name: 'x', port: 9999 }]),
    });
    await refusedClaim(ccm, 'evil');
    expect(
      ((sim.loadBalancers.get(webId as string)?.forwarding_rules ?? []) as { entry_port: number }[]).some(
        (r) => r.entry_port === 9999,
      ),
    ).toBe(false);
    await api.deleteNamespacedService({ name: 'evil', namespace: TENANT });
    await untilGone('evil', TENANT);
    expect(sim.requestsTo('DELETE', `/v2/load_balancers/${webId}`)).toEqual([]);
    expect(sim.loadBalancers.has(webId as string)).toBe(true);
  }, 90_000);
});

describe('ccm migrate --provider digitalocean, another cluster in the account', () => {
  it("a tenant Service whose do-loadbalancer-name is another self-managed cluster's untagged load balancer is left alone (its droplets are not this cluster's): --yes records nothing, ccm run never rewires it nor deletes it with the Service (review 2, R2-2)", async () => {
    const [d1] = await seedNodes();
    // Another self-managed cluster in the same account: its official controller tags nothing.
    const other = otherClustersLb('shop', []);
    // A tenant creates a Service while the official controller is scaled to 0 (no ingress yet).
    await api.createNamespacedService({
      namespace: TENANT,
      body: lbService('shop', TENANT, { 'service.beta.kubernetes.io/do-loadbalancer-name': 'shop' }),
    });
    const dry = await migrate('-o', 'json');
    const plan = JSON.parse(dry.stdout);
    const shopPlan = plan.services.find((s: { name: string }) => s.name === 'shop');
    // A do-loadbalancer-name is the tenant's to write: without the Service's status showing that load
    // balancer, its name finds nothing (issue 43, item 7); its droplets would not be this cluster's either.
    expect(shopPlan.action).toBe('none');
    expect(shopPlan.loadBalancer).toBeUndefined();
    expect((await migrate()).stdout).toMatch(
      /no load balancer of digitalocean-cloud-controller-manager found for it/,
    );
    const yes = await migrate('--yes', '-o', 'json');
    expect(yes.exitCode).toBe(0);
    expect(await adoptedOf('shop', TENANT)).toBeUndefined();
    await world.run();
    await until(
      'tenant/shop served by a load balancer of its own',
      async () =>
        (
          (await api.readNamespacedService({ name: 'shop', namespace: TENANT })).status?.loadBalancer
            ?.ingress ?? []
        ).length > 0,
      30_000,
    );
    expect((sim.loadBalancers.get(other.id as string)?.droplet_ids ?? []) as number[]).not.toContain(d1);
    expect((sim.loadBalancers.get(other.id as string)?.droplet_ids ?? []) as number[]).toContain(999001);
    expect(sim.requestsTo('PUT', `/v2/load_balancers/${other.id}`)).toEqual([]);
    await api.deleteNamespacedService({ name: 'shop', namespace: TENANT });
    await untilGone('shop', TENANT);
    expect(sim.requestsTo('DELETE', `/v2/load_balancers/${other.id}`)).toEqual([]);
    expect(sim.loadBalancers.has(other.id as string)).toBe(true);
  }, 90_000);
});

describe("ccm migrate --provider digitalocean, a tenant Service naming another's load balancer id", () => {
  it('does not make the victim\'s load balancer "shared": the victim is still planned adopt (review 2, R2-3)', async () => {
    const [d1] = await seedNodes();
    const web = await seedOfficial('web', [d1 as number]);
    await api.createNamespacedService({
      namespace: TENANT,
      body: lbService('evil', TENANT, { [LB_ID]: web.lb.id as string }),
    });
    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    const webPlan = plan.services.find((s: { name: string }) => s.name === 'web');
    expect(webPlan.action).toBe('adopt');
  }, 60_000);
});

describe("the operator's load balancer in front of the cluster, named by a tenant's do-loadbalancer-name (issue 43, item 7)", () => {
  /**
   * The operator's load balancer, made by hand or by Terraform: untagged (as a self-managed cluster's
   * official controller leaves its own), tcp 443 → 30443, balancing to this cluster's droplets.
   */
  function operatorsLb(droplets: number[]) {
    return sim.addLoadBalancer({
      name: 'edge-lb',
      region: 'fra1',
      type: 'REGIONAL',
      droplet_ids: droplets,
      forwarding_rules: [
        { entry_protocol: 'tcp', entry_port: 443, target_protocol: 'tcp', target_port: 30443 },
      ],
      tags: [],
    });
  }

  /** Until the tenant's Service is served (its ingress set); returns it. */
  const untilServed = (name: string) =>
    until(
      `${TENANT}/${name} served`,
      async () => {
        const s = await api.readNamespacedService({ name, namespace: TENANT });
        return (s.status?.loadBalancer?.ingress ?? []).length > 0 ? s : undefined;
      },
      60_000,
    );

  it('--adopt-official: the tenant does not take it; its forwarding rule stays 443 → 30443, and deleting the tenant’s Service leaves it', async () => {
    const droplets = await seedNodes();
    const edge = operatorsLb(droplets);
    const before = structuredClone(edge);
    await api.createNamespacedService({
      namespace: TENANT,
      body: lbService('grab', TENANT, { 'service.beta.kubernetes.io/do-loadbalancer-name': 'edge-lb' }, [
        { name: 'https', port: 443 },
      ]),
    });
    await world.run(adoptingOfficial(''));
    const grab = await untilServed('grab');
    const now = sim.loadBalancers.get(edge.id as string);
    const taken = {
      adopted: grab.metadata?.annotations?.[ADOPTED],
      ingress: grab.status?.loadBalancer?.ingress?.map((i) => i.ip),
      rules: now?.forwarding_rules,
      droplets: now?.droplet_ids,
      writes: lbWrites()
        .filter((r) => r.url.includes(edge.id as string))
        .map((r) => `${r.method} ${r.url}`),
    };
    expect(taken).toEqual({
      adopted: undefined,
      ingress: [expect.not.stringMatching(`^${edge.ip}$`)],
      rules: before.forwarding_rules,
      droplets: before.droplet_ids,
      writes: [],
    });
    await api.deleteNamespacedService({ name: 'grab', namespace: TENANT });
    await untilGone('grab', TENANT);
    expect(sim.requestsTo('DELETE', `/v2/load_balancers/${edge.id}`)).toEqual([]);
    expect(sim.loadBalancers.get(edge.id as string)?.forwarding_rules).toEqual(before.forwarding_rules);
  }, 90_000);

  it('ccm migrate does not plan to hand it to the tenant’s Service', async () => {
    const droplets = await seedNodes();
    operatorsLb(droplets);
    await api.createNamespacedService({
      namespace: TENANT,
      body: lbService('grab', TENANT, { 'service.beta.kubernetes.io/do-loadbalancer-name': 'edge-lb' }, [
        { name: 'https', port: 443 },
      ]),
    });
    const plan = JSON.parse((await migrate('-o', 'json')).stdout);
    const grab = plan.services.find((s: { name: string }) => s.name === 'grab');
    expect({ action: grab.action, loadBalancer: grab.loadBalancer }).toEqual({
      action: 'none',
      loadBalancer: undefined,
    });
  }, 60_000);

  it('plain ccm run: a tenant naming the load balancer ccm built for the operator’s Service (its do-loadbalancer-name) neither rewrites nor deletes it', async () => {
    await seedNodes();
    // The operator's Service, served by ccm under the name it chose.
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('edge', NS, { 'service.beta.kubernetes.io/do-loadbalancer-name': 'edge-lb' }, [
        { name: 'https', port: 443 },
      ]),
    });
    const ccm = await world.run();
    const edgeId = await until(
      'edge served by a load balancer of ccm',
      async () => {
        const s = await api.readNamespacedService({ name: 'edge', namespace: NS });
        const id = s.metadata?.annotations?.[LB_ID];
        return id && (s.status?.loadBalancer?.ingress ?? []).length > 0 ? id : undefined;
      },
      30_000,
    );
    const before = structuredClone(sim.loadBalancers.get(edgeId));
    await api.createNamespacedService({
      namespace: TENANT,
      body: lbService('grab', TENANT, { 'service.beta.kubernetes.io/do-loadbalancer-name': 'edge-lb' }, [
        { name: 'x', port: 9999 },
      ]),
    });
    const refused = () =>
      ccm.logs.some((l) => l.includes('grab') && /which Service default\/edge claims/.test(l));
    // Refused, or (as before issue 43) served by the operator's load balancer.
    await until(
      'grab looked at',
      async () =>
        refused() ||
        ((await api.readNamespacedService({ name: 'grab', namespace: TENANT })).status?.loadBalancer?.ingress
          ?.length ?? 0) > 0,
      30_000,
    );
    expect(sim.loadBalancers.get(edgeId)?.forwarding_rules).toEqual(before?.forwarding_rules);
    expect(refused()).toBe(true);
    await api.deleteNamespacedService({ name: 'grab', namespace: TENANT });
    await untilGone('grab', TENANT);
    expect(sim.requestsTo('DELETE', `/v2/load_balancers/${edgeId}`)).toEqual([]);
    expect(sim.loadBalancers.get(edgeId)?.forwarding_rules).toEqual(before?.forwarding_rules);
  }, 90_000);

  /**
   * The operator's Service `edge` asks for do-loadbalancer-name `chosen` (else ccm names it by its
   * UID); ccm creates it, and DigitalOcean keeps it `new` (it takes minutes). The tenant's Service then
   * asks for the same name.
   */
  async function whileBeingBuilt(chosen?: string) {
    await seedNodes();
    sim.holdNew = true;
    const edge = await api.createNamespacedService({
      namespace: NS,
      body: lbService(
        'edge',
        NS,
        chosen ? { 'service.beta.kubernetes.io/do-loadbalancer-name': chosen } : {},
        [{ name: 'https', port: 443 }],
      ),
    });
    const name = chosen ?? defaultLbName(edge);
    let ccm = await world.run();
    const lb = await until(
      `${name} created`,
      async () => [...sim.loadBalancers.values()].find((x) => x.name === name),
      30_000,
    );
    await until('ccm waits for it', async () => ccm.logs.some((l) => /still being set up/.test(l)));
    // ccm restarts while DigitalOcean is still building it.
    await ccm.stop();
    ccm = await world.run();
    await api.createNamespacedService({
      namespace: TENANT,
      body: lbService('grab', TENANT, { 'service.beta.kubernetes.io/do-loadbalancer-name': name }, [
        { name: 'http', port: 8080 },
      ]),
    });
    await until('grab looked at', async () => ccm.logs.some((l) => l.includes('grab')), 30_000);
    sim.holdNew = false;
    // The tenant's change is synced at once, before edge's retry (10 s after its last).
    await api.patchNamespacedService(
      {
        name: 'grab',
        namespace: TENANT,
        body: { spec: { ports: [{ name: 'http', port: 8081, targetPort: 8080 }] } },
      },
      MERGE_PATCH,
    );
    const served = await until(
      'edge served',
      async () => {
        const s = await api.readNamespacedService({ name: 'edge', namespace: NS });
        return (s.status?.loadBalancer?.ingress ?? []).length > 0 ? s : undefined;
      },
      60_000,
    ).catch(() => undefined);
    const grab = await api.readNamespacedService({ name: 'grab', namespace: TENANT });
    const now = sim.loadBalancers.get(lb.id as string);
    expect({
      edge: served?.metadata?.annotations?.[LB_ID],
      grab: grab.metadata?.annotations?.[LB_ID],
      grabIngress: grab.status?.loadBalancer?.ingress,
      entryPorts: ((now?.forwarding_rules ?? []) as { entry_port: number }[]).map((r) => r.entry_port),
    }).toEqual({ edge: lb.id, grab: undefined, grabIngress: undefined, entryPorts: [443] });
    await api.deleteNamespacedService({ name: 'grab', namespace: TENANT });
    await untilGone('grab', TENANT);
    expect(sim.requestsTo('DELETE', `/v2/load_balancers/${lb.id}`)).toEqual([]);
    await ccm.stop();
  }

  it('a tenant naming the operator’s do-loadbalancer-name while DigitalOcean still builds it (and ccm restarted) neither takes, rewrites nor deletes it (review adopt, finding 1)', async () => {
    await whileBeingBuilt('prod-ingress');
  }, 120_000);

  it('a tenant naming a load balancer still being built by the name derived from its Service’s UID does not take it (review adopt, finding 1)', async () => {
    await whileBeingBuilt();
  }, 120_000);

  it('a Service deleted while its load balancer is still new deletes that load balancer', async () => {
    await seedNodes();
    sim.holdNew = true;
    await api.createNamespacedService({
      namespace: NS,
      body: lbService('edge', NS, { 'service.beta.kubernetes.io/do-loadbalancer-name': 'prod-ingress' }),
    });
    const ccm = await world.run();
    const lb = await until(
      'prod-ingress created',
      async () => [...sim.loadBalancers.values()].find((x) => x.name === 'prod-ingress'),
      30_000,
    );
    await until('ccm waits for prod-ingress', async () => ccm.logs.some((l) => /still being set up/.test(l)));
    await api.deleteNamespacedService({ name: 'edge', namespace: NS });
    await untilGone('edge', NS);
    expect(sim.loadBalancers.has(lb.id as string)).toBe(false);
    await ccm.stop();
  }, 90_000);

  it('--adopt-official takes the official load balancer by the default name of the Service’s UID, and leaves it when the Service goes (no ccm migrate --yes recorded the hand-over)', async () => {
    const [d1] = await seedNodes();
    const web = await seedOfficial('web', [d1 as number]);
    const ccm = await world.run(adoptingOfficial(''));
    await until('web adopted', async () => (await adoptedOf('web')) === web.lb.id, 30_000);
    await api.deleteNamespacedService({ name: 'web', namespace: NS });
    await untilGone('web', NS);
    const events = await api.listNamespacedEvent({ namespace: NS });
    const left = events.items.filter(
      (e) => e.involvedObject.name === 'web' && e.reason === 'DeletingLoadBalancer' && e.type === 'Warning',
    );
    expect({
      deletes: sim.requestsTo('DELETE', `/v2/load_balancers/${web.lb.id}`).length,
      exists: sim.loadBalancers.has(web.lb.id as string),
    }).toEqual({ deletes: 0, exists: true });
    expect(left.map((e) => e.message)).toEqual([
      expect.stringContaining(`load balancer ${web.lb.id} was taken over with --adopt-official`),
    ]);
    await ccm.stop();
  }, 90_000);
});
