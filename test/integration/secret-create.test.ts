/**
 * `ccm secret create` against the real kube-apiserver and each provider's simulator: scripted runs
 * (flags, files, stdin, env) whose Secrets `ccm nodes init --credentials-secret` then uses, and
 * interactive sessions typed into a real terminal (tmux).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api, V1Secret } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { widthOf } from '../../src/cli/output/text.js';
import { SIM_CLIENT, startBrightboxSimulator } from '../clouds/brightbox/simulator.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { KeyFolder, type TestKey } from '../clouds/triton/keys.js';
import { TritonSim } from '../clouds/triton/server.js';
import { createNodes, deleteAllNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import { hostileBytes, Terminal } from '../helpers/terminal.js';
import { tempDir } from '../helpers/tmp.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

/** Nothing of the machine running the tests leaks in. */
const CLEAN_ENV: Record<string, string | undefined> = {
  KUBECONFIG: undefined,
  CCM_PROVIDER: undefined,
  SSH_AUTH_SOCK: undefined,
  DO_ACCESS_TOKEN: undefined,
  DO_OVERRIDE_URL: undefined,
  BRIGHTBOX_CLIENT: undefined,
  BRIGHTBOX_CLIENT_SECRET: undefined,
  BRIGHTBOX_API_URL: undefined,
  OS_CLOUD: undefined,
  ...Object.fromEntries(
    ['URL', 'ACCOUNT', 'USER', 'KEY_ID', 'KEY_MATERIAL', 'KEY_PASSPHRASE'].flatMap((k) => [
      [`TRITON_${k}`, undefined],
      [`SDC_${k}`, undefined],
    ]),
  ),
};

let cp: ControlPlane;
let api: CoreV1Api;
let keys: KeyFolder;
let tritonKey: TestKey;

async function ccm(
  args: string[],
  options: { env?: Record<string, string | undefined>; input?: string; timeoutMs?: number } = {},
) {
  const result = await execa(process.execPath, [bin, ...args, '--kubeconfig', cp.kubeconfigPath], {
    reject: false,
    env: { ...CLEAN_ENV, ...options.env },
    extendEnv: true,
    ...(options.input !== undefined ? { input: options.input } : { stdin: 'ignore' }),
    timeout: options.timeoutMs ?? 60_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: String(result.stdout), stderr: String(result.stderr) };
}

async function secretCreate(
  args: string[],
  options: { env?: Record<string, string | undefined>; input?: string; timeoutMs?: number } = {},
) {
  const before = (await cp.writes(CCM_USER)).length;
  const result = await ccm(['secret', 'create', ...args], options);
  // Secrets only: a `nodes init` of an earlier step may still be writing its Events.
  const writes = (await cp.writes(CCM_USER)).slice(before).filter((w) => w.objectRef?.resource === 'secrets');
  return { ...result, writes };
}

async function readSecret(name: string, namespace = 'kube-system'): Promise<V1Secret | undefined> {
  try {
    return await api.readNamespacedSecret({ name, namespace });
  } catch {
    return undefined;
  }
}

const decoded = (s: V1Secret | undefined) =>
  Object.fromEntries(
    Object.entries(s?.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]),
  );

async function deleteSecret(name: string) {
  await api.deleteNamespacedSecret({ name, namespace: 'kube-system' }).catch(() => undefined);
}

/**
 * `ccm nodes init --provider <provider>` with the Secret alone (and `flags`): it runs clean and
 * gives Node `node` its provider ID.
 */
async function expectInitFromSecret(
  provider: string,
  secret: string,
  node: string,
  providerID: string,
  flags: string[] = [],
) {
  const init = await ccm([
    'nodes',
    'init',
    '--provider',
    provider,
    ...flags,
    '--credentials-secret',
    `kube-system/${secret}`,
  ]);
  expect(init.stderr).toBe('');
  expect(init.exitCode).toBe(0);
  expect((await api.readNode({ name: node })).spec?.providerID).toBe(providerID);
}

beforeAll(async () => {
  keys = new KeyFolder();
  tritonKey = keys.make({ type: 'rsa', bits: 2048, passphrase: 'tr1ton passphrase never shown' });
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
});
afterAll(async () => {
  await cp?.stop();
  keys?.remove();
});
beforeEach(async () => {
  await deleteAllNodes(api);
});

