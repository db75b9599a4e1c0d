/**
 * gophercloud's own test payloads (github.com/gophercloud/gophercloud/v2, pinned, read from the Go
 * module cache) served to ccm's OpenStack client: what OpenStack's SDK team recorded of the APIs,
 * not what we wrote.
 * - openstack/utils/testing/fixtures_test.go `setupMultiServiceVersionHandler`: Keystone's version
 *   document at /identity/ (v3.14, its link …/identity/v3/), for an auth-url without a version;
 * - openstack/identity/v3/tokens/testing/fixtures.go `TokenOutput`: a password token, its project,
 *   user and catalog (its hosts pointed at this test's server, a load-balancer entry added);
 * - openstack/compute/v2/servers/testing/fixtures_test.go `ServerListBody`: three servers as Nova
 *   2.1 shows them (flavor by id), and openstack/compute/v2/flavors/testing/requests_test.go
 *   `TestGetFlavor`: flavor 1, m1.tiny;
 * - openstack/loadbalancer/v2/loadbalancers/testing/fixtures_test.go `LoadbalancersListBody`: two
 *   load balancers without ccm's tag (named as ccm asked), which ccm must never adopt;
 * - openstack/loadbalancer/v2/apiversions/testing/fixture.go `OctaviaAllAPIVersionsResponse`:
 *   Octavia's version document, which ccm reads to know what that Octavia accepts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCloudConfig } from '../../src/providers/openstack/config.js';
import { createOpenStack } from '../../src/providers/openstack/index.js';
import { endpointFor, identityV3, Keystone } from '../../src/providers/openstack/keystone.js';
import { goSource } from '../helpers/go-fixtures.js';
import { type FixtureServer, serveFixtures } from '../sdk/fixture-server.js';
import { request } from '../unit/providers/openstack/lb-request.js';

const GOPHERCLOUD = ['github.com/gophercloud/gophercloud/v2', 'v2.15.0'] as const;
const SUBJECT_TOKEN = '130f6c17-420e-4a0b-97b0-0c9cf2a05f30';
/** Half an hour into the fixture token's hour (issued 01:19:49, expires 02:19:49). */
const NOW = () => Date.parse('2017-06-03T01:49:49Z');

let versions: string;
let token: Record<string, unknown>;
let serverList: unknown;
let flavor: unknown;
let balancers: { loadbalancers: Record<string, unknown>[] };
let octaviaVersions: unknown;
let fixtures: FixtureServer;

beforeAll(async () => {
  const [utils, tokens, servers, flavors, lbs, lbVersions] = await Promise.all([
    goSource(...GOPHERCLOUD, 'openstack/utils/testing/fixtures_test.go'),
    goSource(...GOPHERCLOUD, 'openstack/identity/v3/tokens/testing/fixtures.go'),
    goSource(...GOPHERCLOUD, 'openstack/compute/v2/servers/testing/fixtures_test.go'),
    goSource(...GOPHERCLOUD, 'openstack/compute/v2/flavors/testing/requests_test.go'),
    goSource(...GOPHERCLOUD, 'openstack/loadbalancer/v2/loadbalancers/testing/fixtures_test.go'),
    goSource(...GOPHERCLOUD, 'openstack/loadbalancer/v2/apiversions/testing/fixture.go'),
  ]);
  fixtures = await serveFixtures((req, res) => {
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    const path = new URL(req.url ?? '/', 'http://fixture').pathname;
    if (req.method === 'GET' && path === '/identity/') {
      return void res
        .writeHead(300, { 'content-type': 'application/json' })
        .end(versions.replaceAll('%s', url));
    }
    if (req.method === 'POST' && path === '/identity/v3/auth/tokens') {
      return send(201, token, { 'x-subject-token': SUBJECT_TOKEN });
    }
    if (req.headers['x-auth-token'] !== SUBJECT_TOKEN) return send(401, { error: { code: 401 } });
    if (path === '/compute/v2.1/a99e9b4e620e4db09a2dfb6e42a01e66/servers/detail')
      return send(200, serverList);
    if (path === '/compute/v2.1/a99e9b4e620e4db09a2dfb6e42a01e66/flavors/1') return send(200, flavor);
    if (path === '/load-balancer/') return send(200, octaviaVersions);
    if (path === '/load-balancer/v2.0/lbaas/loadbalancers') {
      const name = new URL(req.url ?? '/', 'http://fixture').searchParams.get('name');
      if (name === 'ccm_free') return send(200, { loadbalancers: [] });
      return send(200, { loadbalancers: balancers.loadbalancers.map((lb) => ({ ...lb, name })) });
    }
    send(404, { itemNotFound: { code: 404, message: 'not in the fixtures' } });
  });
  const { url } = fixtures;

  versions = utils.inFunction('setupMultiServiceVersionHandler')[0] ?? '';
  const tokenText = tokens
    .variable('TokenOutput')
    .replaceAll('http://127.0.0.1:8774', `${url}/compute`)
    .replaceAll(/http:\/\/127\.0\.0\.1:(5000|35357)/g, `${url}/identity`);
  token = JSON.parse(tokenText);
  const catalog = (token.token as { catalog: unknown[] }).catalog;
  catalog.push({
    type: 'load-balancer',
    name: 'octavia',
    id: 'lb',
    endpoints: [
      { interface: 'public', region: 'RegionOne', region_id: 'RegionOne', url: `${url}/load-balancer` },
    ],
  });
  serverList = JSON.parse(servers.variable('ServerListBody'));
  flavor = JSON.parse(flavors.inFunction('TestGetFlavor')[0] ?? '');
  balancers = JSON.parse(lbs.variable('LoadbalancersListBody'));
  octaviaVersions = JSON.parse(lbVersions.variable('OctaviaAllAPIVersionsResponse'));
}, 600_000);

