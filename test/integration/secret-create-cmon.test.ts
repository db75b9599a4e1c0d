/**
 * `ccm secret create --provider triton --cmon` against the real kube-apiserver, the CloudAPI
 * simulators and the CMON simulator (test/clouds/triton/cmon.ts): the certificate it makes, signed
 * with the account's key from its file or through a real OpenSSH ssh-agent, is the one CMON accepts;
 * an account without CMON, a key that is not the account's, CMON away and CMON refusing the
 * certificate each end in one line with nothing written. Then `ccm doctor` on that Secret: expired,
 * expiring within 14 days, foreign and good certificates.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createPublicKey, X509Certificate } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { execa } from 'execa';
import sshpk from 'sshpk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cmonCertificate } from '../clouds/triton/cmon-cert.js';
import { TritonSim } from '../clouds/triton/server.js';
import { fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { until } from '../helpers/run.js';
import { Terminal } from '../helpers/terminal.js';
import { tempDir } from '../helpers/tmp.js';
import { CLEAN_ENV, cmonGet, useCmon } from '../helpers/use-cmon.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const DAY = 86_400_000;

const world = useCmon();
let cp: ControlPlane;
let api: CoreV1Api;
let dir: string;
/** CMON's own certificate, for --cmon-ca. */
let caFile: string;

beforeAll(async () => {
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
  dir = tempDir('ccm-cmon-');
  caFile = join(dir, 'cmon-ca.pem');
  writeFileSync(caFile, world.cmon.ca);
}, 240_000);
afterAll(async () => {
  await cp?.stop();
});