describe('ccm secret create, scripted', { timeout: 240_000 }, () => {
  let sim: DigitalOceanSimulator;
  beforeAll(async () => {
    sim = await DigitalOceanSimulator.start();
  });
  afterAll(async () => {
    await sim?.stop();
  });

  it('DigitalOcean: the token from stdin becomes the official Secret, nodes init uses it, a second run writes nothing', async () => {
    await deleteSecret('digitalocean');
    const [droplet] = sim.addDroplets({ name: 'do-w1', privateIP: '10.114.0.2' });
    await createNodes(api, [{ name: 'do-w1' }]);
    const args = ['--provider', 'digitalocean', '--cloud-api-url', sim.url, '--from-stdin'];
    const first = await secretCreate(args, { input: `${sim.token}\n` });
    expect(first.stderr).toBe('');
    expect(first.exitCode).toBe(0);
    expect(first.stdout).toContain('Secret kube-system/digitalocean created (keys: access-token)');
    // The next commands are whole: the API URL the Secret does not hold, the kubeconfig given here.
    expect(first.stdout).toContain('Not stored in the Secret, so ccm run needs it as well: --cloud-api-url');
    expect(first.stdout).not.toContain('apiUrl');
    expect(unfolded(first.stdout)).toContain(
      `ccm run --provider digitalocean --kubeconfig ${cp.kubeconfigPath} --credentials-secret kube-system/digitalocean --cloud-api-url ${sim.url}`,
    );
    // Not the plain-http URL in `ccm manifests`, which refuses it (its pods would send the token unencrypted): the note says why.
    expect(unfolded(first.stdout)).toContain(
      `ccm manifests --provider digitalocean --image <registry>/ccm:0.1.0 --credentials-secret kube-system/digitalocean | kubectl apply --kubeconfig ${cp.kubeconfigPath} --server-side -f -`,
    );
    expect(first.stdout).toContain(
      `ccm manifests below leaves out --cloud-api-url ${sim.url}: it takes no plain http`,
    );
    expect(first.stdout + first.stderr).not.toContain(sim.token);
    expect(first.writes.map((w) => `${w.verb} ${w.objectRef?.resource}`)).toEqual(['create secrets']);

    const secret = await readSecret('digitalocean');
    // The official controller's layout: one key, access-token, the token as it is.
    expect(secret?.type).toBe('Opaque');
    expect(secret?.data).toEqual({ 'access-token': Buffer.from(sim.token).toString('base64') });
    expect(secret?.metadata?.labels).toEqual({ 'app.kubernetes.io/managed-by': 'ccm' });

    const again = await secretCreate(args, { input: sim.token });
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toContain('unchanged');
    expect(again.writes).toEqual([]);

    // A Secret made by hand (as for DigitalOcean's own controller) with the same token: only ccm's label
    // is written, and the summary names it, not an empty list.
    await api.replaceNamespacedSecret({
      name: 'digitalocean',
      namespace: 'kube-system',
      body: { metadata: { name: 'digitalocean', namespace: 'kube-system' }, data: secret?.data },
    });
    const labelled = await secretCreate(args, { input: sim.token });
    expect(labelled.exitCode).toBe(0);
    expect(labelled.stdout).toContain(
      'Secret kube-system/digitalocean updated (keys: access-token; changed: label app.kubernetes.io/managed-by)',
    );

    await expectInitFromSecret('digitalocean', 'digitalocean', 'do-w1', `digitalocean://${droplet?.id}`, [
      '--cloud-api-url',
      sim.url,
    ]);
  });

  it('DigitalOcean: a changed token updates the Secret and names the key; a token on argv warns', async () => {
    await deleteSecret('digitalocean');
    const old = await secretCreate(
      ['--provider', 'digitalocean', '--no-verify', '--set', 'token=dop_v1_old'],
      {},
    );
    expect(old.exitCode).toBe(0);
    expect(old.stderr).toContain('token was given on the command line');
    expect(old.stderr).not.toContain('dop_v1_old');
    const run = await secretCreate(['--provider', 'digitalocean', '--cloud-api-url', sim.url], {
      env: { DO_ACCESS_TOKEN: sim.token },
    });
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain(
      'Secret kube-system/digitalocean updated (keys: access-token; changed: access-token)',
    );
    expect(run.writes.map((w) => w.verb)).toEqual(['update']);
    expect(decoded(await readSecret('digitalocean'))).toEqual({ 'access-token': sim.token });
  });

  it('invalid credentials: exit 2 with what the cloud answered, no Secret', async () => {
    await deleteSecret('digitalocean');
    const run = await secretCreate(
      ['--provider', 'digitalocean', '--cloud-api-url', sim.url, '--from-stdin'],
      {
        input: 'dop_v1_wrong_token',
      },
    );
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^ccm: digitalocean did not accept the credentials: .*(401|nauthori)/);
    expect(run.stderr).not.toContain('dop_v1_wrong_token');
    expect(run.writes).toEqual([]);
    expect(await readSecret('digitalocean')).toBeUndefined();
  });

  it('an API that cannot be reached is not a refusal: its own line, asked once, no Secret, exit 1 as in nodes init (review 44, finding 4)', async () => {
    await deleteSecret('digitalocean');
    const run = await secretCreate(
      ['--provider', 'digitalocean', '--cloud-api-url', 'https://no-such-host.invalid', '--from-stdin'],
      { input: 'dop_v1_a_good_token_for_all_we_know' },
    );
    expect(run.exitCode).toBe(1);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(
      /^ccm: cannot reach digitalocean, so the credentials were not checked: .*GET \/v2\/account: request failed \(.*no-such-host\.invalid.*\): the cloud could not be reached; check the API URL, and this machine's DNS, network and proxy; nothing written/,
    );
    expect(run.stderr).not.toContain('gave up after');
    expect(run.writes).toEqual([]);
    expect(await readSecret('digitalocean')).toBeUndefined();
  });

  it("a cloud that never answers: said after 10 s, then the cloud's own limits (5 attempts), ended in ccm's words, not JavaScript's after 60 s (review 44, findings 3 and 4)", async () => {
    await deleteSecret('digitalocean');
    const cloud = await silentCloud();
    try {
      const started = Date.now();
      const run = await secretCreate(
        ['--provider', 'digitalocean', '--cloud-api-url', cloud.url, '--from-stdin'],
        {
          input: 'dop_v1_a_good_token_for_all_we_know',
          env: { DO_API_TIMEOUT_SECONDS: '13' },
          timeoutMs: 150_000,
        },
      );
      const took = Date.now() - started;
      expect(run.stderr.trim().split('\n')).toEqual([
        `ccm: waiting for the cloud at ${cloud.url} (GET /v2/account): up to 13 s an attempt, 5 attempts`,
        `ccm: cannot reach digitalocean, so the credentials were not checked: DigitalOcean checking the token (GET /v2/account) failed: GET /v2/account: timed out after 13000 ms, gave up after 5 attempts: the cloud could not be reached; check the API URL, and this machine's DNS, network and proxy; nothing written (--no-verify skips this check)`,
      ]);
      // 5 attempts of 13 s: more than the 60 s that ended the check before, with "The operation was aborted due to timeout".
      expect(took).toBeGreaterThan(65_000);
      expect(run.exitCode).toBe(1);
      expect(run.writes).toEqual([]);
    } finally {
      await cloud.close();
    }
  }, 180_000);

  it('a namespace that does not exist is configuration, exit 2, as a Secret that does not exist (review 44, finding 4)', async () => {
    const run = await secretCreate(['--provider', 'digitalocean', '--no-verify', '--namespace', 'nope-ns'], {
      env: { DO_ACCESS_TOKEN: 'dop_v1_not_checked' },
    });
    expect({ exitCode: run.exitCode, stderr: run.stderr.trim() }).toEqual({
      exitCode: 2,
      stderr: 'ccm: namespace nope-ns does not exist; create it or pass --namespace',
    });
    expect(run.writes.filter((w) => w.responseStatus?.code === 201)).toEqual([]);
  });

  it('no terminal and a missing value: one line naming the flag, exit 2, nothing written', async () => {
    const run = await secretCreate(['--provider', 'brightbox', '--set', 'client=cli-12345']);
    expect(run.exitCode).toBe(2);
    // A secret: stdin, a file or its variable, never the --set the command warns about.
    expect(run.stderr).toBe(
      'ccm: brightbox: controller-client-secret is missing; pipe it to --from-stdin, pass --from-file controller-client-secret=FILE or set BRIGHTBOX_CLIENT_SECRET (or run in a terminal to be asked)',
    );
    const client = await secretCreate(['--provider', 'brightbox', '--from-stdin'], { input: 's3cret' });
    expect(client.stderr).toBe(
      'ccm: brightbox: controller-client is missing; pass --set controller-client=… or set BRIGHTBOX_CLIENT (or run in a terminal to be asked)',
    );
    expect(run.writes).toEqual([]);
    const none = await secretCreate([]);
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toBe('ccm: no provider given; pass --provider (e.g. --provider digitalocean)');
  });

  it('every line names the Secret, key and flag given, not the defaults (review 44, finding 7)', async () => {
    const named = ['--provider', 'digitalocean', '--cloud-api-url', sim.url, '--name', 'do-trial'];
    const refused = await secretCreate([...named, '--from-stdin'], { input: 'dop_v1_wrong' });
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(
      /^ccm: digitalocean did not accept the credentials: .*the token is invalid or revoked; create one with read and write scope \(the token from --from-stdin\); nothing written/,
    );
    expect(refused.stderr).not.toContain('kube-system/digitalocean');

    const vpc = await secretCreate([...named, '--set', 'vpc-id=abc', '--from-stdin'], { input: sim.token });
    expect(vpc.stderr).toBe(
      'ccm: DigitalOcean VPC id "abc" (from --set vpc-id) is not a VPC id (a UUID); give the id of the cluster\'s VPC',
    );

    const missing = await secretCreate(named);
    expect(missing.stderr).toBe(
      'ccm: digitalocean: access-token is missing; pipe it to --from-stdin, pass --from-file access-token=FILE or set DO_ACCESS_TOKEN (or run in a terminal to be asked)',
    );

    const empty = await secretCreate([...named, '--from-stdin'], { input: '' });
    expect(empty.stderr).toBe(
      'ccm: --from-stdin: expected the access-token on stdin, got nothing (stdin was empty)',
    );

    const typo = await secretCreate([...named, '--set', 'acess-token=x']);
    expect(typo.stderr).toBe(
      'ccm: --set: expected one of access-token, region, vpc-id (the keys of Secret kube-system/do-trial) or apiUrl, timeoutSeconds (for the check, not stored), got "acess-token"; did you mean access-token?',
    );
    for (const run of [refused, vpc, missing, empty, typo]) {
      expect(run.exitCode).toBe(2);
      expect(run.writes).toEqual([]);
    }
    expect(await readSecret('do-trial')).toBeUndefined();
  });

  it('--dry-run does not call the cloud; with --verify it calls it once', async () => {
    const before = sim.requests.length;
    const dry = await secretCreate(
      ['--provider', 'digitalocean', '--cloud-api-url', sim.url, '--dry-run', '--from-stdin'],
      { input: sim.token },
    );
    expect(dry.stderr).toBe('');
    expect(dry.exitCode).toBe(0);
    expect(dry.stdout).toContain('access-token: <redacted>');
    expect(sim.requests.slice(before)).toEqual([]);
    const verified = await secretCreate(
      ['--provider', 'digitalocean', '--cloud-api-url', sim.url, '--dry-run', '--verify', '--from-stdin'],
      { input: sim.token },
    );
    expect(verified.exitCode, verified.stderr).toBe(0);
    expect(sim.requests.slice(before).map((r) => `${r.method} ${r.url}`)).toEqual(['GET /v2/account']);
    expect(verified.writes).toEqual([]);
  });

  it('--dry-run prints the Secret redacted (values only with --show-secrets), writes nothing', async () => {
    const run = await secretCreate(
      ['--provider', 'digitalocean', '--no-verify', '--dry-run', '--from-stdin'],
      {
        input: 'dop_v1_dry',
      },
    );
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('access-token: <redacted>');
    expect(run.stdout).toContain('app.kubernetes.io/managed-by: ccm');
    expect(run.stdout).not.toContain(Buffer.from('dop_v1_dry').toString('base64'));
    expect(run.writes).toEqual([]);
    const shown = await secretCreate(
      [
        '--provider',
        'digitalocean',
        '--no-verify',
        '--dry-run',
        '--show-secrets',
        '-o',
        'json',
        '--from-stdin',
      ],
      { input: 'dop_v1_dry' },
    );
    expect(JSON.parse(shown.stdout).data).toEqual({
      'access-token': Buffer.from('dop_v1_dry').toString('base64'),
    });
  });
});

