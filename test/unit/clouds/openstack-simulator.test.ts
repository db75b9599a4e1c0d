/**
 * The OpenStack simulator answers as the real services do where ccm's picture of them was wrong
 * (each behaviour cites its upstream source in test/clouds/openstack): Keystone's validation and
 * version documents, Octavia's paths, statuses, texts and failure shapes, Nova's pre-2.47 flavor.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SUBNET_ID } from '../../clouds/openstack/octavia.js';
import { OpenStackSimulator, PASSWORD, USER } from '../../clouds/openstack/simulator.js';

let sim: OpenStackSimulator;
beforeEach(async () => {
  sim = await new OpenStackSimulator().start();
});
afterEach(async () => {
  await sim.stop();
});

async function call(method: string, path: string, body?: unknown, token?: string) {
  const res = await fetch(`${sim.url}${path}`, {
    method,
    headers: {
      ...(token ? { 'x-auth-token': token } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    redirect: 'manual',
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

async function token(): Promise<string> {
  const res = await fetch(`${sim.authUrl}/auth/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      auth: { identity: { methods: ['password'], password: { user: { id: USER.id, password: PASSWORD } } } },
    }),
  });
  return res.headers.get('x-subject-token') ?? '';
}

async function settled(t: string, id: string): Promise<void> {
  while ((await lbaas(t, 'GET', `loadbalancers/${id}`)).body.loadbalancer.provisioning_status !== 'ACTIVE');
}

/** A request to Octavia's v2.0 lbaas API with token `t`. */
const lbaas = (t: string, method: string, path: string, body?: unknown) =>
  call(method, `/load-balancer/v2.0/lbaas/${path}`, body, t);

async function activeLoadBalancer(t: string): Promise<{ id: string; listener: string; pool: string }> {
  const created = await lbaas(t, 'POST', 'loadbalancers', {
    loadbalancer: {
      name: 'lb',
      vip_subnet_id: SUBNET_ID,
      listeners: [
        {
          name: 'l',
          protocol: 'TCP',
          protocol_port: 80,
          default_pool: {
            name: 'p',
            protocol: 'TCP',
            lb_algorithm: 'ROUND_ROBIN',
            members: [{ address: '10.0.0.11', protocol_port: 30080 }],
          },
        },
      ],
    },
  });
  const id = created.body.loadbalancer.id as string;
  while ((await lbaas(t, 'GET', `loadbalancers/${id}`)).body.loadbalancer.provisioning_status !== 'ACTIVE');
  const [tree] = sim.octavia.tree(id);
  return { id, listener: String(tree?.listener.id), pool: String(tree?.pool?.id) };
}

