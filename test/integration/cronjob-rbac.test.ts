/**
 * The `nodes init` CronJob that `ccm manifests --provider cloudlycke --cronjob` generates, against a real
 * kube-apiserver: every object is accepted by server-side apply (the CronJob schema is validated for
 * real), the pod can run before the CNI on uninitialised Nodes and mounts the inventory ConfigMap the
 * operator creates from templates/cloudlycke/inventory.example.yaml, and the ClusterRole is enough for
 * `ccm nodes init`: the built CLI runs with a token of the CronJob's ServiceAccount and the audit log
 * shows no write answered 403. A negative control (the same role without `delete`) shows that check can
 * fail.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  RbacAuthorizationV1Api,
  type V1ClusterRole,
  type V1Node,
  type V1Taint,
  type V1Toleration,
} from '@kubernetes/client-node';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { renderManifests } from '../../src/cli/manifests.js';
import { loadProvider } from '../../src/providers/registry.js';
import { createNodes, deleteAllNodes, forgetNodeDeletions, UNINITIALIZED } from '../controlplane/fixtures.js';
import { type AuditEvent, CCM_USER } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { helmTemplate } from '../helpers/helm.js';
import { writeInventory } from '../helpers/inventory.js';
import { tempDir } from '../helpers/tmp.js';

const EXAMPLE_INVENTORY = fileURLToPath(
  new URL('../../templates/cloudlycke/inventory.example.yaml', import.meta.url),
);
const CONTAINERFILE = fileURLToPath(new URL('../../Containerfile', import.meta.url));
const NAMESPACE = 'kube-system';
const SA = 'ccm-nodes-init';
const CONFIG_MAP = 'ccm-cloudlycke-config';
const SA_USER = `system:serviceaccount:${NAMESPACE}:${SA}`;
const ROLE = 'system:ccm-nodes-init';
/** The deletion brake's record of deletions (ConfigMap kube-system/ccm-node-deletions), for the CronJob. */
const RECORD_ROLE = 'ccm-nodes-init:node-deletions';
const FIELD_MANAGER = 'ccm-test';
const DEFAULTS = { type: 'vbox.vm.1g.2cpu', region: 'virtualbox', zone: 'virtualbox' };
const gone = { ready: false, tainted: false } as const;

// The CronJob's objects are applied once; Nodes are deleted where a describe says so.
const world = useCloudWorld('cloudlycke', { keep: true });
let kc: KubeConfig;
let core: CoreV1Api;
let objects: KubernetesObjectApi;
let documents: KubernetesObject[];
let applied: KubernetesObject[];

async function generatedDocuments(): Promise<KubernetesObject[]> {
  return renderManifests(await loadProvider('cloudlycke'), {
    cronjob: true,
    image: 'registry.example.com/ccm:test',
    namespace: NAMESPACE,
    controllers: '*',
    leaseName: 'cloud-controller-manager',
  }) as unknown as KubernetesObject[];
}

/** Server-side apply as the fixture admin, like `kubectl apply --server-side --force-conflicts`. */
function apply<T extends KubernetesObject>(obj: T): Promise<T> {
  return objects.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
}

function generatedDocument<T extends KubernetesObject>(kind: string, name: string): T {
  const doc = documents.find((d) => d.kind === kind && d.metadata?.name === name);
  if (!doc) throw new Error(`ccm manifests generated no ${kind} ${name}`);
  return structuredClone(doc) as T;
}

/** Whether a toleration tolerates a taint, by the scheduler's rules (core/v1 Toleration). */
function tolerates(t: V1Toleration, taint: V1Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

/** A kubeconfig whose only user is a TokenRequest token of the ServiceAccount: the CronJob pod's identity. */
async function serviceAccountKubeconfig(name: string): Promise<string> {
  const request = await core.createNamespacedServiceAccountToken({
    name,
    namespace: NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 600 } },
  });
  const token = request.status?.token;
  if (!token) throw new Error(`TokenRequest for ${name} returned no token`);
  const dir = tempDir('ccm-sa-kubeconfig-');
  const path = join(dir, 'kubeconfig');
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster:
      server: ${world.cp.server}
      certificate-authority-data: ${world.cp.caData}
users:
  - name: ${name}
    user:
      token: ${token}
contexts:
  - name: ${name}
    context: { cluster: test, user: ${name} }
