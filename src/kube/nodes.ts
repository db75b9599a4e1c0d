import type { ClusterAccess } from './config.js';
import {
  type DeletionRecord,
  type NewDeletion,
  readDeletionRecord,
  type WriteAhead,
  writeAheadDeletions,
} from './deletion-record.js';
import { KubeApiError, KubeConfigError } from './errors.js';
import { eventRecorder } from './event-recorder.js';
import { createEvent } from './events.js';
import { listAll } from './list-all.js';
import { listNodeEvents, type NodeEventRecord } from './node-events.js';
import { type SlimNode, slimNode } from './slim-node.js';
import { type KubeRequest, KubeTransport } from './transport.js';
import { FIELD_MANAGER } from './well-known.js';

export type { SlimNode };

export interface NodeEventSpec {
  node: SlimNode;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  component: string;
  annotations?: Record<string, string>;
  /**
   * Sent at once and awaited, not through the recorder's queue (which drops the oldest of 1,000 and
   * is not waited for past 10 s): a failure throws, so the caller knows the Node was not told.
   */
  direct?: boolean;
}

/**
 * The Node operations the controllers need; everything about the Kubernetes API stays in src/kube.
 * Nodes are slim copies (slim-node.ts): the full objects of one list page at most are alive at once.
 */
export interface NodeClient {
  listNodes(): Promise<SlimNode[]>;
  getNode(name: string): Promise<SlimNode>;
  /** JSON merge patch of the Node; include metadata.resourceVersion to make it conditional. */
  patchNode(name: string, patch: object): Promise<void>;
  /** JSON merge patch of nodes/status: lists (addresses) are replaced whole, never merged by key. */
  patchNodeStatus(name: string, patch: object): Promise<void>;
  /**
   * Sets one condition of nodes/status by a strategic merge patch: conditions merge by type, so the
   * kubelet's own conditions are never replaced (upstream nodeutil.SetNodeCondition).
   */
  setNodeCondition(name: string, condition: NodeConditionSpec): Promise<void>;
  /** Deletes exactly the Node that was evaluated: uid and resourceVersion are preconditions. */
  deleteNode(node: SlimNode): Promise<void>;
  createEvent(event: NodeEventSpec): Promise<void>;
  /** The lifecycle controller's Events of this reason about Nodes since `sinceMs` (the API server's clock). */
  listNodeEvents(reason: string, sinceMs: number): Promise<NodeEventRecord[]>;
  /** The deletion brake's record of the window's Node deletions (deletion-record.ts). */
  readDeletionRecord(): Promise<DeletionRecord>;
  /** Writes deletions into the record before their DELETEs are sent (deletion-record.ts). */
  writeAheadDeletions(decide: (record: DeletionRecord) => NewDeletion[], keepMs: number): Promise<WriteAhead>;
  /** Write requests sent so far (patches, deletes, events). */
  readonly writes: number;
}

export interface NodeConditionSpec {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

type RawNode = Parameters<typeof slimNode>[0];

const LIST_PAGE = 500;
const MERGE_PATCH = 'application/merge-patch+json';
const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';
const MANAGER = `fieldManager=${FIELD_MANAGER}`;

/** A client over its own transport (from a kubeconfig), or over a shared one (`ccm run`). */
export function createNodeClient(source: ClusterAccess | KubeTransport): NodeClient {
  const http = source instanceof KubeTransport ? source : new KubeTransport(source);
  let writes = 0;
  // Writes never read the response back: the pass already knows what it wrote.
  const write = async (req: KubeRequest) => {
    writes++;
    await http.request<unknown>({ ...req, discardResponse: true });
  };
  const nodePath = (name: string) => `/api/v1/nodes/${encodeURIComponent(name)}`;

  return {
    get writes() {
      return writes;
    },
    async listNodes() {
      let nodes: SlimNode[] = [];
      // Each full Node is dropped as soon as its slim copy is made.
      await listAll(http, '/api/v1/nodes', (item) => nodes.push(slimNode(item as RawNode)), {
        pageSize: LIST_PAGE,
        onRestart: () => {
          nodes = [];
        },
      }).catch((err: unknown) => {
        // Every Kubernetes API server has Nodes: a 404 here is some other server.
        if (err instanceof KubeApiError && err.status === 404) {
          throw new KubeConfigError(
            `${http.server} answered 404 to GET /api/v1/nodes: it is not a Kubernetes API server; ${http.accessHint}`,
          );
        }
        throw err;
      });
      return nodes;
    },
    getNode: async (name) => slimNode(await http.request<RawNode>({ method: 'GET', path: nodePath(name) })),
    patchNode: (name, body) =>
      write({ method: 'PATCH', path: `${nodePath(name)}?${MANAGER}`, body, contentType: MERGE_PATCH }),
    patchNodeStatus: (name, body) =>
      write({
        method: 'PATCH',
        path: `${nodePath(name)}/status?${MANAGER}`,
        body,
        contentType: MERGE_PATCH,
      }),
    setNodeCondition(name, condition) {
      const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
      const body = {
        status: { conditions: [{ ...condition, lastHeartbeatTime: now, lastTransitionTime: now }] },
      };
      return write({
        method: 'PATCH',
        path: `${nodePath(name)}/status?${MANAGER}`,
        body,
        contentType: STRATEGIC_MERGE_PATCH,
      });
    },
    async deleteNode(node) {
      const { name = '', uid, resourceVersion } = node.metadata ?? {};
      await write({
        method: 'DELETE',
        path: nodePath(name),
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid, resourceVersion } },
      });
    },
    async createEvent({ node, direct, ...event }) {
      const about = {
        kind: 'Node',
        apiVersion: 'v1',
        name: node.metadata?.name ?? '',
        uid: node.metadata?.uid,
      };
      if (direct) {
        writes++;
        await createEvent(http, about, event);
      } else if (eventRecorder(http).record(about, event)) writes++;
    },
    listNodeEvents: (reason, sinceMs) => listNodeEvents(http, reason, sinceMs),
    readDeletionRecord: () => readDeletionRecord(http),
    async writeAheadDeletions(decide, keepMs) {
      writes++;
      return writeAheadDeletions(http, decide, keepMs);
    },
  };
}