describe('Keystone', () => {
  it('a user or project given by name without its domain is 400 ValidationError, as Keystone answers', async () => {
    const auth = (user: Record<string, unknown>, scope?: unknown) =>
      call('POST', '/identity/v3/auth/tokens', {
        auth: {
          identity: { methods: ['password'], password: { user: { ...user, password: PASSWORD } } },
          ...(scope ? { scope } : {}),
        },
      });
    const refused = await auth({ name: USER.name });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toBe(
      'Expecting to find domain in user. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.',
    );
    expect((await auth({ name: USER.name, domain: { id: 'default' } })).status).toBe(201);
    const project = await auth({ id: USER.id }, { project: { name: 'admin' } });
    expect(project.status).toBe(400);
    expect(project.body.error.message).toMatch(/^Expecting to find domain in project\./);
    const appCred = await call('POST', '/identity/v3/auth/tokens', {
      auth: {
        identity: {
          methods: ['application_credential'],
          application_credential: { name: 'monitoring', secret: 'rEaqvJka48mpv', user: { name: USER.name } },
        },
      },
    });
    expect(appCred.status).toBe(400);
  });

  it('an unknown application credential id, or its user by name, is 404 Not Found; an unknown name 401', async () => {
    const auth = async (credential: Record<string, unknown>) => {
      const res = await fetch(`${sim.authUrl}/auth/tokens`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          auth: { identity: { methods: ['application_credential'], application_credential: credential } },
        }),
      });
      return { status: res.status, body: (await res.json()) as { error: { message: string } } };
    };
    expect(await auth({ id: 'deadbeef', secret: 'x' })).toEqual({
      status: 404,
      body: {
        error: { code: 404, message: 'Could not find Application Credential: deadbeef.', title: 'Not Found' },
      },
    });
    const user = { name: 'gone', domain: { id: 'default' } };
    expect(await auth({ name: 'monitoring', secret: 'x', user })).toEqual({
      status: 404,
      body: { error: { code: 404, message: 'Could not find user: gone.', title: 'Not Found' } },
    });
    expect((await auth({ name: 'other', secret: 'x', user: { id: USER.id } })).status).toBe(401);
    expect((await auth({ name: 'monitoring', secret: 'x' })).body.error.message).toMatch(
      /^Expecting to find user in application credential\./,
    );
  });

  it('the catalog gives each interface its own URL, each served', async () => {
    const res = await fetch(`${sim.authUrl}/auth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        auth: {
          identity: { methods: ['password'], password: { user: { id: USER.id, password: PASSWORD } } },
        },
      }),
    });
    const body = (await res.json()) as {
      token: { catalog: { type: string; endpoints: { interface: string; url: string }[] }[] };
    };
    const compute = body.token.catalog.find((c) => c.type === 'compute');
    const urls = Object.fromEntries(compute?.endpoints.map((e) => [e.interface, e.url]) ?? []);
    expect(urls).toEqual({
      public: `${sim.url}/compute/v2.1`,
      internal: `${sim.url}/internal/compute/v2.1`,
      admin: `${sim.url}/admin/compute/v2.1`,
    });
    const t = res.headers.get('x-subject-token') ?? '';
    for (const url of Object.values(urls)) {
      expect((await call('GET', `${url.slice(sim.url.length)}/servers/detail`, undefined, t)).status).toBe(
        200,
      );
    }
    expect(sim.requestsTo(/servers\/detail/).map((r) => r.interface)).toEqual([
      'public',
      'internal',
      'admin',
    ]);
  });
});

describe('version documents, without a token', () => {
  it("Keystone's at its root (300, versions.values) and at /v3 (200, version)", async () => {
    const root = await call('GET', '/identity/');
    expect(root.status).toBe(300);
    expect(root.headers.get('location')).toBe(`${sim.url}/identity/v3/`);
    expect(root.body).toEqual({
      versions: {
        values: [
          {
            id: 'v3.14',
            status: 'stable',
            updated: '2020-04-07T00:00:00Z',
            links: [{ rel: 'self', href: `${sim.url}/identity/v3/` }],
            'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.identity-v3+json' }],
          },
        ],
      },
    });
    const v3 = await call('GET', '/identity/v3');
    expect(v3.status).toBe(200);
    expect(v3.body.version.id).toBe('v3.14');
  });

  it("Neutron's and Octavia's", async () => {
    const neutron = await call('GET', '/network/');
    expect(neutron.status).toBe(200);
    expect(neutron.body).toEqual({
      versions: [
        { id: 'v2.0', status: 'CURRENT', links: [{ rel: 'self', href: `${sim.url}/network/v2.0/` }] },
      ],
    });
    const octavia = await call('GET', '/load-balancer/');
    expect(octavia.status).toBe(200);
    expect(octavia.body.versions[0]).toEqual({
      id: 'v2.0',
      status: 'SUPPORTED',
      updated: '2016-12-11T00:00:00Z',
      links: [{ href: `${sim.url}/load-balancer/v2`, rel: 'self' }],
    });
    expect(octavia.body.versions.at(-1)).toMatchObject({ id: 'v2.30', status: 'CURRENT' });
  });
});

describe('Octavia', () => {
  it('serves /v2.0 and, since Rocky, /v2; an older Octavia only /v2.0', async () => {
    const t = await token();
    expect((await call('GET', '/load-balancer/v2.0/lbaas/loadbalancers', undefined, t)).status).toBe(200);
    expect((await call('GET', '/load-balancer/v2/lbaas/loadbalancers', undefined, t)).status).toBe(200);
    sim.octaviaV2Alias = false;
    expect((await call('GET', '/load-balancer/v2.0/lbaas/loadbalancers', undefined, t)).status).toBe(200);
    expect((await call('GET', '/load-balancer/v2/lbaas/loadbalancers', undefined, t)).status).toBe(404);
  });

  it('PUT on a listener, pool or health monitor is 200; a missing one is "<resource> <id> not found."', async () => {
    const t = await token();
    const lb = await activeLoadBalancer(t);
    const put = await lbaas(t, 'PUT', `listeners/${lb.listener}`, { listener: { connection_limit: 10 } });
    expect(put.status).toBe(200);
    expect(put.body.listener.provisioning_status).toBe('PENDING_UPDATE');
    const missing = await lbaas(t, 'GET', 'healthmonitors/nope');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      faultcode: 'Client',
      faultstring: 'Health Monitor nope not found.',
      debuginfo: null,
    });
    expect((await lbaas(t, 'GET', 'loadbalancers/x')).body.faultstring).toBe('Load Balancer x not found.');
  });

  it('a load balancer in ERROR takes no change (409) but can be deleted', async () => {
    const t = await token();
    const lb = await activeLoadBalancer(t);
    const [record] = sim.octavia.loadBalancers.values();
    if (record) record.lb.provisioning_status = 'ERROR';
    const put = await lbaas(t, 'PUT', `pools/${lb.pool}/members`, {
      members: [{ address: '10.0.0.12', protocol_port: 30080 }],
    });
    expect(put.status).toBe(409);
    expect(put.body.faultstring).toBe(`Load Balancer ${lb.id} is immutable and cannot be updated.`);
    const del = await lbaas(t, 'DELETE', `loadbalancers/${lb.id}?cascade=true`);
    expect(del.status).toBe(204);
  });

  it('a failed child operation leaves the child ERROR and the load balancer ACTIVE', async () => {
    const t = await token();
    const lb = await activeLoadBalancer(t);
    sim.octavia.failNextProvisioning = true;
    const put = await lbaas(t, 'PUT', `pools/${lb.pool}/members`, {
      members: [{ address: '10.0.0.12', protocol_port: 30080 }],
    });
    expect(put.status).toBe(202);
    const during = await lbaas(t, 'GET', `pools/${lb.pool}/members`);
    expect(during.body.members.map((m: { provisioning_status: string }) => m.provisioning_status)).toEqual([
      'PENDING_CREATE',
      'PENDING_DELETE',
    ]);
    const statuses: string[] = [];
    for (let i = 0; i < 3; i++) {
      const read = await lbaas(t, 'GET', `loadbalancers/${lb.id}`);
      statuses.push(read.body.loadbalancer.provisioning_status);
    }
    // PENDING_UPDATE while the batch runs; then ACTIVE, never ERROR.
    expect(statuses).toEqual(['PENDING_UPDATE', 'ACTIVE', 'ACTIVE']);
    const members = await lbaas(t, 'GET', `pools/${lb.pool}/members`);
    expect(
      members.body.members.map((m: { address: string; provisioning_status: string }) => [
        m.address,
        m.provisioning_status,
      ]),
    ).toEqual([
      ['10.0.0.12', 'ERROR'],
      ['10.0.0.11', 'ERROR'],
    ]);
  });
});

describe('Octavia, as its database and validation leave things', () => {
  it('allowed_cidrs: canonical (host bits cleared), each once, in the key order; a bad one is 400', async () => {
    const t = await token();
    const lb = await activeLoadBalancer(t);
    const put = await lbaas(t, 'PUT', `listeners/${lb.listener}`, {
      listener: { allowed_cidrs: ['192.168.0.0/16', '10.0.0.1/8', '10.0.0.0/8', '2001:DB8:0:0:1::1/64'] },
    });
    expect(put.status).toBe(200);
    expect(put.body.listener.allowed_cidrs).toEqual(['10.0.0.0/8', '192.168.0.0/16', '2001:db8::/64']);
    await settled(t, lb.id);
    const bad = await lbaas(t, 'PUT', `listeners/${lb.listener}`, {
      listener: { allowed_cidrs: ['10.0.0.0/33'] },
    });
    expect(bad.status).toBe(400);
  });

  it('lists page at pagination_max_limit with a next link on api_base_uri that keeps limit, not filters', async () => {
    const t = await token();
    const lb = await activeLoadBalancer(t);
    sim.octavia.pageMax = 2;
    sim.octavia.apiBaseUri = 'https://octavia.example:9876/';
    const members = Array.from({ length: 3 }, (_, i) => ({
      address: `10.0.0.${20 + i}`,
      protocol_port: 30080,
    }));
    expect((await lbaas(t, 'PUT', `pools/${lb.pool}/members`, { members })).status).toBe(202);
    await settled(t, lb.id);
    const path = `/load-balancer/v2.0/lbaas/pools/${lb.pool}/members`;
    const first = await call('GET', path, undefined, t);
    expect(first.body.members).toHaveLength(2);
    const last = first.body.members[1].id;
    expect(first.body.members_links).toEqual([
      { rel: 'next', href: `https://octavia.example:9876${path}?limit=2&marker=${last}` },
    ]);
    const second = await call('GET', `${path}?marker=${last}`, undefined, t);
    expect(second.body.members.map((m: { address: string }) => m.address)).toEqual(['10.0.0.22']);
    expect(second.body.members_links.map((l: { rel: string }) => l.rel)).toEqual(['previous']);
    expect((await call('GET', `${path}?marker=nope`, undefined, t)).body).toEqual({
      faultcode: 'Client',
      faultstring: "Supplied pagination marker 'nope' is not valid.",
      debuginfo: null,
    });
  });

  it('a pool in ERROR takes no member or health monitor change (409 Pool … is immutable), but a pool PUT', async () => {
    const t = await token();
    const lb = await activeLoadBalancer(t);
    const pool = sim.octavia.pools.get(lb.pool);
    if (pool) pool.provisioning_status = 'ERROR';
    const members = await lbaas(t, 'PUT', `pools/${lb.pool}/members`, {
      members: [{ address: '10.0.0.12', protocol_port: 30080 }],
    });
    expect(members.status).toBe(409);
    expect(members.body.faultstring).toBe(`Pool ${lb.pool} is immutable and cannot be updated.`);
    const monitor = await lbaas(t, 'POST', 'healthmonitors', {
      healthmonitor: { pool_id: lb.pool, type: 'TCP', delay: 5, timeout: 5, max_retries: 3 },
    });
    expect(monitor.status).toBe(409);
    const repair = await lbaas(t, 'PUT', `pools/${lb.pool}`, { pool: { lb_algorithm: 'ROUND_ROBIN' } });
    expect(repair.status).toBe(200);
  });
});

