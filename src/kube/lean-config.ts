/**
 * A kubeconfig reader for the long-running controller. Loading client-node's KubeConfig pulls in
 * the whole generated API (measured: 80 MB of RSS), which would be most of `ccm run`'s memory
 * target. This reads the common cases itself: a CA, client certificates, bearer tokens (inline or
 * a token file re-read on every refresh, as the in-cluster service account's rotates), basic auth,
 * and the in-cluster service account. Users with `exec` or `auth-provider` go to client-node's
 * KubeConfig, loaded only then.
 */
import { readFileSync } from 'node:fs';
import type { RequestOptions } from 'node:https';
import { dirname, isAbsolute, join } from 'node:path';
import { parse } from 'yaml';
import { KubeConfigError } from './errors.js';
import { findKubeconfig, type KubeConfigOptions } from './kubeconfig-path.js';
import type { KubeAuthSource } from './transport.js';

const SERVICE_ACCOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

interface Named<T> {
  name: string;
  [key: string]: unknown;
  value?: T;
}

interface ClusterEntry {
  server?: string;
  'certificate-authority'?: string;
  'certificate-authority-data'?: string;
  'insecure-skip-tls-verify'?: boolean;
  'tls-server-name'?: string;
  'proxy-url'?: string;
}

interface UserEntry {
  token?: string;
  tokenFile?: string;
  'client-certificate'?: string;
  'client-certificate-data'?: string;
  'client-key'?: string;
  'client-key-data'?: string;
  username?: string;
  password?: string;
  exec?: unknown;
  'auth-provider'?: unknown;
}

class LeanKubeConfig implements KubeAuthSource {
  constructor(
    private readonly cluster: { name: string; server: string; proxyUrl?: string },
    private readonly tls: {
      ca?: Buffer;
      cert?: Buffer;
      key?: Buffer;
      insecure: boolean;
      servername?: string;
    },
    private readonly credentials: { token?: string; tokenFile?: string; basic?: string },
  ) {}

  getCurrentCluster() {
    return this.cluster;
  }

  async applyToHTTPSOptions(options: RequestOptions): Promise<void> {
    const { ca, cert, key, insecure, servername } = this.tls;
    Object.assign(options, {
      ...(ca ? { ca } : {}),
      ...(cert ? { cert } : {}),
      ...(key ? { key } : {}),
      ...(servername ? { servername } : {}),
      rejectUnauthorized: !insecure,
    });
    const headers = (options.headers ?? {}) as Record<string, string>;
    const token = this.credentials.tokenFile
      ? readText(this.credentials.tokenFile, 'token file').trim()
      : this.credentials.token;
    if (token) headers.Authorization = `Bearer ${token}`;
    if (this.credentials.basic) options.auth = this.credentials.basic;
    options.headers = headers;
  }
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new KubeConfigError(
      `cannot read the kubeconfig's ${what} ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the path and its permissions`,
    );
  }
}

function readBytes(path: string, what: string): Buffer {
  return Buffer.from(readText(path, what));
}

function byName<T>(list: unknown, field: string, name: string): T | undefined {
  if (!Array.isArray(list)) return undefined;
  const entry = (list as Named<T>[]).find((e) => e?.name === name);
  return entry ? (entry[field] as T) : undefined;
}

/**
 * The API server and credentials of the kubeconfig kubectl would use, or `undefined` when the user
 * authenticates with `exec` / `auth-provider` (the caller then loads client-node's KubeConfig).
 */
export function loadLeanKubeConfig(options: KubeConfigOptions): KubeAuthSource | undefined {
  const source = findKubeconfig(options);
  if ('inCluster' in source) {
    const host = options.env.KUBERNETES_SERVICE_HOST ?? '';
    const server = `https://${host.includes(':') ? `[${host}]` : host}:${options.env.KUBERNETES_SERVICE_PORT}`;
    return new LeanKubeConfig(
      { name: 'inCluster', server },
      { ca: readBytes(join(SERVICE_ACCOUNT, 'ca.crt'), 'CA'), insecure: false },
      { tokenFile: join(SERVICE_ACCOUNT, 'token') },
    );
  }
  const { path } = source;
  let doc: Record<string, unknown>;
  try {
    doc = (parse(readText(path, 'file')) ?? {}) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof KubeConfigError) throw err;
    const reason = ((err as Error).message ?? String(err)).split('\n')[0];
    throw new KubeConfigError(
      `kubeconfig ${path} is not a valid kubeconfig (${reason}); fix the file or pass another with --kubeconfig`,
    );
  }
  const contextName = options.context ?? (doc['current-context'] as string | undefined);
  const context = contextName
    ? byName<{ cluster?: string; user?: string }>(doc.contexts, 'context', contextName)
    : undefined;
  if (options.context && !context) {
    const known = Array.isArray(doc.contexts) ? (doc.contexts as Named<unknown>[]).map((c) => c.name) : [];
    throw new KubeConfigError(
      `context "${options.context}" is not in the kubeconfig; use one of: ${known.join(', ') || '(none)'}`,
    );
  }
  const clusterName = context?.cluster ?? '';
  const cluster = context ? byName<ClusterEntry>(doc.clusters, 'cluster', clusterName) : undefined;
  if (!cluster?.server) {
    throw new KubeConfigError('the kubeconfig has no current context with a cluster; pass --context');
  }
  const user = (context?.user ? byName<UserEntry>(doc.users, 'user', context.user) : undefined) ?? {};
  if (user.exec || user['auth-provider']) return undefined;

  const base = dirname(path);
  const file = (p: string) => (isAbsolute(p) ? p : join(base, p));
  const data = (b64: string | undefined, p: string | undefined, what: string) =>
    b64 ? Buffer.from(b64, 'base64') : p ? readBytes(file(p), what) : undefined;
  return new LeanKubeConfig(
    {
      name: clusterName,
      server: cluster.server,
      ...(cluster['proxy-url'] ? { proxyUrl: cluster['proxy-url'] } : {}),
    },
    {
      ca: data(
        cluster['certificate-authority-data'],
        cluster['certificate-authority'],
        'certificate authority',
      ),
      cert: data(user['client-certificate-data'], user['client-certificate'], 'client certificate'),
      key: data(user['client-key-data'], user['client-key'], 'client key'),
      insecure: cluster['insecure-skip-tls-verify'] === true,
      ...(cluster['tls-server-name'] ? { servername: cluster['tls-server-name'] } : {}),
    },
    {
      ...(user.token ? { token: user.token } : {}),
      ...(user.tokenFile ? { tokenFile: file(user.tokenFile) } : {}),
      ...(user.username && user.password ? { basic: `${user.username}:${user.password}` } : {}),
    },
  );
}

/** The lean reader when it covers the kubeconfig's user, client-node's KubeConfig otherwise. */
export async function loadKubeAuth(options: KubeConfigOptions): Promise<KubeAuthSource> {
  const lean = loadLeanKubeConfig(options);
  if (lean) return lean;
  const { loadKubeConfig } = await import('./config.js');
  return loadKubeConfig(options);
}