async function ccm(args: string[], env: Record<string, string | undefined> = {}) {
  const result = await execa(process.execPath, [bin, ...args, '--kubeconfig', cp.kubeconfigPath], {
    reject: false,
    env: { ...CLEAN_ENV, ...env },
    extendEnv: true,
    stdin: 'ignore',
    timeout: 60_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

/** CMON as the tests reach it: its address on this machine, its name from CloudAPI's ListServices. */
const cmonFlags = (url = `https://127.0.0.1:${world.cmon.port}`) => ['--cmon-url', url, '--cmon-ca', caFile];

/** `secret create --cmon` for the demo account, the key from `keyPath`, and the Secrets it wrote. */
async function createCmon(
  extra: string[] = [],
  {
    keyPath = world.keys.demo.path,
    url = world.demo.url,
    cmonUrl = `https://127.0.0.1:${world.cmon.port}`,
    env = {} as Record<string, string>,
  } = {},
) {
  const before = (await cp.writes(CCM_USER)).length;
  const run = await ccm(
    [
      'secret',
      'create',
      '--provider',
      'triton',
      '--cmon',
      '--cloud-api-url',
      url,
      '--set',
      'account=demo',
      ...(keyPath ? ['--from-file', `key-material=${keyPath}`] : []),
      ...cmonFlags(cmonUrl),
      ...extra,
    ],
    env,
  );
  const writes = (await cp.writes(CCM_USER)).slice(before).filter((w) => w.objectRef?.resource === 'secrets');
  return { ...run, writes };
}

async function readSecret(name: string): Promise<V1Secret | undefined> {
  return api.readNamespacedSecret({ name, namespace: 'kube-system' }).catch(() => undefined);
}

const pemOf = (s: V1Secret | undefined, key: 'tls.crt' | 'tls.key') =>
  Buffer.from(s?.data?.[key] ?? '', 'base64').toString('utf8');

/** The Secret's pair as cmonGet sends it. */
const pairOf = (s: V1Secret | undefined) => {
  const cert = pemOf(s, 'tls.crt');
  return { cert, key: pemOf(s, 'tls.key'), validUntil: new X509Certificate(cert).validToDate };
};

async function deleteSecret(name: string) {
  await api.deleteNamespacedSecret({ name, namespace: 'kube-system' }).catch(() => undefined);
}

/** Writes a kubernetes.io/tls Secret by hand (for doctor). */
async function putTlsSecret(name: string, cert: { cert: string; key: string }) {
  await deleteSecret(name);
  await api.createNamespacedSecret({
    namespace: 'kube-system',
    body: {
      metadata: { name },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': cert.cert, 'tls.key': cert.key },
    },
  });
}

function machines() {
  world.demo.machines.clear();
  world.other.machines.clear();
  return {
    web: world.demo.addMachine({ name: 'web-1', tags: { 'triton.cmon.groups': 'k8s' } }),
    theirs: world.other.addMachine({ name: 'their-web' }),
  };
}

/** Every line the command printed, for what must never be in it. */
const printed = (run: { stdout: string; stderr: string }) => `${run.stdout}\n${run.stderr}`;

describe('ccm secret create --cmon', { timeout: 120_000 }, () => {
  it("makes a certificate CMON accepts, signed by the account's key file, in a kubernetes.io/tls Secret", async () => {
    const { web } = machines();
    await deleteSecret('triton-cmon');
    const run = await createCmon();
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('Secret kube-system/triton-cmon created');
    expect(run.stdout).toMatch(/expires \d{4}-\d\d-\d\dT/);
    expect(run.writes.map((w) => w.verb)).toEqual(['create']);

    const secret = await readSecret('triton-cmon');
    expect(secret?.type).toBe('kubernetes.io/tls');
    // --cmon-ca is kept as ca.crt, where the scrape job of `manifests --cmon --cmon-ca` reads it.
    expect(Object.keys(secret?.data ?? {}).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
    expect(secret?.metadata?.labels).toEqual({ 'app.kubernetes.io/managed-by': 'ccm' });
    const pair = pairOf(secret);
    // The private key is in the Secret, and nowhere in what the command printed.
    expect(pair.key).toContain('PRIVATE KEY');
    expect(printed(run)).not.toContain(pair.key.split('\n')[1]);

    // CMON accepts it, for discovery and for an instance's metrics (the simulator checks the
    // signature against the account's keys, as triton-cmon's authenticationHandler does).
    const discover = await cmonGet(world.cmon, '/v1/discover', { cert: pair });
    expect(discover.status).toBe(200);
    expect(JSON.parse(discover.body).containers.map((c: { vm_uuid: string }) => c.vm_uuid)).toEqual([web.id]);
    const metrics = await cmonGet(world.cmon, '/metrics', {
      host: world.cmon.instanceHost(web.id),
      cert: pair,
    });
    expect(metrics.status).toBe(200);
    expect(metrics.body).toContain('# TYPE');

    // Independently of sshpk's verification: OpenSSL's own X509_verify (node:crypto's
    // X509Certificate.verify) with the account's public key, which sshpk only converts to PEM.
    const x509 = new X509Certificate(pair.cert);
    const accountKey = createPublicKey(sshpk.parseKey(world.keys.demo.publicKey, 'ssh').toString('pkcs8'));
    const foreignKey = createPublicKey(sshpk.parseKey(world.keys.foreign.publicKey, 'ssh').toString('pkcs8'));
    expect(x509.verify(accountKey)).toBe(true);
    expect(x509.verify(foreignKey)).toBe(false);
    // And the openssl command itself reads the names and dates as cmon-certgen writes them.
    const text = (
      await execa(
        'openssl',
        ['x509', '-noout', '-subject', '-issuer', '-startdate', '-enddate', '-ext', 'extendedKeyUsage'],
        {
          input: pair.cert,
        },
      )
    ).stdout;
    const md5 = sshpk.parseKey(world.keys.demo.publicKey, 'ssh').fingerprint('md5').toString('base64');
    expect(text).toContain('subject=CN = demo');
    // openssl quotes a name with a + in it.
    expect(text.replaceAll('"', '')).toContain(`issuer=CN = ${md5}`);
    expect(text).toContain('TLS Web Client Authentication');
    const lifetime = x509.validToDate.getTime() - x509.validFromDate.getTime();
    expect(Math.round(lifetime / DAY)).toBe(3650);
    // The same shape as the tests' own cmon-certgen certificate (test/clouds/triton/cmon-cert.ts).
    const theirs = sshpk.parseCertificate(
      cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey }).cert,
      'pem',
    );
    const ours = sshpk.parseCertificate(pair.cert, 'pem');
    expect(ours.purposes?.slice().sort()).toEqual(theirs.purposes?.slice().sort());
    expect(ours.issuer.toString()).toBe(theirs.issuer.toString());
    expect(ours.subjects[0]?.toString()).toBe(theirs.subjects[0]?.toString());
    expect(ours.subjectKey.type).toBe('ecdsa');
    await deleteSecret('triton-cmon');
  });

  it('signs through the ssh-agent when no key file is given, with --name and --cmon-lifetime', async () => {
    machines();
    const socket = join(tempDir('ccm-cmon-agent-'), 'agent.sock');
    const agent: ChildProcess = spawn('ssh-agent', ['-D', '-a', socket], { stdio: 'ignore' });
    try {
      await until(
        'the agent answering',
        async () =>
          existsSync(socket) &&
          (await execa('ssh-add', ['-l'], { env: { SSH_AUTH_SOCK: socket }, reject: false })).exitCode !== 2,
      );
      await execa('ssh-add', [world.keys.demo.path], { env: { SSH_AUTH_SOCK: socket } });
      const run = await createCmon(
        ['--set', `key-id=${world.keys.demo.fingerprint}`, '--name', 'metrics-cert', '--cmon-lifetime', '30'],
        { keyPath: '', env: { SSH_AUTH_SOCK: socket } },
      );
      expect(run.stderr).toBe('');
      expect(run.exitCode).toBe(0);
      const secret = await readSecret('metrics-cert');
      const pair = pairOf(secret);
      expect((await cmonGet(world.cmon, '/v1/discover', { cert: pair })).status).toBe(200);
      const x509 = new X509Certificate(pair.cert);
      expect(
        x509.verify(createPublicKey(sshpk.parseKey(world.keys.demo.publicKey, 'ssh').toString('pkcs8'))),
      ).toBe(true);
      expect(Math.round((x509.validToDate.getTime() - x509.validFromDate.getTime()) / DAY)).toBe(30);
    } finally {
      agent.kill();
      await deleteSecret('metrics-cert');
    }
  });

  it('--dry-run prints the Secret with tls.key redacted, and -o json carries no private key', async () => {
    machines();
    const dry = await createCmon(['--dry-run']);
    expect(dry.exitCode).toBe(0);
    expect(dry.stdout).toContain('type: kubernetes.io/tls');
    expect(dry.stdout).toContain('tls.key: <redacted>');
    expect(printed(dry)).not.toContain('PRIVATE KEY');
    expect(dry.writes).toEqual([]);
    const json = await createCmon(['-o', 'json']);
    expect(json.exitCode).toBe(0);
    const key = pemOf(await readSecret('triton-cmon'), 'tls.key');
    expect(Buffer.from(key).toString('base64')).not.toBe('');
    expect(printed(json)).not.toContain(Buffer.from(key).toString('base64').slice(0, 40));
    expect(printed(json)).not.toContain(key.split('\n')[1]);
    expect(JSON.parse(json.stdout)).toMatchObject({ name: 'triton-cmon', expires: expect.any(String) });
    await deleteSecret('triton-cmon');
  });

  describe('refuses, in one line, and writes nothing', () => {
    it('an account whose data centre has no CMON (no cmon in ListServices): exit 2', async () => {
      const bare = await new TritonSim({ login: 'demo', datacenter: 'us-test-1' }).start();
      try {
        bare.addKey(world.keys.demo.publicKey);
        const run = await createCmon([], { url: bare.url });
        expect(run.stderr.trim().split('\n')).toHaveLength(1);
        expect(run.stderr).toContain('no CMON: CloudAPI ListServices lists no "cmon" service');
        expect(run.exitCode).toBe(2);
        expect(run.writes).toEqual([]);
        expect(await readSecret('triton-cmon')).toBeUndefined();
      } finally {
        await bare.stop();
      }
    });

    it("a key that is not the account's: CloudAPI refuses it first, exit 2", async () => {
      const asked = world.cmon.requests.length;
      const run = await createCmon([], { keyPath: world.keys.foreign.path });
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain('did not accept the credentials');
      expect(run.exitCode).toBe(2);
      expect(run.writes).toEqual([]);
      // No certificate of that key was ever shown to CMON.
      expect(world.cmon.requests.length).toBe(asked);
    });

    it('CMON that cannot be reached: exit 1', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as { port: number }).port;
      await new Promise((resolve) => closed.close(resolve));
      const run = await createCmon([], { cmonUrl: `https://127.0.0.1:${port}` });
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain('could not be reached');
      expect(run.stderr).toContain('nothing written');
      expect(run.exitCode).toBe(1);
      expect(run.writes).toEqual([]);
    });

    it('a certificate CMON refuses: exit 2, with what CMON said', async () => {
      world.cmon.fault({
        method: 'GET',
        path: '/v1/discover',
        status: 401,
        times: 1,
        body: '{"code":"Unauthorized","message":""}',
      });
      const run = await createCmon();
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toContain('refused the certificate (401 Unauthorized)');
      expect(run.exitCode).toBe(2);
      expect(run.writes).toEqual([]);
      expect(await readSecret('triton-cmon')).toBeUndefined();
    });

    it('an existing Secret of another type, and --cmon for another provider: exit 2', async () => {
      await api.createNamespacedSecret({
        namespace: 'kube-system',
        body: { metadata: { name: 'opaque-one' }, stringData: { a: 'b' } },
      });
      try {
        const run = await createCmon(['--name', 'opaque-one']);
        expect(run.stderr).toContain('exists with type Opaque, not kubernetes.io/tls');
        expect(run.exitCode).toBe(2);
        expect(run.writes.filter((w) => w.verb !== 'get')).toEqual([]);
      } finally {
        await deleteSecret('opaque-one');
      }
      const other = await ccm(['secret', 'create', '--provider', 'digitalocean', '--cmon']);
      expect(other.stderr.trim()).toBe(
        "ccm: --cmon: only the triton provider has CMON (Triton's Container Monitor), not digitalocean",
      );
      expect(other.exitCode).toBe(2);
    });
  });

  it('in a terminal: asks for the credentials, then makes and checks the certificate', async () => {
    machines();
    const home = tempDir('ccm-cmon-home-');
    const terminal = await Terminal.open(
      [
        'secret',
        'create',
        '--kubeconfig',
        cp.kubeconfigPath,
        '--provider',
        'triton',
        '--cmon',
        ...cmonFlags(),
      ],
      { width: 200, height: 60, env: { ...CLEAN_ENV, HOME: home } as Record<string, string>, raw: true },
    );
    try {
      await terminal.waitFor('CloudAPI URL');
      await terminal.type(world.demo.url, 'Enter');
      await terminal.waitFor('Account login name');
      await terminal.type('demo', 'Enter');
      await terminal.waitFor('Sub-user login');
      await terminal.type('Enter');
      await terminal.waitFor('Another file');
      await terminal.type('Enter');
      await terminal.waitFor('Path of the private key');
      await terminal.type(world.keys.demo.path, 'Enter');
      const code = await terminal.exit();
      const screen = await terminal.screen({ joined: true });
      expect(screen).toContain('CMON accepts the certificate');
      expect(screen).toContain('Secret kube-system/triton-cmon created');
      expect(screen).toMatch(/expires \d{4}-/);
      expect(code).toBe(0);
      expect((await readSecret('triton-cmon'))?.type).toBe('kubernetes.io/tls');
    } finally {
      await terminal.close();
      await deleteSecret('triton-cmon');
    }
  });
});

