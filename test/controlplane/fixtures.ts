/** Arranges Nodes on the test control plane as the `fixture-admin` identity (never as the CLI's). */
import {
  type ApiConstructor,
  type ApiType,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  type V1Node,
  type V1Taint,
} from '@kubernetes/client-node';

export const UNINITIALIZED: V1Taint = {
  key: 'node.cloudprovider.kubernetes.io/uninitialized',
  value: 'true',
  effect: 'NoSchedule',
};

export interface NodeSpec {
  name: string;
  providerID?: string;
  tainted?: boolean;
  ready?: boolean;
  providedNodeIP?: string;
  labels?: Record<string, string>;
  taints?: V1Taint[];
  addresses?: { type: string; address: string }[];
  /** spec.podCIDRs (and spec.podCIDR, the first), as node IPAM sets them: one CIDR, or one per family. */
  podCIDR?: string | string[];
}

/** The InternalIP addresses of a Node's status, in order. */
export const internalIPs = (...ips: string[]) => ips.map((address) => ({ type: 'InternalIP', address }));

export function nodeObject(spec: NodeSpec): V1Node {
  const taints = [...(spec.tainted === false ? [] : [UNINITIALIZED]), ...(spec.taints ?? [])];
  const podCIDRs = [spec.podCIDR ?? []].flat();
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: spec.name,
      labels: { 'kubernetes.io/hostname': spec.name, ...(spec.labels ?? {}) },
      ...(spec.providedNodeIP
        ? { annotations: { 'alpha.kubernetes.io/provided-node-ip': spec.providedNodeIP } }
        : {}),
    },
    spec: {
      ...(spec.providerID ? { providerID: spec.providerID } : {}),
      ...(taints.length ? { taints } : {}),
      ...(podCIDRs.length ? { podCIDR: podCIDRs[0], podCIDRs } : {}),
    },
    status: {
      addresses: spec.addresses ?? [{ type: 'Hostname', address: spec.name }],
      conditions: [
        {
          type: 'Ready',
          status: spec.ready === false ? 'False' : 'True',
          reason: spec.ready === false ? 'KubeletNotReady' : 'KubeletReady',
          message: 'set by the test fixture',
          lastHeartbeatTime: new Date(),
          lastTransitionTime: new Date(),
        },
      ],
    },
  };
}

/** The control plane's kubeconfig on its `fixtures` context: the admin the tests arrange the cluster as. */
export function fixtureKubeConfig(kubeconfigPath: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  kc.setCurrentContext('fixtures');
  return kc;
}

/** A client of any API group (AppsV1Api, RbacAuthorizationV1Api …) as the fixtures admin. */
export function fixtureClient<T extends ApiType>(kubeconfigPath: string, api: ApiConstructor<T>): T {
  return fixtureKubeConfig(kubeconfigPath).makeApiClient(api);
}

/** Server-side apply as the fixtures admin (field manager ccm-test), as `kubectl apply --server-side`. */
export function fixtureApply(kubeconfigPath: string) {
  const objects = KubernetesObjectApi.makeApiClient(fixtureKubeConfig(kubeconfigPath));
  return <T extends KubernetesObject>(obj: T) =>
    objects.patch(obj, undefined, undefined, 'ccm-test', true, PatchStrategy.ServerSideApply);
}

export function fixtureApi(kubeconfigPath: string): CoreV1Api {
  return fixtureClient(kubeconfigPath, CoreV1Api);
}

/** Creates the Nodes, `concurrency` at a time. */
export async function createNodes(api: CoreV1Api, specs: NodeSpec[], concurrency = 32): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < specs.length) {
      const spec = specs[next++] as NodeSpec;
      await api.createNode({ body: nodeObject(spec) });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, specs.length) }, worker));
}

export async function deleteAllNodes(api: CoreV1Api): Promise<void> {
  await api.deleteCollectionNode({});
}

/**
 * Forgets the deletion brake's memory: its record of the window's deletions (ConfigMap
 * kube-system/ccm-node-deletions) and the Events in `default` (a held Node's Event is not told
 * twice), so that a test does not inherit the last one's deletions.
 */
export async function forgetNodeDeletions(api: CoreV1Api): Promise<void> {
  await api
    .deleteNamespacedConfigMap({ name: 'ccm-node-deletions', namespace: 'kube-system' })
    .catch((err: { code?: number }) => {
      if (err.code !== 404) throw err;
    });
  await api.deleteCollectionNamespacedEvent({ namespace: 'default' });
}

export async function listNodes(api: CoreV1Api): Promise<V1Node[]> {
  return (await api.listNode()).items;
}