describe('ccm secret create, scripted, every other provider', { timeout: 240_000 }, () => {
  it('Triton: key file and passphrase; nodes init signs with the Secret', async () => {
    const sim = await new TritonSim({ login: 'demo' }).start();
    try {
      sim.addKey(tritonKey.publicKey);
      const machine = sim.addMachine({ name: 'tw1', ips: ['10.10.0.11'] });
      await createNodes(api, [{ name: 'tw1', providedNodeIP: '10.10.0.11' }]);
      const run = await secretCreate(
        [
          '--provider',
          'triton',
          '--set',
          `url=${sim.url}`,
          '--set',
          'account=demo',
          '--from-file',
          `keyMaterial=${tritonKey.path}`,
        ],
        { env: { TRITON_KEY_PASSPHRASE: tritonKey.passphrase } },
      );
      expect(run.stderr).toBe('');
      expect(run.exitCode).toBe(0);
      expect(decoded(await readSecret('triton'))).toEqual({
        url: sim.url,
        account: 'demo',
        'key-material': tritonKey.privateKey,
        'key-passphrase': tritonKey.passphrase,
      });
      await expectInitFromSecret('triton', 'triton', 'tw1', `triton://${machine.id}`);
    } finally {
      await sim.stop();
      await deleteSecret('triton');
    }
  });

  it('Triton --dry-run: url and account shown, only the key and its passphrase redacted', async () => {
    const args = [
      '--provider',
      'triton',
      '--set',
      'url=https://us-east-1.api.example.com',
      '--set',
      'account=demo',
      '--from-file',
      `keyMaterial=${tritonKey.path}`,
      '--dry-run',
    ];
    const env = { TRITON_KEY_PASSPHRASE: tritonKey.passphrase };
    const run = await secretCreate(args, { env });
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('url: https://us-east-1.api.example.com');
    expect(run.stdout).toContain('account: demo');
    expect(run.stdout).toContain('key-material: <redacted>');
    expect(run.stdout).toContain('key-passphrase: <redacted>');
    expect(run.stdout).not.toContain(tritonKey.passphrase);
    expect(run.stdout).not.toContain('PRIVATE KEY');
    const json = JSON.parse((await secretCreate([...args, '-o', 'json'], { env })).stdout);
    expect(json.stringData).toEqual({ url: 'https://us-east-1.api.example.com', account: 'demo' });
    expect(json.data).toEqual({ 'key-material': '<redacted>', 'key-passphrase': '<redacted>' });
    expect(run.writes).toEqual([]);
  });

  it('Triton: a key file that is no private key is one line naming it, exit 2', async () => {
    const dir = tempDir('ccm-secret-notakey-');
    const yaml = join(dir, 'config.yaml');
    writeFileSync(yaml, 'apiVersion: v1\nkind: Config\nclusters: []\n');
    const run = await secretCreate([
      '--provider',
      'triton',
      '--set',
      'url=https://us-east-1.api.example.com',
      '--set',
      'account=demo',
      '--from-file',
      `keyMaterial=${yaml}`,
      '--no-verify',
    ]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toBe(
      `ccm: key-material (${yaml}) is not a PEM or OpenSSH private key; give the private key file (not the .pub)`,
    );
    expect(run.writes).toEqual([]);
  });

  it('Brightbox: client and secret from env; nodes init uses the Secret', async () => {
    const sim = await startBrightboxSimulator();
    try {
      sim.addServer({
        id: 'srv-bbbbb',
        name: 'bb-w1',
        zone: 'gb1-b',
        serverType: '4gb.ssd',
        ipv4: '10.241.0.11',
      });
      await createNodes(api, [{ name: 'bb-w1' }]);
      const run = await secretCreate(['--provider', 'brightbox', '--cloud-api-url', sim.url], {
        env: { BRIGHTBOX_CLIENT: SIM_CLIENT.id, BRIGHTBOX_CLIENT_SECRET: SIM_CLIENT.secret },
      });
      expect(run.stderr).toBe('');
      expect(run.exitCode).toBe(0);
      expect(run.stdout).not.toContain(SIM_CLIENT.secret);
      expect(decoded(await readSecret('brightbox-credentials'))).toEqual({
        'controller-client': SIM_CLIENT.id,
        'controller-client-secret': SIM_CLIENT.secret,
        apiurl: sim.url,
      });
      await expectInitFromSecret('brightbox', 'brightbox-credentials', 'bb-w1', 'brightbox://srv-bbbbb');
    } finally {
      await sim.close();
      await deleteSecret('brightbox-credentials');
    }
  });

  it('OpenStack: --cloud-config is checked by its parser and stored whole under cloud.conf; nodes init uses it', async () => {
    const sim = await new OpenStackSimulator().start();
    const dir = tempDir('ccm-secret-os-');
    try {
      const conf = readFileSync(
        fileURLToPath(new URL('../fixtures/openstack/occm-cloud-config', import.meta.url)),
        'utf8',
      ).replace('http://192.128.1.15:5000/v3', sim.authUrl);
      writeFileSync(join(dir, 'cloud.conf'), conf);
      writeFileSync(join(dir, 'broken.conf'), '[Global]\nauth-url=x\n[Bogus]\n');
      const bad = await secretCreate(['--provider', 'openstack', '--cloud-config', join(dir, 'broken.conf')]);
      expect(bad.exitCode).toBe(2);
      expect(bad.stderr).toMatch(/^ccm: .*unknown section \[Bogus\]/);
      expect(bad.writes).toEqual([]);

      const server = sim.addServer({ name: 'os-w1', addresses: { private: [{ addr: '10.0.0.11' }] } });
      await createNodes(api, [{ name: 'os-w1', providedNodeIP: '10.0.0.11' }]);
      const run = await secretCreate(['--provider', 'openstack', '--cloud-config', join(dir, 'cloud.conf')]);
      expect(run.stderr).toBe('');
      expect(run.exitCode).toBe(0);
      expect(run.stdout).not.toContain('passw0rd');
      expect(decoded(await readSecret('cloud-config'))).toEqual({ 'cloud.conf': conf });
      await expectInitFromSecret('openstack', 'cloud-config', 'os-w1', `openstack:///${server.id}`);
    } finally {
      await sim.stop();
      await deleteSecret('cloud-config');
    }
  });

  it('--help shows no empty default for --set and --from-file', async () => {
    const help = await ccm(['secret', 'create', '--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(/--set=<value>\.\.\. +A value, as key=value/);
    expect(help.stdout).toMatch(/--from-file=<value>\.\.\. +A value read from a file/);
    expect(help.stdout).not.toContain('[default: ]');
  });

  it('Cloudlycke keeps nothing in a Secret: one line, exit 2', async () => {
    const run = await secretCreate(['--provider', 'cloudlycke']);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toBe(
      'ccm: cloudlycke keeps no credentials in a Secret; configure it with its flags and environment instead',
    );
  });
});

/**
 * `ccm secret create` in a terminal; `answer` types into it, step by step, as the screen asks: a step
 * waits for its text (`[text, n]`: the n-th time it is on the screen, for a question asked again).
 */
async function inTerminal(
  args: string[],
  env: Record<string, string>,
  answer: (step: (waitText: string | [string, number], ...keys: string[]) => Promise<void>) => Promise<void>,
  options: { kubeconfig?: string; width?: number } = {},
) {
  const kubeconfig = options.kubeconfig ?? cp.kubeconfigPath;
  const terminal = await Terminal.open(['secret', 'create', '--kubeconfig', kubeconfig, ...args], {
    width: options.width ?? 200,
    height: 60,
    env: { ...CLEAN_ENV, ...env },
    raw: true,
  });
  const seen: string[] = [];
  try {
    await answer(async (waitText, ...keys) => {
      const [text, times] = typeof waitText === 'string' ? [waitText, 1] : waitText;
      seen.push(await terminal.waitFor(text, undefined, times));
      await terminal.type(...keys);
    });
    const code = await terminal.exit();
    return {
      code,
      screen: await terminal.screen({ joined: true }),
      seen,
      raw: terminal.raw(),
      title: await terminal.title(),
    };
  } finally {
    await terminal.close();
  }
}

/** Set the title, clear the screen, cursor up, an 8-bit CSI, a line separator: a hostile cloud's text. */
const HOSTILE = '\u001b]0;PWNED\u0007\u001b[2J\u001b[1A\u009b2J\u2028';

/** A cloud on this machine that accepts connections and never answers. */
async function silentCloud(): Promise<{ url: string; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => sockets.add(socket.on('error', () => {})));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** A loopback port nobody listens on (a mistyped port: the connection is refused). */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => resolve(typeof address === 'object' && address ? address.port : 1));
    });
  });
}

