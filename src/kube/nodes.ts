import {
  CoreV1Api,
  type CoreV1Event,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Node,
} from '@kubernetes/client-node';
import { toKubeError } from './errors.js';
import { FIELD_MANAGER } from './well-known.js';

export type { V1Node };

export interface NodeEventSpec {
  node: V1Node;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  component: string;
}

/** The Node operations the controllers need; everything else about client-node stays in src/kube. */
export interface NodeClient {
  listNodes(): Promise<V1Node[]>;
  getNode(name: string): Promise<V1Node>;
  /** JSON merge patch of the Node; include metadata.resourceVersion to make it conditional. */
  patchNode(name: string, patch: object): Promise<V1Node>;
  /** JSON merge patch of nodes/status: lists (addresses) are replaced whole, never merged by key. */
  patchNodeStatus(name: string, patch: object): Promise<V1Node>;
  /** Deletes exactly the Node that was evaluated: uid and resourceVersion are preconditions. */
  deleteNode(node: V1Node): Promise<void>;
  createEvent(event: NodeEventSpec): Promise<void>;
  /** Write requests sent so far (patches, deletes, events). */
  readonly writes: number;
}

const LIST_PAGE = 500;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export function createNodeClient(kc: KubeConfig): NodeClient {
  const api = kc.makeApiClient(CoreV1Api);
  const server = kc.getCurrentCluster()?.server ?? '(unknown server)';
  let writes = 0;
  const call = async <T>(what: string, fn: () => Promise<T>, write = false): Promise<T> => {
    if (write) writes++;
    try {
      return await fn();
    } catch (err) {
      throw toKubeError(err, what, server);
    }
  };

  return {
    get writes() {
      return writes;
    },
    async listNodes() {
      const nodes: V1Node[] = [];
      let cont: string | undefined;
      do {
        const page = await call('list nodes', () => api.listNode({ limit: LIST_PAGE, _continue: cont }));
        nodes.push(...page.items);
        cont = page.metadata?._continue || undefined;
      } while (cont);
      return nodes;
    },
    getNode: (name) => call(`get node ${name}`, () => api.readNode({ name })),
    patchNode: (name, body) =>
      call(
        `patch node ${name}`,
        () => api.patchNode({ name, body, fieldManager: FIELD_MANAGER }, mergePatch),
        true,
      ),
    patchNodeStatus: (name, body) =>
      call(
        `patch node ${name} status`,
        () => api.patchNodeStatus({ name, body, fieldManager: FIELD_MANAGER }, mergePatch),
        true,
      ),
    async deleteNode(node) {
      const name = node.metadata?.name ?? '';
      await call(
        `delete node ${name}`,
        () =>
          api.deleteNode({
            name,
            body: {
              preconditions: { uid: node.metadata?.uid, resourceVersion: node.metadata?.resourceVersion },
            },
          }),
        true,
      );
    },
    async createEvent({ node, type, reason, message, component }) {
      const now = new Date();
      const name = node.metadata?.name ?? '';
      const event: CoreV1Event = {
        metadata: {
          name: `${name}.${now.getTime().toString(16)}${Math.random().toString(16).slice(2, 6)}`,
          namespace: 'default',
        },
        involvedObject: { kind: 'Node', apiVersion: 'v1', name, uid: node.metadata?.uid },
        type,
        reason,
        message,
        source: { component },
        reportingComponent: component,
        reportingInstance: component,
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      };
      await call(
        `record event ${reason} for node ${name}`,
        () => api.createNamespacedEvent({ namespace: 'default', body: event }),
        true,
      );
    },
  };
}
