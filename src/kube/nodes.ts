import type { CoreV1Event, V1Node, V1NodeList } from '@kubernetes/client-node';
import type { SlimNode } from './slim-node.js';
import { type KubeAuthSource, type KubeRequest, KubeTransport } from './transport.js';
import { FIELD_MANAGER } from './well-known.js';

export type { V1Node };

export interface NodeEventSpec {
  node: SlimNode;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  component: string;
}

/**
 * The Node operations the controllers need; everything about the Kubernetes API stays in src/kube.
 * Objects are plain JSON as the server sends them (timestamps are strings).
 */
export interface NodeClient {
  listNodes(): Promise<V1Node[]>;
  getNode(name: string): Promise<V1Node>;
  /** JSON merge patch of the Node; include metadata.resourceVersion to make it conditional. */
  patchNode(name: string, patch: object): Promise<void>;
  /** JSON merge patch of nodes/status: lists (addresses) are replaced whole, never merged by key. */
  patchNodeStatus(name: string, patch: object): Promise<void>;
  /** Deletes exactly the Node that was evaluated: uid and resourceVersion are preconditions. */
  deleteNode(node: SlimNode): Promise<void>;
  createEvent(event: NodeEventSpec): Promise<void>;
  /** Write requests sent so far (patches, deletes, events). */
  readonly writes: number;
}

const LIST_PAGE = 500;
const MERGE_PATCH = 'application/merge-patch+json';
const MANAGER = `fieldManager=${FIELD_MANAGER}`;

/** A client over its own transport (from a kubeconfig), or over a shared one (`ccm run`). */
export function createNodeClient(source: KubeAuthSource | KubeTransport): NodeClient {
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
      const nodes: V1Node[] = [];
      let cont = '';
      do {
        const query = `limit=${LIST_PAGE}${cont ? `&continue=${encodeURIComponent(cont)}` : ''}`;
        const page = await http.request<V1NodeList>({ method: 'GET', path: `/api/v1/nodes?${query}` });
        nodes.push(...page.items);
        cont = (page.metadata as { continue?: string } | undefined)?.continue ?? '';
      } while (cont);
      return nodes;
    },
    getNode: (name) => http.request<V1Node>({ method: 'GET', path: nodePath(name) }),
    patchNode: (name, body) =>
      write({ method: 'PATCH', path: `${nodePath(name)}?${MANAGER}`, body, contentType: MERGE_PATCH }),
    patchNodeStatus: (name, body) =>
      write({
        method: 'PATCH',
        path: `${nodePath(name)}/status?${MANAGER}`,
        body,
        contentType: MERGE_PATCH,
      }),
    async deleteNode(node) {
      const { name = '', uid, resourceVersion } = node.metadata ?? {};
      await write({
        method: 'DELETE',
        path: nodePath(name),
        body: { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid, resourceVersion } },
      });
    },
    async createEvent({ node, type, reason, message, component }) {
      const now = new Date().toISOString();
      const name = node.metadata?.name ?? '';
      const event: CoreV1Event = {
        metadata: { generateName: `${name}.`, namespace: 'default' },
        involvedObject: { kind: 'Node', apiVersion: 'v1', name, uid: node.metadata?.uid },
        type,
        reason,
        message,
        source: { component },
        reportingComponent: component,
        reportingInstance: component,
        firstTimestamp: now as unknown as Date,
        lastTimestamp: now as unknown as Date,
        count: 1,
      };
      await write({ method: 'POST', path: `/api/v1/namespaces/default/events?${MANAGER}`, body: event });
    },
  };
}
