import { describe, expect, it } from 'vitest';
import { viewOf } from '../../../src/controllers/cloud-view.js';
import { planNode } from '../../../src/controllers/nodes-pass.js';
import { slimNode } from '../../../src/kube/slim-node.js';
import { ANNOTATION_PROVIDED_NODE_IP } from '../../../src/kube/well-known.js';
import {
  makeInstance,
  makeNode,
  makeProvider,
  passOptions,
  providedIP,
  shutdownTaintOnNode,
  uninitializedTaint,
} from '../controllers/fixtures.js';

const options = passOptions(1);

/** A Node as the API server sends it: lots the plans never read. */
function apiNode(node: ReturnType<typeof makeNode>) {
  const json = JSON.parse(JSON.stringify(node));
  json.metadata.managedFields = [{ manager: 'kubelet', fieldsV1: { big: 'x'.repeat(2000) } }];
  json.metadata.annotations = { ...(json.metadata.annotations ?? {}), 'node.alpha.kubernetes.io/ttl': '0' };
  json.status.images = Array.from({ length: 30 }, (_, i) => ({ names: [`img-${i}`], sizeBytes: i }));
  json.status.conditions = [
    { type: 'MemoryPressure', status: 'False' },
    ...(json.status.conditions ?? []),
    { type: 'DiskPressure', status: 'False' },
  ];
  json.status.nodeInfo = { kernelVersion: '6.1', osImage: 'Debian' };
  return json;
}

describe('slim Nodes', () => {
  const instances = [
    makeInstance({
      providerID: 'cloudlycke://a',
      name: 'a',
      addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
    }),
    makeInstance({ providerID: 'cloudlycke://b', name: 'b', state: 'stopped' }),
  ];
  const provider = makeProvider(instances);
  const cases = [
    makeNode({ name: 'a', taints: [uninitializedTaint], annotations: providedIP('10.0.0.1'), ready: true }),
    makeNode({
      name: 'b',
      providerID: 'cloudlycke://b',
      ready: false,
      labels: { 'beta.kubernetes.io/instance-type': 'x' },
    }),
    makeNode({ name: 'c', providerID: 'cloudlycke://c', ready: false }),
    makeNode({ name: 'd', providerID: 'cloudlycke://a', ready: true, taints: [shutdownTaintOnNode] }),
  ];

  it('plan exactly like the full API object', () => {
    for (const node of cases) {
      const full = apiNode(node);
      const slim = slimNode(full);
      const state = (n: object) => ({ nodes: [n], ...viewOf({ instances }, [n]) });
      expect(planNode(slim, state(slim), provider, options)).toEqual(
        planNode(full, state(full), provider, options),
      );
    }
  });

  it('keep only what the plans read', () => {
    const slim = slimNode(apiNode(cases[0] as ReturnType<typeof makeNode>));
    const text = JSON.stringify(slim);
    expect(text).not.toContain('managedFields');
    expect(text).not.toContain('img-');
    expect(text).not.toContain('MemoryPressure');
    expect(text).not.toContain('ttl');
    expect(slim.metadata?.annotations).toEqual(providedIP('10.0.0.1'));
    expect(slim.status?.conditions).toEqual([{ type: 'Ready', status: 'True' }]);
  });
});

describe('plan parts', () => {
  const instances = [makeInstance({ providerID: 'cloudlycke://b', name: 'b', state: 'stopped' })];
  const provider = makeProvider(instances);
  const node = makeNode({
    name: 'b',
    providerID: 'cloudlycke://b',
    ready: false,
    labels: { 'beta.kubernetes.io/instance-type': 'x' },
  });
  const state = { nodes: [node], ...viewOf({ instances }, [node]) };

  it('the cloud node half reconciles labels but leaves the shutdown taint to the lifecycle half', () => {
    const plan = planNode(node, state, provider, {
      ...options,
      parts: { cloudNode: true, lifecycle: false },
    });
    expect(plan.patch?.labels).toEqual({ 'node.kubernetes.io/instance-type': 'x' });
    expect(plan.patch?.taints).toBeUndefined();
  });

  it('the lifecycle half taints a stopped instance and leaves labels alone', () => {
    const plan = planNode(node, state, provider, {
      ...options,
      parts: { cloudNode: false, lifecycle: true },
    });
    expect(plan.patch?.labels).toBeUndefined();
    expect(plan.patch?.taints?.map((t) => t.key)).toEqual(['node.cloudprovider.kubernetes.io/shutdown']);
  });
});

/** The metadata of the Node below that slimNode keeps as it is. */
const KEPT_METADATA = {
  name: 'worker-1',
  uid: 'b3f0',
  resourceVersion: '4711',
  creationTimestamp: '2025-06-01T12:00:00Z',
  labels: { 'kubernetes.io/hostname': 'worker-1', 'kubernetes.io/os': 'linux' },
};

/** A Node as a kubelet registers it, trimmed to a readable size but with every kind of field. */
const RAW = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    ...KEPT_METADATA,
    annotations: {
      [ANNOTATION_PROVIDED_NODE_IP]: '10.0.0.5',
      'node.alpha.kubernetes.io/ttl': '0',
      'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
    },
    managedFields: [{ manager: 'kubelet', operation: 'Update', fieldsV1: { 'f:metadata': {} } }],
  },
  spec: {
    podCIDR: '10.244.1.0/24',
    taints: [
      { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
      { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', timeAdded: '2025-06-01T12:00:01Z' },
    ],
  },
  status: {
    addresses: [{ type: 'InternalIP', address: '10.0.0.5' }],
    conditions: [
      { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'ok' },
      { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: 'CNI not ready' },
    ],
    capacity: { cpu: '2', memory: '4Gi' },
    images: [{ names: ['registry.k8s.io/pause:3.10'], sizeBytes: 320368 }],
    nodeInfo: { kubeletVersion: 'v1.36.3' },
  },
};

describe('slimNode', () => {
  it('keeps what the plans read, in the API shape, and nothing else', () => {
    expect(slimNode(RAW)).toEqual({
      metadata: { ...KEPT_METADATA, annotations: { [ANNOTATION_PROVIDED_NODE_IP]: '10.0.0.5' } },
      spec: {
        taints: [
          { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
          // timeAdded survives, so a taint list written back whole does not reset it
          { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', timeAdded: '2025-06-01T12:00:01Z' },
        ],
      },
      status: {
        addresses: [{ type: 'InternalIP', address: '10.0.0.5' }],
        conditions: [{ type: 'Ready', status: 'False' }],
      },
    });
  });

  it('keeps the deletion timestamp of a Node being deleted', () => {
    const deleting = { ...RAW, metadata: { ...RAW.metadata, deletionTimestamp: '2025-06-02T08:00:00Z' } };
    expect(slimNode(deleting).metadata?.deletionTimestamp).toBe('2025-06-02T08:00:00Z');
    expect(slimNode(RAW).metadata).not.toHaveProperty('deletionTimestamp');
  });

  it('shares no object with the raw Node', () => {
    const slim = slimNode(RAW);
    expect(slim.metadata?.labels).not.toBe(RAW.metadata.labels);
    expect(slim.spec?.taints?.[0]).not.toBe(RAW.spec.taints[0]);
    expect(slim.status?.addresses?.[0]).not.toBe(RAW.status.addresses[0]);
  });

  it('a Node without spec, status or Ready condition stays slim and valid', () => {
    expect(slimNode({ metadata: { name: 'bare' } })).toEqual({
      metadata: { name: 'bare' },
      spec: {},
      status: {},
    });
  });
});
