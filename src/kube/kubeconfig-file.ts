import { dirname, isAbsolute, join, sep } from 'node:path';
import { load } from 'js-yaml';

/**
 * The kubeconfig file format (clientcmd's v1 Config), read with js-yaml: the fields ccm acts on, file
 * paths made absolute against the file's folder as kubectl does, and several files merged the way
 * kubectl merges KUBECONFIG. client-node's own loader pulls in its whole generated API (~90 MB).
 */

export interface KubeconfigCluster {
  server?: string;
  certificateAuthority?: string;
  certificateAuthorityData?: string;
  insecureSkipTlsVerify?: boolean;
  tlsServerName?: string;
  proxyUrl?: string;
  /** extensions[name = client.authentication.k8s.io/exec].extension, handed to exec plugins. */
  execExtension?: unknown;
}

export interface ExecConfig {
  apiVersion?: string;
  command: string;
  args: string[];
  env: { name: string; value: string }[];
  installHint?: string;
  provideClusterInfo: boolean;
  interactiveMode?: string;
}

export interface KubeconfigUser {
  token?: string;
  tokenFile?: string;
  clientCertificate?: string;
  clientCertificateData?: string;
  clientKey?: string;
  clientKeyData?: string;
  username?: string;
  password?: string;
  exec?: ExecConfig;
  authProvider?: { name: string; config: Record<string, string> };
  impersonate?: { user?: string; uid?: string; groups: string[]; extra: Record<string, string[]> };
}

export interface KubeconfigContext {
  cluster?: string;
  user?: string;
  namespace?: string;
}

export interface Kubeconfig {
  clusters: Map<string, KubeconfigCluster>;
  users: Map<string, KubeconfigUser>;
  contexts: Map<string, KubeconfigContext>;
  currentContext?: string;
}

/** A problem with the file's content, phrased for "kubeconfig <path> is not a valid kubeconfig (…)". */
export class KubeconfigFormatError extends Error {}

type Obj = Record<string, unknown>;

