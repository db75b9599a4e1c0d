/** LoadBalancer Services and their Events on the test control plane, for the `ccm run` cloud tests. */
import { type CoreV1Api, PatchStrategy, setHeaderOptions, type V1Service } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { SOURCE_SERVICE_CONTROLLER } from '../../src/kube/well-known.js';
import { until } from './run.js';

export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

export function lbService(
  name: string,
  namespace = 'default',
  annotations?: Record<string, string>,
  ports: { name: string; port: number }[] = [{ name: 'http', port: 80 }],
): V1Service {
  return {
    metadata: { name, namespace, ...(annotations ? { annotations } : {}) },
    spec: {
      type: 'LoadBalancer',
      ports: ports.map((p) => ({ ...p, targetPort: 8080 })),
      selector: { app: name },
    },
  };
}

/**
 * The service controller's Events about a Service, oldest first. Only ours: the kube-apiserver's ClusterIP
 * repair loop may record its own (ClusterIPNotAllocated) about a Service created a moment before it ran.
 */
export async function serviceControllerEvents(api: CoreV1Api, namespace: string, name: string) {
  const events = await api.listNamespacedEvent({
    namespace,
    fieldSelector: `involvedObject.name=${name},source=${SOURCE_SERVICE_CONTROLLER}`,
  });
  return events.items.sort(
    (a, b) =>
      String(a.metadata?.creationTimestamp).localeCompare(String(b.metadata?.creationTimestamp)) ||
      // creationTimestamp has whole seconds: ties are broken by resourceVersion (etcd's write order).
      Number(a.metadata?.resourceVersion) - Number(b.metadata?.resourceVersion),
  );
}

/** The reasons of the service controller's Events about a Service, oldest first. */
export async function eventReasons(api: CoreV1Api, namespace: string, name: string): Promise<string[]> {
  return (await serviceControllerEvents(api, namespace, name)).map((e) => e.reason ?? '');
}

export async function eventMessages(
  api: CoreV1Api,
  namespace: string,
  name: string,
  reason: string,
): Promise<string[]> {
  return (await serviceControllerEvents(api, namespace, name))
    .filter((e) => e.reason === reason)
    .map((e) => e.message ?? '');
}

export async function serviceGone(api: CoreV1Api, namespace: string, name: string): Promise<boolean> {
  return (
    (await api.listNamespacedService({ namespace, fieldSelector: `metadata.name=${name}` })).items.length ===
    0
  );
}

/** Removes every Service but `kubernetes`, finalizers first (after ccm stopped). */
export async function removeServices(api: CoreV1Api, namespace: string): Promise<void> {
  for (const s of (await api.listNamespacedService({ namespace })).items) {
    const name = s.metadata?.name ?? '';
    if (name === 'kubernetes') continue;
    if (s.metadata?.finalizers?.length) {
      await api.patchNamespacedService(
        { name, namespace, body: [{ op: 'remove', path: '/metadata/finalizers' }] },
        JSON_PATCH,
      );
    }
    await api.deleteNamespacedService({ name, namespace }).catch(() => {});
  }
  await api.deleteCollectionNamespacedEvent({ namespace });
}

/** Waits until the service controller recorded EnsuredLoadBalancer for the Service, EnsuringLoadBalancer before it. */
export async function expectLoadBalancerEnsuredEvents(api: CoreV1Api, namespace: string, name: string) {
  await until('EnsuredLoadBalancer', async () =>
    (await eventReasons(api, namespace, name)).includes('EnsuredLoadBalancer'),
  );
  expect(await eventReasons(api, namespace, name)).toContain('EnsuringLoadBalancer');
}

/** Waits until the Service is gone (its finalizer removed, by ccm once it has cleaned up). */
export function untilServiceGone(api: CoreV1Api, namespace: string, name: string, timeoutMs?: number) {
  return until(`${name} gone`, () => serviceGone(api, namespace, name), timeoutMs);
}

/**
 * Waits until the service controller recorded DeletedLoadBalancer for the Service, and expects
 * DeletingLoadBalancer before it. DeletedLoadBalancer follows the finalizer's removal (the
 * reference order): the Service may be gone first.
 */
export async function expectLoadBalancerDeletedEvents(api: CoreV1Api, namespace: string, name: string) {
  await until('DeletedLoadBalancer recorded', async () =>
    (await eventReasons(api, namespace, name)).includes('DeletedLoadBalancer'),
  );
  expect(await eventReasons(api, namespace, name)).toEqual(
    expect.arrayContaining(['DeletingLoadBalancer', 'DeletedLoadBalancer']),
  );
}

/** Waits until the Service's first ingress has an `ip` (or a `hostname`: Triton's CNS name); returns it. */
export function untilIngress(
  api: CoreV1Api,
  namespace: string,
  name: string,
  timeoutMs = 30_000,
  field: 'ip' | 'hostname' = 'ip',
): Promise<V1Service> {
  return until(
    `${name} ingress`,
    async () => {
      const s = await api.readNamespacedService({ name, namespace });
      return s.status?.loadBalancer?.ingress?.[0]?.[field] ? s : undefined;
    },
    timeoutMs,
  );
}
