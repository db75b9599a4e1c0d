import { nodeUtil } from '../node-modules.js';
import { KubeApiError, KubeConfigError } from './errors.js';
import type { KubeTransport } from './transport.js';

export interface SecretData {
  resourceVersion: string;
  data: Record<string, string>;
  /** The values as the API server sent them (base64): decoding binary ones as UTF-8 may merge two. */
  encoded?: Record<string, string>;
  /** Not credentials: an operator's word to ccm (e.g. the release of a held deletion). */
  annotations?: Record<string, string>;
}

/** Whether two Secrets hold the same values, as the API server sent them. */
export function sameValues(a: SecretData | undefined, b: SecretData | undefined): boolean {
  return a !== undefined && b !== undefined && nodeUtil().isDeepStrictEqual(a.encoded ?? {}, b.encoded ?? {});
}

/**
 * One Secret, read by name (RBAC: `get` on that one Secret; never list or watch). Values are
 * decoded; they are credentials and must never reach a log line or an error message.
 */
export async function readSecret(
  http: KubeTransport,
  namespace: string,
  name: string,
  signal?: AbortSignal,
): Promise<SecretData> {
  try {
    const secret = await http.request<{
      metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
      data?: Record<string, string>;
    }>({
      method: 'GET',
      path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(name)}`,
      signal,
    });
    const data: Record<string, string> = {};
    for (const [key, value] of Object.entries(secret.data ?? {}))
      data[key] = Buffer.from(value, 'base64').toString('utf8');
    return {
      resourceVersion: secret.metadata?.resourceVersion ?? '',
      data,
      encoded: secret.data ?? {},
      annotations: secret.metadata?.annotations ?? {},
    };
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

/**
 * The Secrets of every namespace with this name and type (`list` on Secrets cluster-wide, with field
 * selectors: the API server filters them). For `doctor`, which runs with an operator's credentials
 * and looks for a certificate wherever the docs tell operators to put it; never for `ccm run`.
 */
export async function listSecretsNamed(
  http: KubeTransport,
  name: string,
  type: string,
  signal?: AbortSignal,
): Promise<({ namespace: string; name: string } & SecretData)[]> {
  const selector = `metadata.name=${name},type=${type}`;
  const list = await http.request<{
    items?: {
      metadata?: { namespace?: string; name?: string; resourceVersion?: string };
      data?: Record<string, string>;
    }[];
  }>({
    method: 'GET',
    path: `/api/v1/secrets?fieldSelector=${encodeURIComponent(selector)}`,
    ...(signal ? { signal } : {}),
  });
  return (list.items ?? []).map((s) => ({
    namespace: s.metadata?.namespace ?? '',
    name: s.metadata?.name ?? name,
    resourceVersion: s.metadata?.resourceVersion ?? '',
    data: Object.fromEntries(
      Object.entries(s.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
    ),
  }));
}

export interface SecretWrite {
  namespace: string;
  name: string;
  /** Plain values under the Secret's keys. */
  data: Record<string, string>;
  /** Keys this writer owns: those absent from `data` are removed; any other key is left alone. */
  ownedKeys: readonly string[];
  labels: Record<string, string>;
  /**
   * The Secret's type, default Opaque. The API server never changes a Secret's type: an existing one
   * of another type is refused here, before anything is written.
   */
  type?: string;
  /** Aborts the read; once the write is sent it is not cut off, so that it happened or it did not. */
  signal?: AbortSignal;
}

export interface SecretWriteResult {
  action: 'created' | 'updated' | 'unchanged';
  /** Keys added, changed or removed (names only: the values are credentials). */
  changedKeys: string[];
  /** Labels of ccm's set or changed on an existing Secret (one made by hand has none of them). */
  changedLabels?: string[];
}

/**
 * Create or update one Secret (RBAC: get, create, update on it). Reads first, so identical values
 * write nothing; an update is a PUT with the resourceVersion read, so a concurrent change fails
 * (409) rather than being overwritten.
 */
export async function writeSecret(http: KubeTransport, want: SecretWrite): Promise<SecretWriteResult> {
  const path = `/api/v1/namespaces/${encodeURIComponent(want.namespace)}/secrets`;
  const encoded = Object.fromEntries(
    Object.entries(want.data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]),
  );
  let current: {
    metadata: { resourceVersion?: string; labels?: Record<string, string> } & Record<string, unknown>;
    data?: Record<string, string>;
    type?: string;
  };
  try {
    current = await http.request({
      method: 'GET',
      path: `${path}/${encodeURIComponent(want.name)}`,
      ...(want.signal ? { signal: want.signal } : {}),
    });
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 404)) throw forbidden(err, 'get', want);
    want.signal?.throwIfAborted();
    try {
      await http.request({
        method: 'POST',
        path,
        body: {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: want.name, namespace: want.namespace, labels: want.labels },
          type: want.type ?? 'Opaque',
          data: encoded,
        },
        discardResponse: true,
      });
    } catch (createErr) {
      throw forbidden(createErr, 'create', want);
    }
    return { action: 'created', changedKeys: Object.keys(want.data).sort() };
  }
  const type = want.type ?? 'Opaque';
  if ((current.type ?? 'Opaque') !== type) {
    throw new KubeConfigError(
      `Secret ${want.namespace}/${want.name} exists with type ${current.type ?? 'Opaque'}, not ${type}, and a Secret's type cannot change; choose another name (--name) or delete it first`,
    );
  }
  const data: Record<string, string> = { ...(current.data ?? {}) };
  const changedKeys: string[] = [];
  for (const key of want.ownedKeys) {
    const next = encoded[key];
    if (data[key] === next) continue;
    changedKeys.push(key);
    if (next === undefined) delete data[key];
    else data[key] = next;
  }
  const labels = { ...(current.metadata.labels ?? {}), ...want.labels };
  const changedLabels = Object.entries(want.labels)
    .filter(([k, v]) => current.metadata.labels?.[k] !== v)
    .map(([k]) => k)
    .sort();
  if (changedKeys.length === 0 && changedLabels.length === 0) return { action: 'unchanged', changedKeys };
  want.signal?.throwIfAborted();
  try {
    await http.request({
      method: 'PUT',
      path: `${path}/${encodeURIComponent(want.name)}`,
      body: { ...current, metadata: { ...current.metadata, labels }, data },
      discardResponse: true,
    });
  } catch (err) {
    throw forbidden(err, 'update', want);
  }
  return {
    action: 'updated',
    changedKeys: changedKeys.sort(),
    ...(changedLabels.length > 0 ? { changedLabels } : {}),
  };
}

function forbidden(err: unknown, verb: string, want: { namespace: string; name: string }): unknown {
  // Configuration (exit 2), as a Secret that does not exist is: the same command again cannot help.
  if (err instanceof KubeApiError && err.status === 403) {
    return new KubeConfigError(
      `not allowed to ${verb} Secret ${want.namespace}/${want.name}; grant get, create and update on it`,
    );
  }
  if (err instanceof KubeApiError && err.status === 404 && verb === 'create') {
    return new KubeConfigError(`namespace ${want.namespace} does not exist; create it or pass --namespace`);
  }
  return err;
}
