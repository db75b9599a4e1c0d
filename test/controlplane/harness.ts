/**
 * Starts a real etcd + kube-apiserver (built by build.sh) on free loopback ports, with RBAC on, two
 * generated static-token identities and an audit log of every write, and stops all of it again.
 *
 * Identities in the kubeconfig it writes:
 *   context `ccm`      → user `ccm-operator` (system:masters): what the CLI under test runs as
 *   context `fixtures` → user `fixture-admin` (system:masters): what tests use to arrange objects
 * More static-token users on request (StartOptions.tokenUsers), and client certificates from a test
 * client CA the server trusts (ControlPlane.issueClientCert).
 * Write counts come from the server's own audit log, filtered by user, not from the client.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const K8S_VERSION = process.env.CCM_K8S_VERSION ?? '1.36.3';
const here = fileURLToPath(new URL('.', import.meta.url));

export function binDir(): string {
  const cache =
    process.env.CCM_CONTROLPLANE_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'ccm-controlplane');
  return join(cache, `v${K8S_VERSION}`);
}

export interface AuditEvent {
  verb: string;
  user: { username: string };
  objectRef?: { resource?: string; subresource?: string; name?: string; namespace?: string };
  responseStatus?: { code?: number };
  requestURI: string;
  userAgent?: string;
  /** When the API server received the request (RFC 3339, microseconds). */
  requestReceivedTimestamp?: string;
  /** The request's body, where the policy logs it (StartOptions.auditLeaseBodies). */
  requestObject?: unknown;
}

export interface ControlPlane {
  server: string;
  kubeconfigPath: string;
  /** Bearer token of the `fixture-admin` identity (for raw requests in tests). */
  adminToken: string;
  caData: string;
  /** The port kube-apiserver listens on (127.0.0.1). */
  port: number;
  dir: string;
  /** Bearer tokens of the StartOptions.tokenUsers, by user name (each in system:masters). */
  tokens: Record<string, string>;
  /** A client certificate and key (PEM) for `user` in `groups`, signed by the server's client CA. */
  issueClientCert(user: string, groups?: string[]): { cert: string; key: string };
  /** Every audited write (create/update/patch/delete) so far, optionally by one user. */
  writes(user?: string): Promise<AuditEvent[]>;
  /** Every request of a ServiceAccount so far (reads included), optionally by one user. */
  requests(user?: string): Promise<AuditEvent[]>;
  /** Kills kube-apiserver and etcd (SIGKILL), keeping etcd's data. */
  pause(): Promise<void>;
  /** Starts them again on the same ports with the same data, and waits for /readyz. */
  resume(): Promise<void>;
  stop(): Promise<void>;
}

export const CCM_USER = 'ccm-operator';
export const FIXTURE_USER = 'fixture-admin';

/** A port free on 127.0.0.1 right now (the kernel's pick). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** A control plane binary under the watchdog (gone with this process); `logTail` holds its stderr's end. */
export function startProcess(name: string, bin: string, args: string[], logFile: string): ChildProcess {
  const child = spawn('bash', [join(here, 'watchdog.sh'), String(process.pid), bin, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const chunks: Buffer[] = [];
  child.stderr?.on('data', (c: Buffer) => {
    chunks.push(c);
    if (chunks.length > 400) chunks.splice(0, 200);
  });
  child.on('exit', () => writeFileSync(logFile, Buffer.concat(chunks)));
  Object.defineProperty(child, 'logTail', { get: () => Buffer.concat(chunks).toString().slice(-3000) });
  child.unref();
  void name;
  return child;
}

function get(url: string, token: string, ca: string | undefined): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        headers: { authorization: `Bearer ${token}` },
        ca,
        rejectUnauthorized: ca !== undefined,
        timeout: 2000,
      },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * SIGKILL to the binary the watchdog runs (its child), then to the watchdog itself, which would
 * otherwise notice only at its next one-second poll; returns once the binary is dead (gone or a
 * zombie), so that its ports and data directory are free for resume().
 */
export async function killHard(watchdog: ChildProcess): Promise<void> {
  if (watchdog.exitCode !== null || watchdog.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => watchdog.once('exit', () => resolve()));
  const killed: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === watchdog.pid) {
        process.kill(Number(entry), 'SIGKILL');
        killed.push(Number(entry));
      }
    } catch {
      // the process went away meanwhile
    }
  }
  watchdog.kill('SIGKILL');
  await exited;
  const dead = (pid: number) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
    } catch {
      return true;
    }
  };
  for (const deadline = Date.now() + 10_000; !killed.every(dead) && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 20));
  }
}

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
  # Every request of a ServiceAccount, reads included: RBAC tests look for any 403.
  - level: Metadata
    userGroups: ["system:serviceaccounts"]
  - level: None