describe("Octavia's texts", () => {
  it('a duplicate listener, a second default pool or monitor, a delete without cascade: exceptions.py texts', async () => {
    const t = await token();
    const lb = await activeLoadBalancer(t);
    const listener = await lbaas(t, 'POST', 'listeners', {
      listener: { loadbalancer_id: lb.id, protocol: 'HTTP', protocol_port: 80 },
    });
    expect([listener.status, listener.body.faultstring]).toEqual([
      409,
      'Another Listener on this Load Balancer is already using protocol HTTP and protocol_port 80',
    ]);
    const pool = await lbaas(t, 'POST', 'pools', {
      pool: { listener_id: lb.listener, protocol: 'TCP', lb_algorithm: 'ROUND_ROBIN' },
    });
    expect([pool.status, pool.body.faultstring]).toEqual([409, 'This listener already has a default pool']);
    const del = await lbaas(t, 'DELETE', `loadbalancers/${lb.id}`);
    expect([del.status, del.body.faultstring]).toEqual([
      400,
      `Validation failure: Cannot delete Load Balancer ${lb.id} - it has children`,
    ]);
  });
});

describe('Octavia by API version', () => {
  it('an attribute newer than the API version is 400 Unknown attribute: tags (2.5), allowed_cidrs (2.12)', async () => {
    const t = await token();
    const create = (extra: Record<string, unknown>) =>
      lbaas(t, 'POST', 'loadbalancers', { loadbalancer: { vip_subnet_id: SUBNET_ID, ...extra } });
    sim.octaviaV2Alias = false;
    const queens = await create({ tags: ['a'] });
    expect(queens.status).toBe(400);
    expect(queens.body.faultstring).toBe(
      'Invalid input for field/attribute loadbalancer. Unknown attribute for argument loadbalancer: tags',
    );
    sim.octavia.apiMinor = 11;
    const listener = { name: 'l', protocol: 'TCP', protocol_port: 80, allowed_cidrs: ['10.0.0.0/8'] };
    expect((await create({ tags: ['a'], listeners: [listener] })).body.faultstring).toBe(
      'Invalid input for field/attribute listener. Unknown attribute for argument listener: allowed_cidrs',
    );
    sim.octavia.apiMinor = 12;
    expect((await create({ tags: ['a'], listeners: [listener] })).status).toBe(201);
  });

  it('a UDP pool: HTTP and TCP monitors only from 2.16, UDP-CONNECT delay at least 3; timeout may exceed delay', async () => {
    const t = await token();
    const udp = (monitor: Record<string, unknown>) =>
      lbaas(t, 'POST', 'loadbalancers', {
        loadbalancer: {
          vip_subnet_id: SUBNET_ID,
          listeners: [
            {
              name: 'l',
              protocol: 'UDP',
              protocol_port: 53,
              default_pool: {
                name: 'p',
                protocol: 'UDP',
                lb_algorithm: 'ROUND_ROBIN',
                healthmonitor: monitor,
              },
            },
          ],
        },
      });
    const timing = { delay: 5, timeout: 3, max_retries: 3 };
    sim.octavia.apiMinor = 15;
    expect((await udp({ type: 'HTTP', ...timing })).body.faultstring).toBe(
      'Validation failure: The associated pool protocol is UDP, so only a UDP-CONNECT/SCTP health monitor is supported.',
    );
    sim.octavia.apiMinor = 16;
    expect((await udp({ type: 'HTTP', ...timing })).status).toBe(201);
    expect((await udp({ type: 'UDP-CONNECT', delay: 1, timeout: 1, max_retries: 3 })).body.faultstring).toBe(
      'Validation failure: The request delay value 1 should be larger than 3 for UDP-CONNECT health monitor type.',
    );
    expect((await udp({ type: 'UDP-CONNECT', delay: 3, timeout: 10, max_retries: 3 })).status).toBe(201);
  });

  it('the version document: without a token only at /load-balancer/ (trailing slash); Queens links v2.0', async () => {
    expect((await call('GET', '/load-balancer')).status).toBe(401);
    expect((await call('GET', '/load-balancer', undefined, await token())).status).toBe(200);
    sim.octaviaV2Alias = false;
    expect((await call('GET', '/load-balancer/')).body).toEqual({
      versions: [
        {
          status: 'CURRENT',
          updated: '2017-06-22T00:00:00Z',
          id: 'v2.0',
          links: [{ href: `${sim.url}/load-balancer/v2.0`, rel: 'self' }],
        },
      ],
    });
  });
});

