import { KubeApiError } from './errors.js';
import type { KubeTransport } from './transport.js';

const PATH = '/api/v1/namespaces/kube-system/configmaps/kubeadm-config';
export const CLUSTER_CONFIGURATION_KEY = 'ClusterConfiguration';
/**
 * What `cluster prepare` changed in ClusterConfiguration and how to undo it (JSON), kept on the
 * ConfigMap itself: only those who may write kubeadm's record can write it, unlike a file on a host.
 */
export const PREPARE_RECORD_ANNOTATION = 'ccm.io/prepare-record';

export interface KubeadmConfig {
  clusterConfiguration: string;
  resourceVersion: string;
  /** The annotation PREPARE_RECORD_ANNOTATION, when prepare left one. */
  prepareRecord?: string;
}

interface ConfigMap {
  metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
  data?: Record<string, string>;
}

/** kubeadm's own record of the cluster (ConfigMap kube-system/kubeadm-config); undefined when absent. */
export async function readKubeadmConfig(http: KubeTransport): Promise<KubeadmConfig | undefined> {
  try {
    const cm = await http.request<ConfigMap>({ method: 'GET', path: PATH });
    const text = cm.data?.[CLUSTER_CONFIGURATION_KEY];
    if (text === undefined) return undefined;
    const record = cm.metadata?.annotations?.[PREPARE_RECORD_ANNOTATION];
    return {
      clusterConfiguration: text,
      resourceVersion: cm.metadata?.resourceVersion ?? '',
      ...(record !== undefined ? { prepareRecord: record } : {}),
    };
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return undefined;
    throw err;
  }
}

/**
 * Replaces ClusterConfiguration, only if the ConfigMap is still at `resourceVersion` (else 409), and
 * sets prepare's record with it in the same write (null removes it).
 */
export async function writeKubeadmConfig(
  http: KubeTransport,
  text: string,
  resourceVersion: string,
  prepareRecord: string | null,
): Promise<void> {
  await http.request({
    method: 'PATCH',
    path: `${PATH}?fieldManager=ccm`,
    contentType: 'application/merge-patch+json',
    body: {
      metadata: { resourceVersion, annotations: { [PREPARE_RECORD_ANNOTATION]: prepareRecord } },
      data: { [CLUSTER_CONFIGURATION_KEY]: text },
    },
    discardResponse: true,
  });
}
