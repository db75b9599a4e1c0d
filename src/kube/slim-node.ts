/**
 * A Node as the plans read it: name, identity, version, age, labels, the kubelet's provided IP,
 * provider ID, taints, addresses and the Ready condition. Nothing else of the API object (images,
 * managed fields, capacity, other conditions, daemon endpoints) is kept, so a cache of thousands of
 * Nodes stays small. A full V1Node is assignable to SlimNode, so code written for one takes both.
 */
import type { V1NodeAddress, V1Taint } from '@kubernetes/client-node';
import { ANNOTATION_PROVIDED_NODE_IP } from './well-known.js';

export interface SlimNode {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    /** As the server sends it (RFC 3339 text); client-node's type says Date. */
    creationTimestamp?: Date | string;
    /** Set while the Node is being deleted (finalizers pending): no longer a load balancer backend. */
    deletionTimestamp?: Date | string;
    labels?: { [key: string]: string };
    annotations?: { [key: string]: string };
  };
  spec?: { providerID?: string; taints?: V1Taint[] };
  status?: {
    addresses?: V1NodeAddress[];
    conditions?: { type: string; status: string }[];
  };
}

interface RawNode {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: { providerID?: string; taints?: { key: string; value?: string; effect: string }[] };
  status?: {
    addresses?: { type: string; address: string }[];
    conditions?: { type: string; status: string }[];
  };
}

/** Keeps only what the plans read from a Node as the API server sends it (plain JSON). */
export function slimNode(raw: unknown): SlimNode {
  const node = raw as RawNode;
  const meta = node.metadata ?? {};
  const providedIP = meta.annotations?.[ANNOTATION_PROVIDED_NODE_IP];
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const slim: SlimNode = {
    metadata: {
      name: meta.name,
      uid: meta.uid,
      resourceVersion: meta.resourceVersion,
      creationTimestamp: meta.creationTimestamp,
      ...(meta.deletionTimestamp ? { deletionTimestamp: meta.deletionTimestamp } : {}),
      labels: meta.labels ?? {},
      ...(providedIP !== undefined ? { annotations: { [ANNOTATION_PROVIDED_NODE_IP]: providedIP } } : {}),
    },
    spec: {
      ...(node.spec?.providerID ? { providerID: node.spec.providerID } : {}),
      ...(node.spec?.taints?.length
        ? { taints: node.spec.taints.map((t) => ({ key: t.key, value: t.value, effect: t.effect })) }
        : {}),
    },
    status: {
      addresses: (node.status?.addresses ?? []).map((a) => ({ type: a.type, address: a.address })),
      ...(ready ? { conditions: [{ type: 'Ready', status: ready.status }] } : {}),
    },
  };
  return slim;
}

export function nodeName(node: SlimNode): string {
  return node.metadata?.name ?? '';
}
