/**
 * Every way a kubeconfig can authenticate, each against the real kube-apiserver: who the server
 * thinks we are comes from a SelfSubjectReview, so a test passes only when the server accepted the
 * credential it was meant to receive.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { type ClusterAccess, loadKubeConfig } from '../../src/kube/config.js';
import { createNodeClient } from '../../src/kube/nodes.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, freePort, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';

const USERS = ['exec-first', 'exec-second', 'sa-before', 'sa-after'];
let cp: ControlPlane;
let ca: string;
const dir = mkdtempSync(join(tmpdir(), 'ccm-kube-auth-'));

beforeAll(async () => {
  cp = await startControlPlane({ tokenUsers: USERS });
  ca = Buffer.from(cp.caData, 'base64').toString('utf8');
  await createNodes(fixtureApi(cp.kubeconfigPath), [{ name: 'auth-1' }, { name: 'auth-2' }]);
});
afterAll(async () => {
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

let fileCount = 0;
function file(name: string, text: string, mode = 0o600): string {
  const path = join(dir, `${++fileCount}-${name}`);
  writeFileSync(path, text, { mode });
  return path;
}

interface KubeconfigParts {
  cluster?: Record<string, unknown>;
  user?: Record<string, unknown>;
}

/** A one-context kubeconfig for the test server; `cluster` and `user` are merged into the defaults. */
function kubeconfig({ cluster = {}, user = {} }: KubeconfigParts, at = file('kubeconfig', '')): string {
  writeFileSync(
    at,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        { name: 'test', cluster: { server: cp.server, 'certificate-authority-data': cp.caData, ...cluster } },
      ],
      users: [{ name: 'someone', user }],
      contexts: [{ name: 'test', context: { cluster: 'test', user: 'someone' } }],
      'current-context': 'test',
    }),
  );
  return at;
}

/** The user name the API server authenticated the request as. */
async function whoami(access: ClusterAccess): Promise<string> {
  const review = await new KubeTransport(access).request<{ status: { userInfo: { username: string } } }>({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  });
  return review.status.userInfo.username;
}

const load = (path: string, extra: Partial<Parameters<typeof loadKubeConfig>[0]> = {}) =>
  loadKubeConfig({ kubeconfig: path, env: { HOME: dir }, interactive: false, ...extra });

/**
 * An exec credential plugin: a shell script that logs each run and prints credential N of
 * `credentials` on run N (the last one from then on). Its environment and arguments are recorded.
 */
function execPlugin(credentials: object[]): { path: string; runs: () => number; lastEnv: () => string } {
  const folder = join(dir, `plugin-${++fileCount}`);
  mkdirSync(folder);
  credentials.forEach((c, i) => {
    writeFileSync(join(folder, `cred-${i + 1}.json`), JSON.stringify(c));
  });
  const path = join(folder, 'plugin.sh');
  writeFileSync(
    path,
    `#!/bin/bash
set -e
echo "$*" >> "${folder}/runs"
printf '%s' "$KUBERNETES_EXEC_INFO|$PLUGIN_GREETING" > "${folder}/env"
n=$(wc -l < "${folder}/runs")
if [ -f "${folder}/cred-$n.json" ]; then cat "${folder}/cred-$n.json"; else cat "${folder}/cred-${credentials.length}.json"; fi
`,
  );
  chmodSync(path, 0o755);
  return {
    path,
    runs: () => readFileSync(join(folder, 'runs'), 'utf8').split('\n').filter(Boolean).length,
    lastEnv: () => readFileSync(join(folder, 'env'), 'utf8'),
  };
}

