/**
 * `ccm nodes init --provider brightbox`: the built CLI against the real kube-apiserver + etcd, with
 * the Brightbox API simulator as the cloud (token endpoint and /1.0 resources).
 */
import { describe, expect, it } from 'vitest';
import { SIM_CLIENT } from '../clouds/brightbox/simulator.js';
import { createNodes, UNINITIALIZED } from '../controlplane/fixtures.js';
import { addBrightboxWorkers, expectCloudNode } from '../helpers/cloud-nodes.js';
import { useCloudWorld } from '../helpers/cloud-world.js';

// A new simulator for each test, as each test starts from an empty cloud and an empty token cache.
const world = useCloudWorld('brightbox', { fresh: true });
const api = () => world.api;

/** `ccm nodes init` against the simulator (with `env` over its credentials); no secret printed. */
async function nodesInitWith(env: Record<string, string | undefined>, ...extra: string[]) {
  const result = await world.ccm(['nodes', 'init', ...extra], { env });
  for (const secret of [SIM_CLIENT.secret, ...world.sim.issuedTokens]) {
    expect(result.stdout + result.stderr).not.toContain(secret);
  }
  return result;
}
const nodesInit = (...extra: string[]) => nodesInitWith({}, ...extra);

const gone = { tainted: false, ready: false } as const;

