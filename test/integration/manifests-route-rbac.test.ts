/**
 * `ccm manifests --controllers route`: the RBAC it prints is what the route controller alone needs.
 * The built `ccm run` of the Deployment, started with a TokenRequest token of the manifests'
 * ServiceAccount against the OpenStack simulator, creates a route, sets NetworkUnavailable, records
 * a FailedToCreateRoute event and answers a metrics scraper with zero 403s; with any one rule removed,
 * the same run meets a 403 (as test/integration/manifests.test.ts proves for every controller).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
} from '@kubernetes/client-node';
import { Agent, fetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { type PolicyRule, renderManifests } from '../../src/cli/manifests.js';
import { loadProvider } from '../../src/providers/registry.js';
import type { SimRouter } from '../clouds/openstack/neutron-routes.js';
import { OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { nodeObject } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { until } from '../helpers/run.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const NS = 'kube-system';
const SA_USER = `system:serviceaccount:${NS}:ccm`;
const LEASE = 'ccm-route-rbac';

let cp: ControlPlane;
let sim: OpenStackSimulator;
let router: SimRouter;
let core: CoreV1Api;
let leases: CoordinationV1Api;
let objects: KubernetesObjectApi;
let dir: string;
let child: ChildProcess | undefined;
let log = '';
let args: string[] = [];
let scraperToken = '';
let docs: (KubernetesObject & Record<string, unknown>)[] = [];

const apply = <T extends KubernetesObject>(obj: T) =>
  objects.patch(obj, undefined, undefined, 'ccm-test', true, PatchStrategy.ServerSideApply);

async function stopChild(): Promise<void> {
  const running = child;
  child = undefined;
  if (!running || running.exitCode !== null || running.signalCode !== null) return;
  const exited = new Promise((r) => running.once('exit', r));
  running.kill('SIGTERM');
  await exited;
}

beforeAll(async () => {
  [cp, sim] = await Promise.all([startControlPlane(), new OpenStackSimulator().start()]);
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  kc.setCurrentContext('fixtures');
  core = kc.makeApiClient(CoreV1Api);
  leases = kc.makeApiClient(CoordinationV1Api);
  objects = KubernetesObjectApi.makeApiClient(kc);
  dir = mkdtempSync(join(tmpdir(), 'ccm-route-rbac-'));
  router = sim.routing.addRouter({ subnets: ['10.0.0.0/24'], ips: ['10.0.0.1'] });
  sim.routing.addPort({ ip: '10.0.0.11' });

  docs = renderManifests(await loadProvider('openstack'), {
    image: 'registry.example.com/ccm:test',
    namespace: NS,
    controllers: 'route',
    clusterCIDR: '10.244.0.0/16',
    cronjob: false,
    leaseName: LEASE,
  }) as unknown as (KubernetesObject & Record<string, unknown>)[];
  for (const doc of docs) await apply(doc);
  const conf = `[Global]\nauth-url=${sim.authUrl}\nusername=admin\npassword=passw0rd\nregion=RegionOne\n[Route]\nrouter-id=${router.id}\n`;
  await core.createNamespacedSecret({
    namespace: NS,
    body: { metadata: { name: 'cloud-config' }, stringData: { 'cloud.conf': conf } },
  });

  // A scraper allowed `get /metrics` and nothing else.
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'ccm-test-metrics-reader' },
    rules: [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }],
  } as KubernetesObject);
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'ccm-test-metrics-reader' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ccm-test-metrics-reader' },
    subjects: [{ kind: 'ServiceAccount', name: 'prometheus', namespace: 'default' }],
  } as KubernetesObject);
  await apply({
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: 'prometheus', namespace: 'default' },
  });
  const token = async (name: string, namespace: string) =>
    (
      await core.createNamespacedServiceAccountToken({
        name,
        namespace,
        body: { spec: { audiences: [], expirationSeconds: 3600 } },
      })
    ).status?.token ?? '';
  scraperToken = await token('prometheus', 'default');
  const kubeconfig = join(dir, 'sa-kubeconfig');
  writeFileSync(
    kubeconfig,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server: cp.server, 'certificate-authority-data': cp.caData } }],
      users: [{ name: 'ccm', user: { token: await token('ccm', NS) } }],
      contexts: [{ name: 'ccm', context: { cluster: 'test', user: 'ccm' } }],
      'current-context': 'ccm',
    }),
    { mode: 0o600 },
  );
  const deployment = docs.find((d) => d.kind === 'Deployment') as unknown as {
    spec: { template: { spec: { containers: { args: string[] }[] } } };
  };
  expect(deployment.spec.template.spec.containers[0]?.args).toContain('--cluster-cidr=10.244.0.0/16');
  args = [
    ...(deployment.spec.template.spec.containers[0]?.args ?? []).filter(
      (a) => !a.startsWith('--secure-port'),
    ),
    `--kubeconfig=${kubeconfig}`,
    '--secure-port=0',
    '--bind-address=127.0.0.1',
    '--route-reconciliation-period=300ms',
  ];
});
afterAll(async () => {
  await stopChild();
  await Promise.all([cp?.stop(), sim?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail')
    console.error(`ccm run (${args.join(' ')}) printed:\n${log.slice(-4000)}`);
  await stopChild();
});

/** w11 (its port exists: a route) and w12 (no port: a FailedToCreateRoute event), then ccm run. */
async function scenario() {
  await core.deleteCollectionNode({});
  router.routes = [];
  for (const n of [11, 12]) {
    const node = nodeObject({
      name: `w${n}`,
      tainted: false,
      addresses: [{ type: 'InternalIP', address: `10.0.0.${n}` }],
    });
    const podCIDR = `10.244.${n}.0/24`;
    await core.createNode({ body: { ...node, spec: { ...node.spec, podCIDR, podCIDRs: [podCIDR] } } });
  }
  await leases.deleteNamespacedLease({ name: LEASE, namespace: NS }).catch(() => undefined);
  const before = (await cp.requests(SA_USER)).length;
  child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  log = '';
  child.stdout?.on('data', (d) => {
    log += d;
  });
  child.stderr?.on('data', (d) => {
    log += d;
  });
  void scrape(child);
  return async () => (await cp.requests(SA_USER)).slice(before);
}

