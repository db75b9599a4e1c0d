import { describe, expect, it } from 'vitest';
import { slimNode } from '../../../src/kube/slim-node.js';
import { ANNOTATION_PROVIDED_NODE_IP } from '../../../src/kube/well-known.js';

/** A Node as a kubelet registers it, trimmed to a readable size but with every kind of field. */
const RAW = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'worker-1',
    uid: 'b3f0',
    resourceVersion: '4711',
    creationTimestamp: '2025-06-01T12:00:00Z',
    labels: { 'kubernetes.io/hostname': 'worker-1', 'kubernetes.io/os': 'linux' },
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
      metadata: {
        name: 'worker-1',
        uid: 'b3f0',
        resourceVersion: '4711',
        creationTimestamp: '2025-06-01T12:00:00Z',
        labels: { 'kubernetes.io/hostname': 'worker-1', 'kubernetes.io/os': 'linux' },
        annotations: { [ANNOTATION_PROVIDED_NODE_IP]: '10.0.0.5' },
      },
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
