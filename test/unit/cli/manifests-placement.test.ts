/**
 * Where the generated pods may run, and which images `ccm manifests` accepts. The pods hold the cloud
 * credentials and the right to delete Nodes: by default only control-plane Nodes take them (issue 22,
 * item 4), and never an image a Node would pull from its own loopback (item 6).
 */
import type { V1Node, V1PodSpec } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  checkImage,
  controllerWorkload,
  type Placement,
  parseNodeSelector,
  renderManifests,
} from '../../../src/cli/manifests.js';
import { loadProvider } from '../../../src/providers/registry.js';
import { nodeObject } from '../../controlplane/fixtures.js';
import { whyNotSchedulable } from '../../helpers/scheduling.js';

const NOT_READY = [
  { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
  { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
];
/** As kubeadm registers them with --cloud-provider=external, before ccm and the CNI run. */
const nodes: Record<string, V1Node> = {
  'control-plane': nodeObject({
    name: 'cp-1',
    ready: false,
    labels: { 'node-role.kubernetes.io/control-plane': '' },
    taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }, ...NOT_READY],
  }),
  worker: nodeObject({ name: 'worker-1', ready: false, taints: NOT_READY }),
  system: nodeObject({ name: 'system-1', labels: { 'pool.example.com/role': 'system' } }),
};

async function render(placement?: Placement) {
  return renderManifests(await loadProvider('digitalocean'), {
    image: 'registry.example.com/ccm:0.1.0',
    namespace: 'kube-system',
    controllers: '*',
    cronjob: true,
    leaseName: 'cloud-controller-manager',
    ...(placement ? { placement } : {}),
  }) as unknown as { kind: string; metadata: { name: string }; spec: unknown }[];
}

/** The pod of `ccm run` (under the key of its workload's kind) and of the CronJob. */
async function pods(placement?: Placement): Promise<Record<string, V1PodSpec>> {
  const objects = await render(placement);
  const workload = controllerWorkload(objects);
  const cronjob = objects.find((o) => o.kind === 'CronJob')?.spec as {
    jobTemplate: { spec: { template: { spec: V1PodSpec } } };
  };
  return {
    [workload.kind]: (workload.spec as { template: { spec: V1PodSpec } }).template.spec,
    CronJob: cronjob.jobTemplate.spec.template.spec,
  };
}

function placed(pod: V1PodSpec): string[] {
  return Object.entries(nodes)
    .filter(([, node]) => whyNotSchedulable(pod, node) === undefined)
    .map(([role]) => role);
}

describe('ccm manifests: where the pods run', () => {
  it('by default only on control-plane Nodes, initialised or not, never on a worker', async () => {
    for (const [kind, pod] of Object.entries(await pods())) {
      expect(placed(pod), kind).toEqual(['control-plane']);
      expect(whyNotSchedulable(pod, nodes.worker as V1Node), kind).toBe('required node affinity');
      expect(pod.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toEqual({
        nodeSelectorTerms: [
          { matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists' }] },
        ],
      });
    }
  });

  it('--node-selector: only on the Nodes with those labels', async () => {
    const labels = parseNodeSelector('pool.example.com/role=system');
    for (const [kind, pod] of Object.entries(await pods({ kind: 'node-selector', labels }))) {
      expect(placed(pod), kind).toEqual(['system']);
      expect(pod.affinity?.nodeAffinity, kind).toBeUndefined();
    }
  });

  it('--any-node: on every Node, also before it is initialised', async () => {
    for (const [kind, pod] of Object.entries(await pods({ kind: 'any-node' }))) {
      expect(placed(pod), kind).toEqual(['control-plane', 'worker', 'system']);
    }
  });

  it('--node-selector takes label=value pairs and refuses anything else in one line', () => {
    expect(parseNodeSelector('a=b,example.com/c=')).toEqual({ a: 'b', 'example.com/c': '' });
    for (const bad of ['a', 'a=b,', '=b', 'a=b c', 'a=-b', 'exa mple/a=b']) {
      expect(() => parseNodeSelector(bad), bad).toThrow(
        /^--node-selector: expected label=value pairs separated by commas \(e\.g\. node-role\.kubernetes\.io\/system=true\), got ".*"$/,
      );
    }
  });
});

describe('ccm manifests: the workload of `ccm run`', () => {
  it('on control-plane Nodes or --node-selector: a DaemonSet rolled one pod at a time, old pod out first', async () => {
    const labels = parseNodeSelector('pool.example.com/role=system');
    for (const placement of [undefined, { kind: 'node-selector', labels } as const]) {
      const objects = await render(placement);
      const workload = controllerWorkload(objects) as unknown as {
        kind: string;
        spec: { replicas?: number; updateStrategy: unknown; template: { spec: V1PodSpec } };
      };
      expect(workload.kind).toBe('DaemonSet');
      expect(workload.spec.replicas).toBeUndefined();
      // maxSurge 0: the new pod needs the old one's host port, so the old one goes first.
      expect(workload.spec.updateStrategy).toEqual({
        type: 'RollingUpdate',
        rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
      });
      // One per Node by construction: no anti-affinity that a new pod could meet beside its old one.
      expect(workload.spec.template.spec.affinity?.podAntiAffinity).toBeUndefined();
      // A budget with maxUnavailable needs an owner with a scale subresource, which a DaemonSet lacks.
      expect(objects.map((o) => o.kind)).not.toContain('PodDisruptionBudget');
      expect(objects.map((o) => o.kind)).not.toContain('Deployment');
    }
  });

  it('--any-node: a Deployment of two replicas, one per Node, with a PodDisruptionBudget', async () => {
    const objects = await render({ kind: 'any-node' });
    const workload = controllerWorkload(objects) as unknown as {
      kind: string;
      spec: { replicas: number; strategy: unknown; template: { spec: V1PodSpec } };
    };
    expect(workload.kind).toBe('Deployment');
    expect(workload.spec.replicas).toBe(2);
    expect(workload.spec.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxUnavailable: 1, maxSurge: 0 },
    });
    expect(
      workload.spec.template.spec.affinity?.podAntiAffinity
        ?.requiredDuringSchedulingIgnoredDuringExecution?.[0]?.topologyKey,
    ).toBe('kubernetes.io/hostname');
    expect(objects.map((o) => o.kind)).toContain('PodDisruptionBudget');
    expect(objects.map((o) => o.kind)).not.toContain('DaemonSet');
  });
});