function isObj(value: unknown): value is Obj {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

class Reader {
  constructor(
    private readonly obj: Obj,
    private readonly where: string,
  ) {}

  string(key: string): string | undefined {
    const value = this.obj[key];
    if (value === undefined || value === null || value === '') return undefined;
    if (typeof value !== 'string') throw new KubeconfigFormatError(`${this.where}.${key} must be a string`);
    return value;
  }

  boolean(key: string): boolean | undefined {
    const value = this.obj[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean')
      throw new KubeconfigFormatError(`${this.where}.${key} must be true or false`);
    return value;
  }

  strings(key: string): string[] {
    const value = this.obj[key];
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
      throw new KubeconfigFormatError(`${this.where}.${key} must be a list of strings`);
    return value as string[];
  }

  object(key: string): Reader | undefined {
    const value = this.obj[key];
    if (value === undefined || value === null) return undefined;
    if (!isObj(value)) throw new KubeconfigFormatError(`${this.where}.${key} must be a mapping`);
    return new Reader(value, `${this.where}.${key}`);
  }

  list(key: string): Reader[] {
    const value = this.obj[key];
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) throw new KubeconfigFormatError(`${this.where}.${key} must be a list`);
    return value.map((item, i) => {
      if (!isObj(item)) throw new KubeconfigFormatError(`${this.where}.${key}[${i}] must be a mapping`);
      return new Reader(item, `${this.where}.${key}[${i}]`);
    });
  }

  raw(key: string): unknown {
    return this.obj[key];
  }
}

/** Named entries (clusters, users, contexts): the first entry of a name wins, as in kubectl. */
function named<T>(root: Reader, listKey: string, itemKey: string, read: (r: Reader) => T): Map<string, T> {
  const map = new Map<string, T>();
  for (const entry of root.list(listKey)) {
    const name = entry.string('name');
    if (!name) throw new KubeconfigFormatError(`an entry of ${listKey} has no name`);
    const body = entry.object(itemKey) ?? new Reader({}, `${listKey}.${name}.${itemKey}`);
    if (!map.has(name)) map.set(name, read(body));
  }
  return map;
}

function resolvePath(base: string, path: string | undefined): string | undefined {
  return path === undefined || isAbsolute(path) ? path : join(base, path);
}

function readExec(r: Reader, base: string): ExecConfig {
  const command = r.string('command');
  if (!command) throw new KubeconfigFormatError('a user exec section has no command');
  return {
    apiVersion: r.string('apiVersion'),
    // kubectl resolves the command against the file's folder only when it names a path, not a $PATH lookup.
    command: command.includes(sep) ? (resolvePath(base, command) as string) : command,
    args: r.strings('args'),
    env: r.list('env').map((e) => ({ name: e.string('name') ?? '', value: e.string('value') ?? '' })),
    installHint: r.string('installHint'),
    provideClusterInfo: r.boolean('provideClusterInfo') ?? false,
    interactiveMode: r.string('interactiveMode'),
  };
}

function readUser(r: Reader, base: string): KubeconfigUser {
  const user: KubeconfigUser = {
    token: r.string('token'),
    tokenFile: resolvePath(base, r.string('tokenFile')),
    clientCertificate: resolvePath(base, r.string('client-certificate')),
    clientCertificateData: r.string('client-certificate-data'),
    clientKey: resolvePath(base, r.string('client-key')),
    clientKeyData: r.string('client-key-data'),
    username: r.string('username'),
    password: r.string('password'),
  };
  const exec = r.object('exec');
  if (exec) user.exec = readExec(exec, base);
  const provider = r.object('auth-provider');
  if (provider) {
    const config: Record<string, string> = {};
    const raw = provider.raw('config');
    if (isObj(raw)) for (const [k, v] of Object.entries(raw)) if (typeof v === 'string') config[k] = v;
    user.authProvider = { name: provider.string('name') ?? '', config };
  }
  const extra: Record<string, string[]> = {};
  const rawExtra = r.raw('as-user-extra');
  if (isObj(rawExtra)) {
    for (const [key, values] of Object.entries(rawExtra)) {
      if (Array.isArray(values)) extra[key] = values.map(String);
    }
  }
  const impersonate = {
    user: r.string('as'),
    uid: r.string('as-uid'),
    groups: r.strings('as-groups'),
    extra,
  };
  if (impersonate.user || impersonate.uid || impersonate.groups.length || Object.keys(extra).length) {
    user.impersonate = impersonate;
  }
  return user;
}

function readCluster(r: Reader, base: string): KubeconfigCluster {
  const execExtension = r
    .list('extensions')
    .find((e) => e.string('name') === 'client.authentication.k8s.io/exec')
    ?.raw('extension');
  return {
    server: r.string('server'),
    certificateAuthority: resolvePath(base, r.string('certificate-authority')),
    certificateAuthorityData: r.string('certificate-authority-data'),
    insecureSkipTlsVerify: r.boolean('insecure-skip-tls-verify'),
    tlsServerName: r.string('tls-server-name'),
    proxyUrl: r.string('proxy-url'),
    ...(execExtension === undefined ? {} : { execExtension }),
  };
}

/** Parses one kubeconfig file's text; relative paths are taken relative to `path`'s folder. */
export function parseKubeconfig(text: string, path: string): Kubeconfig {
  let doc: unknown;
  try {
    // kubectl takes an empty file (or one of comments only) as an empty kubeconfig.
    doc = /^(\s*(#.*)?\n?)*$/.test(text) ? {} : load(text);
  } catch (err) {
    throw new KubeconfigFormatError(((err as Error).message ?? String(err)).split('\n')[0] as string);
  }
  if (doc === null || doc === undefined) doc = {};
  if (!isObj(doc)) throw new KubeconfigFormatError('the file is not a YAML mapping');
  const root = new Reader(doc, 'kubeconfig');
  const base = dirname(path);
  return {
    clusters: named(root, 'clusters', 'cluster', (r) => readCluster(r, base)),
    users: named(root, 'users', 'user', (r) => readUser(r, base)),
    contexts: named(root, 'contexts', 'context', (r) => ({
      cluster: r.string('cluster'),
      user: r.string('user'),
      namespace: r.string('namespace'),
    })),
    currentContext: root.string('current-context'),
  };
}

/**
 * kubectl's merge of the files in KUBECONFIG: for each cluster, user and context name the first file
 * that defines it wins (entries are never merged field by field), and current-context comes from the
 * first file that sets it.
 */
export function mergeKubeconfigs(files: readonly Kubeconfig[]): Kubeconfig {
  const merged: Kubeconfig = { clusters: new Map(), users: new Map(), contexts: new Map() };
  for (const file of files) {
    for (const key of ['clusters', 'users', 'contexts'] as const) {
      const into = merged[key] as Map<string, unknown>;
      for (const [name, value] of file[key]) if (!into.has(name)) into.set(name, value);
    }
    merged.currentContext ??= file.currentContext;
  }
  return merged;
}