describe('ccm doctor on the CMON certificate', { timeout: 120_000 }, () => {
  type Row = { name: string; status: string; message: string; fix?: string };
  async function cmonRows(extra: string[] = []): Promise<Row[]> {
    const run = await ccm(
      [
        'doctor',
        '--provider',
        'triton',
        '--cloud-api-url',
        world.demo.url,
        ...cmonFlags(),
        '-o',
        'json',
        ...extra,
      ],
      { TRITON_ACCOUNT: 'demo', TRITON_KEY_MATERIAL: world.keys.demo.path },
    );
    const checks = (JSON.parse(run.stdout) as { checks: Row[] }).checks;
    return checks.filter((c) => c.name.startsWith('cmon-'));
  }
  const status = (rows: Row[]) => Object.fromEntries(rows.map((r) => [r.name, r.status]));

  it('says there is none (and how to make one) without the Secret, and fails when --cmon-secret names one that is missing', async () => {
    await deleteSecret('triton-cmon');
    const none = await cmonRows();
    expect(status(none), JSON.stringify(none)).toEqual({ 'cmon-certificate': 'pass' });
    expect(none[0]?.message).toContain('no CMON certificate');
    const rows = await cmonRows(['--cmon-secret', 'kube-system/triton-cmon']);
    expect(status(rows), JSON.stringify(rows)).toEqual({ 'cmon-certificate': 'fail' });
    expect(rows[0]?.fix).toContain('ccm secret create --provider triton --cmon');
  });

  it('passes a good certificate (the one secret create makes): CMON lists the instances', async () => {
    machines();
    expect((await createCmon()).exitCode).toBe(0);
    const rows = await cmonRows();
    expect(status(rows), JSON.stringify(rows)).toEqual({
      'cmon-certificate': 'pass',
      'cmon-access': 'pass',
      'cmon-targets': 'pass',
    });
    expect(rows[1]?.message).toContain('accepts the certificate of Secret kube-system/triton-cmon');
    // No Node here: the instance CMON lists is nobody's target yet.
    expect(rows[2]?.message).toContain(
      'CMON lists 1 instance(s) in account demo to the certificate of Secret kube-system/triton-cmon; no Node has a Triton provider ID',
    );
    await deleteSecret('triton-cmon');
  });

  it('warns when it expires within 14 days', async () => {
    machines();
    await putTlsSecret(
      'triton-cmon',
      cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey, lifetimeDays: 10 }),
    );
    const rows = await cmonRows();
    expect(status(rows), JSON.stringify(rows)).toEqual({
      'cmon-certificate': 'warn',
      'cmon-access': 'pass',
      'cmon-targets': 'pass',
    });
    expect(rows[0]?.message).toMatch(/expires .* in 9 day\(s\)/);
    await deleteSecret('triton-cmon');
  });

  it('fails an expired one, which CMON refuses too', async () => {
    machines();
    await putTlsSecret(
      'triton-cmon',
      cmonCertificate({
        account: 'demo',
        signer: world.keys.demo.privateKey,
        validFrom: new Date(Date.now() - 30 * DAY),
        validUntil: new Date(Date.now() - DAY),
      }),
    );
    const rows = await cmonRows();
    expect(status(rows), JSON.stringify(rows)).toEqual({ 'cmon-certificate': 'fail', 'cmon-access': 'fail' });
    expect(rows[0]?.message).toContain('expired');
    expect(rows[1]?.message).toContain('CMON refuses the certificate');
    await deleteSecret('triton-cmon');
  });

  it('fails a foreign one (signed by a key the account does not have)', async () => {
    machines();
    await putTlsSecret(
      'triton-cmon',
      cmonCertificate({ account: 'demo', signer: world.keys.foreign.privateKey }),
    );
    const rows = await cmonRows();
    expect(status(rows), JSON.stringify(rows)).toEqual({ 'cmon-certificate': 'pass', 'cmon-access': 'fail' });
    expect(rows[1]?.message).toContain('refused the certificate (401');
    expect(rows[1]?.fix).toContain('ccm secret create --provider triton --cmon');
    await deleteSecret('triton-cmon');
  });
});
