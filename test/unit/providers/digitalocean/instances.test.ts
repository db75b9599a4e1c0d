import { describe, expect, it } from 'vitest';
import type { DigitalOceanClientOptions } from '../../../../src/providers/digitalocean/client.js';
import { createDigitalOcean } from '../../../../src/providers/digitalocean/index.js';
import { type Droplet, fromDroplet, slimDroplet } from '../../../../src/providers/digitalocean/instances.js';
import {
  InvalidConfigError,
  NotFoundError,
  RetryableError,
  UnauthorizedError,
} from '../../../../src/providers/errors.js';
import { DigitalOceanSimulator } from '../../../clouds/digitalocean/server.js';
import { conformsToDigitalOceanOpenApi } from '../../../helpers/openapi.js';
import { externalIPs, hostname, internalIPs } from '../../helpers/addresses.js';
import { expectRefusedProviderIDs } from '../../helpers/provider-ids.js';
import { useDigitalOceanSim } from './helpers.js';

const sim = useDigitalOceanSim();

function provider(overrides: Partial<DigitalOceanClientOptions> = {}) {
  return createDigitalOcean({
    token: sim.token,
    baseUrl: sim.url,
    // Generous: the machine running the tests may be busy; the timeout tests set their own.
    timeoutMs: 20_000,
    http: { backoff: { baseMs: 5, maxMs: 20 } },
    ...overrides,
  });
}

function fleet(n: number) {
  return sim.addDroplets(
    ...Array.from({ length: n }, (_, i) => ({
      name: `node-${i}`,
      privateIP: `10.0.${i >> 8}.${i & 255}`,
      publicIP: `198.51.100.${i % 250}`,
    })),
  );
}

const listings = () => sim.requestsTo('GET', '/v2/droplets');