async function scrape(running: ChildProcess) {
  const insecure = new Agent({ connect: { rejectUnauthorized: false } });
  while (running.exitCode === null && running.signalCode === null) {
    const url = /serving \/healthz, \/readyz and \/metrics on (https:\/\/[^\s"]+)/.exec(log)?.[1];
    if (url) {
      await fetch(`${url}/metrics`, {
        dispatcher: insecure,
        headers: { authorization: `Bearer ${scraperToken}` },
      }).then(
        (res) => res.arrayBuffer(),
        () => undefined,
      );
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  await insecure.close();
}

const forbidden = (events: Awaited<ReturnType<ControlPlane['requests']>>) =>
  events.filter((e) => e.responseStatus?.code === 403);
const resourceOf = (e: Awaited<ReturnType<ControlPlane['requests']>>[number]) =>
  `${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;

describe('ccm run --controllers route with the RBAC of its manifests', () => {
  it('creates the route, sets the condition, records the failure event, is scraped: zero 403s', async () => {
    const seen = await scenario();
    await until(
      'w11 RouteCreated',
      async () =>
        (await core.readNode({ name: 'w11' })).status?.conditions?.some((c) => c.reason === 'RouteCreated'),
      30_000,
    );
    await until(
      'a FailedToCreateRoute event and a TokenReview',
      async () => {
        const requests = await seen();
        return (
          requests.some((e) => e.verb === 'create' && e.objectRef?.resource === 'events') &&
          requests.some((e) => e.objectRef?.resource === 'tokenreviews')
        );
      },
      30_000,
    );
    expect(router.routes).toEqual([{ destination: '10.244.11.0/24', nexthop: '10.0.0.11' }]);
    const requests = await seen();
    expect(forbidden(requests)).toEqual([]);
    const used = new Set(requests.map((e) => `${e.verb} ${resourceOf(e)}`));
    for (const needed of [
      'patch nodes/status',
      'get namespaces',
      'create events',
      'create tokenreviews',
      'create subjectaccessreviews',
      'get secrets',
    ])
      expect(used, needed).toContain(needed);
  }, 90_000);

  it('needs every rule: with any one removed, the same run meets a 403', async () => {
    const roles = docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role');
    let checked = 0;
    for (const role of roles) {
      const rules = role.rules as PolicyRule[];
      for (const [i, rule] of rules.entries()) {
        await apply({ ...role, rules: rules.filter((_, j) => j !== i) });
        const seen = await scenario();
        const hit = await until(
          `a 403 without ${role.kind} ${role.metadata?.name} rule ${JSON.stringify(rule)}`,
          async () => forbidden(await seen()).find((e) => rule.resources.includes(resourceOf(e))),
          30_000,
        );
        expect(rule.verbs).toContain(hit.verb);
        checked++;
        await stopChild();
        await apply(role);
      }
    }
    // nodes, nodes/status, namespaces, events, tokenreviews, subjectaccessreviews, the Lease, the Secret
    expect(checked).toBeGreaterThanOrEqual(8);
  }, 600_000);
});
