import { readFileSync, statSync } from 'node:fs';
import { nodeChildProcess } from '../node-modules.js';
import { printable } from '../printable.js';
import { KubeConfigError } from './errors.js';
import type { ExecConfig, KubeconfigCluster, KubeconfigUser } from './kubeconfig-file.js';

/**
 * A kubeconfig user's credentials at request time: bearer tokens (inline, from a file that is re-read
 * when it changes, from an exec plugin until it expires), basic auth, client certificates (inline,
 * files re-read when they change, or from an exec plugin) and impersonation headers.
 */
export interface Credential {
  headers: Record<string, string | string[]>;
  /** Client certificate and key (PEM), when the user authenticates with one. */
  cert?: string;
  key?: string;
}

export interface Credentials {
  /** The credential for the next request; cheap while nothing has changed or expired. */
  current(): Promise<Credential>;
  /**
   * The server answered 401 to a request sent with `used`. Fetches a fresh credential where one can
   * be fetched (an exec plugin is run again, files are re-read) — once for all requests that were
   * rejected together — and tells whether the request is worth one retry with `current()`.
   */
  rejected(used: Credential): Promise<boolean>;
}

export interface CredentialOptions {
  userName: string;
  user: KubeconfigUser;
  cluster: KubeconfigCluster & { server: string };
  /** The environment exec plugins inherit. */
  env: Readonly<Record<string, string | undefined>>;
  /** Whether an exec plugin may talk to the person at the terminal. */
  interactive: boolean;
  now?: () => number;
  /** How long an exec plugin may run before it is killed; default 30 s, 5 min when it may prompt. */
  execTimeoutMs?: number;
}

/** A file is checked for changes at most this often (one stat). */
const FILE_RECHECK_MS = 1000;

/** A credential file (token, certificate, key) re-read whenever it changes on disk, e.g. rotated by the kubelet. */
class WatchedFile {
  private text?: string;
  private stamp = '';
  private checkedAt = Number.NEGATIVE_INFINITY;

  constructor(
    readonly path: string,
    private readonly what: string,
    private readonly now: () => number,
  ) {}