/** How often `text` is on `screen`. */
const count = (screen: string, text: string) => screen.split(text).length - 1;

/** The screen's commands continued with a backslash, each on one line again. */
const unfolded = (screen: string) => screen.replace(/ \\\n\s+/g, ' ');

describe('ccm secret create in a terminal', { timeout: 240_000 }, () => {
  it('Ctrl-C at a prompt: one line, exit 130, nothing written', async () => {
    await deleteSecret('digitalocean');
    const { code, screen } = await inTerminal(['--provider', 'digitalocean'], {}, async (step) => {
      await step('DigitalOcean API token', 'C-c');
    });
    expect(code).toBe(130);
    expect(screen).toContain('ccm: cancelled at the prompt (Ctrl-C); nothing was written');
    expect(screen).not.toContain('force closed');
    expect(await readSecret('digitalocean')).toBeUndefined();
  });

  it('Ctrl-C while the task list runs: one line, exit 130, nothing written', async () => {
    await deleteSecret('digitalocean');
    const sim = await DigitalOceanSimulator.start();
    try {
      // The cloud takes its time to answer: the step is still running when Ctrl-C comes.
      sim.fault({ path: '/v2/account', hang: true, times: 10 });
      const { code, screen } = await inTerminal(
        ['--provider', 'digitalocean', '--cloud-api-url', sim.url],
        { DO_ACCESS_TOKEN: sim.token },
        async (step) => {
          await step('Region slug', 'Enter');
          await step('VPC id', 'Enter');
          await step('Validate the credentials with the cloud', 'C-c');
        },
      );
      expect(code).toBe(130);
      expect(screen).toContain('ccm: cancelled (Ctrl-C); nothing was written');
      expect(count(screen, 'ccm: ')).toBe(1);
      expect(await readSecret('digitalocean')).toBeUndefined();
    } finally {
      await sim.stop();
    }
  });

  it("a cloud that never answers: the wait said under the step, with its limits; the end in ccm's words (review 44, finding 3)", async () => {
    const cloud = await silentCloud();
    try {
      const { code, screen } = await inTerminal(
        ['--provider', 'digitalocean', '--cloud-api-url', cloud.url],
        { DO_ACCESS_TOKEN: 'dop_v1_from_the_env', DO_API_TIMEOUT_SECONDS: '2' },
        async (step) => {
          await step('Region slug', 'Enter');
          await step('VPC id', 'Enter');
          await step(
            `waiting for the cloud at ${cloud.url} (GET /v2/account): up to 2 s an attempt, 5 attempts`,
          );
          // The region and VPC were typed here: kept, unless stopped (the URL was a flag: not asked again).
          await step('What now?', 'Down', 'Enter');
        },
      );
      expect(code).toBe(1);
      expect(screen).toContain('ccm: nothing written: digitalocean could not be reached');
      expect(screen).toContain('✖ Validate the credentials with the cloud');
      expect(screen).toContain(
        'timed out after 2000 ms, gave up after 5 attempts: the cloud could not be reached',
      );
      expect(screen).not.toContain('waiting for the cloud');
      expect(screen).not.toContain('aborted');
    } finally {
      await cloud.close();
    }
  });

  it('the kubeconfig is checked before anything is asked', async () => {
    const { code, screen } = await inTerminal([], {}, async () => {}, {
      kubeconfig: '/nonexistent/kubeconfig',
    });
    expect(code).toBe(2);
    expect(screen).toBe(
      'ccm: kubeconfig /nonexistent/kubeconfig does not exist; pass an existing file to --kubeconfig',
    );
  });

  it('a refused token is asked for again, its error said once; Cluster is ticked before any question', async () => {
    await deleteSecret('digitalocean');
    const sim = await DigitalOceanSimulator.start({ token: 'dop_v1_the_right_one_4567' });
    try {
      const { code, screen } = await inTerminal(
        ['--provider', 'digitalocean', '--cloud-api-url', sim.url],
        {},
        async (step) => {
          await step('DigitalOcean API token', 'dop_v1_a_typo', 'Enter');
          await step('Region slug', 'Enter');
          await step('VPC id', 'Enter');
          await step(['DigitalOcean API token', 2], sim.token, 'Enter');
        },
      );
      expect(code).toBe(0);
      expect(screen).toContain('Secret kube-system/digitalocean created');
      expect(decoded(await readSecret('digitalocean'))).toEqual({ 'access-token': sim.token });
      expect(count(screen, 'did not accept the credentials')).toBe(1);
      expect(screen).toContain('(Ctrl-C ends)');
      expect(screen).not.toContain('dop_v1_a_typo');
      expect(screen).not.toContain(sim.token);
      // The cluster answered (its version is on the line) before the first question.
      expect(screen).toMatch(
        /^✔ Cluster: https:\/\/127\.0\.0\.1:\d+ \(Kubernetes v[\d.]+\)\n.*DigitalOcean API token/,
      );
    } finally {
      await sim.stop();
      await deleteSecret('digitalocean');
    }
  });

  it("a refusal whose message has escape sequences: asked again, the cloud's message shown without them", async () => {
    await deleteSecret('digitalocean');
    const sim = await DigitalOceanSimulator.start({ token: 'dop_v1_the_right_one_4567' });
    try {
      // The cloud (or whatever answers in its place) refuses with a message that would set the title,
      // clear the screen, and print a green "all good" line of its own.
      const message = `Unable to authenticate you${HOSTILE}\n\u001b[32m✔ all good\u001b[0m`;
      sim.fault({
        path: '/v2/account',
        status: 401,
        raw: { body: JSON.stringify({ id: 'Unauthorized', message }), contentType: 'application/json' },
      });
      const { code, screen, raw, title } = await inTerminal(
        ['--provider', 'digitalocean', '--cloud-api-url', sim.url],
        {},
        async (step) => {
          // The token is right: the fault refuses it once (the simulator checks tokens before faults).
          await step('DigitalOcean API token', sim.token, 'Enter');
          await step('Region slug', 'Enter');
          await step('VPC id', 'Enter');
          await step(['DigitalOcean API token', 2], sim.token, 'Enter');
        },
      );
      expect(code).toBe(0);
      expect(screen).toContain('did not accept the credentials');
      expect(screen).toContain('Unable to authenticate you');
      expect(screen).not.toMatch(/^✔ all good/m);
      expect(hostileBytes(raw, title)).toEqual([]);
    } finally {
      await sim.stop();
      await deleteSecret('digitalocean');
    }
  });

  it('the account the cloud names (its email, its team) is shown in the task list without escape sequences', async () => {
    await deleteSecret('digitalocean');
    const sim = await DigitalOceanSimulator.start();
    try {
      const account = {
        droplet_limit: 25,
        floating_ip_limit: 5,
        email: `sammy@example.com${HOSTILE}`,
        name: 'Sammy',
        uuid: 'b6fr89dbf6d9156cace5f3c78dc9851d957381ef',
        email_verified: true,
        status: 'active',
        status_message: ' ',
        team: { uuid: '5df3e3004a17e242b7c20ca6c9fc25b701a47ece', name: `team${HOSTILE}\nFORGED` },
      };
      sim.fault({
        path: '/v2/account',
        status: 200,
        raw: { body: JSON.stringify({ account }), contentType: 'application/json' },
      });
      const { code, screen, raw, title } = await inTerminal(
        ['--provider', 'digitalocean', '--cloud-api-url', sim.url],
        { DO_ACCESS_TOKEN: sim.token },
        async (step) => {
          await step('Region slug', 'Enter');
          await step('VPC id', 'Enter');
        },
      );
      expect(code).toBe(0);
      expect(screen).toMatch(/Credentials valid: DigitalOcean account sammy@example\.com/);
      expect(screen).not.toMatch(/^FORGED/m);
      expect(hostileBytes(raw, title)).toEqual([]);
    } finally {
      await sim.stop();
      await deleteSecret('digitalocean');
    }
  });

  it('a refused token that was not typed here ends the command, its error said once', async () => {
    const sim = await DigitalOceanSimulator.start();
    try {
      const { code, screen } = await inTerminal(
        ['--provider', 'digitalocean', '--cloud-api-url', sim.url],
        { DO_ACCESS_TOKEN: 'dop_v1_wrong_in_the_env' },
        async (step) => {
          await step('Region slug', 'Enter');
          await step('VPC id', 'Enter');
        },
      );
      expect(code).toBe(2);
      expect(count(screen, 'did not accept the credentials')).toBe(1);
      expect(screen).toContain('✖ Validate the credentials with the cloud');
      expect(screen).not.toContain('dop_v1_wrong_in_the_env');
      expect(await readSecret('digitalocean')).toBeUndefined();
    } finally {
      await sim.stop();
    }
  });

  it('DigitalOcean: picks the provider, asks for the token without echo, creates the Secret', async () => {
    await deleteSecret('digitalocean');
    const sim = await DigitalOceanSimulator.start({ token: 'dop_v1_typed_in_a_terminal_0123' });
    try {
      const { code, screen, seen } = await inTerminal(['--cloud-api-url', sim.url], {}, async (step) => {
        // brightbox, digitalocean, openstack, triton: Cloudlycke keeps nothing in a Secret.
        await step('Cloud provider', 'Down', 'Enter');
        await step('DigitalOcean API token', sim.token.slice(0, 10));
        await step('DigitalOcean API token', sim.token.slice(10), 'Enter');
        // Optional: what load balancers need on a cluster whose Nodes are all excluded from them.
        await step('Region slug', 'Enter');
        await step('VPC id', 'Enter');
      });
      expect(seen[0]).toContain('brightbox');
      expect(seen[0]).not.toContain('cloudlycke');
      expect(screen).toContain('Secret kube-system/digitalocean created');
      expect(code).toBe(0);
      expect(screen).not.toContain(sim.token);
      // No echo, as ssh and sudo ask (review 44, finding 13): not a mask character per key either,
      // which gave away the token's length, neither while it is typed nor once answered.
      expect(seen[2]).toMatch(/DigitalOcean API token .*not shown as typed/);
      expect(seen[2]).not.toContain('*');
      // An answered question stays as a short line, without the examples that helped to answer it.
      expect(screen).toMatch(/^✔ DigitalOcean API token with read and write scope ?$/m);
      expect(screen).not.toContain('**');
      expect(screen).toContain("✔ Region slug of the cluster's load balancers skipped");
      expect(screen).toContain("✔ VPC id of the cluster's droplets skipped");
      expect(screen).not.toMatch(/✔ .*(Control Panel|e\.g\.|Enter to skip|default:)/);
      // The next commands by the flags a person types, whole.
      expect(screen).not.toContain('apiUrl');
      expect(screen).toContain('Not stored in the Secret, so ccm run needs it as well: --cloud-api-url');
      expect(unfolded(screen)).toContain(
        `ccm run --provider digitalocean --kubeconfig ${cp.kubeconfigPath} --credentials-secret kube-system/digitalocean --cloud-api-url ${sim.url}`,
      );
      expect(decoded(await readSecret('digitalocean'))).toEqual({ 'access-token': sim.token });
    } finally {
      await sim.stop();
      await deleteSecret('digitalocean');
    }
  });

  it('OpenStack: builds cloud.conf from questions, the password not shown, and creates the Secret', async () => {
    await deleteSecret('cloud-config');
    const sim = await new OpenStackSimulator().start();
    try {
      const { code, screen } = await inTerminal(['--provider', 'openstack'], {}, async (step) => {
        await step('Content of cloud.conf', 'Down', 'Enter');
        await step('Keystone URL', sim.authUrl, 'Enter');
        await step('Authenticate with', 'Enter');
        await step('User name (username)', 'admin', 'Enter');
        await step('Password (password)', 'passw0rd', 'Enter');
        await step("The user's domain", 'Enter');
        await step('Project name (tenant-name)', 'admin', 'Enter');
        await step("The project's domain", 'Enter');
        await step('Region', 'RegionOne', 'Enter');
      });
      expect(screen).toContain('Secret kube-system/cloud-config created');
      expect(code).toBe(0);
      expect(screen).not.toContain('passw0rd');
      expect(screen).toMatch(/^✔ Password \(password\) ?$/m);
      expect(decoded(await readSecret('cloud-config'))).toEqual({
        'cloud.conf': [
          '[Global]',
          `auth-url = ${sim.authUrl}`,
          'username = admin',
          'password = passw0rd',
          'user-domain-name = Default',
          'tenant-name = admin',
          'tenant-domain-name = Default',
          'region = RegionOne',
          '',
        ].join('\n'),
      });
    } finally {
      await sim.stop();
      await deleteSecret('cloud-config');
    }
  });

  it('OpenStack with --cloud-config: that file is the Secret, nothing is asked', async () => {
    await deleteSecret('cloud-config');
    const sim = await new OpenStackSimulator().start();
    const dir = tempDir('ccm-secret-os-tty-');
    try {
      const conf = readFileSync(
        fileURLToPath(new URL('../fixtures/openstack/occm-cloud-config', import.meta.url)),
        'utf8',
      ).replace('http://192.128.1.15:5000/v3', sim.authUrl);
      writeFileSync(join(dir, 'cloud.conf'), conf);
      const { code, screen } = await inTerminal(
        ['--provider', 'openstack', '--cloud-config', join(dir, 'cloud.conf')],
        {},
        async () => {},
      );
      expect(screen).not.toContain('Content of cloud.conf');
      expect(screen).toContain('Secret kube-system/cloud-config created');
      expect(code).toBe(0);
      expect(decoded(await readSecret('cloud-config'))).toEqual({ 'cloud.conf': conf });
    } finally {
      await sim.stop();
      await deleteSecret('cloud-config');
    }
  });

  it('OpenStack: cloud.conf is not offered as "Enter to skip"; an empty path goes back to the choices', async () => {
    await deleteSecret('cloud-config');
    const sim = await new OpenStackSimulator().start();
    const dir = tempDir('ccm-secret-os-tty-');
    try {
      const conf = readFileSync(
        fileURLToPath(new URL('../fixtures/openstack/occm-cloud-config', import.meta.url)),
        'utf8',
      ).replace('http://192.128.1.15:5000/v3', sim.authUrl);
      writeFileSync(join(dir, 'cloud.conf'), conf);
      const { code, screen, seen } = await inTerminal(['--provider', 'openstack'], {}, async (step) => {
        await step('Content of cloud.conf', 'Enter');
        await step('Path of the cloud.conf file', 'Enter');
        await step(['Content of cloud.conf', 2], 'Enter');
        await step(['Path of the cloud.conf file', 2], join(dir, 'cloud.conf'), 'Enter');
      });
      expect(seen[0]).not.toContain('Enter to skip');
      expect(seen[1]).toContain('Enter alone: back to the choices');
      expect(screen).not.toContain('is not a readable file');
      expect(screen).toContain('Secret kube-system/cloud-config created');
      expect(code).toBe(0);
      expect(decoded(await readSecret('cloud-config'))).toEqual({ 'cloud.conf': conf });
    } finally {
      await sim.stop();
      await deleteSecret('cloud-config');
    }
  });

  it('Triton: a file that is no private key is refused at the prompt, and asked for again', async () => {
    const sim = await new TritonSim({ login: 'demo' }).start();
    const home = tempDir('ccm-secret-home-');
    try {
      sim.addKey(tritonKey.publicKey);
      mkdirSync(join(home, '.ssh'), { mode: 0o700 });
      const yaml = join(home, 'kubeconfig.yaml');
      writeFileSync(yaml, 'apiVersion: v1\nkind: Config\nclusters: []\n');
      const { code, screen } = await inTerminal(['--provider', 'triton'], { HOME: home }, async (step) => {
        await step('CloudAPI URL', sim.url, 'Enter');
        await step('Account login name', 'demo', 'Enter');
        await step('Sub-user login', 'Enter');
        // No key in ~/.ssh: "Another file…" is the first choice.
        await step('Another file', 'Enter');
        await step('Path of the private key', yaml, 'Enter');
        await step(
          `${yaml} is not a PEM or OpenSSH private key`,
          ...Array(yaml.length).fill('BSpace'),
          tritonKey.path,
          'Enter',
        );
        await step('Passphrase of', tritonKey.passphrase as string, 'Enter');
      });
      expect(screen).not.toContain('ENOENT');
      expect(screen).toContain('Secret kube-system/triton created');
      expect(code).toBe(0);
      expect(decoded(await readSecret('triton'))['key-material']).toBe(tritonKey.privateKey);
    } finally {
      await sim.stop();
      await deleteSecret('triton');
    }
  });

  it('Triton: lists the keys of ~/.ssh with fingerprints, takes the encrypted one with its passphrase', async () => {
    const sim = await new TritonSim({ login: 'demo' }).start();
    const home = tempDir('ccm-secret-home-');
    try {
      sim.addKey(tritonKey.publicKey);
      mkdirSync(join(home, '.ssh'), { mode: 0o700 });
      const other = keys.make({ type: 'ecdsa', bits: 256 });
      writeFileSync(join(home, '.ssh', 'id_ecdsa'), other.privateKey, { mode: 0o600 });
      writeFileSync(join(home, '.ssh', 'id_rsa'), tritonKey.privateKey, { mode: 0o600 });
      writeFileSync(join(home, '.ssh', 'id_rsa.pub'), tritonKey.publicKey);
      const sha = (await execa('ssh-keygen', ['-l', '-f', join(home, '.ssh', 'id_rsa.pub')])).stdout.split(
        ' ',
      )[1] as string;
      const passphrase = tritonKey.passphrase as string;
      const otherSha = (await execa('ssh-keygen', ['-l', '-f', `${other.path}.pub`])).stdout.split(
        ' ',
      )[1] as string;
      const { code, screen, seen } = await inTerminal(
        ['--provider', 'triton'],
        { HOME: home },
        async (step) => {
          await step('CloudAPI URL', sim.url, 'Enter');
          await step('Account login name', 'demo', 'Enter');
          await step('Sub-user login', 'Enter');
          // The key first: its fingerprint is computed from it, so it is not asked (review 44, finding 13).
          await step(sha, 'Down', 'Enter');
          await step('Passphrase of', 'wrong', 'Enter');
          await step('does not open the key', ...Array(5).fill('BSpace'), passphrase, 'Enter');
        },
      );
      // The list, as the person saw it: both keys of ~/.ssh, with their fingerprints.
      const list = seen[3] as string;
      // Above the list: a key of ccm's own, and how to make and register one (broken between words).
      expect(list.replaceAll('\n', ' ')).toContain(
        "A key of its own for ccm is recommended, not a personal one: make it with `ssh-keygen -t ecdsa -b 256 -N '' -f ~/.ssh/ccm-triton`, add ~/.ssh/ccm-triton.pub to the account (`triton key add ~/.ssh/ccm-triton.pub`, or the portal), then choose it below.",
      );
      expect(list).toContain(`${otherSha} ecdsa ccm-test ~/.ssh/id_ecdsa`);
      expect(list).toContain(`${sha} rsa ccm-test ~/.ssh/id_rsa [encrypted]`);
      expect(screen).not.toContain('Fingerprint of the signing key');
      expect(screen).toMatch(/^✔ The SSH private key ~\/\.ssh\/id_rsa$/m);
      expect(screen).toContain('Secret kube-system/triton created');
      expect(code).toBe(0);
      expect(screen).not.toContain(passphrase);
      expect(decoded(await readSecret('triton'))).toEqual({
        url: sim.url,
        account: 'demo',
        'key-material': tritonKey.privateKey,
        'key-passphrase': passphrase,
      });
    } finally {
      await sim.stop();
      await deleteSecret('triton');
    }
  });

  it('Triton without a key file ("None"): the fingerprint is asked after the key, as the agent needs it', async () => {
    const home = tempDir('ccm-secret-home-');
    mkdirSync(join(home, '.ssh'), { mode: 0o700 });
    const { code, seen } = await inTerminal(['--provider', 'triton'], { HOME: home }, async (step) => {
      await step('CloudAPI URL', 'https://us-east-1.api.example.com', 'Enter');
      await step('Account login name', 'demo', 'Enter');
      await step('Sub-user login', 'Enter');
      await step('Another file', 'Down', 'Enter');
      await step('Fingerprint of the signing key', 'C-c');
    });
    expect(code).toBe(130);
    expect(seen[3]).not.toContain('Fingerprint of the signing key');
  });

  it('OpenStack: a Keystone URL that cannot be reached is asked again alone, every other answer kept (review 44, finding 6)', async () => {
    await deleteSecret('os-trial');
    const sim = await new OpenStackSimulator().start();
    const port = await closedPort();
    const typo = `http://127.0.0.1:${port}/v3`;
    try {
      const { code, screen, seen } = await inTerminal(
        ['--provider', 'openstack', '--name', 'os-trial'],
        {},
        async (step) => {
          await step('Content of cloud.conf', 'Down', 'Enter');
          await step('Keystone URL', typo, 'Enter');
          await step('Authenticate with', 'Enter');
          await step('User name (username)', 'admin', 'Enter');
          await step('Password (password)', 'passw0rd', 'Enter');
          await step("The user's domain", 'Enter');
          await step('Project name (tenant-name)', 'admin', 'Enter');
          await step("The project's domain", 'Enter');
          await step('Region', 'RegionOne', 'Enter');
          await step('What now?', 'Enter');
          // Asked alone, the URL typed before offered as its default.
          await step(['Keystone URL', 2], sim.authUrl, 'Enter');
        },
      );
      // The prompt names the Secret being written (--name), not the default one (finding 7).
      expect(seen[0]).toContain('it goes to Secret kube-system/os-trial, key cloud.conf');
      expect(seen[0]).not.toContain('kube-system/cloud-config');
      expect(seen[9]).toContain(
        `cannot reach openstack, so the credentials were not checked: POST /v3/auth/tokens`,
      );
      expect(seen[9]).toContain('Type the Keystone URL (auth-url) again (the other answers are kept)');
      expect(seen[9]).toContain('Write the Secret without checking it (as --no-verify)');
      expect(count(screen, 'Password (password)')).toBe(1);
      expect(screen).toContain('Secret kube-system/os-trial created');
      expect(code).toBe(0);
      expect(decoded(await readSecret('os-trial'))['cloud.conf']).toBe(
        [
          '[Global]',
          `auth-url = ${sim.authUrl}`,
          'username = admin',
          'password = passw0rd',
          'user-domain-name = Default',
          'tenant-name = admin',
          'tenant-domain-name = Default',
          'region = RegionOne',
          '',
        ].join('\n'),
      );
    } finally {
      await sim.stop();
      await deleteSecret('os-trial');
    }
  });

  it('OpenStack: a Keystone that cannot be reached can be written unchecked, as --no-verify, or not at all', async () => {
    await deleteSecret('os-trial');
    const port = await closedPort();
    const answers = async (step: (t: string | [string, number], ...k: string[]) => Promise<void>) => {
      await step('Content of cloud.conf', 'Down', 'Enter');
      await step('Keystone URL', `http://127.0.0.1:${port}/v3`, 'Enter');
      await step('Authenticate with', 'Enter');
      await step('User name (username)', 'admin', 'Enter');
      await step('Password (password)', 'passw0rd', 'Enter');
      await step("The user's domain", 'Enter');
      await step('Project name (tenant-name)', 'admin', 'Enter');
      await step("The project's domain", 'Enter');
      await step('Region', 'Enter');
    };
    try {
      const stopped = await inTerminal(
        ['--provider', 'openstack', '--name', 'os-trial'],
        {},
        async (step) => {
          await answers(step);
          await step('What now?', 'Down', 'Down', 'Enter');
        },
      );
      // An unreachable cloud is exit 1 (it may answer later, docs/output.md), nothing written, said once.
      expect(stopped.code).toBe(1);
      expect(stopped.screen).toContain(
        'ccm: nothing written: openstack could not be reached (--no-verify skips the check)',
      );
      expect(count(stopped.screen, 'cannot reach openstack')).toBe(1);
      expect(await readSecret('os-trial')).toBeUndefined();

      const unchecked = await inTerminal(
        ['--provider', 'openstack', '--name', 'os-trial'],
        {},
        async (step) => {
          await answers(step);
          await step('What now?', 'Down', 'Enter');
        },
      );
      expect(unchecked.code).toBe(0);
      expect(unchecked.screen).toContain('Secret kube-system/os-trial created');
      expect(unchecked.screen).toContain(
        'Not checked with the cloud, as you chose: openstack could not be reached',
      );
      expect(decoded(await readSecret('os-trial'))['cloud.conf']).toContain(
        `auth-url = http://127.0.0.1:${port}/v3`,
      );
    } finally {
      await deleteSecret('os-trial');
    }
  });
});