`;
const WRITE_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

export interface StartOptions {
  /** Extra kube-apiserver flags, e.g. to try an argument list produced by `cluster prepare`. */
  extraArgs?: string[];
  /** More static-token identities, each in system:masters; their tokens are in ControlPlane.tokens. */
  tokenUsers?: string[];
  /**
   * Audit the request bodies of Lease writes too (level Request), so that a test can read who each
   * write named as holder (the chaos run's leader timeline).
   */
  auditLeaseBodies?: boolean;
}

/** The audit rule that logs Lease writes with their bodies, ahead of the policy's other rules. */
const LEASE_BODIES_RULE = `  - level: Request
    verbs: ["create", "update", "patch"]
    resources: [{ group: "coordination.k8s.io", resources: ["leases"] }]
`;

/** `openssl req` options for a new unencrypted EC P-256 key. */
const NEW_EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A throwaway client CA (EC P-256, one day) made with the openssl CLI. */
function makeClientCA(dir: string): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      ...NEW_EC_KEY,
      '-keyout',
      join(dir, 'client-ca.key'),
      '-out',
      join(dir, 'client-ca.crt'),
      '-days',
      '1',
      '-subj',
      '/CN=ccm-test-client-ca',
    ],
    { stdio: 'ignore' },
  );
}

function issueClientCert(dir: string, user: string, groups: string[]): { cert: string; key: string } {
  const base = join(dir, `client-${randomBytes(6).toString('hex')}`);
  const subject = `${groups.map((g) => `/O=${g}`).join('')}/CN=${user}`;
  execFileSync(
    'openssl',
    ['req', '-new', ...NEW_EC_KEY, '-keyout', `${base}.key`, '-out', `${base}.csr`, '-subj', subject],
    { stdio: 'ignore' },
  );
  writeFileSync(`${base}.ext`, 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n');
  execFileSync(
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      join(dir, 'client-ca.crt'),
      '-CAkey',
      join(dir, 'client-ca.key'),
      '-CAcreateserial',
      '-days',
      '1',
      '-extfile',
      `${base}.ext`,
      '-out',
      `${base}.crt`,
    ],
    { stdio: 'ignore' },
  );
  const pair = { cert: readFileSync(`${base}.crt`, 'utf8'), key: readFileSync(`${base}.key`, 'utf8') };
  for (const ext of ['key', 'csr', 'ext', 'crt']) rmSync(`${base}.${ext}`, { force: true });
  return pair;
}

/**
 * A free port is found by listening on port 0 and closing it; on a busy machine another process may
 * take it before etcd or kube-apiserver binds it. That start is thrown away and tried on new ports,
 * as is one whose etcd did not come up.
 */
export async function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnFreePorts(options);
    } catch (err) {
      // A port taken first, or an etcd that did not listen in time (kube-apiserver gives up on it
      // after 15 s, which a loaded machine starting six control planes at once has seen): new ports.
      if (attempt >= 3 || !/address already in use|etcd exited|connect: connection refused/.test(String(err)))
        throw err;
    }
  }
}

async function startOnFreePorts(options: StartOptions): Promise<ControlPlane> {
  const bins = binDir();
  for (const b of ['etcd', 'kube-apiserver']) {
    if (!existsSync(join(bins, b))) {
      throw new Error(`${join(bins, b)} is missing: run "bash test/controlplane/build.sh" first`);
    }
  }
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const dir = mkdtempSync(join(base, 'ccm-controlplane-'));
  const children: ChildProcess[] = [];
  // Killed, not terminated: a graceful kube-apiserver shutdown takes a second, and nothing of a
  // stopped control plane is read again (its directory is removed).
  const stop = async () => {
    for (const child of children.reverse()) await killHard(child);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [etcdPort, peerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const startEtcd = () =>
      startProcess(
        'etcd',
        join(bins, 'etcd'),
        [
          `--data-dir=${join(dir, 'etcd')}`,
          `--listen-client-urls=${etcdUrl}`,
          `--advertise-client-urls=${etcdUrl}`,
          `--listen-peer-urls=${peerUrl}`,
          `--initial-advertise-peer-urls=${peerUrl}`,
          `--initial-cluster=default=${peerUrl}`,
          '--unsafe-no-fsync',
          '--log-level=error',
        ],
        join(dir, 'etcd.log'),
      );
    let etcd = startEtcd();
    children.push(etcd);

    const adminToken = randomBytes(24).toString('hex');
    const ccmToken = randomBytes(24).toString('hex');
    const tokens: Record<string, string> = {};
    for (const user of options.tokenUsers ?? []) tokens[user] = randomBytes(24).toString('hex');
    writeFileSync(
      join(dir, 'tokens.csv'),
      [
        `${adminToken},${FIXTURE_USER},1,"system:masters"`,
        `${ccmToken},${CCM_USER},2,"system:masters"`,
        ...Object.entries(tokens).map(([user, token], i) => `${token},${user},${100 + i},"system:masters"`),
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    makeClientCA(dir);
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    writeFileSync(join(dir, 'sa.key'), privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
    writeFileSync(join(dir, 'sa.pub'), publicKey.export({ type: 'spki', format: 'pem' }));
    writeFileSync(
      join(dir, 'audit-policy.yaml'),
      options.auditLeaseBodies
        ? AUDIT_POLICY.replace('rules:\n', `rules:\n${LEASE_BODIES_RULE}`)
        : AUDIT_POLICY,
    );
    writeFileSync(join(dir, 'audit.log'), '');

    const startApiserver = () =>
      startProcess(
        'kube-apiserver',
        join(bins, 'kube-apiserver'),
        [
          `--etcd-servers=${etcdUrl}`,
          '--bind-address=127.0.0.1',
          '--advertise-address=127.0.0.1',
          `--secure-port=${apiPort}`,
          `--cert-dir=${join(dir, 'pki')}`,
          `--token-auth-file=${join(dir, 'tokens.csv')}`,
          `--client-ca-file=${join(dir, 'client-ca.crt')}`,
          '--authorization-mode=RBAC',
          '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
          `--service-account-key-file=${join(dir, 'sa.pub')}`,
          `--service-account-signing-key-file=${join(dir, 'sa.key')}`,
          '--service-cluster-ip-range=10.96.0.0/16',
          `--audit-policy-file=${join(dir, 'audit-policy.yaml')}`,
          `--audit-log-path=${join(dir, 'audit.log')}`,
          '--audit-log-mode=blocking',
          '--audit-log-maxsize=0',
          '--profiling=false',
          '--v=0',
          ...(options.extraArgs ?? []),
        ],
        join(dir, 'kube-apiserver.log'),
      );
    let apiserver = startApiserver();
    children.push(apiserver);

    const server = `https://127.0.0.1:${apiPort}`;
    const waitReady = async () => {
      const deadline = Date.now() + 90_000;
      for (;;) {
        if (etcd.exitCode !== null) {
          throw new Error(
            `etcd exited with ${etcd.exitCode}: ${(etcd as unknown as { logTail: string }).logTail}`,
          );
        }
        if (apiserver.exitCode !== null) {
          throw new Error(
            `kube-apiserver exited with ${apiserver.exitCode}: ${(apiserver as unknown as { logTail: string }).logTail}`,
          );
        }
        try {
          const res = await get(`${server}/readyz`, adminToken, undefined);
          if (res.status === 200) break;
        } catch {
          // not listening yet
        }
        if (Date.now() > deadline) {
          throw new Error(
            `kube-apiserver not ready after 90s: ${(apiserver as unknown as { logTail: string }).logTail}`,
          );
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    await waitReady();
    // Gone at once, as after a crash: kube-apiserver's graceful shutdown would take 15 s or more.
    const pause = async () => {
      await killHard(apiserver);
      await killHard(etcd);
    };
    const resume = async () => {
      for (let attempt = 1; ; attempt++) {
        etcd = startEtcd();
        apiserver = startApiserver();
        children.push(etcd, apiserver);
        try {
          await waitReady();
          return;
        } catch (err) {
          // The ports are the cluster's address and cannot change. One taken while it was down (the
          // local end of another process's connection, on a busy machine) is free again soon.
          if (attempt >= 10 || !/address already in use/.test(String(err))) throw err;
          await killHard(apiserver);
          await killHard(etcd);
          await new Promise((r) => setTimeout(r, 1000));
        }
      }
    };
    const caData = readFileSync(join(dir, 'pki', 'apiserver.crt')).toString('base64');
    const kubeconfigPath = join(dir, 'kubeconfig');
    writeFileSync(
      kubeconfigPath,
      `apiVersion: v1
kind: Config
clusters:
  - name: test
    cluster:
      server: ${server}
      certificate-authority-data: ${caData}
users:
  - name: ${CCM_USER}
    user:
      token: ${ccmToken}
  - name: ${FIXTURE_USER}
    user:
      token: ${adminToken}
contexts:
  - name: ccm
    context: { cluster: test, user: ${CCM_USER} }
  - name: fixtures
    context: { cluster: test, user: ${FIXTURE_USER} }
current-context: ccm
`,
      { mode: 0o600 },
    );

    const requests = async (user?: string): Promise<AuditEvent[]> => {
      // The log is written synchronously per request, but give the last line a moment to land.
      await new Promise((r) => setTimeout(r, 100));
      const lines = readFileSync(join(dir, 'audit.log'), 'utf8').split('\n').filter(Boolean);
      return lines.map((l) => JSON.parse(l) as AuditEvent).filter((e) => !user || e.user.username === user);
    };
    const writes = async (user?: string) => (await requests(user)).filter((e) => WRITE_VERBS.has(e.verb));
    return {
      server,
      kubeconfigPath,
      adminToken,
      caData,
      port: apiPort,
      dir,
      tokens,
      issueClientCert: (user, groups = []) => issueClientCert(dir, user, groups),
      writes,
      requests,
      pause,
      resume,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
