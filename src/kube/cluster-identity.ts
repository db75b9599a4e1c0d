import type { KubeTransport } from './transport.js';

/**
 * The identity in every ownership tag ccm puts on cloud resources. By default it is derived from the
 * kube-system namespace's UID, unique per cluster and stable for its life, so two clusters sharing
 * one cloud account never touch each other's resources (the reference's default, "kubernetes", is the
 * same everywhere). `--cluster-name` overrides it, e.g. to take over resources after a rebuild.
 */
export async function clusterIdentity(http: KubeTransport, clusterName?: string): Promise<string> {
  if (clusterName) return clusterName;
  const ns = await http.request<{ metadata?: { uid?: string } }>({
    method: 'GET',
    path: '/api/v1/namespaces/kube-system',
  });
  const uid = ns?.metadata?.uid;
  if (!uid) throw new Error('the kube-system namespace has no UID; pass --cluster-name');
  return `k8s-${uid.replace(/-/g, '').slice(0, 16)}`;
}
