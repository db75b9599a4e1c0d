import { KubeApiError } from './errors.js';
import type { KubeTransport } from './transport.js';

const PATH = '/api/v1/namespaces/kube-system/configmaps/kubeadm-config';
export const CLUSTER_CONFIGURATION_KEY = 'ClusterConfiguration';

export interface KubeadmConfig {
  clusterConfiguration: string;
  resourceVersion: string;
}

interface ConfigMap {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

/** kubeadm's own record of the cluster (ConfigMap kube-system/kubeadm-config); undefined when absent. */
export async function readKubeadmConfig(http: KubeTransport): Promise<KubeadmConfig | undefined> {
  try {
    const cm = await http.request<ConfigMap>({ method: 'GET', path: PATH });
    const text = cm.data?.[CLUSTER_CONFIGURATION_KEY];
    if (text === undefined) return undefined;
    return { clusterConfiguration: text, resourceVersion: cm.metadata?.resourceVersion ?? '' };
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined;
    throw err;
  }
}

/** Replaces ClusterConfiguration, only if the ConfigMap is still at `resourceVersion` (else 409). */
export async function writeKubeadmConfig(
  http: KubeTransport,
  text: string,
  resourceVersion: string,
): Promise<void> {
  await http.request({
    method: 'PATCH',
    path: `${PATH}?fieldManager=ccm`,
    contentType: 'application/merge-patch+json',
    body: { metadata: { resourceVersion }, data: { [CLUSTER_CONFIGURATION_KEY]: text } },
    discardResponse: true,
  });
}