describe('listing droplets', () => {
  it('reads every page with per_page=200 through links.pages.next, and maps a droplet to an instance', async () => {
    fleet(449);
    sim.addDroplets({
      id: 9_000_001,
      name: 'worker-a',
      status: 'off',
      size: 's-4vcpu-8gb',
      region: 'fra1',
      privateIP: '10.110.0.7',
      publicIP: '203.0.113.7',
      ipv6: '2001:db8::7',
    });
    const instances = await provider().instances.list();
    expect(instances).toHaveLength(450);
    expect(listings().map((r) => r.url)).toEqual([
      '/v2/droplets?per_page=200',
      '/v2/droplets?page=2&per_page=200',
      '/v2/droplets?page=3&per_page=200',
    ]);
    expect(instances.find((i) => i.name === 'worker-a')).toEqual({
      providerID: 'digitalocean://9000001',
      name: 'worker-a',
      state: 'stopped',
      type: 's-4vcpu-8gb',
      region: 'fra1',
      zone: '',
      addresses: [
        ...internalIPs('10.110.0.7'),
        ...externalIPs('203.0.113.7', '2001:db8::7'),
        hostname('worker-a'),
      ],
      labels: {},
    });
    expect(sim.requests.every((r) => r.authorization === `Bearer ${sim.token}`)).toBe(true);
  });

  it('keeps of each listed droplet only what ccm reads: the same instance from a fraction of the object', () => {
    const [full] = sim.addDroplets({
      name: 'worker-b',
      region: 'ams3',
      privateIP: '10.110.0.8',
      publicIP: '203.0.113.8',
      ipv6: '2001:db8::8',
    }) as unknown as Droplet[];
    const slim = slimDroplet(full as Droplet);
    expect(fromDroplet(slim)).toEqual(fromDroplet(full as Droplet));
    expect(slim.vpc_uuid).toBe((full as Droplet).vpc_uuid);
    // The OpenAPI example's droplet (image, size, kernel, features…) is ~1.7 KB of JSON.
    expect(JSON.stringify(slim).length).toBeLessThan(JSON.stringify(full).length / 4);
    const bare = slimDroplet({ id: 7, name: 'x', status: 'active', size_slug: 's', networks: {} } as Droplet);
    expect(fromDroplet(bare)).toEqual(
      fromDroplet({ id: 7, name: 'x', status: 'active', size_slug: 's', networks: {} } as Droplet),
    );
  });

  it("maps only off to stopped, as DigitalOcean's controller does (new, active and archive run)", async () => {
    sim.addDroplets(
      { name: 'a', status: 'new' },
      { name: 'b', status: 'active' },
      { name: 'c', status: 'off' },
      { name: 'd', status: 'archive' },
    );
    const states = (await provider().instances.list()).map((i) => [i.name, i.state]);
    expect(states).toEqual([
      ['a', 'running'],
      ['b', 'running'],
      ['c', 'stopped'],
      ['d', 'running'],
    ]);
  });

  it('retries a 5xx page and still returns the whole listing', async () => {
    fleet(450);
    sim.fault({ path: '/v2/droplets', page: 2, status: 503 });
    const instances = await provider().instances.list();
    expect(instances).toHaveLength(450);
    expect(listings().map((r) => r.status)).toEqual([200, 503, 200, 200]);
  });

  it('takes one token of the shared budget per request sent (each page, each retry), and tells it of a 429', async () => {
    fleet(450);
    sim.fault({ path: '/v2/droplets', page: 2, status: 503 });
    sim.fault({ path: '/v2/droplets', page: 3, status: 429, retryAfterSeconds: 1 });
    let tokens = 0;
    const held: number[] = [];
    const budgeted = provider({
      takeToken: async () => {
        tokens++;
      },
      rateLimited: (ms) => held.push(ms),
    });
    expect(budgeted.requestBudgeted).toBe(true);
    expect(await budgeted.instances.list()).toHaveLength(450);
    expect(listings().map((r) => r.status)).toEqual([200, 503, 200, 429, 200]);
    expect(tokens).toBe(5);
    expect(held).toEqual([1000]);
    // Without a budget (one-pass commands), the operations are not marked as budgeted per request.
    expect(provider().requestBudgeted).toBeUndefined();
  });

  it('throws, never a partial listing, when a page keeps failing', async () => {
    fleet(450);
    sim.fault({ path: '/v2/droplets', page: 2, status: 500, times: 10 });
    const err = await provider()
      .instances.list()
      .catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toMatch(
      /^DigitalOcean listing droplets failed: GET \/v2\/droplets\?page=2&per_page=200: 500 Internal Server Error \(Unexpected server-side error\), gave up after 5 attempts; try again later$/,
    );
  });

  it('throws when a page times out, after its retries', async () => {
    fleet(250);
    sim.fault({ path: '/v2/droplets', page: 2, hang: true, times: 2 });
    const err = await provider({ timeoutMs: 1_000, http: { retries: 1, backoff: { baseMs: 5 } } })
      .instances.list()
      .catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toContain('page=2&per_page=200: timed out after 1000 ms, gave up after 2 attempts');
  });

  it('waits out a slow page that answers within the timeout', async () => {
    fleet(250);
    sim.fault({ path: '/v2/droplets', page: 2, delayMs: 300 });
    expect(await provider().instances.list()).toHaveLength(250);
    expect(listings()).toHaveLength(2);
  });

  it('sends no request before the retry-after of a 429', async () => {
    fleet(450);
    sim.fault({ path: '/v2/droplets', page: 2, status: 429, retryAfterSeconds: 1 });
    expect(await provider().instances.list()).toHaveLength(450);
    const [, limited, retried] = sim.requests;
    expect(limited?.status).toBe(429);
    expect(retried?.url).toBe('/v2/droplets?page=2&per_page=200');
    expect((retried?.at ?? 0) - (limited?.answeredAt ?? 0)).toBeGreaterThanOrEqual(1000);
  });

  it('does not retry before ratelimit-reset when a 429 has no retry-after: an hour away is a RetryableError now', async () => {
    fleet(250);
    sim.fault({ path: '/v2/droplets', page: 2, status: 429 });
    const err = await provider()
      .instances.list()
      .catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toMatch(
      /429 Too Many Requests \(API Rate limit exceeded\.\), the cloud asks to retry in 36\d\d s; try again later$/,
    );
    expect(err.retryAfterMs).toBeGreaterThan(3_500_000);
    expect(listings()).toHaveLength(2);
  });

  it('reads the listing again when a droplet vanished between pages, and returns what exists', async () => {
    const droplets = fleet(450);
    const vanishing = droplets[3]?.id as number;
    // Page 2 shifts by one: the first droplet of the old page 2 would be skipped.
    sim.fault({ path: '/v2/droplets', page: 1, after: (s) => s.removeDroplet(vanishing) });
    const instances = await provider().instances.list();
    expect(instances).toHaveLength(449);
    expect(instances.map((i) => i.providerID)).not.toContain(`digitalocean://${vanishing}`);
    expect(instances.map((i) => i.name)).toContain('node-200');
    expect(listings()).toHaveLength(6);
  });

  it('refuses a listing that keeps changing under it', async () => {
    const droplets = fleet(450);
    const ids = droplets.map((d) => d.id as number);
    sim.fault({
      path: '/v2/droplets',
      page: 1,
      times: 2,
      after: (s) => s.removeDroplet(ids.shift() as number),
    });
    const err = await provider()
      .instances.list()
      .catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toMatch(/listing droplets: the listing changed while it was read, twice/);
  });

  it('says the token is invalid in one line, without the token', async () => {
    fleet(3);
    const err = await provider({ token: 'dop_v1_revoked_token_value' })
      .instances.list()
      .catch((e) => e);
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err.message).toBe(
      'DigitalOcean listing droplets failed (GET /v2/droplets?per_page=200: 401 Unauthorized (Unable to authenticate you.)): the token is invalid or revoked; create one with read and write scope (env DO_ACCESS_TOKEN or Secret kube-system/digitalocean, key access-token)',
    );
    expect(listings()).toHaveLength(1);
  });

  it('refuses an empty token or an unusable API URL before any request', () => {
    expect(() => provider({ token: ' ' })).toThrow(InvalidConfigError);
    expect(() => provider({ baseUrl: 'api.digitalocean.com' })).toThrow(
      /is not a URL; set DO_OVERRIDE_URL or --cloud-api-url/,
    );
    expect(() => provider({ baseUrl: 'ftp://api.digitalocean.com' })).toThrow(/is not http\(s\)/);
    expect(sim.requests).toHaveLength(0);
  });
});

