import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';
import { isatty } from 'node:tty';
import { encryptedOrLocal } from '../plain-http.js';
import { kubeconfigProxy, ProxyConfigError, type ProxySetting, proxyFromEnvironment } from '../proxy.js';
import { warnOnce } from '../warn-once.js';
import { type Credentials, createCredentials } from './credentials.js';
import { KubeConfigError } from './errors.js';
import {
  type Kubeconfig,
  type KubeconfigCluster,
  KubeconfigFormatError,
  type KubeconfigUser,
  mergeKubeconfigs,
  parseKubeconfig,
} from './kubeconfig-file.js';

export interface KubeConfigOptions {
  /** --kubeconfig; falls back to KUBECONFIG, ~/.kube/config, then the in-cluster service account. */
  kubeconfig?: string;
  context?: string;
  /** Environment, passed in so callers (and tests) decide what is read. */
  env: Readonly<Record<string, string | undefined>>;
  /** Where the in-cluster service account's token and ca.crt are; tests point it elsewhere. */
  serviceAccountDir?: string;
  /** Whether exec plugins may prompt; default: stdin is a terminal. */
  interactive?: boolean;
  now?: () => number;
}

/** Everything needed to talk to one API server as one user: the kubeconfig's chosen context, resolved. */
export interface ClusterAccess {
  server: string;
  /** The context's name ("in-cluster" for the service account). */
  context: string;
  /** The kubeconfig user the context names ("service account" in a Pod). */
  user: string;
  tls: { ca?: Buffer; rejectUnauthorized: boolean; servername?: string };
  credentials: Credentials;
  /** Why the API server's certificate is not checked, when it is not. */
  insecure?: string;
  /** The server is the `kubernetes` Service of a Pod's environment, not a kubeconfig's. */
  inCluster?: boolean;
  /** The proxy the API server is reached through (`apiServerProxy`). */
  proxy?: ProxySetting;
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

function readable(path: string): boolean {
  try {
    accessSync(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

function load(path: string): Kubeconfig {
  try {
    return parseKubeconfig(readFileSync(path, 'utf8'), path);
  } catch (err) {
    const reason = err instanceof KubeconfigFormatError ? err.message : (err as Error).message.split('\n')[0];
    throw new KubeConfigError(
      `kubeconfig ${path} is not a valid kubeconfig (${reason}); fix the file or pass another with --kubeconfig`,
    );
  }
}

/** The kubeconfig files kubectl would read, merged; undefined when none applies (try in-cluster). */
function loadFiles({ kubeconfig, env }: KubeConfigOptions): Kubeconfig | undefined {
  if (kubeconfig) {
    if (!existsSync(kubeconfig))
      throw new KubeConfigError(
        `kubeconfig ${kubeconfig} does not exist; pass an existing file to --kubeconfig`,
      );
    if (!readable(kubeconfig))
      throw new KubeConfigError(`kubeconfig ${kubeconfig} is not readable; check its permissions`);
    return load(kubeconfig);
  }
  const fromEnv = env.KUBECONFIG?.split(delimiter).filter(Boolean) ?? [];
  if (fromEnv.length > 0) {
    // As kubectl: files that do not exist are skipped, every other one is merged in order.
    const present = fromEnv.filter((p) => existsSync(p));
    if (present.length === 0) {
      throw new KubeConfigError(
        `KUBECONFIG names ${fromEnv.join(', ')}, which cannot be read; fix KUBECONFIG or pass --kubeconfig`,
      );
    }
    const unreadable = present.find((p) => !readable(p));
    if (unreadable)
      throw new KubeConfigError(
        `kubeconfig ${unreadable} (from KUBECONFIG) is not readable; check its permissions`,
      );
    return mergeKubeconfigs(present.map(load));
  }
  const defaultPath = join(env.HOME ?? homedir(), '.kube', 'config');
  return readable(defaultPath) ? load(defaultPath) : undefined;
}

function inCluster(options: KubeConfigOptions): { cluster: KubeconfigCluster; user: KubeconfigUser } {
  const { KUBERNETES_SERVICE_HOST: host, KUBERNETES_SERVICE_PORT: port } = options.env;
  const dir = options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR;
  const server = `https://${host && isIPv6(host) ? `[${host}]` : host}:${port}`;
  for (const file of ['token', 'ca.crt']) {
    if (!readable(join(dir, file))) {
      throw new KubeConfigError(
        `running in a cluster but ${join(dir, file)} cannot be read; mount the service account token (automountServiceAccountToken) or pass --kubeconfig`,
      );
    }
  }
  return {
    cluster: { server, certificateAuthority: join(dir, 'ca.crt') },
    user: { tokenFile: join(dir, 'token') },
  };
}

function readCA(cluster: KubeconfigCluster, name: string): Buffer | undefined {
  if (cluster.certificateAuthority) {
    try {
      return readFileSync(cluster.certificateAuthority);
    } catch (err) {
      throw new KubeConfigError(
        `cluster ${name}'s certificate-authority ${cluster.certificateAuthority} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); fix the kubeconfig`,
      );
    }
  }
  return cluster.certificateAuthorityData
    ? Buffer.from(cluster.certificateAuthorityData, 'base64')
    : undefined;
}

/** Loads the kubeconfig the way kubectl does, failing with one actionable line. */
export function loadKubeConfig(options: KubeConfigOptions): ClusterAccess {
  const { context, env } = options;
  const files = loadFiles(options);
  let contextName: string;
  let clusterName: string;
  let userName: string;
  let cluster: KubeconfigCluster | undefined;
  let user: KubeconfigUser;
  let inClusterAccess = false;
  if (files) {
    if (context && !files.contexts.has(context)) {
      const known = [...files.contexts.keys()];
      throw new KubeConfigError(
        `context "${context}" is not in the kubeconfig; use one of: ${known.join(', ') || '(none)'}`,
      );
    }
    contextName = context ?? files.currentContext ?? '';
    const ctx = files.contexts.get(contextName);
    clusterName = ctx?.cluster ?? '';
    cluster = files.clusters.get(clusterName);
    if (!ctx || !cluster) {
      throw new KubeConfigError('the kubeconfig has no current context with a cluster; pass --context');
    }
    userName = ctx.user ?? '';
    // A context without a (known) user talks to the server anonymously, as with kubectl.
    user = files.users.get(userName) ?? {};
  } else if (env.KUBERNETES_SERVICE_HOST && env.KUBERNETES_SERVICE_PORT) {
    ({ cluster, user } = inCluster(options));
    contextName = 'in-cluster';
    clusterName = 'in-cluster';
    userName = 'service account';
    inClusterAccess = true;
  } else {
    throw new KubeConfigError(
      'no kubeconfig found; pass --kubeconfig, set KUBECONFIG, or run inside a cluster',
    );
  }

  const { server } = cluster;
  if (!server) {
    throw new KubeConfigError(`the kubeconfig's cluster ${clusterName} has no server; fix the kubeconfig`);
  }
  if (!URL.canParse(server) || !/^https?:$/.test(new URL(server).protocol)) {
    throw new KubeConfigError(
      `the kubeconfig's cluster ${clusterName} has server "${server}", which is not an http(s) URL; fix the kubeconfig`,
    );
  }
  if (!encryptedOrLocal(new URL(server))) {
    throw new KubeConfigError(
      `the kubeconfig's cluster ${clusterName} has server ${server}: plain http to another machine would carry the credentials unencrypted; use its https URL`,
    );
  }
  // client-go refuses it too (transport/transport.go: "specifying a root certificates file
  // with the insecure flag is not allowed"): a CA nobody checks against is a false sense of safety.
  if (
    cluster.insecureSkipTlsVerify === true &&
    (cluster.certificateAuthority || cluster.certificateAuthorityData)
  ) {
    throw new KubeConfigError(
      `the kubeconfig's cluster ${clusterName} sets both a certificate authority and insecure-skip-tls-verify, which kubectl refuses; remove insecure-skip-tls-verify`,
    );
  }
  const proxy = apiServerProxy(cluster, clusterName, inClusterAccess, env);
  const tls = {
    ca: readCA(cluster, clusterName),
    rejectUnauthorized: cluster.insecureSkipTlsVerify !== true,
    ...(cluster.tlsServerName ? { servername: cluster.tlsServerName } : {}),
  };
  const credentials = createCredentials({
    userName,
    user,
    cluster: { ...cluster, server },
    env,
    interactive: options.interactive ?? isatty(0),
    now: options.now,
  });
  const insecure =
    server.startsWith('https:') && !tls.rejectUnauthorized
      ? `cluster ${clusterName} sets insecure-skip-tls-verify`
      : env.NODE_TLS_REJECT_UNAUTHORIZED === '0'
        ? 'NODE_TLS_REJECT_UNAUTHORIZED=0 is set'
        : undefined;
  if (insecure)
    warnOnce(
      `TLS certificates are not verified (${insecure}): anyone between here and the servers can read and change what is sent, credentials included`,
    );
  return {
    server,
    context: contextName,
    user: userName,
    tls,
    credentials,
    ...(insecure ? { insecure } : {}),
    ...(inClusterAccess ? { inCluster: true } : {}),
    ...(proxy ? { proxy } : {}),
  };
}

/**
 * The proxy to the API server, as client-go chooses it: the cluster's `proxy-url` when the kubeconfig
 * sets one (client-go tools/clientcmd/client_config.go: then for every request, NO_PROXY aside), else
 * the environment's rule (src/proxy.ts; client-go transport/cache.go falls back to Go's
 * http.ProxyFromEnvironment). In a Pod the API server is the `kubernetes` Service, which a proxy
 * outside the cluster cannot reach: the environment's proxy, set for the cloud, is never used for it
 * (client-go would use it unless NO_PROXY named the Service's address); there is no proxy-url to ask
 * for one.
 */
function apiServerProxy(
  cluster: KubeconfigCluster,
  clusterName: string,
  inClusterAccess: boolean,
  env: KubeConfigOptions['env'],
): ProxySetting | undefined {
  if (inClusterAccess) return undefined;
  const server = new URL(cluster.server as string);
  try {
    const proxy = cluster.proxyUrl
      ? kubeconfigProxy(cluster.proxyUrl, clusterName)
      : proxyFromEnvironment(env)(server);
    // The proxy would read the credentials of a plain http request (an absolute-form request, no
    // tunnel): such a server is taken only on this machine, and then never through a proxy.
    if (proxy && server.protocol === 'http:') {
      throw new ProxyConfigError(
        `the kubeconfig's cluster ${clusterName} has the plain http server ${cluster.server} and the proxy ${proxy.shown} (${proxy.source}): the proxy would read the credentials; use the server's https URL or no proxy`,
      );
    }
    return proxy;
  } catch (err) {
    if (err instanceof ProxyConfigError) throw new KubeConfigError(err.message);
    throw err;
  }
}
