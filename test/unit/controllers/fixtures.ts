import type { PassOptions } from '../../../src/controllers/nodes-pass.js';
import type { NodePlan } from '../../../src/controllers/plan.js';
import type {
  DeletionRecord,
  NewDeletion,
  RecordedDeletion,
  WriteAhead,
} from '../../../src/kube/deletion-record.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { NodeEventRecord } from '../../../src/kube/node-events.js';
import type { NodeClient, NodeConditionSpec, NodeEventSpec } from '../../../src/kube/nodes.js';
import type { SlimNode, SlimNodeAddress, SlimTaint } from '../../../src/kube/slim-node.js';
import {
  ANNOTATION_PROVIDED_NODE_IP,
  TAINT_SHUTDOWN,
  TAINT_UNINITIALIZED,
} from '../../../src/kube/well-known.js';
import type { Instance, Provider } from '../../../src/providers/types.js';

/** Hand-built Nodes and Instances for the planning tests: no cluster, no cloud. */

export const NOW = new Date('2025-06-01T12:00:00Z');
export const LONG_AGO = new Date('2025-01-01T00:00:00Z');
export const GRACE_MS = 5 * 60_000;

/** A pass that writes (not --dry-run), at NOW, with GRACE_MS, `concurrency` Nodes at a time. */
export function passOptions(concurrency: number): PassOptions {
  return { dryRun: false, concurrency, deletionGracePeriodMs: GRACE_MS, now: () => NOW };
}

export const uninitializedTaint: SlimTaint = {
  key: TAINT_UNINITIALIZED,
  value: 'true',
  effect: 'NoSchedule',
};
export const shutdownTaintOnNode: SlimTaint = { key: TAINT_SHUTDOWN, effect: 'NoSchedule' };

export interface NodeOptions {
  name?: string;
  providerID?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  taints?: SlimTaint[];
  addresses?: SlimNodeAddress[];
  ready?: boolean | 'missing';
  created?: Date | null;
  resourceVersion?: string;
  uid?: string;
}

export function makeNode(options: NodeOptions = {}): SlimNode {
  const name = options.name ?? 'worker-1';
  const ready = options.ready ?? false;
  return {
    metadata: {
      name,
      uid: options.uid ?? `uid-${name}`,
      resourceVersion: options.resourceVersion ?? '100',
      ...(options.created === null ? {} : { creationTimestamp: (options.created ?? LONG_AGO).toISOString() }),
      ...(options.labels ? { labels: { ...options.labels } } : {}),
      ...(options.annotations ? { annotations: { ...options.annotations } } : {}),
    },
    spec: {
      ...(options.providerID !== undefined ? { providerID: options.providerID } : {}),
      ...(options.taints ? { taints: options.taints.map((t) => ({ ...t })) } : {}),
    },
    status: {
      ...(options.addresses ? { addresses: options.addresses.map((a) => ({ ...a })) } : {}),
      ...(ready === 'missing' ? {} : { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] }),
    },
  };
}

export function providedIP(value: string): Record<string, string> {
  return { [ANNOTATION_PROVIDED_NODE_IP]: value };
}

export function makeInstance(overrides: Partial<Instance> = {}): Instance {
  return {
    providerID: 'cloudlycke://i-1',
    name: 'worker-1',
    state: 'running',
    type: 'small',
    region: 'eu-north',
    zone: 'eu-north-a',
    addresses: [{ type: 'InternalIP', address: '10.0.0.11' }],
    labels: {},
    ...overrides,
  };
}

export interface FakeProvider extends Provider {
  getCalls: string[];
  listCalls: number;
}

/** A Provider whose `get` answers from `onGet` and counts every call. */
export function makeProvider(
  instances: Instance[] = [],
  onGet: (providerID: string) => Promise<Instance> = async (id) => {
    const found = instances.find((i) => i.providerID === id);
    if (!found) throw new Error(`fake provider: no answer configured for ${id}`);
    return found;
  },
): FakeProvider {
  const provider: FakeProvider = {
    name: 'cloudlycke',
    providerIdScheme: 'cloudlycke',
    getCalls: [],
    listCalls: 0,
    instances: {
      list: async () => {
        provider.listCalls++;
        return instances;
      },
      get: async (providerID: string) => {
        provider.getCalls.push(providerID);
        return onGet(providerID);
      },
    },
  };
  return provider;
}

/**
 * What the API server would do with a plan: merge the labels, set the provider ID, replace the taint
 * list and the address list whole. Returns a new Node with a bumped resourceVersion.
 */
export function applyPlanToNode(node: SlimNode, plan: NodePlan): SlimNode {
  const next = structuredClone(node);
  next.metadata ??= {};
  next.spec ??= {};
  next.status ??= {};
  if (plan.patch?.labels) next.metadata.labels = { ...(next.metadata.labels ?? {}), ...plan.patch.labels };
  if (plan.patch?.providerID) next.spec.providerID = plan.patch.providerID;
  if (plan.patch?.taints) next.spec.taints = plan.patch.taints.map((t) => ({ ...t }));
  if (plan.addresses) next.status.addresses = plan.addresses.map((a) => ({ ...a }));
  next.metadata.resourceVersion = String(Number(next.metadata.resourceVersion ?? '0') + 1);
  return next;
}

export type KubeCall =
  | { op: 'listNodes' }
  | { op: 'getNode'; name: string }
  | { op: 'patchNode'; name: string; body: Record<string, unknown> }
  | { op: 'patchNodeStatus'; name: string; body: Record<string, unknown> }
  | { op: 'setNodeCondition'; name: string; condition: NodeConditionSpec }
  | { op: 'deleteNode'; node: SlimNode }
  | { op: 'createEvent'; event: NodeEventSpec };

