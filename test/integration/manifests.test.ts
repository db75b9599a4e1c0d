/**
 * `ccm manifests` against a real kube-apiserver: the output of every provider is accepted by
 * server-side apply (DaemonSet and CronJob schemas validated for real); `ccm run` started with a
 * TokenRequest token of those manifests' ServiceAccount does every job with zero 403s in the audit
 * log; and every RBAC rule is needed: with any one removed, the same run meets a 403.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type KubernetesObject,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { controllerWorkload, type PolicyRule, renderManifests } from '../../src/cli/manifests.js';
import { loadProvider, providerNames } from '../../src/providers/registry.js';
import {
  createNodes,
  deleteAllNodes,
  fixtureClient,
  forgetNodeDeletions,
  UNINITIALIZED,
} from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { helmTemplate } from '../helpers/helm.js';
import { until } from '../helpers/run.js';
import { type ManifestDoc, ServiceAccountRun } from '../helpers/service-account-run.js';

const NS = 'kube-system';
const LEASE = 'cloud-controller-manager';
const SECRET = 'ccm-test-credentials';
const IMAGE_ARGS = ['manifests', '--provider', 'digitalocean', '--image', 'registry.example.com/ccm:0.1.0'];

let cp: ControlPlane;
let dir: string;
/** ccm run as the manifests' ServiceAccount, and the fixtures admin's clients (core, leases, apply). */
let run: ServiceAccountRun;

beforeAll(async () => {
  cp = await startControlPlane();
  run = new ServiceAccountRun(cp, NS);
  dir = mkdtempSync(join(tmpdir(), 'ccm-manifests-'));
});
afterAll(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async (ctx) => {
  run.printIfFailed(ctx);
  await run.stop();
});

async function render(provider: string, extra: { credentialsSecret?: string } = {}) {
  return renderManifests(await loadProvider(provider), {
    image: 'registry.example.com/ccm:test',
    namespace: NS,
    controllers: '*',
    cronjob: true,
    leaseName: LEASE,
    ...extra,
  }) as unknown as ManifestDoc[];
}

describe('ccm manifests', () => {
  it.each(providerNames)('%s: every object is accepted by server-side apply', async (provider) => {
    const docs = await render(provider);
    for (const doc of docs) await run.apply(doc);
    const kinds = docs.map((d) => d.kind);
    expect(kinds).toEqual(
      expect.arrayContaining(['ServiceAccount', 'ClusterRole', 'Role', 'DaemonSet', 'CronJob']),
    );
    // Never list or watch Secrets; a credentials Secret is read by name only.
    for (const role of docs.filter((d) => d.kind === 'ClusterRole' || d.kind === 'Role')) {
      for (const rule of role.rules as PolicyRule[]) {
        if (!rule.resources.includes('secrets')) continue;
        expect(rule.verbs).toEqual(['get']);
        expect(rule.resourceNames?.length).toBe(1);
      }
    }
    const workload = controllerWorkload(docs) as unknown as {
      kind: string;
      spec: { template: { spec: Record<string, unknown> } };
    };
    expect(workload.kind).toBe('DaemonSet');
    expect(workload.spec.template.spec).toMatchObject({ hostNetwork: true, dnsPolicy: 'Default' });
  });
});