  private statStamp(): string | undefined {
    try {
      const st = statSync(this.path);
      return `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return undefined;
    }
  }

  /** Whether the file looks different from what read() last returned (checked at most once a second). */
  changed(): boolean {
    const now = this.now();
    if (now - this.checkedAt < FILE_RECHECK_MS) return false;
    this.checkedAt = now;
    const stamp = this.statStamp();
    // A file briefly missing while it is being replaced keeps the last text.
    return stamp !== undefined && stamp !== this.stamp;
  }

  read(): string {
    const stamp = this.statStamp();
    if (this.text !== undefined && (stamp === undefined || stamp === this.stamp)) return this.text;
    try {
      this.text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if (this.text !== undefined) return this.text;
      throw new KubeConfigError(
        `${this.what} ${this.path} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); fix the kubeconfig or the file`,
      );
    }
    this.stamp = stamp ?? '';
    this.checkedAt = this.now();
    return this.text;
  }

  forget(): void {
    this.stamp = '';
    this.checkedAt = Number.NEGATIVE_INFINITY;
  }
}

interface ExecResult {
  token?: string;
  cert?: string;
  key?: string;
  expiresAt: number;
}

const EXEC_API_VERSIONS = ['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1'];

function lastLine(text: string): string {
  const lines = printable(text)
    .split('\n')
    .filter((l) => l.trim() !== '');
  return (lines[lines.length - 1] ?? '').trim().slice(0, 300);
}

/** Plain exec plugins get no chance to prompt; one that may ask the person at the terminal gets longer. */
const EXEC_TIMEOUT_MS = 30_000;
const INTERACTIVE_EXEC_TIMEOUT_MS = 5 * 60_000;

/**
 * The environment a plugin inherits, without the variables that carry a cloud credential of ccm's
 * (the secret fields of every provider's credential schema, e.g. DO_ACCESS_TOKEN): a plugin is
 * someone else's program. The kubeconfig's own `env` entries are added after, so a plugin that needs
 * one is given it there, explicitly.
 */
async function pluginEnvironment(
  env: Readonly<Record<string, string | undefined>>,
): Promise<Record<string, string | undefined>> {
  const { credentialEnvNames } = await import('../providers/registry.js');
  const hidden = new Set(await credentialEnvNames());
  return Object.fromEntries(Object.entries(env).filter(([name]) => !hidden.has(name)));
}

/** Runs an exec credential plugin once (client.authentication.k8s.io, v1 or v1beta1). */
async function runExecPlugin(exec: ExecConfig, options: CredentialOptions): Promise<ExecResult> {
  const apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1';
  const plugin = `exec credential plugin "${printable(exec.command)}" of user ${printable(options.userName)}`;
  if (!EXEC_API_VERSIONS.includes(apiVersion)) {
    throw new KubeConfigError(
      `the ${plugin} uses apiVersion ${apiVersion}; use one of ${EXEC_API_VERSIONS.join(', ')}`,
    );
  }
  const mode = exec.interactiveMode ?? 'IfAvailable';
  const interactive = mode !== 'Never' && options.interactive;
  if (mode === 'Always' && !interactive) {
    throw new KubeConfigError(
      `the ${plugin} needs a terminal (interactiveMode: Always); run ccm in one or use a non-interactive credential`,
    );
  }
  const { cluster } = options;
  const info = {
    apiVersion,
    kind: 'ExecCredential',
    spec: {
      interactive,
      ...(exec.provideClusterInfo
        ? {
            cluster: {
              server: cluster.server,
              ...(cluster.tlsServerName ? { 'tls-server-name': cluster.tlsServerName } : {}),
              ...(cluster.insecureSkipTlsVerify ? { 'insecure-skip-tls-verify': true } : {}),
              ...(cluster.certificateAuthorityData
                ? { 'certificate-authority-data': cluster.certificateAuthorityData }
                : cluster.certificateAuthority
                  ? {
                      'certificate-authority-data': readFileSync(cluster.certificateAuthority).toString(
                        'base64',
                      ),
                    }
                  : {}),
              ...(cluster.execExtension === undefined ? {} : { config: cluster.execExtension }),
            },
          }
        : {}),
    },
  };
  const env = await pluginEnvironment(options.env);
  for (const { name, value } of exec.env) env[name] = value;
  env.KUBERNETES_EXEC_INFO = JSON.stringify(info);
  const timeoutMs = options.execTimeoutMs ?? (interactive ? INTERACTIVE_EXEC_TIMEOUT_MS : EXEC_TIMEOUT_MS);

  const { code, stdout, stderr, error, timedOut } = await new Promise<{
    code: number | null;
    stdout: string;
    stderr: string;
    error?: NodeJS.ErrnoException;
    timedOut?: boolean;
  }>((resolve) => {
    const child = nodeChildProcess().spawn(exec.command, exec.args, {
      env,
      stdio: [interactive ? 'inherit' : 'ignore', 'pipe', interactive ? 'inherit' : 'pipe'],
      // Its own process group, so a timeout also ends what it started; one that may prompt stays in
      // the terminal's foreground group, where it can read the keyboard.
      detached: !interactive,
    });
    let out = '';
    let err = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        if (!interactive && child.pid) process.kill(-child.pid, 'SIGKILL');
        else child.kill('SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    }, timeoutMs);
    child.stdout?.setEncoding('utf8').on('data', (c: string) => {
      out += c;
    });
    child.stderr?.setEncoding('utf8').on('data', (c: string) => {
      err += c;
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: null, stdout: out, stderr: err, error: e });
    });
    child.on('close', (c) => {
      clearTimeout(timer);
      resolve({ code: c, stdout: out, stderr: err, timedOut });
    });
  });
  if (error) {
    const hint = exec.installHint ? `: ${lastLine(exec.installHint)}` : '; install it or fix the kubeconfig';
    throw new KubeConfigError(`the ${plugin} could not be started (${error.code ?? error.message})${hint}`);
  }
  if (timedOut) {
    throw new KubeConfigError(
      `the ${plugin} did not finish within ${timeoutMs / 1000} s and was stopped; run it by hand to see what it waits for`,
    );
  }
  if (code !== 0) {
    const why = lastLine(stderr);
    throw new KubeConfigError(`the ${plugin} exited with status ${code}${why ? `: ${why}` : ''}`);
  }
  return parseExecCredential(stdout, apiVersion, plugin);
}

function parseExecCredential(stdout: string, apiVersion: string, plugin: string): ExecResult {
  let obj: {
    apiVersion?: unknown;
    kind?: unknown;
    status?: {
      token?: unknown;
      clientCertificateData?: unknown;
      clientKeyData?: unknown;
      expirationTimestamp?: unknown;
    };
  };
  try {
    obj = JSON.parse(stdout);
  } catch {
    throw new KubeConfigError(`the ${plugin} did not print an ExecCredential (its output is not JSON)`);
  }
  if (obj?.kind !== 'ExecCredential' || obj.apiVersion !== apiVersion) {
    throw new KubeConfigError(
      `the ${plugin} printed kind ${String(obj?.kind)} ${String(obj?.apiVersion)}; expected an ExecCredential of ${apiVersion}`,
    );
  }
  const status = obj.status ?? {};
  const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  const token = str(status.token);
  const cert = str(status.clientCertificateData);
  const key = str(status.clientKeyData);
  if (Boolean(cert) !== Boolean(key)) {
    throw new KubeConfigError(
      `the ${plugin} printed only one of clientCertificateData and clientKeyData; it must print both`,
    );
  }
  if (!token && !cert) {
    throw new KubeConfigError(`the ${plugin} printed neither a token nor a client certificate`);
  }
  let expiresAt = Number.POSITIVE_INFINITY;
  if (status.expirationTimestamp !== undefined) {
    expiresAt = Date.parse(String(status.expirationTimestamp));
    if (Number.isNaN(expiresAt)) {
      throw new KubeConfigError(
        `the ${plugin} printed expirationTimestamp "${String(status.expirationTimestamp)}", which is not an RFC 3339 time`,
      );
    }
  }
  return { token, cert, key, expiresAt };
}

/** The id-token of client-go's oidc auth-provider, while it is valid (ccm does not run the refresh flow). */
function oidcToken(
  provider: { name: string; config: Record<string, string> },
  userName: string,
  now: number,
) {
  if (provider.name !== 'oidc') {
    throw new KubeConfigError(
      `user ${userName} uses auth-provider "${provider.name}", which ccm does not support (kubectl removed it too); use an exec credential plugin`,
    );
  }
  const token = provider.config['id-token'];
  const payload = token?.split('.')[1];
  let exp: unknown;
  try {
    exp = payload ? JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')).exp : undefined;
  } catch {
    exp = undefined;
  }
  if (!token || typeof exp !== 'number' || exp * 1000 <= now) {
    throw new KubeConfigError(
      `user ${userName}'s oidc id-token is missing or expired and ccm does not refresh it; use an exec credential plugin such as kubelogin`,
    );
  }
  return token;
}

