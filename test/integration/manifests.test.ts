/**
 * `ccm manifests` against a real kube-apiserver: the output of every provider is accepted by
 * server-side apply (Deployment, CronJob and PDB schemas validated for real); `ccm run` started with a
 * TokenRequest token of those manifests' ServiceAccount does every job with zero 403s in the audit
 * log; and every RBAC rule is needed: with any one removed, the same run meets a 403.
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
  setHeaderOptions,
} from '@kubernetes/client-node';
import { Agent, fetch } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { type PolicyRule, renderManifests } from '../../src/cli/manifests.js';
import { loadProvider, providerNames } from '../../src/providers/registry.js';
import { createNodes, deleteAllNodes, UNINITIALIZED } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { until } from '../helpers/run.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const NS = 'kube-system';
const SA_USER = `system:serviceaccount:${NS}:ccm`;
const LEASE = 'cloud-controller-manager';
const SECRET = 'ccm-test-credentials';
const IMAGE_ARGS = ['manifests', '--provider', 'digitalocean', '--image', 'registry.example.com/ccm:0.1.0'];

let cp: ControlPlane;
let core: CoreV1Api;
let leases: CoordinationV1Api;
let objects: KubernetesObjectApi;
let dir: string;
let child: ChildProcess | undefined;
/** What the running ccm printed, for the failure message. */
let log = '';
let args: string[] = [];
let scraperToken = '';

const apply = <T extends KubernetesObject>(obj: T) =>
  objects.patch(obj, undefined, undefined, 'ccm-test', true, PatchStrategy.ServerSideApply);

beforeAll(async () => {
  cp = await startControlPlane();
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  kc.setCurrentContext('fixtures');
  core = kc.makeApiClient(CoreV1Api);
  leases = kc.makeApiClient(CoordinationV1Api);
  objects = KubernetesObjectApi.makeApiClient(kc);
  dir = mkdtempSync(join(tmpdir(), 'ccm-manifests-'));
});
afterAll(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});
/** SIGTERM and wait, unless it has already exited on its own (a missing permission can end it). */
async function stopChild(): Promise<void> {
  const running = child;
  child = undefined;
  if (!running || running.exitCode !== null || running.signalCode !== null) return;
  const exited = new Promise((r) => running.once('exit', r));
  running.kill('SIGTERM');
  await exited;
}

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail')
    console.error(`ccm run (${args?.join(' ')}) printed:\n${log.slice(-4000)}`);
  await stopChild();
});

async function render(provider: string, extra: { credentialsSecret?: string } = {}) {
  return renderManifests(await loadProvider(provider), {
    image: 'registry.example.com/ccm:test',
    namespace: NS,
    controllers: '*',
    cronjob: true,
    leaseName: LEASE,
    ...extra,
  }) as unknown as (KubernetesObject & Record<string, unknown>)[];
}

describe('ccm manifests', () => {
  it.each(providerNames)('%s: every object is accepted by server-side apply', async (provider) => {
    const docs = await render(provider);
    for (const doc of docs) await apply(doc);
    const kinds = docs.map((d) => d.kind);
    expect(kinds).toEqual(
      expect.arrayContaining([
        'ServiceAccount',
        'ClusterRole',
        'Role',
        'Deployment',
        'PodDisruptionBudget',
        'CronJob',
      ]),
    );
    // Never list or watch Secrets; a credentials Secret is read by name only.
    for (const role of docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role')) {
      for (const rule of role.rules as PolicyRule[]) {
        if (!rule.resources.includes('secrets')) continue;
        expect(rule.verbs).toEqual(['get']);
        expect(rule.resourceNames?.length).toBe(1);
      }
    }
    const deployment = docs.find((d) => d.kind === 'Deployment') as unknown as {
      spec: { replicas: number; template: { spec: Record<string, unknown> } };
    };
    expect(deployment.spec.replicas).toBe(2);
    expect(deployment.spec.template.spec).toMatchObject({ hostNetwork: true, dnsPolicy: 'Default' });
  });
});

