/**
 * Review 46: `ccm doctor` and `ccm secret create --cmon` against the real kube-apiserver, the CloudAPI
 * simulators and the CMON simulator.
 *
 * 1. doctor passes a certificate with which CMON lists none of the cluster's machines (a
 *    certificate of another account, and one of the right account while no machine is tagged):
 *    "cmon-access: pass", while the printed job would scrape nothing.
 * 2. doctor is silent (no CMON row at all) when the certificate lives in the Prometheus namespace,
 *    where docs/providers/triton.md says it must be for a Pod to mount it.
 * 3. secret create --cmon with a sub-user's key: CMON (real: unless the sub-user is in the
 *    account's administrator role) refuses; the line names no sub-user/administrator cause.
 * 4. --cmon-url https://NAME:443 is taken as port 9163 (WHATWG URL drops the default port).
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cmonCertificate } from '../clouds/triton/cmon-cert.js';
import { KeyFolder } from '../clouds/triton/keys.js';
import { fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { tempDir } from '../helpers/tmp.js';
import { useCmon } from '../helpers/use-cmon.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const CLEAN_ENV: Record<string, string | undefined> = {
  KUBECONFIG: undefined,
  CCM_PROVIDER: undefined,
  SSH_AUTH_SOCK: undefined,
  TRITON_CMON_URL: undefined,
  TRITON_CMON_CA: undefined,
  ...Object.fromEntries(
    ['URL', 'ACCOUNT', 'USER', 'KEY_ID', 'KEY_MATERIAL', 'KEY_PASSPHRASE'].flatMap((k) => [
      [`TRITON_${k}`, undefined],
      [`SDC_${k}`, undefined],
    ]),
  ),
};

const world = useCmon();
let cp: ControlPlane;
let api: CoreV1Api;
let caFile: string;
const folder = new KeyFolder();

beforeAll(async () => {
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
  const dir = tempDir('r46-cmon-');
  caFile = join(dir, 'cmon-ca.pem');
  writeFileSync(caFile, world.cmon.ca);
}, 240_000);
afterAll(async () => {
  await cp?.stop();
  folder.remove();
});

async function ccm(args: string[], env: Record<string, string | undefined> = {}) {
  const result = await execa(process.execPath, [bin, ...args, '--kubeconfig', cp.kubeconfigPath], {
    reject: false,
    env: { ...CLEAN_ENV, ...env },
    extendEnv: true,
    stdin: 'ignore',
    timeout: 90_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

const cmonFlags = () => ['--cmon-url', `https://127.0.0.1:${world.cmon.port}`, '--cmon-ca', caFile];

async function putTlsSecret(namespace: string, name: string, cert: { cert: string; key: string }) {
  await api.deleteNamespacedSecret({ name, namespace }).catch(() => undefined);
  await api.createNamespace({ body: { metadata: { name: namespace } } }).catch(() => undefined);
  await api.createNamespacedSecret({
    namespace,
    body: {
      metadata: { name },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': cert.cert, 'tls.key': cert.key },
    },
  });
}

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

describe('review 46: ccm doctor on CMON', { timeout: 180_000 }, () => {
  it("passes a certificate of ANOTHER account (doctor runs as demo): CMON lists none of demo's machines", async () => {
    world.demo.machines.clear();
    world.other.machines.clear();
    world.demo.addMachine({ name: 'web-1', tags: { 'triton.cmon.groups': 'prod' } });
    await putTlsSecret(
      'kube-system',
      'triton-cmon',
      cmonCertificate({ account: 'other', signer: world.keys.other.privateKey }),
    );
    const rows = await cmonRows();
    console.log(JSON.stringify(rows, null, 1));
    expect(rows.map((r) => `${r.name}:${r.status}`)).toEqual(['cmon-certificate:pass', 'cmon-access:pass']);
    expect(rows[0]?.message).toContain('(account other)');
    expect(rows[1]?.message).toContain('lists 0 instance(s)');
  });

  it('passes when CMON lists nothing at all for the account (no machine tagged, or none running)', async () => {
    world.demo.machines.clear();
    world.demo.addMachine({ name: 'web-1', state: 'stopped' });
    await putTlsSecret(
      'kube-system',
      'triton-cmon',
      cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey }),
    );
    const rows = await cmonRows();
    expect(rows.map((r) => `${r.name}:${r.status}`)).toEqual(['cmon-certificate:pass', 'cmon-access:pass']);
    expect(rows[1]?.message).toContain('lists 0 instance(s)');
  });

  it('says nothing when the certificate is in the Prometheus namespace (as the docs ask)', async () => {
    await api
      .deleteNamespacedSecret({ name: 'triton-cmon', namespace: 'kube-system' })
      .catch(() => undefined);
    await putTlsSecret(
      'monitoring',
      'triton-cmon',
      cmonCertificate({
        account: 'demo',
        signer: world.keys.demo.privateKey,
        validFrom: new Date(Date.now() - 30 * 86_400_000),
        validUntil: new Date(Date.now() - 86_400_000),
      }),
    );
    // An EXPIRED certificate in monitoring/triton-cmon, the one `manifests --cmon-secret monitoring/triton-cmon` mounts.
    expect(await cmonRows()).toEqual([]);
  });

  it('an unreachable CMON (accepts TCP, never answers TLS): how long doctor takes, and what it says', async () => {
    const server: Server = createServer(() => undefined);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    await putTlsSecret(
      'kube-system',
      'triton-cmon',
      cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey }),
    );
    const started = Date.now();
    const run = await ccm(
      [
        'doctor',
        '--provider',
        'triton',
        '--cloud-api-url',
        world.demo.url,
        '--cmon-url',
        `https://127.0.0.1:${port}`,
        '--cmon-ca',
        caFile,
        '-o',
        'json',
      ],
      { TRITON_ACCOUNT: 'demo', TRITON_KEY_MATERIAL: world.keys.demo.path },
    );
    const took = Date.now() - started;
    server.close();
    const rows = (JSON.parse(run.stdout) as { checks: Row[] }).checks.filter((c) =>
      c.name.startsWith('cmon-'),
    );
    console.log(took, JSON.stringify(rows));
    expect(rows.find((r) => r.name === 'cmon-access')?.status).toBe('fail');
  });
});

describe('review 46: secret create --cmon', { timeout: 180_000 }, () => {
  it("a sub-user's key: refused, and the line does not say why (CMON wants the sub-user in the administrator role)", async () => {
    const key = folder.make({ type: 'ecdsa', bits: 256 });
    world.demo.addKey(key.publicKey, 'ops');
    world.demo.grant('ops', '*');
    const run = await ccm(
      [
        'secret',
        'create',
        '--provider',
        'triton',
        '--cmon',
        '--cloud-api-url',
        world.demo.url,
        '--set',
        'account=demo',
        '--set',
        'user=ops',
        '--from-file',
        `key-material=${key.path}`,
        '--name',
        'r46-subuser',
        ...cmonFlags(),
      ],
      {},
    );
    console.log(run.exitCode, run.stderr);
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).not.toMatch(/administrator|sub-user|user ops/i);
  });

  it('--cmon-url https://NAME:443 connects to 9163', async () => {
    const run = await ccm(
      [
        'secret',
        'create',
        '--provider',
        'triton',
        '--cmon',
        '--cloud-api-url',
        world.demo.url,
        '--set',
        'account=demo',
        '--from-file',
        `key-material=${world.keys.demo.path}`,
        '--name',
        'r46-443',
        '--cmon-url',
        'https://127.0.0.1:443',
        '--cmon-ca',
        caFile,
      ],
      {},
    );
    console.log(run.exitCode, run.stderr);
    expect(run.stderr).toContain('https://127.0.0.1:9163');
  });
});
