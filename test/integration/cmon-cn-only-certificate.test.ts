/**
 * CMON's own certificate, the one it makes for itself until its operator installs one (triton-cmon
 * boot/setup.sh setup_tls_certificate, bb7e727: `openssl req -x509 -nodes -subj "/CN=$DEFAULT_HOSTNAME"
 * … -newkey ec … -days 365`): self-signed, its name in the CN only, no subjectAltName. Go's TLS
 * (Prometheus) refuses it even when trusted ("x509: certificate relies on legacy Common Name field"),
 * Node accepts it (review 46, finding 1). Here the CMON simulator serves such a certificate and:
 * - the job `ccm manifests --cmon` prints, run by Prometheus' own discovery and relabelling
 *   (test/prometheus-sd), finds no target without a flag, and the machine with
 *   --cmon-insecure-skip-verify;
 * - --cmon-ca refuses that certificate as a CA (it would not help), and with a real CA file puts
 *   ca_file (the Secret's ca.crt) in both tls_configs;
 * - `secret create --cmon` (which writes --cmon-ca as ca.crt) and `doctor` say in one line that
 *   Prometheus will refuse it and which flag the job needs.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cmonCertificate } from '../clouds/triton/cmon-cert.js';
import { fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { buildTritonSd, runPrometheusJob } from '../helpers/prometheus-sd.js';
import { tempDir } from '../helpers/tmp.js';
import { CLEAN_ENV, useCmon } from '../helpers/use-cmon.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const MOUNT = '/etc/prometheus/secrets/triton-cmon';
type Job = {
  tls_config: Record<string, unknown>;
  triton_sd_configs: { tls_config: Record<string, unknown> }[];
};

const world = useCmon({ certificate: 'cn-only' });
let cp: ControlPlane;
let api: CoreV1Api;
let sd: string;
let dir: string;
/** The CMON simulator's own (CN-only) certificate. */
let cmonCert: string;
let machineId: string;

beforeAll(async () => {
  [cp, sd] = await Promise.all([startControlPlane(), buildTritonSd()]);
  api = fixtureApi(cp.kubeconfigPath);
  dir = tempDir('ccm-cmon-cn-');
  cmonCert = join(dir, 'cmon-cert.pem');
  writeFileSync(cmonCert, world.cmon.ca);
  machineId = world.demo.addMachine({ name: 'worker-1', tags: { 'triton.cmon.groups': 'prod' } }).id;
}, 900_000);
afterAll(async () => {
  await cp?.stop();
});

