import { KubeApiError } from './errors.js';
import type { KubeTransport } from './transport.js';

export interface SecretData {
  resourceVersion: string;
  data: Record<string, string>;
}

/**
 * One Secret, read by name (RBAC: `get` on that one Secret; never list or watch). Values are
 * decoded; they are credentials and must never reach a log line or an error message.
 */
export async function readSecret(http: KubeTransport, namespace: string, name: string): Promise<SecretData> {
  try {
    const secret = await http.request<{
      metadata?: { resourceVersion?: string };
      data?: Record<string, string>;
    }>({
      method: 'GET',
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
      timeoutMs: 10_000,
    });
    const data: Record<string, string> = {};
    for (const [key, value] of Object.entries(secret.data ?? {}))
      data[key] = Buffer.from(value, 'base64').toString('utf8');
    return { resourceVersion: secret.metadata?.resourceVersion ?? '', data };
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) {
      throw new KubeApiError(
        `Secret ${namespace}/${name} does not exist; create it (ccm secret create) or fix --credentials-secret`,
        404,
      );
    }
    if (err instanceof KubeApiError && err.status === 403) {
      throw new KubeApiError(
        `not allowed to get Secret ${namespace}/${name}; grant "get" on it to ccm's service account`,
        403,
      );
    }
    throw err;
  }
}