describe('Nova', () => {
  it("before 2.47 a server's flavor is its id; GET /flavors/{id} names it", async () => {
    const t = await token();
    const server = sim.addServer({ name: 's', flavor: 'm1.large' });
    const old = await call('GET', `/compute/v2.1/servers/${server.id}`, undefined, t);
    expect(old.body.server.flavor).toEqual({
      id: '4',
      links: [{ href: `${sim.url}/compute/flavors/4`, rel: 'bookmark' }],
    });
    const flavor = await call('GET', '/compute/v2.1/flavors/4', undefined, t);
    expect(flavor.body.flavor).toMatchObject({ id: '4', name: 'm1.large' });
    const missing = await call('GET', '/compute/v2.1/flavors/m1.large', undefined, t);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({
      itemNotFound: { code: 404, message: 'Flavor m1.large could not be found.' },
    });
  });
});

describe('a rate limit in front of the APIs (none is published: injected, never enforced)', () => {
  it("answers sapcc/openstack-rate-limit-middleware's default 429: its body, X-Retry-After, no Retry-After", async () => {
    const t = await token();
    sim.rateLimit({ path: /\/servers\/detail$/, times: 1, retryAfterSeconds: 7 });
    const refused = await call('GET', '/compute/v2.1/servers/detail', undefined, t);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: { message: 'Too Many Requests', status: '429 Too Many Requests' },
    });
    expect(Object.fromEntries([...refused.headers].filter(([k]) => /retry|ratelimit/.test(k)))).toEqual({
      'x-ratelimit-limit': '60r/m',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-retry-after': '7',
      'x-retry-after': '7',
    });
    expect((await call('GET', '/compute/v2.1/servers/detail', undefined, t)).status).toBe(200);
  });
});