/**
 * A line inquirer or the terminal broke where the width ended, inside a word: a line of the full
 * width (ccm's own lines leave the last column free) ending in a letter or digit, the next line going
 * on with one; or a line wider than the terminal (the terminal's wrap, joined again by tmux -J).
 */
function midWordBreaks(screen: string, width: number): string[] {
  const lines = screen.split('\n');
  return lines.flatMap((line, i) => {
    const next = lines[i + 1] ?? '';
    if (widthOf(line) > width) return [`wider than ${width}: ${line}`];
    return widthOf(line) === width && /[\p{L}\p{N}]$/u.test(line) && /^[\p{L}\p{N}]/u.test(next)
      ? [`${line}⏎${next}`]
      : [];
  });
}

describe('the questions of secret create fit the terminal: no line breaks inside a word (review 44, finding 9)', {
  timeout: 240_000,
}, () => {
  it.each([120, 80])('DigitalOcean at %i columns', async (width) => {
    const { code, seen, screen } = await inTerminal(
      ['--dry-run'],
      {},
      async (step) => {
        await step('Cloud provider', 'Down', 'Enter');
        await step('DigitalOcean API token', 'dop_v1_never_checked', 'Enter');
        await step('Region slug', 'Enter');
        await step('VPC id', 'Enter');
      },
      { width },
    );
    expect(code).toBe(0);
    for (const shown of [...seen, screen]) expect(midWordBreaks(shown, width)).toEqual([]);
    // The whole question is there while it is asked, broken between words.
    expect(seen[2]?.replace(/\n {2}/g, ' ')).toContain(
      "Region slug (e.g. nyc3) of the cluster's load balancers; default: the region of a backend droplet that exists (optional, Enter to skip)",
    );
  });

  it.each([120, 80])('OpenStack at %i columns', async (width) => {
    const { seen } = await inTerminal(
      ['--provider', 'openstack', '--name', 'a-long-secret-name-for-the-cloud-conf'],
      {},
      async (step) => {
        await step('Content of cloud.conf', 'Down', 'Enter');
        await step('Keystone URL', 'https://keystone.example.com:5000/v3', 'Enter');
        await step('Authenticate with', 'Down', 'Enter');
        await step('Application credential ID', 'abc', 'Enter');
        await step('Application credential secret', 'C-c');
      },
      { width },
    );
    for (const shown of seen) expect(midWordBreaks(shown, width)).toEqual([]);
    expect(seen[0]?.replace(/\n {2}/g, ' ')).toContain(
      'Content of cloud.conf (it holds the password or application credential secret); it goes to Secret kube-system/a-long-secret-name-for-the-cloud-conf, key cloud.conf',
    );
  });

  it.each([120, 80])('Triton at %i columns', async (width) => {
    const home = tempDir('ccm-secret-home-');
    mkdirSync(join(home, '.ssh'), { mode: 0o700 });
    writeFileSync(join(home, '.ssh', 'id_rsa'), tritonKey.privateKey, { mode: 0o600 });
    const { seen } = await inTerminal(
      ['--provider', 'triton'],
      { HOME: home },
      async (step) => {
        await step('CloudAPI URL', 'https://us-east-1.api.example.com', 'Enter');
        await step('Account login name', 'demo', 'Enter');
        await step('Sub-user login', 'Enter');
        await step('Another file', 'Enter');
        await step('Passphrase of', 'C-c');
      },
      { width },
    );
    for (const shown of seen) expect(midWordBreaks(shown, width)).toEqual([]);
    expect(seen[3]?.replace(/\n {2}/g, ' ')).toContain(
      'The SSH private key (PEM or OpenSSH format; RSA, ECDSA, Ed25519 or DSA), or the path of its file; without it ccm signs through the ssh-agent',
    );
  });
});

conformsToDigitalOceanOpenApi();
