/**
 * `ccm nodes init --provider digitalocean`: the built CLI against a real kube-apiserver + etcd, with
 * the DigitalOcean simulator as the cloud. Every request and answer is checked against DigitalOcean's
 * OpenAPI document; a test fails on any violation.
 */
import type { V1Node } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { DIGITALOCEAN_WORKER_1 } from '../helpers/cloud-nodes.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import { Terminal } from '../helpers/terminal.js';

const world = useCloudWorld('digitalocean', {
  afterEachTest: (w) => {
    expect(w.sim.takeViolations()).toEqual([]);
  },
});

function nodesInit(options: { token?: string; env?: Record<string, string>; flags?: string[] } = {}) {
  return world.ccm(['nodes', 'init', ...(options.flags ?? [])], {
    env: { ...(options.token === undefined ? {} : { DO_ACCESS_TOKEN: options.token }), ...options.env },
    ...(options.env?.DO_OVERRIDE_URL ? { cloudFlags: [] } : {}),
  });
}

const node = (name: string): Promise<V1Node> => world.api.readNode({ name });
const exists = async (name: string) =>
  (await world.api.listNode({ fieldSelector: `metadata.name=${name}` })).items.length === 1;
const tainted = (n: V1Node) =>
  (n.spec?.taints ?? []).some((t) => t.key === 'node.cloudprovider.kubernetes.io/uninitialized');

function fleet(n: number, prefix = 'pool-') {
  return world.sim.addDroplets(
    ...Array.from({ length: n }, (_, i) => ({
      name: `${prefix}${String(i).padStart(4, '0')}`,
      privateIP: `10.1.${i >> 8}.${i & 255}`,
    })),
  );
}

