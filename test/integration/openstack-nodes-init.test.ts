/**
 * `ccm nodes init --provider openstack --cloud-config cloud.conf` end to end: the built CLI against a
 * real kube-apiserver, with the OpenStack simulator (Keystone, Nova) as the cloud and the official
 * controller's example cloud.conf files as configuration.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { createNodes, UNINITIALIZED } from '../controlplane/fixtures.js';
import { openStackCloudConf, useCloudWorld } from '../helpers/cloud-world.js';

const fixture = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../fixtures/openstack/${name}`, import.meta.url)), 'utf8');

// A new simulator (Keystone, Nova) for each test.
const world = useCloudWorld('openstack', { fresh: true });

/** An official example cloud.conf, unchanged but for its auth-url, which names the simulator. */
function cloudConf(name = 'occm-cloud-config'): string {
  const path = join(world.dir, `${name}.conf`);
  writeFileSync(path, openStackCloudConf(world.sim, name), { mode: 0o600 });
  return path;
}

const nodesInit = (config: string, ...extra: string[]) =>
  world.ccm(['nodes', 'init', ...extra], { cloudFlags: ['--cloud-config', config] });

async function node(name: string): Promise<V1Node> {
  return world.api.readNode({ name });
}

async function nodeExists(name: string): Promise<boolean> {
  return (await world.api.listNode({ fieldSelector: `metadata.name=${name}` })).items.length === 1;
}

const gone = { ready: false, tainted: false } as const;

