/**
 * `ccm doctor` against a real kube-apiserver and the DigitalOcean simulator. A healthy cluster is
 * arranged before each test: the RBAC and Deployment of `ccm manifests`, the credentials Secret, a
 * renewed Lease, a running ccm Pod and the kubeadm static Pods (the test server has no scheduler nor
 * kubelet, so Pod status is written here as they would), and Nodes initialised from droplets. Each test
 * then breaks one thing and expects the matching ✗ line and its fix.
 */

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { createNodes, deleteAllNodes } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { officialDigitalOceanDeployment } from '../helpers/official-controllers.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import { tempDir } from '../helpers/tmp.js';

const NS = 'kube-system';
const FIELD_MANAGER = 'ccm-test';

let cp: ControlPlane;
let sim: DigitalOceanSimulator;
let core: CoreV1Api;
let objects: KubernetesObjectApi;
let manifests: KubernetesObject[];

const apply = <T extends KubernetesObject>(obj: T) =>
  objects.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);

const microTime = (d: Date) => d.toISOString().replace('Z', '000Z');

function pod(name: string, labels: Record<string, string>, command: string[]): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels },
    spec: {
      // No ServiceAccount controller here to make kube-system/default: ccm's own exists (manifests).
      serviceAccountName: 'ccm',
      automountServiceAccountToken: false,
      containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10', command }],
    },
  };
}