describe('one droplet by provider ID', () => {
  it('reads it', async () => {
    const [droplet] = sim.addDroplets({ name: 'w1', privateIP: '10.0.0.9' });
    const instance = await provider().instances.get(`digitalocean://${droplet?.id}`);
    expect(instance.name).toBe('w1');
    expect(sim.requests.map((r) => r.url)).toEqual([`/v2/droplets/${droplet?.id}`]);
  });

  it("is NotFound only on DigitalOcean's own not_found answer", async () => {
    const err = await provider()
      .instances.get('digitalocean://424242')
      .catch((e) => e);
    expect(err).toBeInstanceOf(NotFoundError);

    sim.fault({
      path: '/v2/droplets/424242',
      status: 404,
      raw: { body: '<html>404</html>', contentType: 'text/html' },
    });
    const proxied = await provider()
      .instances.get('digitalocean://424242')
      .catch((e) => e);
    expect(proxied).toBeInstanceOf(InvalidConfigError);
    expect(proxied.message).toContain("the answer is not the cloud API's own, check the API URL");
  });

  it('never calls the cloud for a provider ID that is not a droplet', async () => {
    await expectRefusedProviderIDs(provider().instances, [
      'openstack:///abc',
      'digitalocean://abc',
      'digitalocean://region/12',
      'digitalocean://0',
    ]);
    expect(sim.requests).toHaveLength(0);
  });
});

describe('credentials', () => {
  it('verifies the token with GET /v2/account', async () => {
    expect(await provider().verifyCredentials?.()).toBe(
      'DigitalOcean account sammy@digitalocean.com, team My Team (status active)',
    );
    expect(sim.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /v2/account']);
    await expect(provider({ token: 'dop_v1_wrong' }).verifyCredentials?.()).rejects.toThrow(
      /checking the token \(GET \/v2\/account\) failed .*401 Unauthorized.*the token is invalid or revoked/,
    );
  });
});

describe('pages behind a proxy', () => {
  it('follows the page number of links.pages.next on the configured URL, as godo does', async () => {
    const proxied = await DigitalOceanSimulator.start({ linkOrigin: 'https://api.digitalocean.com' });
    try {
      proxied.addDroplets(...Array.from({ length: 450 }, (_, i) => ({ name: `n${i}` })));
      const instances = await createDigitalOcean({
        token: proxied.token,
        baseUrl: proxied.url,
      }).instances.list();
      expect(instances).toHaveLength(450);
      expect(proxied.requestsTo('GET', '/v2/droplets').map((r) => r.url)).toEqual([
        '/v2/droplets?per_page=200',
        '/v2/droplets?page=2&per_page=200',
        '/v2/droplets?page=3&per_page=200',
      ]);
      expect(proxied.takeViolations()).toEqual([]);
    } finally {
      await proxied.stop();
    }
  });

  it('refuses a next link without a later page number, instead of reading a page twice', async () => {
    fleet(3);
    sim.fault({
      path: '/v2/droplets',
      raw: {
        contentType: 'application/json',
        body: JSON.stringify({
          droplets: [],
          links: { pages: { next: `${sim.url}/v2/droplets?page=1` } },
          meta: { total: 3 },
        }),
      },
      status: 200,
    });
    const err = await provider()
      .instances.list()
      .catch((e) => e);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toMatch(/next page link .* has no page number after 1/);
  });
});

conformsToDigitalOceanOpenApi();
