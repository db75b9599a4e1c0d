/**
 * `ccm manifests --provider triton --cmon` as a user runs it (the built CLI): its output forms, and bad
 * input refused in one line on stderr, exit 2, nothing on stdout. What the printed job does in
 * Prometheus is test/integration/cmon-manifests-prometheus.test.ts.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ccm } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const BASE = [
  'manifests',
  '--provider',
  'triton',
  '--cmon',
  '--cmon-url',
  'https://cmon.us-east-1.triton.zone',
];
const OK = [...BASE, '--cmon-account', 'acme', '--cluster-name', 'prod'];

describe('ccm manifests --cmon: what it prints', () => {
  it('a prometheus.yml of the job: account, CMON name, its port 9163, the group, the Secret mounted', async () => {
    const r = await ccm(OK);
    expect(r.exitCode).toBe(0);
    const job = parse(r.stdout).scrape_configs[0];
    const tls = {
      cert_file: '/etc/prometheus/secrets/triton-cmon/tls.crt',
      key_file: '/etc/prometheus/secrets/triton-cmon/tls.key',
    };
    expect(job).toMatchObject({ job_name: 'triton-cmon-prod', scheme: 'https', tls_config: tls });
    expect(job.triton_sd_configs).toEqual([
      {
        account: 'acme',
        dns_suffix: 'cmon.us-east-1.triton.zone',
        endpoint: 'cmon.us-east-1.triton.zone',
        port: 9163,
        version: 1,
        groups: ['prod'],
        tls_config: tls,
      },
    ]);
    expect(r.stdout).toContain(
      '\n# kubernetes.io/tls Secret kube-system/triton-cmon mounted at /etc/prometheus/secrets/triton-cmon\n',
    );
    // The node rule's lowercase action came in Prometheus 2.36.0 (review 46, finding 9).
    expect(r.stdout).toContain(
      '\n# Needs Prometheus 2.36 or later (the lowercase relabel action of the node label); an older one refuses the whole configuration.\n',
    );
  });

  it('-o json: the same configuration; the account from TRITON_ACCOUNT; another Secret and port', async () => {
    const r = await ccm(
      [
        ...BASE.slice(0, -1),
        'https://CMON.example.org:8443',
        '--cmon-group',
        'k8s-0123456789abcdef',
        '--cmon-secret',
        'monitoring/cmon',
        '-o',
        'json',
      ],
      { TRITON_ACCOUNT: 'from-env' },
    );
    expect(r.exitCode).toBe(0);
    const job = JSON.parse(r.stdout).scrape_configs[0];
    expect(job.triton_sd_configs[0]).toMatchObject({
      account: 'from-env',
      endpoint: 'cmon.example.org',
      port: 8443,
      groups: ['k8s-0123456789abcdef'],
    });
    expect(job.tls_config.cert_file).toBe('/etc/prometheus/secrets/cmon/tls.crt');
  });

  it("keeps a port written as https's default, 443 (WHATWG URL drops it; review 46, finding 6)", async () => {
    const r = await ccm([...OK.slice(0, 5), 'https://cmon.example.net:443', ...OK.slice(6), '-o', 'json']);
    expect(r.exitCode).toBe(0);
    expect(JSON.parse(r.stdout).scrape_configs[0].triton_sd_configs[0].port).toBe(443);
  });

  it('--cmon-format additional-scrape-configs: a Secret, named by -o name and written by --out', async () => {
    const format = ['--cmon-format', 'additional-scrape-configs', '--cmon-secret', 'monitoring/cmon'];
    const yaml = await ccm([...OK, ...format]);
    expect(parse(yaml.stdout).stringData['triton-cmon.yaml']).toMatch(/^# Needs Prometheus 2\.36 or later/);
    const named = await ccm([...OK, ...format, '-o', 'name']);
    expect(named).toMatchObject({ exitCode: 0, stdout: 'secret/cmon-scrape' });
    const dir = tempDir('ccm-cmon-out-');
    const written = await ccm([...OK, ...format, '--out', dir]);
    expect(written.exitCode).toBe(0);
    expect(readdirSync(dir).filter((f) => !f.startsWith('.'))).toEqual(['10-secret-cmon-scrape.yaml']);
  });
});

describe('ccm manifests --cmon: bad input, one line', () => {
  it.each([
    ['another provider', ['manifests', '--provider', 'digitalocean', '--cmon'], /--cmon is Triton's/],
    ['no --cmon-url', ['manifests', '--provider', 'triton', '--cmon'], /--cmon needs --cmon-url/],
    [
      'a --cmon-* flag without --cmon',
      ['manifests', '--provider', 'triton', '--cmon-url', 'x'],
      /--cmon-url needs --cmon/,
    ],
    ['no account', [...BASE, '--cluster-name', 'prod'], /--cmon needs the Triton account/],
    [
      'the account "my"',
      [...BASE, '--cmon-account', 'my', '--cluster-name', 'p'],
      /--cmon-account: .*never my/,
    ],
    ['no group', [...BASE, '--cmon-account', 'acme'], /needs the cluster's CMON group .* --cluster-name/],
    [
      'a group CMON cannot have',
      [...OK, '--cmon-group', 'a.b'],
      /the CMON group "a\.b" is no group ccm keeps/,
    ],
    ['http', [...OK.slice(0, 5), 'http://cmon.x.test', ...OK.slice(6)], /--cmon-url: CMON speaks HTTPS only/],
    ['an address', [...OK.slice(0, 5), 'https://10.0.0.1', ...OK.slice(6)], /must name it; got the address/],
    ['a path', [...OK.slice(0, 5), 'https://cmon.x.test/v1', ...OK.slice(6)], /CMON's origin alone/],
    ['port 0', [...OK.slice(0, 5), 'https://cmon.x.test:0', ...OK.slice(6)], /--cmon-url: port 0 is no port/],
    ['a pod flag', [...OK, '--image', 'r.example/ccm:1'], /--image does not apply with --cmon/],
    ['-o name of a job', [...OK, '-o', 'name'], /-o name names Kubernetes objects/],
    ['--out of a job', [...OK, '--out', '/tmp/nowhere'], /--out writes Kubernetes objects/],
    ['a bad Secret', [...OK, '--cmon-secret', 'cmon'], /--cmon-secret: expected namespace\/name/],
    ['an unknown format', [...OK, '--cmon-format', 'scrape-config'], /--cmon-format/],
  ])('%s', async (_, args, message) => {
    const r = await ccm(args, { TRITON_ACCOUNT: undefined, SDC_ACCOUNT: undefined });
    expect(r.stdout).toBe('');
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(message);
    expect(r.exitCode).toBe(2);
  });
});

it("the job's default Secret is the one `secret create --cmon` writes", async () => {
  const { CMON_SECRET_DEFAULT } = await import('../../src/cli/manifests-cmon-flags.js');
  const { CMON_SECRET_NAME } = await import('../../src/providers/triton/cmon-certificate.js');
  expect(CMON_SECRET_DEFAULT).toBe(`kube-system/${CMON_SECRET_NAME}`);
});
