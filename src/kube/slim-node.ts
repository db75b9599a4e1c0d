import { intern } from '../intern.js';
import { ANNOTATION_PROVIDED_NODE_IP, LABEL_HOSTNAME } from './well-known.js';

/**
 * A Node as ccm holds it in memory: only what the plans read, in the API object's own shape (so
 * `node.metadata?.name` reads the same on both). A Node from the API server carries managedFields,
 * images, capacity, conditions with messages and many annotations: 5–10 KB of heap each, of which
 * the plans need a few hundred bytes.
 */
export interface SlimTaint {
  key: string;
  value?: string;
  effect: string;
  /** Kept so a taint list written back whole loses nothing the server set. */
  timeAdded?: string;
}

export interface SlimNodeAddress {
  type: string;
  address: string;
}

export interface SlimNode {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    /** RFC 3339, as the server sends it. */
    creationTimestamp?: string;
    /** Set while the Node is being deleted (finalizers pending): no longer a load balancer backend. */
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    /** Only the annotations ccm reads (SLIM_ANNOTATIONS). */
    annotations?: Record<string, string>;
  };
  spec?: { providerID?: string; taints?: SlimTaint[]; podCIDRs?: string[] };
  status?: {
    addresses?: SlimNodeAddress[];
    /** Only Ready and NetworkUnavailable, and of them only type, status (and the latter's reason). */
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

export const SLIM_ANNOTATIONS: readonly string[] = [ANNOTATION_PROVIDED_NODE_IP];

interface RawNode {
  metadata?: {
    name?: string;
    uid?: string;
    resourceVersion?: string;
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: {
    providerID?: string;
    taints?: { key: string; value?: string; effect: string; timeAdded?: unknown }[];
    podCIDRs?: string[];
  };
  status?: {
    addresses?: { type: string; address: string }[];
    conditions?: { type: string; status: string; reason?: string }[];
  };
}

function timestamp(value: unknown): string | undefined {
  if (value instanceof Date) return value.toISOString();
  return typeof value === 'string' ? value : undefined;
}

/** The slim copy of a Node object as the API server sends it; shares no object with `raw`. */
export function slimNode(raw: unknown): SlimNode {
  const { metadata = {}, spec = {}, status = {} } = raw as RawNode;
  const meta: NonNullable<SlimNode['metadata']> = { name: metadata.name };
  if (metadata.uid !== undefined) meta.uid = metadata.uid;
  if (metadata.resourceVersion !== undefined) meta.resourceVersion = metadata.resourceVersion;
  const created = timestamp(metadata.creationTimestamp);
  if (created !== undefined) meta.creationTimestamp = created;
  const deleting = timestamp(metadata.deletionTimestamp);
  if (deleting !== undefined) meta.deletionTimestamp = deleting;
  if (metadata.labels) {
    // The hostname label is the Node's own name: unique, nothing to share.
    meta.labels = Object.fromEntries(
      Object.entries(metadata.labels).map(([key, value]) => [
        key,
        key === LABEL_HOSTNAME ? value : intern(value),
      ]),
    );
  }
  for (const key of SLIM_ANNOTATIONS) {
    const value = metadata.annotations?.[key];
    if (value !== undefined) meta.annotations = { ...meta.annotations, [key]: value };
  }

  const slimSpec: NonNullable<SlimNode['spec']> = {};
  if (spec.providerID !== undefined) slimSpec.providerID = spec.providerID;
  if (spec.taints) {
    slimSpec.taints = spec.taints.map((t) => {
      const taint: SlimTaint = { key: intern(t.key), effect: intern(t.effect) };
      if (t.value !== undefined) taint.value = intern(t.value);
      const added = timestamp(t.timeAdded);
      if (added !== undefined) taint.timeAdded = added;
      return taint;
    });
  }

  if (spec.podCIDRs?.length) slimSpec.podCIDRs = [...spec.podCIDRs];

  const slimStatus: NonNullable<SlimNode['status']> = {};
  if (status.addresses) {
    slimStatus.addresses = status.addresses.map((a) => ({ type: intern(a.type), address: a.address }));
  }
  const conditions: NonNullable<NonNullable<SlimNode['status']>['conditions']> = [];
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  if (ready) conditions.push({ type: 'Ready', status: intern(ready.status) });
  // The route controller writes NetworkUnavailable only when it changes: it keeps what it compares.
  const network = status.conditions?.find((c) => c.type === 'NetworkUnavailable');
  if (network) {
    conditions.push({
      type: 'NetworkUnavailable',
      status: intern(network.status),
      ...(network.reason !== undefined ? { reason: intern(network.reason) } : {}),
    });
  }
  if (conditions.length) slimStatus.conditions = conditions;
  return { metadata: meta, spec: slimSpec, status: slimStatus };
}

export function nodeName(node: SlimNode): string {
  return node.metadata?.name ?? '';
}