describe('ccm nodes init --provider digitalocean', () => {
  it('initialises tainted Nodes from droplets, by provider ID and by droplet name', async () => {
    const [w1, w2] = world.sim.addDroplets(
      { ...DIGITALOCEAN_WORKER_1, ipv6: '2001:db8::21' },
      { name: 'Worker-2', region: 'fra1', privateIP: '10.114.0.3' },
    );
    await createNodes(world.api, [
      { name: 'worker-1', providerID: `digitalocean://${w1?.id}` },
      // The kubelet lowercases the hostname; the droplet keeps its case.
      { name: 'worker-2' },
    ]);
    const run = await nodesInit();
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);

    const one = await node('worker-1');
    expect(tainted(one)).toBe(false);
    expect(one.metadata?.labels).toMatchObject({
      'node.kubernetes.io/instance-type': 's-4vcpu-8gb',
      'topology.kubernetes.io/region': 'fra1',
    });
    expect(one.metadata?.labels?.['topology.kubernetes.io/zone']).toBeUndefined();
    expect(one.status?.addresses).toEqual([
      { type: 'InternalIP', address: '10.114.0.2' },
      { type: 'ExternalIP', address: '203.0.113.21' },
      { type: 'ExternalIP', address: '2001:db8::21' },
      { type: 'Hostname', address: 'worker-1' },
    ]);
    const two = await node('worker-2');
    expect(two.spec?.providerID).toBe(`digitalocean://${w2?.id}`);
    expect(tainted(two)).toBe(false);
    // One listing, nothing else.
    expect(world.sim.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /v2/droplets?per_page=200']);
  });

  it('takes the API URL from DO_OVERRIDE_URL, as the official controller does', async () => {
    const [d] = world.sim.addDroplets({ name: 'w-env', privateIP: '10.114.0.9' });
    await createNodes(world.api, [{ name: 'w-env' }]);
    const run = await nodesInit({ env: { DO_OVERRIDE_URL: world.sim.url } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect((await node('w-env')).spec?.providerID).toBe(`digitalocean://${d?.id}`);
  });

  it('nodes list: a cloud listing that failed is exit 1, with the Nodes still listed', async () => {
    await createNodes(world.api, [{ name: 'listed-anyway' }]);
    // A cloud that stays unavailable: a transient error, retried, then the Nodes listed without it.
    world.sim.fault({ method: 'GET', path: '/v2/droplets', status: 503, times: 10 });
    const run = await world.ccm(['nodes', 'list']);
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.stdout).toContain('listed-anyway');
    expect(`${run.stdout}\n${run.stderr}`).toContain('cloud listing failed');
  });

  it('fails the Node whose name two droplets share, and initialises the others', async () => {
    world.sim.addDroplets(
      { name: 'twin', privateIP: '10.114.0.4' },
      { name: 'twin', privateIP: '10.114.0.5' },
    );
    world.sim.addDroplets({ name: 'single', privateIP: '10.114.0.6' });
    await createNodes(world.api, [{ name: 'twin' }, { name: 'single' }]);
    const run = await nodesInit({ flags: ['--json'] });
    expect(run.exitCode, run.stderr).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.nodes.find((n: { name: string }) => n.name === 'twin')).toMatchObject({
      result: 'failed',
      reason: expect.stringContaining('several cloud instances are named twin'),
    });
    expect(tainted(await node('twin'))).toBe(true);
    expect((await node('twin')).spec?.providerID).toBeUndefined();
    expect(tainted(await node('single'))).toBe(false);
  });

  it('deletes the Node of a droplet DigitalOcean answers 404 for, after the listing lacks it', async () => {
    const [kept] = world.sim.addDroplets({ name: 'kept', privateIP: '10.114.0.7' });
    await createNodes(world.api, [
      { name: 'kept', providerID: `digitalocean://${kept?.id}`, tainted: false },
      { name: 'gone', providerID: 'digitalocean://777777', tainted: false, ready: false },
    ]);
    const run = await nodesInit({ flags: ['--deletion-grace-period', '0s'] });
    expect(run.exitCode).toBe(0);
    expect(await exists('gone')).toBe(false);
    expect(await exists('kept')).toBe(true);
    expect(world.sim.requests.map((r) => `${r.method} ${r.url} ${r.status}`)).toEqual([
      'GET /v2/droplets?per_page=200 200',
      'GET /v2/droplets/777777 404',
    ]);
  });

  describe('faults', () => {
    async function nodesAtRisk() {
      const droplets = fleet(450);
      await createNodes(world.api, [
        ...droplets
          .slice(0, 3)
          .map((d) => ({ name: d.name as string, providerID: `digitalocean://${d.id}` })),
        { name: 'really-gone', providerID: 'digitalocean://888888', tainted: false, ready: false },
      ]);
    }

    it('a 5xx mid-pagination deletes no Node and initialises none: exit 1', async () => {
      await nodesAtRisk();
      world.sim.fault({ path: '/v2/droplets', page: 2, status: 503, times: 100 });
      const run = await nodesInit({ flags: ['--deletion-grace-period', '0s', '--json'] });
      expect(run.exitCode).toBe(1);
      const report = JSON.parse(run.stdout);
      expect(report.listingError).toMatch(
        /^cloud listing failed: DigitalOcean listing droplets failed: GET \/v2\/droplets\?page=2&per_page=200: 503 Service Unavailable/,
      );
      expect(await exists('really-gone')).toBe(true);
      expect(run.writes.filter((w) => w.verb === 'delete')).toEqual([]);
      expect(world.sim.requestsTo('GET', /^\/v2\/droplets\/\d+$/)).toEqual([]);
    });

    it('a failed listing exits 1 even when every Node was skipped: a CronJob must see it', async () => {
      await createNodes(world.api, [
        { name: 'elsewhere', providerID: 'cloudlycke://elsewhere', tainted: false },
        { name: 'no-id-yet', tainted: false },
      ]);
      world.sim.fault({ path: '/v2/droplets', status: 503, times: 100 });
      const run = await nodesInit({ flags: ['--json'] });
      expect(run.exitCode).toBe(1);
      expect(JSON.parse(run.stdout).listingError).toMatch(/^cloud listing failed: /);
      expect(run.writes).toEqual([]);
    });

    it('a cloud that never answers is said once per request, what and for how long, not minutes of silence', async () => {
      await createNodes(world.api, [{ name: 'waits' }]);
      world.sim.fault({ path: '/v2/droplets', hang: true, times: 100 });
      const run = await nodesInit({ env: { DO_API_TIMEOUT_SECONDS: '2' } });
      expect(run.exitCode).toBe(1);
      const waits = run.stderr.split('\n').filter((l) => l.startsWith('ccm: waiting for the cloud'));
      expect(waits).toEqual([
        `ccm: waiting for the cloud at ${new URL(world.sim.url).origin} (GET /v2/droplets): up to 2 s an attempt, 5 attempts`,
      ]);
    }, 120_000);

    it('on a terminal, the waiting line shows while the cloud is silent and is erased after', async () => {
      await createNodes(world.api, [{ name: 'waits-tty' }]);
      world.sim.fault({ path: '/v2/droplets', hang: true, times: 100 });
      const terminal = await Terminal.open(world.args(['nodes', 'init']), {
        width: 120,
        height: 30,
        env: { ...world.env(), DO_API_TIMEOUT_SECONDS: '2' },
      });
      try {
        await terminal.waitFor('waiting for the cloud at', 30_000);
        expect(await terminal.exit(60_000)).toBe(1);
        const screen = await terminal.screen({ joined: true });
        expect(screen).not.toContain('waiting for the cloud');
        expect(screen).toContain('cloud listing failed');
      } finally {
        await terminal.close();
      }
    }, 120_000);

    it('a page that times out deletes no Node: exit 1', async () => {
      await nodesAtRisk();
      world.sim.fault({ path: '/v2/droplets', page: 3, hang: true, times: 100 });
      const run = await nodesInit({
        env: { DO_API_TIMEOUT_SECONDS: '1' },
        flags: ['--deletion-grace-period', '0s', '--json'],
      });
      expect(run.exitCode).toBe(1);
      expect(JSON.parse(run.stdout).listingError).toContain('page=3&per_page=200: timed out after 1000 ms');
      expect(await exists('really-gone')).toBe(true);
      expect(run.writes.filter((w) => w.verb === 'delete')).toEqual([]);
    });

    it('a droplet that vanishes between pages hides no other droplet', async () => {
      const droplets = fleet(450);
      const shifted = droplets[200]; // first of page 2 before the shift
      const vanishing = droplets[5];
      await createNodes(world.api, [
        {
          name: shifted?.name as string,
          providerID: `digitalocean://${shifted?.id}`,
          tainted: false,
          ready: false,
        },
        { name: 'pool-0201' },
      ]);
      world.sim.fault({
        path: '/v2/droplets',
        page: 1,
        after: (s) => s.removeDroplet(vanishing?.id as number),
      });
      const run = await nodesInit({ flags: ['--deletion-grace-period', '0s', '--json'] });
      expect(run.exitCode).toBe(0);
      expect(await exists(shifted?.name as string)).toBe(true);
      expect(tainted(await node('pool-0201'))).toBe(false);
      // The shifted sweep was read again; nothing was confirmed by id because nothing was missing.
      expect(world.sim.requestsTo('GET', '/v2/droplets')).toHaveLength(6);
      expect(world.sim.requestsTo('GET', /^\/v2\/droplets\/\d+$/)).toEqual([]);
    });

    it('waits out a 429 retry-after and sends nothing before it', async () => {
      fleet(250);
      await createNodes(world.api, [{ name: 'pool-0000' }]);
      world.sim.fault({ path: '/v2/droplets', page: 2, status: 429, retryAfterSeconds: 2 });
      const run = await nodesInit();
      expect(run.exitCode).toBe(0);
      const [, limited, retried] = world.sim.requests;
      expect(limited?.status).toBe(429);
      expect((retried?.at ?? 0) - (limited?.answeredAt ?? 0)).toBeGreaterThanOrEqual(2000);
      expect(tainted(await node('pool-0000'))).toBe(false);
    });

    it('an invalid token is one clear line, exit 2, and no write', async () => {
      fleet(3);
      await createNodes(world.api, [
        { name: 'pool-0000' },
        { name: 'ghost', providerID: 'digitalocean://999', ready: false },
      ]);
      const token = 'dop_v1_0000000000000000000000000000000000000000000000000000000000000000';
      const run = await nodesInit({ token, flags: ['--deletion-grace-period', '0s'] });
      expect(run.exitCode).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr).toBe(
        'ccm: DigitalOcean listing droplets failed (GET /v2/droplets?per_page=200: 401 Unauthorized (Unable to authenticate you.)): the token is invalid or revoked; create one with read and write scope (the token from env DO_ACCESS_TOKEN)',
      );
      expect(run.writes).toEqual([]);
      expect(await exists('ghost')).toBe(true);
    });

    it('a missing token is one line naming where to put it, exit 2, before any request', async () => {
      const run = await nodesInit({ token: '' });
      expect(run.exitCode).toBe(2);
      expect(run.stderr).toBe(
        'ccm: no DigitalOcean API token; set env DO_ACCESS_TOKEN or Secret kube-system/digitalocean, key access-token (a token with read and write scope) (Secret kube-system/digitalocean does not exist either)',
      );
      expect(world.sim.requests).toEqual([]);
    });
  });
});

