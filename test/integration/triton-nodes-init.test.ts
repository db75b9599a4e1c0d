/**
 * `ccm nodes init --provider triton` end to end: the built CLI against a real kube-apiserver, with
 * the CloudAPI simulator (every signature verified with http-signature) as the cloud.
 */
import type { V1Node } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import type { TestKey } from '../clouds/triton/keys.js';
import { createNodes, UNINITIALIZED } from '../controlplane/fixtures.js';
import { expectCloudNode, tritonWorker } from '../helpers/cloud-nodes.js';
import { useCloudWorld } from '../helpers/cloud-world.js';

const world = useCloudWorld('triton', {
  key: { type: 'rsa', bits: 2048, passphrase: 'a passphrase nobody may see' },
});
let key: TestKey;
let stranger: TestKey;
beforeAll(() => {
  key = world.key;
  stranger = world.keys.make({ type: 'ecdsa', bits: 256 });
});

/** `ccm nodes init` signed with the world's key, or with `signWith`. */
function nodesInit(extra: string[] = [], signWith?: TestKey) {
  const env = signWith
    ? { TRITON_KEY_MATERIAL: signWith.privateKey, TRITON_KEY_PASSPHRASE: signWith.passphrase }
    : {};
  return world.ccm(['nodes', 'init', ...extra], { env });
}

async function node(name: string): Promise<V1Node> {
  return world.api.readNode({ name });
}

async function nodeExists(name: string): Promise<boolean> {
  return (await world.api.listNode({ fieldSelector: `metadata.name=${name}` })).items.length === 1;
}

/** Every line of the key's base64 body, so that any fragment of it in an output is found. */
function keyFragments(k: TestKey): string[] {
  return k.privateKey
    .split('\n')
    .filter((l) => l.length > 20 && !l.startsWith('-----'))
    .map((l) => l.slice(0, 24));
}