/** Creates (or replaces) a Pod and writes its status, as the scheduler and kubelet would. */
async function podWithStatus(body: V1Pod, status: V1Pod['status']): Promise<void> {
  const name = body.metadata?.name as string;
  await core.deleteNamespacedPod({ name, namespace: NS, gracePeriodSeconds: 0 }).catch(() => undefined);
  for (let i = 0; i < 50; i++) {
    const left = await core.listNamespacedPod({ namespace: NS, fieldSelector: `metadata.name=${name}` });
    if (left.items.length === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const created = await core.createNamespacedPod({ namespace: NS, body });
  await core.replaceNamespacedPodStatus({ name, namespace: NS, body: { ...created, status } });
}

const running: V1Pod['status'] = {
  phase: 'Running',
  conditions: [
    { type: 'PodScheduled', status: 'True' },
    { type: 'Ready', status: 'True' },
  ],
  containerStatuses: [
    {
      name: 'main',
      ready: true,
      restartCount: 0,
      image: 'pause',
      imageID: '',
      state: { running: { startedAt: new Date() } },
    },
  ],
};

const CCM_LABELS = { 'app.kubernetes.io/name': 'ccm', 'app.kubernetes.io/component': 'controller' };

async function renewLease(holder = 'ccm-abc_1234') {
  await apply({
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: { name: 'cloud-controller-manager', namespace: NS },
    spec: { holderIdentity: holder, leaseDurationSeconds: 15, renewTime: microTime(new Date()) },
  } as KubernetesObject);
}

async function healthy(): Promise<void> {
  sim.reset();
  await deleteAllNodes(core);
  for (const obj of manifests) await apply(structuredClone(obj));
  await applyTokenSecret(sim.token);
  await renewLease();
  await podWithStatus(pod('ccm-5d9f-abcde', CCM_LABELS, ['ccm', 'run']), running);
  await podWithStatus(
    pod('kube-controller-manager-cp1', { component: 'kube-controller-manager', tier: 'control-plane' }, [
      'kube-controller-manager',
      '--cloud-provider=external',
      '--leader-elect=true',
    ]),
    running,
  );
  await podWithStatus(
    pod('kube-apiserver-cp1', { component: 'kube-apiserver', tier: 'control-plane' }, [
      'kube-apiserver',
      '--secure-port=6443',
    ]),
    running,
  );
  const [a, b] = sim.addDroplets(
    { name: 'worker-1', privateIP: '10.114.0.2' },
    { name: 'worker-2', privateIP: '10.114.0.3' },
  );
  await createNodes(core, [
    { name: 'worker-1', providerID: `digitalocean://${a?.id}`, tainted: false },
    { name: 'worker-2', providerID: `digitalocean://${b?.id}`, tainted: false },
  ]);
}

/** `ccm doctor` of the test cluster against the DigitalOcean simulator, without an output flag. */
const doctorArgs = () => [
  'doctor',
  '--provider',
  'digitalocean',
  '--kubeconfig',
  cp.kubeconfigPath,
  '--cloud-api-url',
  sim.url,
];

async function doctor(...extra: string[]) {
  const run = await ccm([...doctorArgs(), '-o', 'wide', ...extra]);
  return { ...run, lines: run.stdout.split('\n') };
}

/** The ✗ row (-o wide: nothing cut) that contains `text`, and its fix: the lines under it. */
function failure(lines: string[], text: string): { line: string; fix: string } {
  const at = lines.findIndex((l) => l.startsWith('✗') && l.includes(text));
  if (at < 0) throw new Error(`no ✗ line with "${text}" in:\n${lines.join('\n')}`);
  const under: string[] = [];
  for (const l of lines.slice(at + 1)) {
    if (!l.startsWith('    ')) break;
    under.push(l.trim());
  }
  return { line: lines[at] as string, fix: under.join(' ').replace(/^fix: /, '') };
}

/** `ccm doctor` that exits 1 with a ✗ row containing `text`: that row, its fix and the run. */
async function doctorFails(text: string) {
  const run = await doctor();
  const found = failure(run.lines, text);
  expect(run.exitCode).toBe(1);
  return { ...found, run };
}

beforeAll(async () => {
  [cp, sim] = await Promise.all([startControlPlane(), DigitalOceanSimulator.start()]);
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  kc.setCurrentContext('fixtures');
  core = kc.makeApiClient(CoreV1Api);
  objects = KubernetesObjectApi.makeApiClient(kc);
  const printed = await ccm([
    'manifests',
    '--provider',
    'digitalocean',
    '--image',
    'registry.example.com/ccm:test',
  ]);
  expect(printed.exitCode).toBe(0);
  manifests = parseAllDocuments(printed.stdout).map((d) => d.toJS() as KubernetesObject);
});
afterAll(async () => {
  await Promise.all([cp?.stop(), sim?.stop()]);
});
beforeEach(healthy);
afterEach(() => {
  expect(sim.takeViolations()).toEqual([]);
});

/** The Secret kube-system/digitalocean as the getting-started guide makes it, with `token`. */
function applyTokenSecret(token: string) {
  return apply({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'digitalocean', namespace: NS },
    stringData: { 'access-token': token },
  } as KubernetesObject);
}

describe('ccm doctor', () => {
  it('passes every check on a healthy cluster, exit 0', async () => {
    const run = await doctor();
    expect(run.stderr).toBe('');
    const marks = run.lines.filter((l) => /^[✓✗!] /.test(l));
    expect(marks.filter((l) => !l.startsWith('✓'))).toEqual([]);
    expect(marks.length).toBe(17);
    // The rows in the order of the table of checks in docs/troubleshooting.md.
    const page = readFileSync(new URL('../../docs/troubleshooting.md', import.meta.url), 'utf8');
    const table = page.split('| check | what it reads | ✗ when |')[1]?.split('\n\n')[0] ?? '';
    const documented = [...table.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]);
    expect(marks.map((l) => l.split(/\s+/)[1])).toEqual(documented);
    expect(run.stdout).toContain('Kubernetes v1.');
    expect(run.stdout).toContain('Lease kube-system/cloud-controller-manager held by ccm-abc_1234');
    expect(run.stdout).toContain('the cloud accepts the credentials: DigitalOcean account');
    expect(run.exitCode).toBe(0);
    // The credentials check is one call; the listing is the other.
    expect(sim.requests.map((r) => `${r.method} ${r.url.split('?')[0]}`).sort()).toEqual([
      'GET /v2/account',
      'GET /v2/droplets',
    ]);
  });

  it('--json: every check with its status and fix, and no secret in it', async () => {
    const run = await ccm([...doctorArgs(), '--json']);
    const report = JSON.parse(run.stdout) as { checks: { id: string; status: string }[]; failed: number };
    expect(report.failed).toBe(0);
    expect(report.checks.map((c) => c.id)).toContain('rbac');
    expect(run.stdout).not.toContain(sim.token);
  });

  it("each row is named `name`, as every report's; `id` stays for older scripts (review 44, finding 8)", async () => {
    const json = JSON.parse((await ccm([...doctorArgs(), '-o', 'json'])).stdout) as {
      checks: { name: string; id: string }[];
    };
    expect(json.checks.length).toBeGreaterThan(5);
    for (const check of json.checks) expect(check.name).toBe(check.id);
    const names = await ccm([...doctorArgs(), '-o', 'jsonpath={.checks[*].name}']);
    expect(names.stdout.split(' ')).toEqual(json.checks.map((c) => c.name));
    const columns = await ccm([...doctorArgs(), '-o', 'custom-columns=CHECK:.name', '--no-headers']);
    expect(columns.stdout.trim().split('\n')).toEqual(json.checks.map((c) => c.name));
  });

  it('-o name names the checks that need care only; a pipe spells the status as a word', async () => {
    await objects.delete({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'cloud-controller-manager', namespace: NS },
    });
    const named = await ccm([...doctorArgs(), '-o', 'name']);
    expect(named.stdout.split('\n').filter(Boolean)).toEqual(['check/controller-lease']);
    const piped = await ccm(doctorArgs());
    const statuses = piped.stdout.split('\n').flatMap((l) => /^status=(\S+) /.exec(l)?.[1] ?? []);
    expect(new Set(statuses)).toEqual(new Set(['pass', 'fail']));
  });

  it('no controller: no Lease, and no DaemonSet to lead it', async () => {
    await objects.delete({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'cloud-controller-manager', namespace: NS },
    });
    const daemonSet = manifests.find((o) => o.kind === 'DaemonSet') as KubernetesObject;
    await objects.delete(daemonSet);
    try {
      const { line, fix } = await doctorFails('no Lease kube-system/cloud-controller-manager');
      expect(line).toContain('no cloud controller has ever run here');
      // --provider was given: the fix names it, not a placeholder. The simulator's plain-http URL is
      // not in it, since ccm manifests refuses that URL, and the fix says so.
      expect(fix).toContain(
        'ccm manifests --provider digitalocean --image <registry>/ccm:<version> | kubectl apply --server-side -f -',
      );
      expect(fix).toContain(`ccm manifests refuses the plain-http --cloud-api-url ${sim.url}`);
    } finally {
      await apply(structuredClone(daemonSet));
    }
  });

  it.each([
    ['no Lease', 'no Lease kube-system/cloud-controller-manager: no cloud controller has led here yet'],
    ['a Lease without a holder', 'Lease kube-system/cloud-controller-manager has no holder'],
  ])(
    'the DaemonSet applied and %s: the fix points at its Pods, not at deploying it again',
    async (what, text) => {
      if (what === 'no Lease') {
        await objects.delete({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: 'cloud-controller-manager', namespace: NS },
        });
      } else {
        // Server-side apply by the same manager drops the fields it no longer gives: holder and renewal.
        await apply({
          apiVersion: 'coordination.k8s.io/v1',
          kind: 'Lease',
          metadata: { name: 'cloud-controller-manager', namespace: NS },
          spec: { leaseDurationSeconds: 15 },
        } as KubernetesObject);
      }
      const { fix } = await doctorFails(text);
      expect(fix).toBe(
        'DaemonSet kube-system/ccm is applied, but none of its Pods leads: the controller-pods and rbac checks and their logs (kubectl -n kube-system logs -l app.kubernetes.io/name=ccm) say why',
      );
    },
  );

  it('a Lease its holder stopped renewing', async () => {
    await apply({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'cloud-controller-manager', namespace: NS },
      spec: {
        holderIdentity: 'ccm-abc_1234',
        leaseDurationSeconds: 15,
        renewTime: microTime(new Date(Date.now() - 120_000)),
      },
    } as KubernetesObject);
    const run = await doctor();
    expect(failure(run.lines, 'held by ccm-abc_1234 but not renewed for').fix).toContain(
      'its holder is stuck',
    );
    expect(run.exitCode).toBe(1);
  });

  it("DigitalOcean's own controller still running beside ccm: ! with the switch-over and what the shared Lease means, exit 0", async () => {
    // Its Deployment with one replica.
    const official = officialDigitalOceanDeployment(1) as KubernetesObject;
    await apply(official);
    try {
      const run = await doctor();
      const line = run.lines.find((l) => l.startsWith('!') && l.includes('official-controller')) ?? '';
      expect(line).toContain(
        'ccm runs beside digitalocean-cloud-controller-manager (Deployment kube-system/digitalocean-cloud-controller-manager, 1 replica)',
      );
      expect(run.stdout).toContain('same Lease, kube-system/cloud-controller-manager');
      // The --cloud-api-url given here is in the command, which reads the same cloud.
      expect(run.stdout).toContain(`ccm migrate --provider digitalocean --cloud-api-url ${sim.url}`);
      expect(run.exitCode).toBe(0);
    } finally {
      await objects.delete(official);
    }
  });

  it('a Pending ccm Pod because of the uninitialized taint, and the CNI deadlock', async () => {
    await objects.delete({
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: 'cloud-controller-manager', namespace: NS },
    });
    const pending = (message: string): V1Pod['status'] => ({
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }],
    });
    await podWithStatus(
      pod('ccm-5d9f-abcde', CCM_LABELS, ['ccm', 'run']),
      pending(
        '0/3 nodes are available: 3 node(s) had untolerated taint {node.cloudprovider.kubernetes.io/uninitialized: true}. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.',
      ),
    );
    let run = await doctor();
    let found = failure(
      run.lines,
      'ccm Pod ccm-5d9f-abcde is Pending: it does not tolerate node.cloudprovider.kubernetes.io/uninitialized',
    );
    expect(found.fix).toContain('tolerate node.cloudprovider.kubernetes.io/uninitialized:NoSchedule');
    expect(run.exitCode).toBe(1);

    await podWithStatus(
      pod('ccm-5d9f-abcde', CCM_LABELS, ['ccm', 'run']),
      pending('0/3 nodes are available: 3 node(s) had untolerated taint {node.kubernetes.io/not-ready: }.'),
    );
    run = await doctor();
    found = failure(run.lines, 'CCM↔CNI bootstrap deadlock');
    expect(found.line).toContain('does not tolerate node.kubernetes.io/not-ready');
    expect(found.fix).toContain('hostNetwork: true');
  });

  it('a missing credentials Secret', async () => {
    await core.deleteNamespacedSecret({ name: 'digitalocean', namespace: NS });
    const run = await doctor();
    const { fix } = failure(run.lines, 'Secret kube-system/digitalocean does not exist');
    expect(fix).toContain(
      'kubectl -n kube-system create secret generic digitalocean --from-literal=access-token=',
    );
    expect(run.exitCode).toBe(1);
  });

  it('wrong credentials: the simulator refuses the token', async () => {
    await applyTokenSecret('dop_v1_notthetoken');
    const { line, fix, run } = await doctorFails('the cloud refuses the credentials');
    expect(fix).toContain('put valid credentials in Secret kube-system/digitalocean');
    expect(line).not.toContain('dop_v1_notthetoken');
    expect(run.stdout).not.toContain('dop_v1_notthetoken');
  });

  it("a token in the environment is what is checked, not the default Secret's", async () => {
    await applyTokenSecret('dop_v1_notthetoken');
    const run = await ccm([...doctorArgs(), '-o', 'json'], { DO_ACCESS_TOKEN: sim.token });
    const checks = JSON.parse(run.stdout).checks as { id: string; status: string }[];
    expect(
      checks.find((c) => c.id === 'cloud-credentials'),
      run.stdout,
    ).toMatchObject({ status: 'pass' });
  });

  it('an unreachable cloud is not called a refusal: its own line and fix, and the credentials left alone', async () => {
    const args = doctorArgs().map((a) => (a === sim.url ? 'https://no-such-host.invalid' : a));
    const run = await ccm([...args, '-o', 'wide']);
    const lines = run.stdout.split('\n');
    expect(run.stdout).not.toContain('refuses the credentials');
    const { line, fix } = failure(lines, 'cannot reach the cloud, so the credentials were not checked');
    expect(line).toContain('no-such-host.invalid');
    expect(fix).toContain("check the API URL, and this machine's DNS, network and proxy");
    expect(run.exitCode).toBe(1);
  });

  it('a Node without a provider ID (and whose kubelet is not external)', async () => {
    await createNodes(core, [{ name: 'legacy-1', tainted: false }]);
    const run = await doctor();
    expect(failure(run.lines, '1 Node(s) without a provider ID: legacy-1').fix).toContain('--provider-id');
    expect(failure(run.lines, 'registered without --cloud-provider=external').fix).toContain(
      '--cloud-provider=external',
    );
    expect(run.exitCode).toBe(1);
  });

  it('ccm deployed without leader election (--replicas 1 --no-leader-elect): no Lease and no Role for one, both checks pass', async () => {
    const printed = await ccm([
      'manifests',
      '--provider',
      'digitalocean',
      '--image',
      'registry.example.com/ccm:test',
      '--replicas',
      '1',
      '--no-leader-elect',
    ]);
    expect(printed.exitCode, printed.stderr).toBe(0);
    const single = parseAllDocuments(printed.stdout).map((d) => d.toJS() as KubernetesObject);
    expect(single.map((o) => o.metadata?.name)).not.toContain('ccm:leader-election');
    const gone = [
      ...manifests.filter((o) => o.kind === 'DaemonSet' || o.metadata?.name === 'ccm:leader-election'),
      {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: 'cloud-controller-manager', namespace: NS },
      },
    ];
    for (const obj of gone) await objects.delete(structuredClone(obj));
    const added = single.filter((o) => o.kind === 'Deployment' || o.kind === 'PodDisruptionBudget');
    for (const obj of added) await apply(structuredClone(obj));
    try {
      const run = await ccm([...doctorArgs(), '--json']);
      const report = JSON.parse(run.stdout) as { checks: { id: string; status: string; message: string }[] };
      const check = (id: string) => report.checks.find((c) => c.id === id);
      expect(check('controller-lease')).toMatchObject({
        status: 'pass',
        message:
          'Deployment kube-system/ccm runs ccm without leader election (--no-leader-elect): no Lease to hold',
      });
      // The ServiceAccount may not touch Leases now, and need not.
      expect(check('rbac')?.status, check('rbac')?.message).toBe('pass');
    } finally {
      for (const obj of added) await objects.delete(structuredClone(obj));
    }
  });

  it('a ClusterRole missing a rule', async () => {
    const role = structuredClone(manifests.find((m) => m.kind === 'ClusterRole')) as KubernetesObject & {
      rules: { resources: string[] }[];
    };
    role.rules = role.rules.filter((r) => !r.resources.includes('nodes/status'));
    await apply(role);
    const { line, fix } = await doctorFails('ServiceAccount kube-system/ccm may not: patch nodes/status');
    expect(line).not.toContain('patch nodes,');
    // Nodes have no namespace: nothing is said of namespaces.
    expect(line).not.toContain('(all namespaces)');
    expect(fix).toContain('ClusterRole system:ccm');
  });

  it('a ServiceAccount that may read every Secret', async () => {
    const tooMuch = { apiVersion: 'rbac.authorization.k8s.io/v1', metadata: { name: 'ccm-test-secrets' } };
    await apply({
      ...tooMuch,
      kind: 'ClusterRole',
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }],
    } as KubernetesObject);
    await apply({
      ...tooMuch,
      kind: 'ClusterRoleBinding',
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ccm-test-secrets' },
      subjects: [{ kind: 'ServiceAccount', name: 'ccm', namespace: NS }],
    } as KubernetesObject);
    try {
      const run = await doctor();
      expect(failure(run.lines, 'may list secrets (all namespaces)').fix).toContain(
        'only `get` on its credentials Secret',
      );
    } finally {
      await objects.delete({ ...tooMuch, kind: 'ClusterRoleBinding' });
      await objects.delete({ ...tooMuch, kind: 'ClusterRole' });
    }
  });

  it("a listing of another project: none of the cluster's instances", async () => {
    sim.reset();
    sim.addDroplets({ name: 'someone-else-1', privateIP: '10.9.0.2' }, { name: 'someone-else-2' });
    const { line, fix } = await doctorFails('contains none of the 2 Node(s)');
    expect(line).toContain('another project, region or account');
    expect(fix).toContain("cluster's own project");
  });

  it('an unreachable API server: one ✗ line with the fix, exit 1', async () => {
    const path = join(tempDir('ccm-doctor-'), 'kubeconfig');
    writeFileSync(path, readFileSync(cp.kubeconfigPath, 'utf8').replace(cp.server, 'https://127.0.0.1:1'));
    const run = await ccm(['doctor', '--kubeconfig', path, '-o', 'wide']);
    const lines = run.stdout.split('\n');
    expect(failure(lines, 'cannot reach the Kubernetes API server at https://127.0.0.1:1').fix).toContain(
      '--kubeconfig',
    );
    expect(run.exitCode).toBe(1);
  });
});

conformsToDigitalOceanOpenApi();