current-context: ${name}
`,
    { mode: 0o600 },
  );
  return path;
}

async function nodesInitAs(user: string, kubeconfig: string, inventory: string, ...extra: string[]) {
  const before = (await world.cp.writes(user)).length;
  const result = await ccm([
    'nodes',
    'init',
    '--provider',
    'cloudlycke',
    '--kubeconfig',
    kubeconfig,
    '--cloud-config',
    inventory,
    ...extra,
  ]);
  const writes = (await world.cp.writes(user)).slice(before);
  return { ...result, writes };
}

const describeWrite = (w: AuditEvent) =>
  `${w.verb} ${w.objectRef?.resource}${w.objectRef?.subresource ? `/${w.objectRef.subresource}` : ''}`;

async function nodeExists(name: string): Promise<boolean> {
  return (await core.listNode({ fieldSelector: `metadata.name=${name}` })).items.length === 1;
}

const uninitialized = (n: V1Node) => (n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED.key);

beforeAll(async () => {
  kc = new KubeConfig();
  kc.loadFromFile(world.kubeconfig);
  kc.setCurrentContext('fixtures');
  core = kc.makeApiClient(CoreV1Api);
  objects = KubernetesObjectApi.makeApiClient(kc);
  documents = await generatedDocuments();
  applied = [];
  for (const doc of documents) applied.push(await apply(doc));
  // As the operator does: kubectl -n kube-system create configmap ccm-cloudlycke-config --from-file=config=inventory.yaml
  await core.createNamespacedConfigMap({
    namespace: NAMESPACE,
    body: { metadata: { name: CONFIG_MAP }, data: { config: readFileSync(EXAMPLE_INVENTORY, 'utf8') } },
  });
});

/** Binds the CronJob's Role on the record of deletions to a test's ServiceAccount too. */
async function bindRecordRole(account: string): Promise<void> {
  await apply({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: `ccm-test:${account}`, namespace: NAMESPACE },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: RECORD_ROLE },
    subjects: [{ kind: 'ServiceAccount', name: account, namespace: NAMESPACE }],
  });
}

describe('the generated CronJob', () => {
  it("is the Helm chart's too: helm template with cronjob.enabled gives these objects, so what is proven here holds for both", async () => {
    const { objects: chart, result } = await helmTemplate({
      provider: 'cloudlycke',
      image: { repository: 'registry.example.com/ccm', tag: 'test' },
      cronjob: { enabled: true },
    });
    expect(result.exitCode, result.stderr).toBe(0);
    const key = (d: { kind?: string; metadata?: { name?: string; namespace?: string } }) =>
      `${d.kind} ${d.metadata?.namespace ?? ''}/${d.metadata?.name}`;
    const ours = new Map(documents.map((d) => [key(d), d]));
    expect(chart.map(key).sort()).toEqual([...ours.keys()].sort());
    for (const doc of chart) expect(doc, key(doc)).toEqual(ours.get(key(doc)));
  });

  it('is accepted object by object by server-side apply', () => {
    expect(applied.map((o) => `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`)).toEqual([
      'ServiceAccount kube-system/ccm',
      `ServiceAccount kube-system/${SA}`,
      'ClusterRole /system:ccm',
      'ClusterRoleBinding /system:ccm',
      'Role kube-system/ccm:leader-election',
      'RoleBinding kube-system/ccm:leader-election',
      'Role kube-system/ccm:migration-record',
      'RoleBinding kube-system/ccm:migration-record',
      'Role kube-system/ccm:node-deletions',
      'RoleBinding kube-system/ccm:node-deletions',
      `Role kube-system/${RECORD_ROLE}`,
      `RoleBinding kube-system/${RECORD_ROLE}`,
      `ClusterRole /${ROLE}`,
      `ClusterRoleBinding /${ROLE}`,
      'DaemonSet kube-system/ccm',
      'CronJob kube-system/ccm-nodes-init',
    ]);
    for (const obj of applied) {
      expect(obj.metadata?.uid).toBeTruthy();
      expect(obj.metadata?.managedFields).toEqual(
        expect.arrayContaining([expect.objectContaining({ manager: FIELD_MANAGER, operation: 'Apply' })]),
      );
    }
  });

  it('schedules one pass at a time that can run before the CNI on control-plane Nodes, as its own ServiceAccount', async () => {
    const cron = await kc.makeApiClient(BatchV1Api).readNamespacedCronJob({
      name: 'ccm-nodes-init',
      namespace: NAMESPACE,
    });
    expect(cron.spec).toMatchObject({
      schedule: '*/5 * * * *',
      concurrencyPolicy: 'Forbid',
      suspend: false,
    });
    expect(cron.spec?.startingDeadlineSeconds).toBeGreaterThan(0);
    expect(cron.spec?.successfulJobsHistoryLimit).toBeGreaterThanOrEqual(0);
    expect(cron.spec?.failedJobsHistoryLimit).toBeGreaterThanOrEqual(0);

    const job = cron.spec?.jobTemplate.spec;
    expect(job?.backoffLimit).toBeGreaterThanOrEqual(0);
    // A run is killed well before the next one is due (every 5 minutes).
    expect(job?.activeDeadlineSeconds).toBeGreaterThan(0);
    expect(job?.activeDeadlineSeconds).toBeLessThan(300);

    const pod = job?.template.spec;
    expect(pod).toMatchObject({
      serviceAccountName: SA,
      hostNetwork: true,
      dnsPolicy: 'Default',
      priorityClassName: 'system-cluster-critical',
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
    });
    expect(['Never', 'OnFailure']).toContain(pod?.restartPolicy);
    // It runs on control-plane Nodes only (it holds the cloud credentials), initialised or not.
    expect(pod?.nodeSelector).toBeUndefined();
    expect(pod?.affinity).toEqual({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] },
          ],
        },
      },
    });
    expect(pod?.tolerations).toEqual(
      expect.arrayContaining([
        { key: 'node.cloudprovider.kubernetes.io/uninitialized', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoSchedule' },
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
        { key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' },
      ]),
    );
    // The taints a new Node carries, as the cloud provider, the node lifecycle controller and kubeadm set them.
    for (const taint of [
      UNINITIALIZED,
      { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
      { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' },
    ]) {
      expect(
        (pod?.tolerations ?? []).some((t) => tolerates(t, taint)),
        `${taint.key}:${taint.effect}`,
      ).toBe(true);
    }

    expect(pod?.containers).toHaveLength(1);
    const container = pod?.containers[0];
    // No command: the image's entrypoint is the ccm CLI.
    expect(container?.command).toBeUndefined();
    expect(readFileSync(CONTAINERFILE, 'utf8')).toMatch(/^ENTRYPOINT \[.*"\/app\/bin\/run\.js"\]$/m);
    expect(container?.args).toEqual([
      'nodes',
      'init',
      '--provider=cloudlycke',
      '--cloud-config=/etc/ccm/config',
    ]);
    expect(container?.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(container?.resources?.requests).toMatchObject({
      cpu: expect.any(String),
      memory: expect.any(String),
    });
    expect(container?.resources?.limits).toMatchObject({ memory: expect.any(String) });

    // --cloud-config names the file the inventory ConfigMap is mounted as: its key `config`, no items.
    const mount = container?.volumeMounts?.find((m) => m.mountPath === '/etc/ccm');
    const volume = pod?.volumes?.find((v) => v.name === mount?.name);
    expect(mount?.readOnly).toBe(true);
    expect(mount?.subPath).toBeUndefined();
    expect(volume?.configMap).toMatchObject({ name: CONFIG_MAP });
    expect(volume?.configMap?.items).toBeUndefined();
    const configMap = await core.readNamespacedConfigMap({ name: CONFIG_MAP, namespace: NAMESPACE });
    expect(Object.keys(configMap.data ?? {})).toEqual(['config']);
  });

  it('grants exactly the verbs `ccm nodes init` uses, bound to its own ServiceAccount only', async () => {
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    const role = await rbac.readClusterRole({ name: ROLE });
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['nodes'], verbs: ['delete', 'get', 'list', 'patch'] },
      { apiGroups: [''], resources: ['nodes/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create'] },
      { apiGroups: [''], resources: ['events'], verbs: ['list'] },
    ]);
    const binding = await rbac.readClusterRoleBinding({ name: ROLE });
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: ROLE,
    });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: SA, namespace: NAMESPACE }]);
    const record = await rbac.readNamespacedRole({ name: RECORD_ROLE, namespace: NAMESPACE });
    expect(record.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], verbs: ['create'] },
      {
        apiGroups: [''],
        resources: ['configmaps'],
        verbs: ['get', 'update'],
        resourceNames: ['ccm-node-deletions'],
      },
    ]);
    // ...and that ServiceAccount is bound to nothing else: `ccm run`'s roles are for `ccm` alone.
    const bindings = [
      ...(await rbac.listClusterRoleBinding()).items,
      ...(await rbac.listNamespacedRoleBinding({ namespace: NAMESPACE })).items,
    ].filter((b) => (b.subjects ?? []).some((s) => s.kind === 'ServiceAccount' && s.name === SA));
    expect(bindings.map((b) => b.metadata?.name).sort()).toEqual([RECORD_ROLE, ROLE]);
  });
});

describe('`ccm nodes init` as the CronJob ServiceAccount', () => {
  beforeEach(async () => {
    await deleteAllNodes(core);
    // The deletion brake counts the last 10 minutes' deletions from its record: not the last test's.
    await forgetNodeDeletions(core);
  });

  it('accepts the example inventory of the ConfigMap (dry run)', async () => {
    const configMap = await core.readNamespacedConfigMap({ name: CONFIG_MAP, namespace: NAMESPACE });
    const inventory = writeInventory([]);
    writeFileSync(inventory, configMap.data?.config ?? '');
    const kubeconfig = await serviceAccountKubeconfig(SA);
    const run = await nodesInitAs(SA_USER, kubeconfig, inventory, '--dry-run', '--json');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout).cloudInstances).toBe(4);
  });

  it('initialises tainted Nodes and deletes a gone one with no write answered 403', async () => {
    const inventory = writeInventory(
      [
        { id: 't1', addresses: [{ type: 'InternalIP', address: '192.168.56.21' }] },
        { id: 't2', addresses: [{ type: 'InternalIP', address: '192.168.56.22' }] },
        { id: 't3', addresses: [{ type: 'InternalIP', address: '192.168.56.23' }] },
        { id: 'alive', addresses: [{ type: 'InternalIP', address: '192.168.56.20' }] },
      ],
      DEFAULTS,
    );
    await createNodes(core, [
      { name: 't1' },
      { name: 't2', providedNodeIP: '192.168.56.22' },
      // as registered by a kubelet started with --provider-id
      { name: 't3', providerID: 'cloudlycke://t3' },
      { name: 'alive', providerID: 'cloudlycke://alive', tainted: false },
      { name: 'gone', providerID: 'cloudlycke://gone', ...gone },
    ]);
    const kubeconfig = await serviceAccountKubeconfig(SA);
    const operatorWritesBefore = (await world.cp.writes(CCM_USER)).length;

    const run = await nodesInitAs(SA_USER, kubeconfig, inventory, '--deletion-grace-period', '0s', '--json');
    expect(run.stdout).not.toMatch(/forbidden/i);
    expect(run.stderr).not.toMatch(/forbidden/i);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);

    const report = JSON.parse(run.stdout);
    expect(report.summary).toMatchObject({ total: 5, initialized: 3, deleted: 1, failed: 0 });
    for (const name of ['t1', 't2', 't3']) {
      const n = await core.readNode({ name });
      expect(uninitialized(n)).toBe(false);
      expect(n.spec?.providerID).toBe(`cloudlycke://${name}`);
    }
    expect(await nodeExists('gone')).toBe(false);
    expect(await nodeExists('alive')).toBe(true);

    // The writes were made as the ServiceAccount (not the harness's system:masters identity)...
    expect((await world.cp.writes(CCM_USER)).length).toBe(operatorWritesBefore);
    expect(new Set(run.writes.map(describeWrite))).toEqual(
      new Set(['patch nodes', 'patch nodes/status', 'create events', 'create configmaps', 'delete nodes']),
    );
    // ...and every one of them was allowed.
    expect(run.writes.filter((w) => w.responseStatus?.code === 403).map(describeWrite)).toEqual([]);
    for (const w of run.writes) {
      expect(w.responseStatus?.code, describeWrite(w)).toBeGreaterThanOrEqual(200);
      expect(w.responseStatus?.code, describeWrite(w)).toBeLessThan(300);
    }
  });

  it('negative control: the same role without `delete` leaves the gone Node and reports Forbidden, exit 1', async () => {
    const name = 'ccm-without-delete';
    const role = generatedDocument<V1ClusterRole>('ClusterRole', ROLE);
    const nodesRule = role.rules?.find((r) => r.resources?.includes('nodes'));
    expect(nodesRule?.verbs).toContain('delete');
    if (nodesRule) nodesRule.verbs = nodesRule.verbs.filter((v) => v !== 'delete');
    role.metadata = { name: `ccm-test:${name}` };
    await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: NAMESPACE } });
    await apply(role);
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `ccm-test:${name}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `ccm-test:${name}` },
      subjects: [{ kind: 'ServiceAccount', name, namespace: NAMESPACE }],
    });
    await bindRecordRole(name);

    const inventory = writeInventory([{ id: 'alive' }], DEFAULTS);
    await createNodes(core, [
      { name: 'alive', providerID: 'cloudlycke://alive', tainted: false },
      { name: 'gone', providerID: 'cloudlycke://gone', ...gone },
    ]);
    const user = `system:serviceaccount:${NAMESPACE}:${name}`;
    const run = await nodesInitAs(
      user,
      await serviceAccountKubeconfig(name),
      inventory,
      '--deletion-grace-period',
      '0s',
      '--json',
    );
    expect(run.exitCode).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.nodes.find((n: { name: string }) => n.name === 'gone')).toMatchObject({
      result: 'failed',
      // the API server's own reason, not just "HTTP 403 Forbidden" (issue 6, item 10)
      reason: expect.stringMatching(
        new RegExp(
          `nodes "gone" is forbidden: User "system:serviceaccount:${NAMESPACE}:${name}" cannot delete resource "nodes" in API group "" at the cluster scope`,
        ),
      ),
    });
    expect(await nodeExists('gone')).toBe(true);
    expect(run.writes.filter((w) => w.responseStatus?.code === 403).map(describeWrite)).toEqual([
      'delete nodes',
    ]);
  });

  it('negative control: the same role without `list` on events tells a held Node again at each pass (it cannot see it was told)', async () => {
    const name = 'ccm-without-list-events';
    const role = generatedDocument<V1ClusterRole>('ClusterRole', ROLE);
    const listRule = role.rules?.find((r) => r.resources?.includes('events') && r.verbs.includes('list'));
    expect(listRule?.verbs).toEqual(['list']);
    role.rules = role.rules?.filter((r) => r !== listRule);
    role.metadata = { name: `ccm-test:${name}` };
    await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: NAMESPACE } });
    await apply(role);
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `ccm-test:${name}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `ccm-test:${name}` },
      subjects: [{ kind: 'ServiceAccount', name, namespace: NAMESPACE }],
    });
    await bindRecordRole(name);

    // 2 of 3 gone: held.
    const inventory = writeInventory([{ id: 'alive' }], DEFAULTS);
    await createNodes(core, [
      { name: 'alive', providerID: 'cloudlycke://alive', tainted: false },
      { name: 'gone', providerID: 'cloudlycke://gone', ...gone },
      { name: 'gone2', providerID: 'cloudlycke://gone2', ...gone },
    ]);
    const user = `system:serviceaccount:${NAMESPACE}:${name}`;
    const kubeconfig = await serviceAccountKubeconfig(name);
    const before = (await world.cp.requests(user)).length;
    for (let i = 0; i < 2; i++) {
      const run = await nodesInitAs(user, kubeconfig, inventory, '--deletion-grace-period', '0s', '--json');
      expect(run.exitCode).toBe(3);
    }
    const told = await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: 'reason=NodeDeletionHeld',
    });
    expect(told.items).toHaveLength(4);
    expect(await nodeExists('gone')).toBe(true);
    const requests = (await world.cp.requests(user)).slice(before);
    expect(requests.filter((r) => r.responseStatus?.code === 403).map(describeWrite)).toEqual([
      'list events',
      'list events',
    ]);
  });

  it('negative control: without the Role on the record of deletions the gone Node is neither deleted nor held, exit 1', async () => {
    const name = 'ccm-without-record';
    const role = generatedDocument<V1ClusterRole>('ClusterRole', ROLE);
    role.metadata = { name: `ccm-test:${name}` };
    await apply({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: NAMESPACE } });
    await apply(role);
    await apply({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `ccm-test:${name}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `ccm-test:${name}` },
      subjects: [{ kind: 'ServiceAccount', name, namespace: NAMESPACE }],
    });
    const inventory = writeInventory([{ id: 'alive' }], DEFAULTS);
    await createNodes(core, [
      { name: 'alive', providerID: 'cloudlycke://alive', tainted: false },
      { name: 'gone', providerID: 'cloudlycke://gone', ...gone },
    ]);
    const user = `system:serviceaccount:${NAMESPACE}:${name}`;
    const run = await nodesInitAs(
      user,
      await serviceAccountKubeconfig(name),
      inventory,
      '--deletion-grace-period',
      '0s',
      '--json',
    );
    expect(run.exitCode).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.hold).toBeUndefined();
    expect(report.nodes.find((n: { name: string }) => n.name === 'gone')).toMatchObject({
      result: 'failed',
      reason: expect.stringMatching(
        /^not deleted this pass: the record of the last 10m's Node deletions could not be read \(not allowed to get ConfigMap kube-system\/ccm-node-deletions;/,
      ),
    });
    expect(await nodeExists('gone')).toBe(true);
  });
});