describe('ccm nodes init --provider triton', () => {
  it('initialises tainted Nodes from the machines: provider ID, package, data centre, addresses', async () => {
    const w1 = world.sim.addMachine(tritonWorker('w1'));
    const w2 = world.sim.addMachine({ name: 'w2', ips: ['10.10.0.12'] });
    await createNodes(world.api, [
      { name: 'w1', providedNodeIP: '10.10.0.11' },
      { name: 'w2', providerID: `triton://${w2.id}` },
    ]);

    const run = await nodesInit(['--json']);
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.summary).toMatchObject({ total: 2, initialized: 2, failed: 0 });
    // one page of machines and one ListDatacenters (the region), nothing per Node
    expect(report.cloudCalls).toBe(2);

    const n1 = await node('w1');
    expect(n1.metadata?.labels?.['topology.kubernetes.io/zone']).toBeUndefined();
    expect(n1.spec?.taints ?? []).not.toContainEqual(UNINITIALIZED);
    expectCloudNode(n1, {
      providerID: `triton://${w1.id}`,
      labels: { 'node.kubernetes.io/instance-type': 'k8s-8g', 'topology.kubernetes.io/region': 'us-test-1' },
      addresses: [
        { type: 'InternalIP', address: '10.10.0.11' },
        { type: 'ExternalIP', address: '165.225.130.11' },
        { type: 'Hostname', address: 'w1' },
      ],
    });
    expect((await node('w2')).metadata?.labels?.['node.kubernetes.io/instance-type']).toBe('k8s-4g');

    // every request was signed with the encrypted key and verified
    expect(world.sim.requests.every((r) => r.status === 200 && r.algorithm === 'RSA-SHA256')).toBe(true);

    const second = await nodesInit(['--json']);
    expect(second.exitCode).toBe(0);
    expect(second.writes).toEqual([]);
  });

  it('a key that is not registered: one line, exit 2, nothing written', async () => {
    world.sim.addMachine({ name: 'w1', ips: ['10.10.0.11'] });
    await createNodes(world.api, [{ name: 'w1' }]);
    const run = await nodesInit([], stranger);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toBe(
      `ccm: CloudAPI refused key ${stranger.fingerprint} for account demo (401 InvalidCredentials): it knows no such account, or the key is not registered for it; check TRITON_URL, TRITON_ACCOUNT and the key (triton key list)`,
    );
    expect(run.writes).toEqual([]);
  });

  it('a failed page of machines deletes no Node, exit 1', async () => {
    const first = world.sim.addMachine({ name: 'm-0', ips: ['10.20.0.0'] });
    for (let i = 1; i < 1200; i++)
      world.sim.addMachine({ name: `m-${i}`, ips: [`10.20.${i >> 8}.${i & 255}`] });
    const gone = world.sim.addMachine({ name: 'gone', state: 'deleted' });
    await createNodes(world.api, [
      { name: 'm-0', providerID: `triton://${first.id}`, tainted: false },
      { name: 'gone', providerID: `triton://${gone.id}`, tainted: false, ready: false },
    ]);
    // the second page fails however often it is asked
    world.sim.fault({
      path: /^\/demo\/machines$/,
      status: 503,
      body: { code: 'ServiceUnavailable', message: 'maintenance window' },
      headers: { 'retry-after': '0' },
      after: 1,
    });
    const run = await nodesInit(['--deletion-grace-period', '0s', '--json']);
    expect(run.exitCode).toBe(1);
    expect(JSON.parse(run.stdout).listingError).toMatch(
      /^cloud listing failed: GET \/demo\/machines\?offset=999&limit=1000: 503/,
    );
    expect(run.writes).toEqual([]);
    expect(await nodeExists('gone')).toBe(true);
  });

  it('deletes the Node of a destroyed machine only after GetMachine confirms it (410)', async () => {
    const alive = world.sim.addMachine({ name: 'alive', ips: ['10.10.0.1'] });
    const gone = world.sim.addMachine({ name: 'gone', state: 'deleted' });
    await createNodes(world.api, [
      { name: 'alive', providerID: `triton://${alive.id}`, tainted: false },
      { name: 'gone', providerID: `triton://${gone.id}`, tainted: false, ready: false },
    ]);
    const run = await nodesInit(['--deletion-grace-period', '0s']);
    expect(run.exitCode).toBe(0);
    expect(await nodeExists('gone')).toBe(false);
    expect(await nodeExists('alive')).toBe(true);
    expect(world.sim.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toContain(
      `GET /demo/machines/${gone.id} 410`,
    );
  });

  it('keeps the Node of a failed machine: not listed by CloudAPI, but GetMachine answers it (failed, shut down)', async () => {
    const alive = world.sim.addMachine({ name: 'alive', ips: ['10.10.0.1'] });
    const failed = world.sim.addMachine({ name: 'failed', state: 'failed', ips: ['10.10.0.2'] });
    await createNodes(world.api, [
      { name: 'alive', providerID: `triton://${alive.id}`, tainted: false },
      { name: 'failed', providerID: `triton://${failed.id}`, tainted: false, ready: false },
    ]);
    const run = await nodesInit(['--deletion-grace-period', '0s', '--json']);
    expect(run.exitCode).toBe(0);
    expect(await nodeExists('failed')).toBe(true);
    expect(world.sim.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toContain(
      `GET /demo/machines/${failed.id} 200`,
    );
    expect(run.stdout).toContain(
      `instance triton://${failed.id} missing from the listing but found by lookup (stopped); kept`,
    );
  });

  it('no key material or passphrase in any output, JSON or debug, failed or not', async () => {
    world.sim.addMachine({ name: 'w1', ips: ['10.10.0.11'] });
    await createNodes(world.api, [{ name: 'w1' }]);
    world.sim.fault({
      path: /^\/demo\/machines$/,
      status: 401,
      body: { code: 'InvalidCredentials', message: String(key.passphrase) },
    });
    const outputs: string[] = [];
    for (const extra of [['--json'], ['--log-level', 'debug'], ['--json', '--log-level', 'debug']]) {
      const run = await nodesInit(extra);
      outputs.push(run.stdout, run.stderr);
    }
    world.sim.faults.length = 0;
    const ok = await nodesInit(['--json', '--log-level', 'debug']);
    outputs.push(ok.stdout, ok.stderr);
    const wrongPassphrase = await nodesInit([], { ...key, passphrase: 'not the passphrase' });
    expect(wrongPassphrase.exitCode).toBe(2);
    outputs.push(wrongPassphrase.stdout, wrongPassphrase.stderr);
    const all = outputs.join('\n');
    expect(all).not.toContain(String(key.passphrase));
    expect(all).not.toContain('not the passphrase');
    for (const fragment of keyFragments(key)) expect(all).not.toContain(fragment);
    expect(all).not.toContain('PRIVATE KEY');
  });
});