describe('ccm nodes init --provider brightbox', () => {
  it('initialises Nodes named after the server id, or after the server name', async () => {
    const [a] = addBrightboxWorkers(world.sim);
    const cip = world.sim.addCloudIP({ mappedTo: a.interfaces[0]?.id, publicIPv4: '109.107.39.1' });
    await createNodes(api(), [{ name: 'srv-aaaaa', providedNodeIP: '10.241.0.10' }, { name: 'worker-b' }]);

    const run = await nodesInit('--json');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(JSON.parse(run.stdout).summary).toMatchObject({ total: 2, initialized: 2, failed: 0 });

    const first = await api().readNode({ name: 'srv-aaaaa' });
    expect(first.spec?.taints ?? []).not.toContainEqual(UNINITIALIZED);
    expectCloudNode(first, {
      providerID: 'brightbox://srv-aaaaa',
      labels: {
        'node.kubernetes.io/instance-type': '2gb.ssd',
        'topology.kubernetes.io/zone': 'gb1-a',
        'topology.kubernetes.io/region': 'gb1',
      },
      addresses: [
        { type: 'ExternalIP', address: '10.241.0.10' },
        { type: 'Hostname', address: 'srv-aaaaa' },
        { type: 'ExternalDNS', address: 'srv-aaaaa.gb1.brightbox.com' },
        { type: 'ExternalDNS', address: `${cip.id}.gb1.brightbox.com` },
      ],
    });
    const second = await api().readNode({ name: 'worker-b' });
    expect(second.spec?.providerID).toBe('brightbox://srv-bbbbb');
    expect(second.metadata?.labels?.['topology.kubernetes.io/zone']).toBe('gb1-b');
    // one token, one listing of every server
    expect(world.sim.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /token/',
      'GET /1.0/servers',
    ]);

    const again = await nodesInit('--json');
    expect(again.exitCode).toBe(0);
    expect(again.writes).toEqual([]);
  });

  it('renews a token the API stopped accepting mid-run, and no Node fails', async () => {
    world.sim.addServer({ id: 'srv-ccccc' });
    world.sim.addServer({ id: 'srv-ddddd' });
    await createNodes(api(), [
      { name: 'srv-ccccc' },
      { name: 'srv-ddddd', providerID: 'brightbox://srv-ddddd', tainted: false },
      { name: 'srv-eeeee', providerID: 'brightbox://srv-eeeee', ...gone },
    ]);
    world.sim.inject({
      path: '/1.0/servers',
      status: 401,
      body: { error: 'invalid_token', error_description: 'expired' },
    });
    world.sim.inject({
      path: '/1.0/servers/srv-eeeee',
      status: 401,
      body: { error: 'invalid_token', error_description: 'expired' },
    });
    const run = await nodesInit('--deletion-grace-period', '0s', '--json');
    expect(run.exitCode).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.summary).toMatchObject({ initialized: 1, deleted: 1, failed: 0 });
    expect(world.sim.count('POST', '/token/')).toBe(3);
  });

  it('deletes the Node of a server Brightbox no longer has or answers as deleted/failed, never on another 404', async () => {
    world.sim.addServer({ id: 'srv-alive' });
    world.sim.addServer({ id: 'srv-dead1', status: 'deleted' });
    world.sim.addServer({ id: 'srv-bust1', status: 'failed' });
    await createNodes(api(), [
      { name: 'srv-alive', providerID: 'brightbox://srv-alive', tainted: false },
      { name: 'srv-dead1', providerID: 'brightbox://srv-dead1', ...gone },
      { name: 'srv-bust1', providerID: 'brightbox://srv-bust1', ...gone },
      { name: 'srv-gone1', providerID: 'brightbox://srv-gone1', ...gone },
      { name: 'srv-proxy', providerID: 'brightbox://srv-proxy', ...gone },
      { name: 'srv-flaky', providerID: 'brightbox://srv-flaky', ...gone },
    ]);
    world.sim.inject({ path: '/1.0/servers/srv-proxy', status: 404, body: '<html>Not Found</html>' });
    world.sim.inject({ path: '/1.0/servers/srv-flaky', status: 503, times: 20 });
    // 5 of 6 missing would be held by the deletion brake before any lookup, and a pass confirms 3
    // deletions at most: the lookups are what this test is about, so two passes, brake wide open.
    const brake = ['--max-deletion-ratio', '0.9', '--node-deletion-rate', '1000'];
    const first = await nodesInit('--deletion-grace-period', '0s', '--json', ...brake);
    // The first pass's deletions are read back from their Events, whose times count to the end of
    // their second: past it, the rate has tokens again.
    await new Promise((r) => setTimeout(r, 1100));
    const run = await nodesInit('--deletion-grace-period', '0s', '--json', ...brake);
    const names = (await api().listNode()).items.map((n) => n.metadata?.name).sort();
    // The official controller's instances.go l.133-144: a server answered as deleted or failed does
    // not exist, like Brightbox's own 404 (srv-gone1); a foreign 404 or an outage is never "gone".
    expect(names).toEqual(['srv-alive', 'srv-flaky', 'srv-proxy']);
    expect(JSON.parse(first.stdout).summary).toMatchObject({ deleted: 3 });
    expect(run.exitCode).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.summary).toMatchObject({ deleted: 0, failed: 2, waiting: 0 });
  });

  it('deletes and initialises nothing when the listing fails', async () => {
    world.sim.addServer({ id: 'srv-aaaaa' });
    await createNodes(api(), [
      { name: 'srv-aaaaa' },
      { name: 'srv-gone1', providerID: 'brightbox://srv-gone1', ...gone },
    ]);
    world.sim.inject({ path: '/1.0/servers', status: 500, times: 10 });
    const run = await nodesInit('--deletion-grace-period', '0s', '--json');
    expect(run.exitCode).toBe(1);
    expect(JSON.parse(run.stdout).listingError).toMatch(/^cloud listing failed: /);
    expect(run.writes).toEqual([]);
  });

  it('refuses wrong credentials in one line, exit 2, and writes nothing', async () => {
    await createNodes(api(), [{ name: 'srv-aaaaa' }]);
    const run = await nodesInitWith({ BRIGHTBOX_CLIENT_SECRET: 'not-the-secret' });
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain(
      'check the client id (env BRIGHTBOX_CLIENT) and its secret (env BRIGHTBOX_CLIENT_SECRET)',
    );
    expect(run.stderr + run.stdout).not.toContain('not-the-secret');
    expect(run.writes).toEqual([]);
  });

  it('refuses a missing client secret before calling anything: one line, exit 2', async () => {
    const run = await nodesInitWith({ BRIGHTBOX_CLIENT_SECRET: undefined });
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim()).toContain('set BRIGHTBOX_CLIENT_SECRET');
    expect(world.sim.requests).toEqual([]);
  });
});