afterAll(async () => {
  await fixtures?.close();
});

const config = () =>
  parseCloudConfig(
    `[Global]\nauth-url=${fixtures.url}/identity\nregion=RegionOne\nusername=admin\npassword=secret\ndomain-id=default\ntenant-id=a99e9b4e620e4db09a2dfb6e42a01e66\n`,
  );

describe("gophercloud's payloads, read by ccm", () => {
  it("Keystone's version document leads from an unversioned auth-url to its v3", async () => {
    expect(await identityV3(`${fixtures.url}/identity`)).toBe(`${fixtures.url}/identity/v3`);
  });

  it('a token: its project, user and catalog endpoint for each interface', async () => {
    const keystone = new Keystone(config().global, {}, NOW);
    const t = await keystone.current();
    expect(t.project).toEqual({ id: 'a99e9b4e620e4db09a2dfb6e42a01e66', name: 'admin' });
    expect(t.user).toEqual({ name: 'admin' });
    expect(t.expiresAt).toBe(Date.parse('2017-06-03T02:19:49Z'));
    for (const iface of ['public', 'internal', 'admin'] as const) {
      expect(endpointFor(t, 'compute', iface, 'RegionOne')).toEqual({
        url: `${fixtures.url}/compute/v2.1/a99e9b4e620e4db09a2dfb6e42a01e66`,
        region: 'RegionOne',
      });
    }
    expect(endpointFor(t, 'identity', 'admin', '').url).toBe(`${fixtures.url}/identity/v3`);
  });

  it('servers as Nova 2.1 lists them: the flavor by its id, asked once, addresses, zone', async () => {
    fixtures.seen.length = 0;
    const provider = createOpenStack(config(), {}, { now: NOW, retries: 0 });
    const listed = await provider.instances.list();
    expect(listed.map((i) => [i.providerID, i.name, i.state, i.type, i.region, i.zone])).toEqual([
      [
        'openstack:///ef079b0c-e610-4dfb-b1aa-b49f07ac48e5',
        'herp',
        'running',
        'm1.tiny',
        'RegionOne',
        'nova',
      ],
      [
        'openstack:///9e5476bd-a4ec-4653-93d6-72c93aa682ba',
        'derp',
        'running',
        'm1.tiny',
        'RegionOne',
        'nova',
      ],
      [
        'openstack:///9e5476bd-a4ec-4653-93d6-72c93aa682bb',
        'merp',
        'running',
        'm1.tiny',
        'RegionOne',
        'nova',
      ],
    ]);
    expect(listed.map((i) => i.addresses)).toEqual([
      [{ type: 'InternalIP', address: '10.0.0.32' }],
      [{ type: 'InternalIP', address: '10.0.0.31' }],
      [{ type: 'InternalIP', address: '10.0.0.31' }],
    ]);
    expect(fixtures.seen).toEqual([
      'GET /identity/',
      'POST /identity/v3/auth/tokens',
      'GET /compute/v2.1/a99e9b4e620e4db09a2dfb6e42a01e66/servers/detail?limit=1000',
      'GET /compute/v2.1/a99e9b4e620e4db09a2dfb6e42a01e66/flavors/1',
    ]);
  });

  it('load balancers named as ccm asks but without its tag: never adopted, on /v2.0', async () => {
    fixtures.seen.length = 0;
    const provider = createOpenStack(config(), {}, { now: NOW, retries: 0 });
    const req = request({ nodes: [] });
    expect(await provider.loadBalancers?.get(req)).toBeUndefined();
    await expect(provider.loadBalancers?.ensure(req)).rejects.toThrow(
      'a load balancer named ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90 exists in Octavia without the tag ccm-cluster:c0ffee00-1111-2222-3333-444455556666: ccm never adopts it; delete or rename it',
    );
    expect(fixtures.seen.filter((s) => s.includes('load-balancer'))).toEqual([
      'GET /load-balancer/v2.0/lbaas/loadbalancers?name=ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90',
      'GET /load-balancer/v2.0/lbaas/loadbalancers?name=ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90',
    ]);

    // Where none is named so, the version document decides: this one's newest is v2.2 (Rocky),
    // before tags (2.5), so ccm refuses before any change.
    fixtures.seen.length = 0;
    await expect(provider.loadBalancers?.ensure({ ...req, name: 'free' })).rejects.toThrow(
      'Service default/web: ccm tags its load balancers to know them, which needs Octavia API v2.5 (Stein); this Octavia serves v2.2',
    );
    expect(fixtures.seen.filter((s) => s.includes('load-balancer'))).toEqual([
      'GET /load-balancer/v2.0/lbaas/loadbalancers?name=ccm_free',
      'GET /load-balancer/',
    ]);
  });
});