function decode(data: string | undefined): string | undefined {
  return data === undefined ? undefined : Buffer.from(data, 'base64').toString('utf8');
}

function differs(a: Credential, b: Credential): boolean {
  return a.headers.authorization !== b.headers.authorization || a.cert !== b.cert || a.key !== b.key;
}

class KubeCredentials implements Credentials {
  private cached?: Credential;
  private inflight?: Promise<Credential>;
  private exec?: ExecResult;
  private readonly files: {
    token?: WatchedFile;
    cert?: WatchedFile;
    key?: WatchedFile;
  };
  private readonly now: () => number;

  constructor(private readonly options: CredentialOptions) {
    this.now = options.now ?? Date.now;
    const { user, userName } = options;
    const file = (path: string | undefined, what: string) =>
      path ? new WatchedFile(path, `user ${userName}'s ${what}`, this.now) : undefined;
    this.files = {
      token: file(user.tokenFile, 'tokenFile'),
      cert: user.clientCertificateData ? undefined : file(user.clientCertificate, 'client-certificate'),
      key: user.clientKeyData ? undefined : file(user.clientKey, 'client-key'),
    };
  }

  /** Reads the files and inline data now, so a broken kubeconfig fails before any request. */
  check(): void {
    for (const f of Object.values(this.files)) f?.read();
    if (this.options.user.authProvider && !this.options.user.exec) {
      oidcToken(this.options.user.authProvider, this.options.userName, this.now());
    }
  }

  private stale(): boolean {
    if (this.exec && this.now() >= this.exec.expiresAt) return true;
    let changed = false;
    for (const f of Object.values(this.files)) if (f?.changed()) changed = true;
    return changed;
  }

  current(): Promise<Credential> {
    if (this.inflight) return this.inflight;
    if (this.cached && !this.stale()) return Promise.resolve(this.cached);
    return this.refresh();
  }

  private refresh(): Promise<Credential> {
    this.inflight ??= this.build()
      .then((credential) => {
        this.cached = credential;
        return credential;
      })
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
  }

  async rejected(used: Credential): Promise<boolean> {
    if (this.inflight) await this.inflight;
    // Someone else's rejection already brought a new credential.
    if (this.cached && this.cached !== used) return differs(this.cached, used);
    if (!this.options.user.exec && !this.files.token && !this.files.cert) return false;
    // Rejected although not expired (revoked, rotated early): ask the plugin again, re-read the files.
    this.exec = undefined;
    for (const f of Object.values(this.files)) f?.forget();
    return differs(await this.refresh(), used);
  }

  private async build(): Promise<Credential> {
    const { user } = this.options;
    const headers: Credential['headers'] = {};
    let cert = this.files.cert?.read() ?? decode(user.clientCertificateData);
    let key = this.files.key?.read() ?? decode(user.clientKeyData);
    // As in client-go and client-node, a static token wins over an exec plugin's token.
    let token = this.files.token?.read().trim() || user.token;
    if (user.exec) {
      if (!this.exec || this.now() >= this.exec.expiresAt)
        this.exec = await runExecPlugin(user.exec, this.options);
      token ||= this.exec.token;
      if (this.exec.cert) {
        cert = this.exec.cert;
        key = this.exec.key;
      }
    } else if (user.authProvider) {
      token ||= oidcToken(user.authProvider, this.options.userName, this.now());
    }
    if (token) headers.authorization = `Bearer ${token}`;
    else if (user.username || user.password) {
      headers.authorization = `Basic ${Buffer.from(`${user.username ?? ''}:${user.password ?? ''}`).toString('base64')}`;
    }
    const as = user.impersonate;
    if (as?.user) headers['impersonate-user'] = as.user;
    if (as?.uid) headers['impersonate-uid'] = as.uid;
    if (as?.groups.length) headers['impersonate-group'] = as.groups;
    for (const [k, v] of Object.entries(as?.extra ?? {}))
      headers[`impersonate-extra-${encodeURIComponent(k)}`] = v;
    return { headers, ...(cert ? { cert } : {}), ...(key ? { key } : {}) };
  }
}

export function createCredentials(options: CredentialOptions): Credentials {
  const credentials = new KubeCredentials(options);
  credentials.check();
  return credentials;
}