function execCredential(status: Record<string, unknown>) {
  return { apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential', status };
}

function execUser(plugin: string, extra: Record<string, unknown> = {}) {
  return {
    exec: {
      apiVersion: 'client.authentication.k8s.io/v1',
      command: plugin,
      args: ['--for', 'ccm'],
      env: [{ name: 'PLUGIN_GREETING', value: 'hello' }],
      interactiveMode: 'Never',
      ...extra,
    },
  };
}

describe('kubeconfig credentials, as the real API server sees them', () => {
  it('a static bearer token', async () => {
    expect(await whoami(load(cp.kubeconfigPath))).toBe('ccm-operator');
  });

  it('a client certificate and key as files, relative to the kubeconfig', async () => {
    const { cert, key } = cp.issueClientCert('cert-file-user', ['system:masters']);
    const folder = join(dir, `certs-${++fileCount}`);
    mkdirSync(join(folder, 'pki'), { recursive: true });
    writeFileSync(join(folder, 'pki', 'user.crt'), cert);
    writeFileSync(join(folder, 'pki', 'user.key'), key, { mode: 0o600 });
    writeFileSync(join(folder, 'ca.crt'), ca);
    const path = kubeconfig(
      {
        cluster: { 'certificate-authority-data': undefined, 'certificate-authority': 'ca.crt' },
        user: { 'client-certificate': 'pki/user.crt', 'client-key': 'pki/user.key' },
      },
      join(folder, 'config'),
    );
    const access = load(path);
    expect(await whoami(access)).toBe('cert-file-user');
    // and the Node client works with it, end to end
    expect((await createNodeClient(access).listNodes()).map((n) => n.metadata?.name)).toContain('auth-1');
  });

  it('a client certificate and key inline (base64 data)', async () => {
    const { cert, key } = cp.issueClientCert('cert-data-user', ['system:masters']);
    const path = kubeconfig({
      user: {
        'client-certificate-data': Buffer.from(cert).toString('base64'),
        'client-key-data': Buffer.from(key).toString('base64'),
      },
    });
    expect(await whoami(load(path))).toBe('cert-data-user');
  });

  it('impersonation (as, as-groups) on top of a token', async () => {
    const path = kubeconfig({
      user: {
        token: cp.tokens['exec-first'],
        as: 'impersonated-user',
        'as-groups': ['system:masters', 'team-a'],
      },
    });
    expect(await whoami(load(path))).toBe('impersonated-user');
  });

  it('an exec plugin printing a token: args, env and KUBERNETES_EXEC_INFO reach it', async () => {
    const plugin = execPlugin([execCredential({ token: cp.tokens['exec-first'] })]);
    const path = kubeconfig({ user: execUser(plugin.path, { provideClusterInfo: true }) });
    const access = load(path);
    expect(await whoami(access)).toBe('exec-first');
    expect(await whoami(access)).toBe('exec-first');
    expect(plugin.runs()).toBe(1); // no expiry: the credential is kept
    const [info, greeting] = plugin.lastEnv().split('|');
    expect(greeting).toBe('hello');
    expect(JSON.parse(info as string)).toMatchObject({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: { interactive: false, cluster: { server: cp.server, 'certificate-authority-data': cp.caData } },
    });
    expect(readFileSync(join(plugin.path, '..', 'runs'), 'utf8').trim()).toBe('--for ccm');
  });

  it('an exec plugin printing a client certificate', async () => {
    const { cert, key } = cp.issueClientCert('exec-cert-user', ['system:masters']);
    const plugin = execPlugin([execCredential({ clientCertificateData: cert, clientKeyData: key })]);
    expect(await whoami(load(kubeconfig({ user: execUser(plugin.path) })))).toBe('exec-cert-user');
  });

  it('an exec credential that expires mid-run is fetched again once, not once per concurrent request', async () => {
    // Long enough that a loaded machine (test:stress) still makes the first two requests before it.
    const expiresAt = Date.now() + 8000;
    const plugin = execPlugin([
      execCredential({
        token: cp.tokens['exec-first'],
        expirationTimestamp: new Date(expiresAt).toISOString(),
      }),
      execCredential({ token: cp.tokens['exec-second'] }),
    ]);
    const access = load(kubeconfig({ user: execUser(plugin.path) }));
    const nodes = createNodeClient(access);
    expect(await whoami(access)).toBe('exec-first');
    await nodes.listNodes();
    expect(plugin.runs()).toBe(1);
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 200));
    const before = (await cp.writes('exec-second')).length;
    await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        nodes.patchNode(`auth-${(i % 2) + 1}`, { metadata: { labels: { n: `${i}` } } }),
      ),
    );
    expect(plugin.runs()).toBe(2);
    expect((await cp.writes('exec-second')).length - before).toBe(24);
    expect(await whoami(access)).toBe('exec-second');
  });

  it('a credential the server rejects (401) is fetched again once and the requests retried', async () => {
    const plugin = execPlugin([
      execCredential({ token: 'revoked-token-the-server-does-not-know' }),
      execCredential({ token: cp.tokens['exec-second'] }),
    ]);
    const nodes = createNodeClient(load(kubeconfig({ user: execUser(plugin.path) })));
    const before = (await cp.writes('exec-second')).length;
    await Promise.all(
      Array.from({ length: 16 }, (_, i) =>
        nodes.patchNode('auth-1', { metadata: { labels: { r: `${i}` } } }),
      ),
    );
    expect(plugin.runs()).toBe(2);
    expect((await cp.writes('exec-second')).length - before).toBe(16);
  });

  it('a rejected static token is not retried and fails with the server message', async () => {
    const access = load(kubeconfig({ user: { token: 'not-a-token' } }));
    await expect(whoami(access)).rejects.toMatchObject({ status: 401 });
  });

  it('a refused token is one line naming the user and context, exit 2 (a configuration error: the same kubeconfig again cannot help)', async () => {
    const path = kubeconfig({ user: { token: 'not-a-token' } });
    const run = await ccm([
      'nodes',
      'list',
      '--provider',
      'cloudlycke',
      '--cloud-config',
      '/dev/null',
      '--kubeconfig',
      path,
    ]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /^ccm: GET \/api\/v1\/nodes: Unauthorized: the API server at https:\/\/127\.0\.0\.1:\d+ does not accept the credentials of user someone \(context test\); check --kubeconfig and --context$/,
    );
  });

  it('in-cluster: the service account token file is re-read when it changes, the CA is used', async () => {
    const sa = join(dir, `serviceaccount-${++fileCount}`);
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), ca);
    writeFileSync(join(sa, 'token'), cp.tokens['sa-before'] as string);
    const access = loadKubeConfig({
      env: { HOME: dir, KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(cp.port) },
      serviceAccountDir: sa,
      interactive: false,
    });
    expect(access.server).toBe(cp.server);
    expect(await whoami(access)).toBe('sa-before');
    // the kubelet rotates the projected token by swapping the file
    writeFileSync(join(sa, 'token.new'), cp.tokens['sa-after'] as string);
    renameSync(join(sa, 'token.new'), join(sa, 'token'));
    await new Promise((r) => setTimeout(r, 1100));
    expect(await whoami(access)).toBe('sa-after');

    // a CA that did not sign the server's certificate: the connection is refused
    const otherCA = cp.issueClientCert('not-a-ca').cert;
    writeFileSync(join(sa, 'ca.crt'), otherCA);
    const wrong = loadKubeConfig({
      env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(cp.port) },
      serviceAccountDir: sa,
      interactive: false,
    });
    await expect(whoami(wrong)).rejects.toThrow(/cannot reach the Kubernetes API server/);
  });

  it('in-cluster: an address that does not answer is said to be the `kubernetes` Service, not a kubeconfig', async () => {
    const sa = join(dir, `serviceaccount-${++fileCount}`);
    mkdirSync(sa);
    writeFileSync(join(sa, 'ca.crt'), ca);
    writeFileSync(join(sa, 'token'), cp.tokens['sa-before'] as string);
    const inPod = (port: number) =>
      loadKubeConfig({
        env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(port) },
        serviceAccountDir: sa,
        interactive: false,
      });
    // The Service's address answers (kube-proxy forwards it): the same access works.
    expect(await whoami(inPod(cp.port))).toBe('sa-before');
    // Nothing forwards it: what the Pod is told is what to check in a Pod.
    const closed = await freePort();
    const unreachable = await whoami(inPod(closed)).then(
      () => '',
      (err: Error) => err.message,
    );
    expect(unreachable).toMatch(
      new RegExp(
        `^cannot reach the Kubernetes API server at https://127\\.0\\.0\\.1:${closed} \\(ECONNREFUSED\\); that is the \`kubernetes\` Service \\(this Pod's KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT\\): check that kube-proxy `,
      ),
    );
    expect(unreachable).not.toContain('--kubeconfig');
    expect(unreachable.split('\n')).toHaveLength(1);
    // Outside a Pod the kubeconfig is still what to check.
    const file = kubeconfig({ cluster: { server: `https://127.0.0.1:${closed}` }, user: { token: 'x' } });
    await expect(whoami(load(file))).rejects.toThrow(/; check --kubeconfig and --context$/);
  });

  it('tls-server-name is the name the server certificate is checked against', async () => {
    const user = { token: cp.tokens['exec-first'] };
    const right = load(kubeconfig({ cluster: { 'tls-server-name': 'kubernetes.default' }, user }));
    expect(await whoami(right)).toBe('exec-first');
    const wrong = load(kubeconfig({ cluster: { 'tls-server-name': 'not-this-server.example' }, user }));
    await expect(whoami(wrong)).rejects.toThrow(/cannot reach the Kubernetes API server/);
  });
});