describe('ccm manifests: the image', () => {
  it.each([
    'localhost/ccm:0.1.0',
    'localhost:5000/ccm:0.1.0',
    'LOCALHOST:5000/ccm',
    'registry.localhost/ccm:0.1.0',
    '127.0.0.1:5000/ccm:0.1.0',
    '127.1.2.3/ccm',
    '[::1]:5000/ccm:0.1.0',
  ])('refuses %s, a registry on the Node itself', (image) => {
    expect(() => checkImage(image)).toThrow(/names a registry on the Node itself/);
  });

  it.each([
    'registry.example.com/ccm:0.1.0',
    'registry.example.com:5000/team/ccm@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    'ghcr.io/example/ccm:0.1.0',
    'example/localhost:1',
    '10.0.0.5:5000/ccm:0.1.0',
  ])('takes %s', (image) => {
    expect(() => checkImage(image)).not.toThrow();
  });

  it.each([
    ['r.example/CCM:1', 'r.example/ccm:1'],
    [
      'Registry.Example.com/Team/CCM@sha256:0123456789abcdef0123456789abcdef',
      'Registry.Example.com/team/ccm@sha256:0123456789abcdef0123456789abcdef',
    ],
    ['ccm/Web:V1', 'ccm/web:V1'],
  ])('refuses %s, whose repository has capitals, naming the lower-case form', (image, lowered) => {
    expect(() => checkImage(image)).toThrow(
      `--image: expected an image reference, whose repository name is lower case (${lowered}), got ${JSON.stringify(image)}`,
    );
  });

  it.each([
    '',
    ' ',
    'r.example/ccm:1 x',
    'r.example/ccm:',
    'r.example//ccm',
    'r.example/ccm:-1',
    'r.example/ccm@sha256:xyz',
    '-ccm',
  ])('refuses %j, no image reference at all', (image) => {
    expect(() => checkImage(image)).toThrow(
      /^--image: expected an image reference \(e\.g\. registry\.example\.com\/ccm:0\.1\.0\), got ".*"$/,
    );
  });

  it('takes a name on the Node itself with imagePullPolicy Never: nothing is pulled, the name finds the loaded image', () => {
    expect(() => checkImage('localhost/ccm:0.1.0', 'Never')).not.toThrow();
    expect(() => checkImage('localhost/ccm:0.1.0', 'IfNotPresent')).toThrow(/--image-pull-policy Never/);
    expect(() => checkImage('localhost/ccm:0.1.0', 'Always')).toThrow(/names a registry on the Node itself/);
  });
});