describe('the Secret `ccm secret create` writes (kube-system/digitalocean)', () => {
  const SECRET = { namespace: 'kube-system', name: 'digitalocean' };
  beforeEach(async () => {
    await world.api.createNamespacedSecret({
      namespace: SECRET.namespace,
      body: { metadata: { name: SECRET.name }, stringData: { 'access-token': world.sim.token } },
    });
  });
  afterEach(async () => {
    await world.api.deleteNamespacedSecret(SECRET);
  });
  const cli = (args: string[], token = '') => world.ccm(args, { env: { DO_ACCESS_TOKEN: token } });

  it('is read by nodes list and nodes init when no token is given, and they say so', async () => {
    world.sim.addDroplets({ name: 'from-secret', privateIP: '10.114.0.7' });
    await createNodes(world.api, [{ name: 'from-secret' }]);
    const listed = await cli(['nodes', 'list', '-o', 'json']);
    expect(listed.exitCode, listed.stderr).toBe(0);
    const list = JSON.parse(listed.stdout);
    expect(list.credentials).toBe('Secret kube-system/digitalocean');
    expect(list.nodes[0].instance.name).toBe('from-secret');

    const init = await cli(['nodes', 'init']);
    expect(init.exitCode, init.stderr).toBe(0);
    expect(init.stdout).toContain('credentials from Secret kube-system/digitalocean');
    expect(tainted(await node('from-secret'))).toBe(false);
  });

  it('is not read when the environment has a token: that one is used', async () => {
    const listed = await cli(['nodes', 'list', '-o', 'json'], world.sim.token);
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).credentials).toBe('flags and environment');
  });
});

conformsToDigitalOceanOpenApi();
