/**
 * godo's own test payloads (github.com/digitalocean/godo, pinned, read from the Go module cache) served
 * to ccm's DigitalOcean client: what DigitalOcean's SDK team recorded of the API, not what we wrote.
 * - tags_test.go `getJSON`: a whole droplet (networks v4 private and public, v6), as a droplet lookup;
 * - links_test.go: the `links.pages` of a first, a middle and a last page, with absolute
 *   https://api.digitalocean.com links, as a three-page droplet listing;
 * - load_balancers_test.go: an active load balancer (get) and a new one (create).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DigitalOceanClient } from '../../src/providers/digitalocean/client.js';
import { createDigitalOcean } from '../../src/providers/digitalocean/index.js';
import { type DoLoadBalancer, owned, statusOf } from '../../src/providers/digitalocean/load-balancers.js';
import { RetryableError } from '../../src/providers/errors.js';
import { type GoSource, goSource } from '../helpers/go-fixtures.js';
import { type FixtureServer, serveFixtures } from '../sdk/fixture-server.js';
import { externalIPs, hostname, internalIPs } from '../unit/helpers/addresses.js';

const GODO = ['github.com/digitalocean/godo', 'v1.236.0'] as const;
const TOKEN = 'dop_v1_fixture0123456789';

/** load_balancers_test.go, which the tests read; the other files serve the fixture server only. */
let balancers: GoSource;
let fixtures: FixtureServer;
let droplet: Record<string, unknown>;

beforeAll(async () => {
  const [tags, links, lbSource] = await Promise.all([
    goSource(...GODO, 'tags_test.go'),
    goSource(...GODO, 'links_test.go'),
    goSource(...GODO, 'load_balancers_test.go'),
  ]);
  balancers = lbSource;
  droplet = JSON.parse(tags.variable('getJSON')).tag.resources.droplets.last_tagged;
  const pages = ['firstPageLinksJSONBlob', 'otherPageLinksJSONBlob', 'lastPageLinksJSONBlob'].map(
    (name) => JSON.parse(links.variable(name)).links,
  );
  fixtures = await serveFixtures((req, res) => {
    if (req.headers.authorization !== `Bearer ${TOKEN}`) return void res.writeHead(401).end();
    const u = new URL(req.url ?? '/', 'http://fixture');
    const send = (body: unknown) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (u.pathname === '/v2/droplets') {
      const page = Number(u.searchParams.get('page') ?? '1');
      // The fixture droplet once per page; its id made distinct so the listing is a listing of three.
      return send({ droplets: [{ ...droplet, id: page }], links: pages[page - 1], meta: { total: 3 } });
    }
    if (u.pathname === `/v2/droplets/${droplet.id}`) return send({ droplet });
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"id":"not_found","message":"x"}');
  });
}, 600_000);

afterAll(async () => {
  await fixtures?.close();
});

describe("godo's payloads, read by ccm", () => {
  it('a droplet: addresses by network type, size, region, running', async () => {
    const provider = createDigitalOcean({ token: TOKEN, baseUrl: fixtures.url });
    expect(await provider.instances.get(`digitalocean://${droplet.id}`)).toEqual({
      providerID: 'digitalocean://1',
      name: 'test.example.com',
      state: 'running',
      type: '1024mb',
      region: 'nyc1',
      zone: '',
      addresses: [
        ...internalIPs('10.0.0.19'),
        ...externalIPs('127.0.0.19', '2001::13'),
        hostname('test.example.com'),
      ],
      labels: {},
    });
  });

  it('a three-page listing whose links name api.digitalocean.com: pages by number, on the configured URL', async () => {
    fixtures.seen.length = 0;
    const provider = createDigitalOcean({ token: TOKEN, baseUrl: fixtures.url });
    const listed = await provider.instances.list();
    expect(listed.map((i) => i.providerID)).toEqual([
      'digitalocean://1',
      'digitalocean://2',
      'digitalocean://3',
    ]);
    expect(fixtures.seen).toEqual([
      'GET /v2/droplets?per_page=200',
      'GET /v2/droplets?page=2&per_page=200',
      'GET /v2/droplets?page=3&per_page=200',
    ]);
  });

  it('an active load balancer: its IPv4 and IPv6 become the ingress, and without our tag it is not ours', () => {
    const lb = JSON.parse(balancers.variable('lbGetJSONResponse')).load_balancer as DoLoadBalancer;
    expect(statusOf(lb, undefined)).toEqual({
      ingress: [{ ip: '46.214.185.203' }, { ip: 'fd53:616d:6d60::d2c:b001' }],
      annotations: { 'kubernetes.digitalocean.com/load-balancer-id': '37e6be88-01ec-4ec7-9bc6-a514d4719057' },
    });
    expect(owned(lb, 'k8s:6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f')).toBe(false);
  });

  it('a load balancer just created is "new": not ready, retried', () => {
    const lb = JSON.parse(balancers.variable('lbCreateJSONResponse')).load_balancer as DoLoadBalancer;
    expect(lb.status).toBe('new');
    expect(() => statusOf(lb, undefined)).toThrow(RetryableError);
  });

  it('the client reads a listing fixture as DigitalOcean pages it', async () => {
    const list = JSON.parse(balancers.variable('lbListJSONResponse'));
    const one = await serveFixtures((req, res) => {
      const page = new URL(req.url ?? '/', 'http://x').searchParams.get('page');
      // The fixture is page 1 of 3 at per_page=1 (its links say so); pages 2 and 3 are not in it.
      const body = page === null ? list : { ...list, load_balancers: [], links: {} };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
    try {
      const client = new DigitalOceanClient({ token: TOKEN, baseUrl: one.url });
      // meta.total says 3 while the pages hold 1: ccm refuses a listing that does not add up.
      await expect(
        client.listAll('listing load balancers', '/v2/load_balancers', 'load_balancers'),
      ).rejects.toThrow(
        /the listing changed while it was read, twice \(read 1 items \(1 distinct\) while the API counted 3\)/,
      );
    } finally {
      await one.close();
    }
  });
});
