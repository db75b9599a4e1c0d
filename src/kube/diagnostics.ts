/**
 * The read-only Kubernetes calls of `ccm doctor`: the server version, Pods by label, one Lease, and
 * SubjectAccessReviews. Plain JSON as the server sends it; nothing here writes an object.
 */
import { KubeApiError } from './errors.js';
import type { KubeTransport } from './transport.js';

export interface ServerVersion {
  gitVersion: string;
  major: string;
  minor: string;
}

export interface PodCondition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface PodInfo {
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    creationTimestamp?: string;
  };
  spec?: {
    nodeName?: string;
    hostNetwork?: boolean;
    containers?: { name: string; image?: string; command?: string[]; args?: string[] }[];
  };
  status?: {
    phase?: string;
    conditions?: PodCondition[];
    containerStatuses?: {
      name: string;
      ready?: boolean;
      restartCount?: number;
      state?: { waiting?: { reason?: string; message?: string } };
      lastState?: { terminated?: { exitCode?: number; reason?: string; message?: string } };
    }[];
  };
}

export interface LeaseInfo {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  renewTime?: string;
}

export interface AccessRequest {
  verb: string;
  resource: string;
  group: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

export async function serverVersion(http: KubeTransport): Promise<ServerVersion> {
  return http.request<ServerVersion>({ method: 'GET', path: '/version' });
}

export async function listPods(http: KubeTransport, namespace: string, selector: string): Promise<PodInfo[]> {
  const list = await http.request<{ items?: PodInfo[] }>({
    method: 'GET',
    path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods?labelSelector=${encodeURIComponent(selector)}`,
  });
  return list.items ?? [];
}

/** The Lease's spec, or undefined when there is none. */
export async function readLease(
  http: KubeTransport,
  namespace: string,
  name: string,
): Promise<LeaseInfo | undefined> {
  try {
    const lease = await http.request<{ spec?: LeaseInfo }>({
      method: 'GET',
      path: `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases/${encodeURIComponent(name)}`,
    });
    return lease.spec ?? {};
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined;
    throw err;
  }
}

/** Whether a ServiceAccount may do this (a SubjectAccessReview: the API server's own RBAC answer). */
export async function serviceAccountMay(
  http: KubeTransport,
  serviceAccount: { namespace: string; name: string },
  request: AccessRequest,
): Promise<boolean> {
  const { namespace, name } = serviceAccount;
  const review = await http.request<{ status?: { allowed?: boolean } }>({
    method: 'POST',
    path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: `system:serviceaccount:${namespace}:${name}`,
        groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
        resourceAttributes: {
          verb: request.verb,
          group: request.group,
          resource: request.resource,
          ...(request.subresource ? { subresource: request.subresource } : {}),
          ...(request.namespace ? { namespace: request.namespace } : {}),
          ...(request.name ? { name: request.name } : {}),
        },
      },
    },
  });
  return review.status?.allowed === true;
}

/** A Deployment or DaemonSet, as `migrate` and `doctor` look for a cloud's official controller. */
export interface WorkloadInfo {
  kind: 'Deployment' | 'DaemonSet';
  namespace: string;
  name: string;
  /** Desired replicas (a DaemonSet: the Pods it schedules). */
  replicas: number;
  images: string[];
  /** Each container's command and args, with `$(VAR)` expanded from its literal env values. */
  commandLines: string[][];
  /** Where its Pods may run: the node selector's labels and the required node affinity's keys. */
  placement: { nodeSelector: Record<string, string>; affinityKeys: string[] };
  /**
   * Why a Deployment's Pods are not created, as its ReplicaFailure condition says (the deployment
   * controller copies its ReplicaSet's: admission refused the Pod, a quota is used up).
   */
  replicaFailure?: string;
}

interface RawContainer {
  image?: string;
  command?: string[];
  args?: string[];
  env?: { name?: string; value?: string }[];
}

/** `$(VAR)` as the kubelet expands it in command and args, from the container's literal env values. */
function commandLine(c: RawContainer): string[] {
  const env = new Map(
    (c.env ?? []).flatMap((e) => (e.name && e.value !== undefined ? [[e.name, e.value]] : [])),
  );
  return [...(c.command ?? []), ...(c.args ?? [])].map((a) =>
    a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env.get(name) ?? whole),
  );
}

interface RawPodSpec {
  containers?: RawContainer[];
  nodeSelector?: Record<string, string>;
  affinity?: {
    nodeAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: {
        nodeSelectorTerms?: { matchExpressions?: { key?: string }[] }[];
      };
    };
  };
}

interface RawWorkload {
  metadata?: { namespace?: string; name?: string };
  spec?: { replicas?: number; template?: { spec?: RawPodSpec } };
  status?: {
    desiredNumberScheduled?: number;
    conditions?: { type?: string; status?: string; message?: string }[];
  };
}

function placementOf(spec: RawPodSpec | undefined): WorkloadInfo['placement'] {
  const terms =
    spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  const keys = (terms ?? []).flatMap((t) => (t.matchExpressions ?? []).map((e) => e.key ?? ''));
  return { nodeSelector: spec?.nodeSelector ?? {}, affinityKeys: [...new Set(keys.filter(Boolean))] };
}

function replicaFailureOf(w: RawWorkload): { replicaFailure?: string } {
  const failure = w.status?.conditions?.find((c) => c.type === 'ReplicaFailure' && c.status === 'True');
  return failure ? { replicaFailure: failure.message?.split('\n')[0] ?? 'ReplicaFailure' } : {};
}

/** Every Deployment and DaemonSet of the cluster (two listings). */
export async function listWorkloads(http: KubeTransport): Promise<WorkloadInfo[]> {
  const found: WorkloadInfo[] = [];
  for (const kind of ['Deployment', 'DaemonSet'] as const) {
    const list = await http.request<{ items?: RawWorkload[] }>({
      method: 'GET',
      path: `/apis/apps/v1/${kind === 'Deployment' ? 'deployments' : 'daemonsets'}`,
    });
    for (const w of list.items ?? []) {
      found.push({
        kind,
        namespace: w.metadata?.namespace ?? '',
        name: w.metadata?.name ?? '',
        replicas: kind === 'Deployment' ? (w.spec?.replicas ?? 1) : (w.status?.desiredNumberScheduled ?? 0),
        images: (w.spec?.template?.spec?.containers ?? []).map((c) => c.image ?? ''),
        commandLines: (w.spec?.template?.spec?.containers ?? []).map(commandLine),
        placement: placementOf(w.spec?.template?.spec),
        ...replicaFailureOf(w),
      });
    }
  }
  return found;
}
