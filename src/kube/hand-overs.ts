import { KubeApiError } from './errors.js';
import type { KubeTransport } from './transport.js';
import { MIGRATION_BACKUP_CONFIGMAP } from './well-known.js';

/**
 * The hand-overs `ccm migrate --yes` made: Service UID → the id of the load balancer handed to ccm for
 * it. They are read from the migration's record in kube-system (ConfigMap ccm-migrate-backup, one key
 * per Service), which only an operator can write: the `ccm.io/adopted-load-balancer` annotation, which
 * anyone who may edit the Service can write, is only believed when this record says the same.
 */
export async function readHandOvers(http: KubeTransport): Promise<Map<string, string>> {
  let data: Record<string, string> = {};
  try {
    const cm = await http.request<{ data?: Record<string, string> }>({
      method: 'GET',
      path: `/api/v1/namespaces/kube-system/configmaps/${MIGRATION_BACKUP_CONFIGMAP}`,
    });
    data = cm.data ?? {};
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw err;
  }
  const handOvers = new Map<string, string>();
  for (const value of Object.values(data)) {
    try {
      const record = JSON.parse(value) as { uid?: unknown; loadBalancer?: { id?: unknown } };
      if (typeof record.uid === 'string' && typeof record.loadBalancer?.id === 'string') {
        handOvers.set(record.uid, record.loadBalancer.id);
      }
    } catch {
      // A key that is no record of ccm migrate hands nothing over.
    }
  }
  return handOvers;
}