describe('the built CLI', () => {
  it('`ccm manifests` without --image, or with a registry on localhost, says so in one line, exit 2', async () => {
    const none = await ccm(['manifests', '--provider', 'digitalocean']);
    expect(none).toMatchObject({ exitCode: 2, stdout: '' });
    expect(none.stderr).toMatch(/^ccm: no image given; pass --image <registry>\/ccm:\d+\.\d+\.\d+ [^\n]*$/);
    const local = await ccm(['manifests', '--provider', 'digitalocean', '--image', 'localhost/ccm:0.1.0']);
    expect(local).toMatchObject({ exitCode: 2, stdout: '' });
    expect(local.stderr).toMatch(
      /^ccm: --image localhost\/ccm:0\.1\.0 names a registry on the Node itself, [^\n]*$/,
    );
    const both = await ccm([...IMAGE_ARGS, '--node-selector', 'a=b', '--any-node']);
    expect(both.exitCode).toBe(2);
    expect(both.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('`ccm manifests` off a terminal prints YAML that server-side apply takes as it is; -o name lists it', async () => {
    const run = await ccm(IMAGE_ARGS);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const docs = parseAllDocuments(run.stdout).map((d) => d.toJS() as KubernetesObject);
    expect(docs.length).toBeGreaterThan(5);
    for (const doc of docs) await apply(doc);
    const account = await core.readNamespacedServiceAccount({ name: 'ccm', namespace: NS });
    expect(account.metadata?.name).toBe('ccm');

    const names = await ccm([...IMAGE_ARGS, '-o', 'name']);
    expect(names.stdout.trim().split('\n')).toEqual(
      docs.map((d) => {
        const group = d.apiVersion?.includes('/') ? `.${d.apiVersion.split('/')[0]}` : '';
        return `${d.kind?.toLowerCase()}${group}/${d.metadata?.name}`;
      }),
    );
  });
});

/** A token allowed `get /metrics` and nothing else, as a Prometheus has. */
async function metricsScraperToken(): Promise<string> {
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
  const request = await core.createNamespacedServiceAccountToken({
    name: 'prometheus',
    namespace: 'default',
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return request.status?.token ?? '';
}

/** A kubeconfig whose only user is a TokenRequest token of the manifests' ServiceAccount. */
async function serviceAccountKubeconfig(): Promise<string> {
  const request = await core.createNamespacedServiceAccountToken({
    name: 'ccm',
    namespace: NS,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const path = join(dir, 'sa-kubeconfig');
  writeFileSync(
    path,
    stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster: { server: cp.server, 'certificate-authority-data': cp.caData } }],
      users: [{ name: 'ccm', user: { token: request.status?.token } }],
      contexts: [{ name: 'ccm', context: { cluster: 'test', user: 'ccm' } }],
      'current-context': 'ccm',
    }),
    { mode: 0o600 },
  );
  return path;
}

describe('ccm run with the RBAC of its manifests', () => {
  let docs: (KubernetesObject & Record<string, unknown>)[];
  let kubeconfig: string;
  const inventory = () => join(dir, 'inventory.yaml');

  beforeAll(async () => {
    docs = await render('cloudlycke', { credentialsSecret: `${NS}/${SECRET}` });
    for (const doc of docs) await apply(doc);
    await core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: SECRET }, stringData: { x: 'y' } },
    });
    kubeconfig = await serviceAccountKubeconfig();
    scraperToken = await metricsScraperToken();
    writeFileSync(
      inventory(),
      stringify({
        defaults: { type: 't', region: 'r', zone: 'z' },
        loadBalancerPool: '10.77.0.0/28',
        instances: [{ id: 'w1', addresses: [{ type: 'InternalIP', address: '192.168.56.11' }] }],
      }),
    );
    const deployment = docs.find((d) => d.kind === 'Deployment') as unknown as {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    // The Deployment's own arguments, pointed at this machine: the cloud file, a local port.
    args = [
      ...(deployment.spec.template.spec.containers[0]?.args ?? []).filter(
        (a) => !a.startsWith('--secure-port'),
      ),
      `--kubeconfig=${kubeconfig}`,
      `--cloud-config=${inventory()}`,
      '--secure-port=0',
      '--bind-address=127.0.0.1',
      '--deletion-grace-period=0s',
      '--node-monitor-period=200ms',
      '--cloud-list-period=500ms',
    ];
  });

  /** Nodes, a Service and no Lease, then ccm run as the ServiceAccount. */
  async function scenario() {
    await deleteAllNodes(core);
    await createNodes(core, [
      { name: 'w1' },
      { name: 'gone1', providerID: 'cloudlycke://gone1', tainted: false, ready: false },
    ]);
    // The previous run was stopped with its finalizer on the Service: remove it by hand.
    await core
      .patchNamespacedService(
        { name: 'web', namespace: 'default', body: { metadata: { finalizers: null } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .catch(() => undefined);
    await core.deleteNamespacedService({ name: 'web', namespace: 'default' }).catch(() => undefined);
    await until(
      'web gone',
      async () =>
        (await core.listNamespacedService({ namespace: 'default', fieldSelector: 'metadata.name=web' })).items
          .length === 0,
    );
    await leases.deleteNamespacedLease({ name: LEASE, namespace: NS }).catch(() => undefined);
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: { type: 'LoadBalancer', ports: [{ port: 80 }], selector: { a: 'b' } },
      },
    });
    // A Service that says it was handed a load balancer: ccm checks the hand-over in kube-system.
    await core
      .createNamespacedService({
        namespace: 'default',
        body: {
          metadata: { name: 'handed', annotations: { 'ccm.io/adopted-load-balancer': 'lb-1' } },
          spec: { type: 'LoadBalancer', ports: [{ port: 80 }], selector: { a: 'b' } },
        },
      })
      .catch(() => undefined);
    const before = (await cp.requests(SA_USER)).length;
    child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    log = '';
    child.stdout?.on('data', (d) => {
      log += d;
    });
    child.stderr?.on('data', (d) => {
      log += d;
    });
    void scrapeMetrics(child);
    return async () => (await cp.requests(SA_USER)).slice(before);
  }

  /** A Prometheus: reads /metrics with its own token every 300 ms while this ccm runs. */
  async function scrapeMetrics(running: ChildProcess) {
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

  it('initialises and deletes Nodes, holds the Lease, gives the Service its address, records events: zero 403s', async () => {
    const seen = await scenario();
    await until(
      'w1 initialised',
      async () =>
        !(await core.readNode({ name: 'w1' })).spec?.taints?.some((t) => t.key === UNINITIALIZED.key),
      30_000,
    );
    await until(
      'gone1 deleted',
      async () => (await core.listNode({ fieldSelector: 'metadata.name=gone1' })).items.length === 0,
      30_000,
    );
    await until(
      'web ingress',
      async () =>
        (await core.readNamespacedService({ name: 'web', namespace: 'default' })).status?.loadBalancer
          ?.ingress?.length,
      30_000,
    );
    // At least one scrape (every 300 ms) went through ccm's review of the scraper's token.
    await until(
      'a TokenReview',
      async () => (await seen()).some((e) => e.objectRef?.resource === 'tokenreviews'),
      30_000,
    );
    const lease = await leases.readNamespacedLease({
      name: LEASE,
      namespace: NS,
    });
    expect(lease.spec?.holderIdentity).toBeTruthy();
    const requests = await seen();
    expect(forbidden(requests)).toEqual([]);
    const resources = new Set(
      requests.map(
        (e) =>
          `${e.verb} ${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`,
      ),
    );
    for (const needed of [
      'create tokenreviews',
      'create subjectaccessreviews',
      'patch nodes',
      'patch nodes/status',
      'delete nodes',
      'create events',
      'patch services/status',
      'get secrets',
      'get namespaces',
    ]) {
      expect(resources, needed).toContain(needed);
    }
  }, 90_000);

  it('needs every rule: with any one removed, the same run meets a 403', async () => {
    const roles = docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role');
    const controllerRoles = roles.filter(
      (r) =>
        (r.metadata?.labels as Record<string, string> | undefined)?.['app.kubernetes.io/component'] ===
        'controller',
    );
    let checked = 0;
    for (const role of controllerRoles) {
      const rules = role.rules as PolicyRule[];
      for (const [i, rule] of rules.entries()) {
        const reduced = { ...role, rules: rules.filter((_, j) => j !== i) };
        await apply(reduced);
        const seen = await scenario();
        const hit = await until(
          `a 403 without ${role.kind} ${role.metadata?.name} rule ${JSON.stringify(rule)}`,
          async () => {
            const denied = forbidden(await seen());
            return denied.find((e) =>
              rule.resources.includes(
                `${e.objectRef?.resource}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`,
              ),
            );
          },
          30_000,
        );
        expect(rule.verbs).toContain(hit.verb === 'watch' ? 'watch' : hit.verb);
        checked++;
        await stopChild();
        await apply(role);
      }
    }
    expect(checked).toBeGreaterThanOrEqual(10);
  }, 600_000);
});