describe('TLS the way kubectl takes it', () => {
  const user = () => ({ token: cp.tokens['exec-first'] });

  it('refuses a cluster with both a certificate authority and insecure-skip-tls-verify, as client-go does', () => {
    expect(() => load(kubeconfig({ cluster: { 'insecure-skip-tls-verify': true }, user: user() }))).toThrow(
      "the kubeconfig's cluster test sets both a certificate authority and insecure-skip-tls-verify, which kubectl refuses; remove insecure-skip-tls-verify",
    );
  });

  it('refuses plain http to another machine; http to loopback is taken', () => {
    expect(() =>
      load(
        kubeconfig({
          cluster: { server: 'http://kube.example.com:8080', 'certificate-authority-data': undefined },
        }),
      ),
    ).toThrow(
      "the kubeconfig's cluster test has server http://kube.example.com:8080: plain http to another machine would carry the credentials unencrypted; use its https URL",
    );
    expect(load(kubeconfig({ cluster: { server: 'http://127.0.0.1:8080' } })).server).toBe(
      'http://127.0.0.1:8080',
    );
  });

  it('says once, on stderr, that certificates are not verified, and ccm doctor marks it', async () => {
    const path = kubeconfig({
      cluster: { 'insecure-skip-tls-verify': true, 'certificate-authority-data': undefined },
      user: user(),
    });
    const access = load(path);
    expect(access.insecure).toBe('cluster test sets insecure-skip-tls-verify');
    expect(await whoami(access)).toBe('exec-first');
    const doctor = await ccm(['doctor', '--kubeconfig', path, '-o', 'json']);
    const warnings = doctor.stderr
      .split('\n')
      .filter((l) => l.startsWith('ccm: warning: TLS certificates are not verified'));
    expect(warnings).toEqual([
      'ccm: warning: TLS certificates are not verified (cluster test sets insecure-skip-tls-verify): anyone between here and the servers can read and change what is sent, credentials included',
    ]);
    const row = (JSON.parse(doctor.stdout).checks as { id: string; status: string; message: string }[]).find(
      (c) => c.id === 'kubeconfig',
    );
    expect(row).toMatchObject({ status: 'warn' });
    expect(row?.message).toContain(
      'but its certificate is not verified (cluster test sets insecure-skip-tls-verify)',
    );
    const envOnly = await ccm(['doctor', '--kubeconfig', kubeconfig({ user: user() }), '-o', 'json'], {
      NODE_TLS_REJECT_UNAUTHORIZED: '0',
    });
    expect(envOnly.stderr).toContain(
      'ccm: warning: TLS certificates are not verified (NODE_TLS_REJECT_UNAUTHORIZED=0 is set)',
    );
  });
});

