/** Credentials Secrets as the tests write and rotate them (kube-system). */
import type { CoreV1Api } from '@kubernetes/client-node';
import { stringify } from 'yaml';

/** Creates Secret kube-system/`name` holding `data` (plain text), or replaces it. */
export async function putSecret(api: CoreV1Api, name: string, data: Record<string, string>): Promise<void> {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: 'kube-system' },
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
  try {
    await api.createNamespacedSecret({ namespace: 'kube-system', body: secret });
  } catch {
    await api.replaceNamespacedSecret({ name, namespace: 'kube-system', body: secret });
  }
}

/** A clouds.yaml with one cloud, `cloud`, for the OpenStack simulator at `authUrl`. */
export function cloudsYaml(authUrl: string, cloud: string, password: string): string {
  return stringify({
    clouds: {
      [cloud]: {
        auth: { auth_url: authUrl, username: 'admin', password, domain_id: 'default' },
        region_name: 'RegionOne',
      },
    },
  });
}