/** An in-memory NodeClient that records every call; failures are injected per call. */
export class FakeNodeClient implements NodeClient {
  readonly calls: KubeCall[] = [];
  readonly nodes = new Map<string, SlimNode>();
  /** Called before each operation; throw from it to make the operation fail. */
  failWith: (call: KubeCall, n: number) => void = () => undefined;
  private count = 0;

  constructor(nodes: SlimNode[] = []) {
    for (const node of nodes) this.nodes.set(node.metadata?.name ?? '', structuredClone(node));
  }

  get writes(): number {
    return this.calls.filter((c) => c.op !== 'listNodes' && c.op !== 'getNode').length;
  }

  private record(call: KubeCall): void {
    this.calls.push(call);
    this.failWith(call, this.count++);
  }

  ops(): string[] {
    return this.calls.map((c) => c.op);
  }

  async listNodes(): Promise<SlimNode[]> {
    this.record({ op: 'listNodes' });
    return [...this.nodes.values()].map((n) => structuredClone(n));
  }

  async getNode(name: string): Promise<SlimNode> {
    this.record({ op: 'getNode', name });
    const node = this.nodes.get(name);
    if (!node) throw new Error(`fake: node ${name} not found`);
    return structuredClone(node);
  }

  async patchNode(name: string, patch: object): Promise<void> {
    const body = structuredClone(patch) as Record<string, unknown>;
    this.record({ op: 'patchNode', name, body });
    const node = structuredClone(this.nodes.get(name) ?? { metadata: { name } });
    const meta = (body.metadata ?? {}) as { labels?: Record<string, string>; resourceVersion?: string };
    // like the API server: a resourceVersion in the patch is a precondition
    if (
      meta.resourceVersion !== undefined &&
      meta.resourceVersion !== (node.metadata?.resourceVersion ?? '0')
    ) {
      throw new KubeApiError(`patch node ${name}: the object has been modified`, 409);
    }
    const spec = (body.spec ?? {}) as { providerID?: string; taints?: SlimTaint[] };
    node.metadata ??= {};
    node.spec ??= {};
    if (meta.labels) node.metadata.labels = { ...(node.metadata.labels ?? {}), ...meta.labels };
    if (spec.providerID) node.spec.providerID = spec.providerID;
    if (spec.taints) node.spec.taints = spec.taints;
    node.metadata.resourceVersion = String(Number(node.metadata.resourceVersion ?? '0') + 1);
    this.nodes.set(name, node);
  }

  async setNodeCondition(name: string, condition: NodeConditionSpec): Promise<void> {
    this.record({ op: 'setNodeCondition', name, condition: { ...condition } });
    const node = structuredClone(this.nodes.get(name) ?? { metadata: { name } });
    node.status ??= {};
    const rest = (node.status.conditions ?? []).filter((c) => c.type !== condition.type);
    node.status.conditions = [
      ...rest,
      { type: condition.type, status: condition.status, reason: condition.reason },
    ];
    this.nodes.set(name, node);
  }

  async patchNodeStatus(name: string, patch: object): Promise<void> {
    const body = structuredClone(patch) as Record<string, unknown>;
    this.record({ op: 'patchNodeStatus', name, body });
    const node = structuredClone(this.nodes.get(name) ?? { metadata: { name } });
    const status = (body.status ?? {}) as { addresses?: SlimNodeAddress[] };
    node.status ??= {};
    if (status.addresses) node.status.addresses = status.addresses;
    node.metadata ??= {};
    node.metadata.resourceVersion = String(Number(node.metadata.resourceVersion ?? '0') + 1);
    this.nodes.set(name, node);
  }

  async deleteNode(node: SlimNode): Promise<void> {
    this.record({ op: 'deleteNode', node: structuredClone(node) });
    this.nodes.delete(node.metadata?.name ?? '');
  }

  async createEvent(event: NodeEventSpec): Promise<void> {
    this.record({ op: 'createEvent', event: structuredClone(event) });
  }

  /** The Events a test says were recorded before (none by default); read, not written. */
  nodeEvents: (NodeEventRecord & { reason: string })[] = [];

  async listNodeEvents(reason: string, sinceMs: number): Promise<NodeEventRecord[]> {
    return this.nodeEvents.filter((e) => e.reason === reason && e.at > sinceMs);
  }

  /** The record of deletions (deletion-record.ts): what a test says was deleted before, and what was written since. */
  deletionRecord: RecordedDeletion[] = [];
  /** Set: reading or writing the record fails with it. */
  deletionRecordError?: Error;
  /** The API server's clock the record's reads give (default this process's). */
  serverNow: () => number = () => Date.now();

  async readDeletionRecord(): Promise<DeletionRecord> {
    if (this.deletionRecordError) throw this.deletionRecordError;
    return {
      deletions: structuredClone(this.deletionRecord),
      serverNow: this.serverNow(),
      resourceVersion: '1',
    };
  }

  async writeAheadDeletions(
    decide: (record: DeletionRecord) => NewDeletion[],
    _keepMs: number,
  ): Promise<WriteAhead> {
    const record = await this.readDeletionRecord();
    const written = decide(record).map((d) => ({ ...d, at: record.serverNow + 999 }));
    this.deletionRecord.push(...written);
    return { written, full: [], record };
  }
}