describe('KUBECONFIG with several files, merged as kubectl merges them', () => {
  it('first file wins per name, current-context from the first file that sets it, missing files skipped', async () => {
    const good = cp.tokens['exec-first'];
    // File 1: the right user and context, but no cluster and no current-context.
    const first = file(
      'first',
      JSON.stringify({
        users: [{ name: 'shared-user', user: { token: good } }],
        contexts: [{ name: 'shared', context: { cluster: 'shared-cluster', user: 'shared-user' } }],
      }),
    );
    // File 2: the cluster, a wrong twin of everything in file 1, and the current-context.
    const second = file(
      'second',
      JSON.stringify({
        clusters: [
          { name: 'shared-cluster', cluster: { server: cp.server, 'certificate-authority-data': cp.caData } },
        ],
        users: [
          { name: 'shared-user', user: { token: 'wrong-token' } },
          { name: 'other-user', user: { token: 'wrong-token' } },
        ],
        contexts: [{ name: 'shared', context: { cluster: 'nowhere', user: 'other-user' } }],
        'current-context': 'shared',
      }),
    );
    // File 3 sets another current-context, which loses to file 2's.
    const third = file('third', JSON.stringify({ 'current-context': 'elsewhere' }));
    const KUBECONFIG = [join(dir, 'does-not-exist'), first, second, third].join(delimiter);
    const access = loadKubeConfig({ env: { HOME: dir, KUBECONFIG }, interactive: false });
    expect(access.context).toBe('shared');
    expect(await whoami(access)).toBe('exec-first');

    // The built CLI reads KUBECONFIG the same way.
    const inventory = file(
      'inventory.yaml',
      stringify({
        instances: [
          { id: 'auth-1', addresses: [{ type: 'InternalIP', address: '192.168.56.21' }] },
          { id: 'auth-2', addresses: [{ type: 'InternalIP', address: '192.168.56.22' }] },
        ],
      }),
    );
    const before = (await cp.writes('exec-first')).length;
    const run = await ccm(
      ['nodes', 'init', '--provider', 'cloudlycke', '--cloud-config', inventory, '--json'],
      {
        HOME: dir,
        KUBECONFIG,
      },
    );
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout).summary.initialized).toBe(2);
    expect((await cp.writes('exec-first')).length - before).toBeGreaterThan(0);
  });
});