async function ccm(args: string[], env: Record<string, string | undefined> = {}) {
  const result = await execa(process.execPath, [bin, ...args], {
    reject: false,
    env: { ...CLEAN_ENV, ...env },
    extendEnv: true,
    stdin: 'ignore',
    timeout: 90_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

const manifests = (extra: string[] = []) =>
  ccm([
    'manifests',
    '--provider',
    'triton',
    '--cmon',
    '--cmon-url',
    world.cmon.url,
    '--cmon-account',
    'demo',
    '--cmon-group',
    'prod',
    ...extra,
  ]);

const jobOf = (yml: string) => (parse(yml) as { scrape_configs: Job[] }).scrape_configs[0] as Job;

/** The printed job in Prometheus' code, with the Secret's files in a folder and CMON's certificate trusted. */
async function prometheus(yml: string) {
  const cert = cmonCertificate({ account: 'demo', signer: world.keys.demo.privateKey });
  writeFileSync(join(dir, 'tls.crt'), cert.cert);
  writeFileSync(join(dir, 'tls.key'), cert.key);
  return runPrometheusJob(sd, dir, yml.replaceAll(MOUNT, dir), { ca: cmonCert });
}

describe("CMON's own certificate (its name in the CN only)", { timeout: 180_000 }, () => {
  it('the simulator serves it as boot/setup.sh makes it: no subjectAltName', () => {
    const text = execFileSync('openssl', ['x509', '-in', cmonCert, '-noout', '-text'], { encoding: 'utf8' });
    expect(text).toContain(`CN = ${world.cmon.host}`);
    expect(text).not.toContain('Subject Alternative Name');
  });

  it('the job without a flag: Prometheus refuses it even when trusted, and finds no target', async () => {
    const printed = await manifests();
    expect(printed.exitCode).toBe(0);
    const run = await prometheus(printed.stdout);
    expect(run.targets).toEqual([]);
    expect(`${run.error ?? ''} ${run.stderr}`).toMatch(/legacy Common Name/);
  });

  it('the job with --cmon-insecure-skip-verify: Prometheus finds the machine', async () => {
    const printed = await manifests(['--cmon-insecure-skip-verify']);
    expect(printed.exitCode).toBe(0);
    const job = jobOf(printed.stdout);
    expect(job.tls_config.insecure_skip_verify).toBe(true);
    expect(job.triton_sd_configs[0]?.tls_config.insecure_skip_verify).toBe(true);
    const run = await prometheus(printed.stdout);
    expect(run.error).toBeUndefined();
    expect(run.targets.map((t) => [t.instance, t.node])).toEqual([[machineId, 'worker-1']]);
  });

  it('--cmon-ca refuses that certificate as a CA (one line, exit 2), and takes a real CA as ca_file', async () => {
    const refused = await manifests(['--cmon-ca', cmonCert]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain('--cmon-insecure-skip-verify');
    const caFile = join(dir, 'real-ca.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-nodes',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-subj',
        '/CN=Some CA',
        '-days',
        '1',
        '-keyout',
        join(dir, 'real-ca.key'),
        '-out',
        caFile,
      ],
      { stdio: 'ignore' },
    );
    const printed = await manifests(['--cmon-ca', caFile]);
    expect(printed.exitCode).toBe(0);
    const job = jobOf(printed.stdout);
    expect(job.tls_config.ca_file).toBe(`${MOUNT}/ca.crt`);
    expect(job.triton_sd_configs[0]?.tls_config.ca_file).toBe(`${MOUNT}/ca.crt`);
    const both = await manifests(['--cmon-ca', caFile, '--cmon-insecure-skip-verify']);
    expect(both.exitCode).toBe(2);
  });

  it('secret create --cmon says Prometheus will refuse it and writes --cmon-ca as ca.crt; doctor warns', async () => {
    const created = await ccm([
      'secret',
      'create',
      '--provider',
      'triton',
      '--cmon',
      '--kubeconfig',
      cp.kubeconfigPath,
      '--cloud-api-url',
      world.demo.url,
      '--set',
      'account=demo',
      '--from-file',
      `key-material=${world.keys.demo.path}`,
      '--cmon-url',
      `https://127.0.0.1:${world.cmon.port}`,
      '--cmon-ca',
      cmonCert,
    ]);
    expect(created.exitCode).toBe(0);
    const warning = created.stderr.split('\n').filter((l) => l.includes('refused by Prometheus'));
    expect(warning).toHaveLength(1);
    expect(warning[0]).toContain('no subjectAltName');
    expect(warning[0]).toContain('--cmon-insecure-skip-verify');
    const secret = await api.readNamespacedSecret({ namespace: 'kube-system', name: 'triton-cmon' });
    expect(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64').toString()).toBe(world.cmon.ca);
    const doctor = await ccm(
      [
        'doctor',
        '--provider',
        'triton',
        '--kubeconfig',
        cp.kubeconfigPath,
        '--cloud-api-url',
        world.demo.url,
        '--cmon-url',
        `https://127.0.0.1:${world.cmon.port}`,
        '-o',
        'json',
      ],
      { TRITON_ACCOUNT: 'demo', TRITON_KEY_MATERIAL: world.keys.demo.path },
    );
    type Row = { name: string; status: string; message: string; fix?: string };
    const rows = (JSON.parse(doctor.stdout) as { checks: Row[] }).checks;
    const row = rows.find((r) => r.name === 'cmon-server-certificate');
    expect(row?.status).toBe('warn');
    expect(row?.message).toContain('refused by Prometheus');
    expect(row?.fix).toContain('--cmon-insecure-skip-verify');
    // The CA came from the Secret's ca.crt: CMON was reached without --cmon-ca.
    expect(rows.find((r) => r.name === 'cmon-access')?.status).toBe('pass');
  });
});