describe('the built CLI', () => {
  it('`ccm manifests` without --image, with a registry on localhost or with no image reference, says so in one line, exit 2', async () => {
    const none = await ccm(['manifests', '--provider', 'digitalocean']);
    expect(none).toMatchObject({ exitCode: 2, stdout: '' });
    expect(none.stderr).toMatch(/^ccm: no image given; pass --image <registry>\/ccm:\d+\.\d+\.\d+ [^\n]*$/);
    const local = await ccm(['manifests', '--provider', 'digitalocean', '--image', 'localhost/ccm:0.1.0']);
    expect(local).toMatchObject({ exitCode: 2, stdout: '' });
    expect(local.stderr).toMatch(
      /^ccm: --image localhost\/ccm:0\.1\.0 names a registry on the Node itself, [^\n]*$/,
    );
    // A capital in the repository: no image reference, which the kubelet would refuse only on the Node.
    const upper = await ccm(['manifests', '--provider', 'digitalocean', '--image', 'r.example/CCM:1']);
    expect(upper).toMatchObject({ exitCode: 2, stdout: '' });
    expect(upper.stderr).toBe(
      'ccm: --image: expected an image reference, whose repository name is lower case (r.example/ccm:1), got "r.example/CCM:1"',
    );
    const both = await ccm([...IMAGE_ARGS, '--node-selector', 'a=b', '--any-node']);
    expect(both.exitCode).toBe(2);
    expect(both.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('`ccm manifests` off a terminal prints YAML that server-side apply takes as it is; -o name lists it', async () => {
    const out = await ccm(IMAGE_ARGS);
    expect(out.stderr).toBe('');
    expect(out.exitCode).toBe(0);
    const docs = parseAllDocuments(out.stdout).map((d) => d.toJS() as KubernetesObject);
    expect(docs.length).toBeGreaterThan(5);
    for (const doc of docs) await run.apply(doc);
    const account = await run.core.readNamespacedServiceAccount({ name: 'ccm', namespace: NS });
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

/** The same choices as chart values: the chart's objects (charts/ccm, rendered by the real helm). */
async function chartDocs(): Promise<ManifestDoc[]> {
  const { objects, result } = await helmTemplate({
    provider: 'cloudlycke',
    image: { repository: 'registry.example.com/ccm', tag: 'test' },
    credentialsSecret: `${NS}/${SECRET}`,
    cronjob: { enabled: true },
  });
  expect(result.exitCode, result.stderr).toBe(0);
  return objects as unknown as ManifestDoc[];
}

// The RBAC of `ccm manifests`, and the same proof for the Helm chart's (issue #47): both must be minimal.
describe.each([
  ['its manifests', () => render('cloudlycke', { credentialsSecret: `${NS}/${SECRET}` })],
  ['the Helm chart', chartDocs],
])('ccm run with the RBAC of %s', (_source, source) => {
  let docs: ManifestDoc[];
  const inventory = () => join(dir, 'inventory.yaml');

  beforeAll(async () => {
    docs = await source();
    // Nothing of the other source's RBAC may stay behind to hide a role this one lacks.
    const rbac = fixtureClient(cp.kubeconfigPath, RbacAuthorizationV1Api);
    const labelSelector = 'app.kubernetes.io/name=ccm';
    await rbac.deleteCollectionClusterRole({ labelSelector });
    await rbac.deleteCollectionClusterRoleBinding({ labelSelector });
    await rbac.deleteCollectionNamespacedRole({ namespace: NS, labelSelector });
    await rbac.deleteCollectionNamespacedRoleBinding({ namespace: NS, labelSelector });
    await run.core.deleteNamespacedSecret({ name: SECRET, namespace: NS }).catch(() => undefined);
    await run.core.createNamespacedSecret({
      namespace: NS,
      body: { metadata: { name: SECRET }, stringData: { x: 'y' } },
    });
    writeFileSync(
      inventory(),
      stringify({
        defaults: { type: 't', region: 'r', zone: 'z' },
        loadBalancerPool: '10.77.0.0/28',
        instances: [{ id: 'w1', addresses: [{ type: 'InternalIP', address: '192.168.56.11' }] }],
      }),
    );
    // The DaemonSet's own arguments, pointed at this machine: the cloud file, a local port.
    await run.install(docs, dir, [
      `--cloud-config=${inventory()}`,
      '--deletion-grace-period=0s',
      '--node-monitor-period=200ms',
      '--cloud-list-period=500ms',
    ]);
  });

  /** Nodes, a Service and no Lease, then ccm run as the ServiceAccount. */
  async function scenario() {
    await deleteAllNodes(run.core);
    // The deletion brake counts the last 10 minutes' deletions from its record: not the last run's.
    await forgetNodeDeletions(run.core);
    await createNodes(run.core, [
      { name: 'w1' },
      { name: 'gone1', providerID: 'cloudlycke://gone1', tainted: false, ready: false },
    ]);
    // The previous run was stopped with its finalizer on the Service: remove it by hand.
    await run.core
      .patchNamespacedService(
        { name: 'web', namespace: 'default', body: { metadata: { finalizers: null } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .catch(() => undefined);
    await run.core.deleteNamespacedService({ name: 'web', namespace: 'default' }).catch(() => undefined);
    await until(
      'web gone',
      async () =>
        (await run.core.listNamespacedService({ namespace: 'default', fieldSelector: 'metadata.name=web' }))
          .items.length === 0,
    );
    await run.leases.deleteNamespacedLease({ name: LEASE, namespace: NS }).catch(() => undefined);
    await run.core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: { type: 'LoadBalancer', ports: [{ port: 80 }], selector: { a: 'b' } },
      },
    });
    // A Service that says it was handed a load balancer: ccm checks the hand-over in kube-system.
    await run.core
      .createNamespacedService({
        namespace: 'default',
        body: {
          metadata: { name: 'handed', annotations: { 'ccm.io/adopted-load-balancer': 'lb-1' } },
          spec: { type: 'LoadBalancer', ports: [{ port: 80 }], selector: { a: 'b' } },
        },
      })
      .catch(() => undefined);
    return run.start();
  }

  it('initialises and deletes Nodes, holds the Lease, gives the Service its address, records events: zero 403s', async () => {
    const seen = await scenario();
    await until(
      'w1 initialised',
      async () =>
        !(await run.core.readNode({ name: 'w1' })).spec?.taints?.some((t) => t.key === UNINITIALIZED.key),
      30_000,
    );
    await until(
      'gone1 deleted',
      async () => (await run.core.listNode({ fieldSelector: 'metadata.name=gone1' })).items.length === 0,
      30_000,
    );
    await until(
      'web ingress',
      async () =>
        (await run.core.readNamespacedService({ name: 'web', namespace: 'default' })).status?.loadBalancer
          ?.ingress?.length,
      30_000,
    );
    // At least one scrape (every 300 ms) went through ccm's review of the scraper's token.
    await until(
      'a TokenReview',
      async () => (await seen()).some((e) => e.objectRef?.resource === 'tokenreviews'),
      30_000,
    );
    const lease = await run.leases.readNamespacedLease({
      name: LEASE,
      namespace: NS,
    });
    expect(lease.spec?.holderIdentity).toBeTruthy();
    const requests = await seen();
    run.expectAllowed(requests, [
      'create tokenreviews',
      'create subjectaccessreviews',
      'patch nodes',
      'patch nodes/status',
      'delete nodes',
      'create events',
      'list events',
      'get configmaps',
      'create configmaps',
      'patch services/status',
      'get secrets',
      'get namespaces',
    ]);
  }, 90_000);

  it('needs every rule: with any one removed, the same run meets a 403', async () => {
    // The roles of the controller (app.kubernetes.io/component=controller), not the CronJob's.
    const checked = await run.expectEveryRuleNeeded(docs, scenario, 'controller');
    expect(checked).toBeGreaterThanOrEqual(10);
  }, 600_000);
});