describe('ccm nodes init --provider openstack', () => {
  for (const form of ['occm-cloud-config', 'occm-cloud-config-application-credential']) {
    it(`initialises tainted Nodes from Nova servers with the official example cloud.conf (${form})`, async () => {
      const w1 = world.sim.addServer({
        name: 'k8s-worker-1',
        az: 'az-1',
        flavor: 'm1.large',
        addresses: { private: [{ addr: '10.0.0.11' }, { addr: '172.24.4.11', type: 'floating' }] },
      });
      world.sim.addServer({ name: 'k8s-worker-2', addresses: { private: [{ addr: '10.0.0.12' }] } });
      await createNodes(world.api, [
        { name: 'k8s-worker-1', providedNodeIP: '10.0.0.11' },
        { name: 'k8s-worker-2', providerID: `openstack://RegionOne/${[...world.sim.servers.keys()][1]}` },
      ]);

      const run = await nodesInit(cloudConf(form), '--json');
      expect(run.stderr).toBe('');
      expect(run.exitCode).toBe(0);
      const report = JSON.parse(run.stdout);
      expect(report.summary).toMatchObject({ total: 2, initialized: 2, failed: 0 });
      // one token, one page of servers
      expect(world.sim.requests.map((r) => `${r.method} ${r.path.split('?')[0]} ${r.status}`)).toEqual([
        'POST /identity/v3/auth/tokens 201',
        'GET /compute/v2.1/servers/detail 200',
      ]);

      const n1 = await node('k8s-worker-1');
      expect(n1.spec?.providerID).toBe(`openstack:///${w1.id}`);
      expect(n1.metadata?.labels).toMatchObject({
        'node.kubernetes.io/instance-type': 'm1.large',
        'topology.kubernetes.io/zone': 'az-1',
        'topology.kubernetes.io/region': 'RegionOne',
      });
      expect(n1.spec?.taints ?? []).not.toContainEqual(UNINITIALIZED);
      expect(n1.status?.addresses).toEqual([
        { type: 'InternalIP', address: '10.0.0.11' },
        { type: 'ExternalIP', address: '172.24.4.11' },
        { type: 'Hostname', address: 'k8s-worker-1' },
      ]);
      // the regional provider ID form the official controller writes is kept and matched
      const n2 = await node('k8s-worker-2');
      expect(n2.spec?.providerID).toMatch(/^openstack:\/\/RegionOne\//);
      expect(n2.metadata?.labels?.['node.kubernetes.io/instance-type']).toBe('m1.small');
      // no credential reached the output
      expect(run.stdout).not.toContain('passw0rd');
      expect(run.stdout).not.toContain('rEaqvJka48mpv');
    });
  }

  it('re-authenticates when the token expires mid-run; the pass does not fail', async () => {
    const alive = world.sim.addServer({ name: 'alive', addresses: { private: [{ addr: '10.0.0.1' }] } });
    await createNodes(world.api, [
      { name: 'alive', providerID: `openstack:///${alive.id}`, tainted: false },
      { name: 'vanished', providerID: 'openstack:///5f0e1d2c-0000-4000-8000-00000000dead', ...gone },
    ]);
    // The token dies after the listing: the confirming lookup of the vanished server meets a 401.
    world.sim.expireTokensAfter(/servers\/detail/);
    const run = await nodesInit(cloudConf(), '--deletion-grace-period', '0s', '--json');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout).summary).toMatchObject({ deleted: 1, failed: 0 });
    expect(await nodeExists('vanished')).toBe(false);
    expect(await nodeExists('alive')).toBe(true);
    expect(world.sim.requests.map((r) => `${r.method} ${r.path.split('?')[0]} ${r.status}`)).toEqual([
      'POST /identity/v3/auth/tokens 201',
      'GET /compute/v2.1/servers/detail 200',
      'GET /compute/v2.1/servers/5f0e1d2c-0000-4000-8000-00000000dead 401',
      'POST /identity/v3/auth/tokens 201',
      'GET /compute/v2.1/servers/5f0e1d2c-0000-4000-8000-00000000dead 404',
    ]);
  });

  it('a 5xx on the second page of servers deletes nothing (and the same cluster without it does)', async () => {
    world.sim.maxLimit = 2;
    const servers = [1, 2, 3].map((i) =>
      world.sim.addServer({ name: `w${i}`, addresses: { private: [{ addr: `10.0.0.${i}` }] } }),
    );
    await createNodes(world.api, [
      ...servers.map((s, i) => ({ name: `w${i + 1}`, providerID: `openstack:///${s.id}`, tainted: false })),
      { name: 'vanished', providerID: 'openstack:///5f0e1d2c-0000-4000-8000-00000000dead', ...gone },
    ]);
    world.sim.fault({ path: /servers\/detail/, status: 503, skip: 1 });
    const failed = await nodesInit(cloudConf(), '--deletion-grace-period', '0s', '--json');
    expect(failed.exitCode).toBe(1);
    expect(failed.stderr).toBe('');
    expect(JSON.parse(failed.stdout).listingError).toMatch(
      /servers\/detail\?limit=1000&marker=.*503 Service Unavailable/,
    );
    expect(failed.writes.filter((w) => w.verb === 'delete')).toEqual([]);
    for (const name of ['w1', 'w2', 'w3', 'vanished']) expect(await nodeExists(name)).toBe(true);
    expect(world.sim.requestsTo(/servers\/5f0e1d2c/)).toEqual([]);

    world.sim.clearFaults();
    const healthy = await nodesInit(cloudConf(), '--deletion-grace-period', '0s', '--json');
    expect(healthy.exitCode).toBe(0);
    expect(await nodeExists('vanished')).toBe(false);
  });

  it('refuses a cloud.conf with an unknown key in one line, exit 2, nothing written', async () => {
    const path = join(world.dir, 'typo.conf');
    writeFileSync(path, `${fixture('occm-cloud-config')}\n[Networking]\npublic-network=ext\n`);
    await createNodes(world.api, [{ name: 'n1' }]);
    const run = await nodesInit(path);
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      '[Networking] key public-network is not one ccm knows; the keys of [Networking] are public-network-name',
    );
    expect(run.writes).toEqual([]);
    expect(world.sim.requests).toEqual([]);
  });

  it('without a cloud.conf says how to give one, exit 2', async () => {
    const run = await world.ccm(['nodes', 'init'], {
      cloudFlags: [],
      env: { OS_CLOUD: undefined, OS_CLIENT_CONFIG_FILE: undefined },
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim()).toMatch(
      /^ccm: no cloud\.conf given; pass --cloud-config <file> .* or set OS_CLOUD to use clouds\.yaml \(Secret kube-system\/cloud-config does not exist either\)$/,
    );
  });

  it('refuses wrong credentials in one line without the password, exit 2', async () => {
    const path = join(world.dir, 'wrong.conf');
    writeFileSync(path, world.sim.cloudConf().replace('passw0rd', 'Wr0ngPassw0rd'));
    await createNodes(world.api, [{ name: 'n1' }]);
    const run = await nodesInit(path);
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/Keystone at .* refused the password of user "admin"/);
    expect(run.stderr).not.toContain('Wr0ngPassw0rd');
    expect(run.writes).toEqual([]);
  });
});
