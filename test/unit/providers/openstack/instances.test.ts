import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  InvalidConfigError,
  NotFoundError,
  RetryableError,
  UnauthorizedError,
} from '../../../../src/providers/errors.js';
import { serviceRoot } from '../../../../src/providers/openstack/client.js';
import { type CloudConfig, parseCloudConfig } from '../../../../src/providers/openstack/config.js';
import { createOpenStack } from '../../../../src/providers/openstack/index.js';
import { serverAddresses, serverState } from '../../../../src/providers/openstack/instances.js';
import type { Provider } from '../../../../src/providers/types.js';
import { APP_CREDENTIAL, OpenStackSimulator, PASSWORD } from '../../../clouds/openstack/simulator.js';
import { useSimulator } from '../../../helpers/use-simulator.js';
import { externalIPs, internalIPs } from '../../helpers/addresses.js';

const fixture = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../../../fixtures/openstack/${name}`, import.meta.url)), 'utf8');

const sim = useSimulator(() => new OpenStackSimulator().start(), { each: true });

/** An official example cloud.conf, unchanged but for the auth-url that points at the simulator. */
function officialConfig(name = 'occm-cloud-config'): CloudConfig {
  return parseCloudConfig(sim.cloudConf(name));
}

function provider(config = officialConfig(), calls: string[] = [], now?: () => number): Provider {
  return createOpenStack(
    config,
    { onCloudCall: (what) => calls.push(what) },
    { sleep: async () => {}, retries: 2, ...(now ? { now } : {}) },
  );
}

const NETWORKING = { publicNetworkNames: [], internalNetworkNames: [], ipv6SupportDisabled: false };

describe('Keystone', () => {
  it('authenticates with the password example and names the project', async () => {
    expect(await provider().verifyCredentials?.()).toBe(
      'Keystone issued a token as admin for project admin (a6944d763bf64ee6a275f1263fae0352)',
    );
    const [auth] = sim.requestsTo(/auth\/tokens/);
    expect(auth?.body).toEqual({
      auth: {
        identity: {
          methods: ['password'],
          password: { user: { name: 'admin', domain: { id: 'default' }, password: PASSWORD } },
        },
      },
    });
  });

  it('sends the application-credential body of the Keystone sample, field for field', async () => {
    await provider(officialConfig('occm-cloud-config-application-credential')).verifyCredentials?.();
    const [auth] = sim.requestsTo(/auth\/tokens/);
    expect(auth?.body).toEqual(JSON.parse(fixture('keystone-auth-application-credential-id-request.json')));
  });

  it('sends the application-credential-by-name body of the Keystone sample', async () => {
    const config = parseCloudConfig(
      `[Global]\nauth-url=${sim.authUrl}\nregion=RegionOne\napplication-credential-name=monitoring\napplication-credential-secret=${APP_CREDENTIAL.secret}\nuser-id=423f19a4ac1e4f48bbb4180756e6eb6c\n`,
    );
    await provider(config).verifyCredentials?.();
    expect(sim.requestsTo(/auth\/tokens/)[0]?.body).toEqual(
      JSON.parse(fixture('keystone-auth-application-credential-name-request.json')),
    );
  });

  it('refuses wrong credentials in one line without the password', async () => {
    const config = parseCloudConfig(sim.cloudConf('occm-cloud-config').replace('passw0rd', 'wrong-pw-123'));
    const err = await provider(config)
      .instances.list()
      .catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect((err as Error).message).toMatch(
      /^Keystone at http:\/\/127\.0\.0\.1:\d+\/identity\/v3 refused the password of user "admin"/,
    );
    expect((err as Error).message).not.toContain('wrong-pw-123');
  });

  it('an application credential or user Keystone does not know (404) is said so, not blamed on auth-url', async () => {
    const byId = parseCloudConfig(
      fixture('occm-cloud-config-application-credential')
        .replace(/auth-url=.*/, `auth-url=${sim.authUrl}`)
        .replace(
          /application-credential-id=.*/,
          'application-credential-id=deadbeefdeadbeefdeadbeefdeadbeef',
        ),
    );
    const err = (await provider(byId)
      .instances.list()
      .catch((e: unknown) => e)) as Error;
    expect(sim.requestsTo(/auth\/tokens/).map((r) => r.status)).toEqual([404]);
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err.message).toMatch(
      /^Keystone at \S+ says the application credential deadbeefdeadbeefdeadbeefdeadbeef from cloud\.conf \[Global\] does not exist \(404: Could not find Application Credential: deadbeefdeadbeefdeadbeefdeadbeef\.\): the application credential or its user was deleted/,
    );
    const byName = parseCloudConfig(
      `[Global]\nauth-url=${sim.authUrl}\nregion=RegionOne\napplication-credential-name=monitoring\napplication-credential-secret=${APP_CREDENTIAL.secret}\nusername=gone\nuser-domain-id=default\n`,
    );
    const err2 = (await provider(byName)
      .instances.list()
      .catch((e: unknown) => e)) as Error;
    expect(err2).toBeInstanceOf(UnauthorizedError);
    expect(err2.message).toMatch(/does not exist \(404: Could not find user: gone\.\)/);
  });

  it('uses the catalog interface os-endpoint-type names, each with its own URL', async () => {
    sim.addServer({ name: 'w1' });
    await provider().instances.list();
    expect(sim.requestsTo(/servers\/detail/).map((r) => r.interface)).toEqual(['public']);
    for (const iface of ['internal', 'admin'] as const) {
      sim.requests.length = 0;
      const config = parseCloudConfig(
        sim.cloudConf('occm-cloud-config').replace('[Global]', `[Global]\nos-endpoint-type=${iface}URL`),
      );
      await provider(config).instances.list();
      const [listing] = sim.requestsTo(/servers\/detail/);
      expect(listing?.interface).toBe(iface);
      expect(listing?.status).toBe(200);
    }
  });

  it('discovers the v3 URL from an auth-url without a version: the version document, then the token', async () => {
    const config = parseCloudConfig(sim.cloudConf('occm-cloud-config', `${sim.url}/identity`));
    expect(await provider(config).verifyCredentials?.()).toMatch(/^Keystone issued a token/);
    expect(sim.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      'GET /identity/ 300',
      'POST /identity/v3/auth/tokens 201',
    ]);
    expect(sim.requests[0]?.headers['x-auth-token']).toBeUndefined();
  });

  it('a version document answered 200 is read like a 300 (gophercloud ChooseVersion: OkCodes 200, 300)', async () => {
    const v3 = { id: 'v3.14', status: 'stable', links: [{ rel: 'self', href: `${sim.url}/identity/v3/` }] };
    sim.fault({ method: 'GET', path: /^\/identity\/$/, status: 200, body: { versions: { values: [v3] } } });
    const config = parseCloudConfig(sim.cloudConf('occm-cloud-config', `${sim.url}/identity`));
    await provider(config).verifyCredentials?.();
    expect(sim.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      'GET /identity/ 200',
      'POST /identity/v3/auth/tokens 201',
    ]);
  });

  it("a version document whose link names another host: its path, on auth-url's own host", async () => {
    sim.keystonePublicEndpoint = 'http://keystone.internal.invalid:5000/identity';
    const config = parseCloudConfig(sim.cloudConf('occm-cloud-config', `${sim.url}/identity/`));
    await provider(config).verifyCredentials?.();
    expect(sim.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      'GET /identity/ 300',
      'POST /identity/v3/auth/tokens 201',
    ]);
  });

  it('an auth-url whose answer is no version document, or offers no v3, is a configuration error', async () => {
    for (const [url, message] of [
      [`${sim.url}/nowhere`, /auth-url .*\/nowhere answered 401 to the version discovery/],
      [
        `${sim.url}/network`,
        /its version document offers no usable Keystone v3 with a link \(it offers: v2\.0 \(CURRENT\)\)/,
      ],
    ] as const) {
      const config = parseCloudConfig(sim.cloudConf('occm-cloud-config', url));
      const err = await provider(config)
        .instances.list()
        .catch((e: unknown) => e as Error);
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect((err as Error).message).toMatch(message);
    }
  });

  it('says which catalog entry is missing for a wrong region', async () => {
    const config = parseCloudConfig(sim.cloudConf('occm-cloud-config').replace('RegionOne', 'RegionTwo'));
    await expect(provider(config).instances.list()).rejects.toThrow(
      'the Keystone catalog has no public "compute" endpoint in region "RegionTwo" (it has: RegionOne); check [Global] region and os-endpoint-type',
    );
  });

  it('re-authenticates once when a cached token is refused, and the listing succeeds', async () => {
    sim.addServer({ name: 'w1', addresses: { private: [{ addr: '10.0.0.1' }] } });
    const p = provider();
    expect(await p.instances.list()).toHaveLength(1);
    sim.expireTokens();
    expect(await p.instances.list()).toHaveLength(1);
    const tokens = sim.requestsTo(/auth\/tokens/);
    expect(tokens).toHaveLength(2);
    const listings = sim.requestsTo(/servers\/detail/).map((r) => r.status);
    expect(listings).toEqual([200, 401, 200]);
    // the refused and the new token differ; neither appears in any error or log line we produced
    const [, refused, retried] = sim.requestsTo(/servers\/detail/);
    expect(refused?.headers['x-auth-token']).not.toBe(retried?.headers['x-auth-token']);
  });

  it('renews a token that is about to expire before using it', async () => {
    let clock = Date.now();
    const p = provider(officialConfig(), [], () => clock);
    await p.instances.list();
    clock += 30 * 60_000;
    await p.instances.list();
    expect(sim.requestsTo(/auth\/tokens/)).toHaveLength(1);
    clock += 29 * 60_000 + 30_000; // 30 s before Keystone's expires_at
    await p.instances.list();
    expect(sim.requestsTo(/auth\/tokens/)).toHaveLength(2);
    expect(sim.requestsTo(/servers\/detail/).map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('gives up after one re-authentication when the new token is refused too', async () => {
    sim.fault({
      path: /servers\/detail/,
      status: 401,
      body: { error: { code: 401, message: 'no', title: 'Unauthorized' } },
    });
    const err = await provider()
      .instances.list()
      .catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(sim.requestsTo(/auth\/tokens/)).toHaveLength(2);
    for (const token of sim.tokens.keys()) expect((err as Error).message).not.toContain(token);
  });
});

describe('Nova instances', () => {
  it('lists servers with the microversion, paging by limit and marker through servers_links', async () => {
    sim.maxLimit = 2;
    for (let i = 1; i <= 5; i++)
      sim.addServer({ name: `n${i}`, addresses: { private: [{ addr: `10.0.0.${i}` }] } });
    const calls: string[] = [];
    const list = await provider(officialConfig(), calls).instances.list();
    expect(list.map((i) => i.name)).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
    const pages = sim.requestsTo(/servers\/detail/);
    expect(pages.map((r) => r.path.replace(/marker=[^&]+/, 'marker=M'))).toEqual([
      '/compute/v2.1/servers/detail?limit=1000',
      '/compute/v2.1/servers/detail?limit=1000&marker=M',
      '/compute/v2.1/servers/detail?limit=1000&marker=M',
    ]);
    for (const page of pages) {
      expect(page.headers['x-openstack-nova-api-version']).toBe('2.47');
      expect(page.headers['openstack-api-version']).toBe('compute 2.47');
    }
    expect(calls.filter((c) => c.startsWith('compute'))).toHaveLength(3);
  });

  it('maps a server of the api-ref sample field for field', async () => {
    const server = sim.addServer({
      name: 'new-server-test',
      az: 'az-1',
      flavor: 'm1.tiny.specs',
      addresses: {
        private: [{ addr: '192.168.0.3' }, { addr: 'fd00::3' }, { addr: '172.24.4.9', type: 'floating' }],
      },
    });
    const [instance] = await provider().instances.list();
    expect(instance).toEqual({
      providerID: `openstack:///${server.id}`,
      name: 'new-server-test',
      state: 'running',
      type: 'm1.tiny.specs',
      region: 'RegionOne',
      zone: 'az-1',
      addresses: [...internalIPs('192.168.0.3', 'fd00::3'), ...externalIPs('172.24.4.9')],
      labels: {},
    });
  });

  it('on a Nova older than 2.47 (406) asks for the flavor by its id, once per flavor, for its name', async () => {
    sim.novaMaxVersion = '2.38';
    sim.addServer({ name: 'old', flavor: 'm1.small' });
    sim.addServer({ name: 'old2', flavor: 'm1.small' });
    const big = sim.addServer({ name: 'old3', flavor: 'm1.large' });
    const p = provider();
    expect((await p.instances.list()).map((i) => i.type)).toEqual(['m1.small', 'm1.small', 'm1.large']);
    expect(sim.requestsTo(/servers\/detail/).map((r) => r.status)).toEqual([406, 200]);
    // Nova before 2.47 shows the flavor's id, never its name (it was the name in ccm's picture).
    const listed = sim.requestsTo(/servers\/detail/)[1];
    expect(listed?.status).toBe(200);
    await p.instances.list();
    expect((await p.instances.get(`openstack:///${big.id}`)).type).toBe('m1.large');
    expect(sim.requestsTo(/servers\/detail/).map((r) => r.status)).toEqual([406, 200, 200]);
    expect(sim.requestsTo(/\/flavors\//).map((r) => `${r.path} ${r.status}`)).toEqual([
      '/compute/v2.1/flavors/2 200',
      '/compute/v2.1/flavors/4 200',
    ]);
  });

  it('a flavor name that is no label value: Nova is asked for that flavor; its id when its name is no label either', async () => {
    // 2.47+: original_name "GPU large (A100)" is not a label value. The official controller asks
    // Nova for the flavor by that value; none has it as id, and the server has no flavor.id.
    const odd = sim.addServer({ name: 'gpu', flavor: 'GPU large (A100)' });
    const fine = sim.addServer({ name: 'cpu', flavor: 'm1.small' });
    const p = provider();
    await expect(p.instances.get(`openstack:///${odd.id}`)).rejects.toThrow(
      /^server .*: Nova names no flavor ccm can use as the instance type \(flavor "GPU large \(A100\)" is not a label value and Nova has no flavor by that id\)$/,
    );
    // The listing still lists it, without an instance type (no label), beside the others.
    expect((await p.instances.list()).map((i) => [i.name, i.type])).toEqual([
      ['gpu', ''],
      ['cpu', 'm1.small'],
    ]);
    // Once: Nova's "no such flavor" is remembered too.
    expect(sim.requestsTo(/\/flavors\//).map((r) => `${r.path} ${r.status}`)).toEqual([
      '/compute/v2.1/flavors/GPU%20large%20(A100) 404',
    ]);
    expect((await p.instances.get(`openstack:///${fine.id}`)).type).toBe('m1.small');

    // Before 2.47: the flavor by id, whose name is no label value → its id.
    sim.novaMaxVersion = '2.46';
    const q = provider();
    const id = sim.flavorId('GPU large (A100)');
    expect((await q.instances.get(`openstack:///${odd.id}`)).type).toBe(id);
  });

  it('the availability zone is sanitised to a label value as the official controller does', async () => {
    sim.addServer({ name: 'a', az: 'Zone A/rack 1' });
    sim.addServer({ name: 'b', az: '--edge.zone_' });
    sim.addServer({ name: 'c', az: `z${'x'.repeat(70)}` });
    const zones = (await provider().instances.list()).map((i) => i.zone);
    expect(zones).toEqual(['Zone-A-rack-1', 'edge.zone', `z${'x'.repeat(62)}`]);
  });

  it("follows servers_links that name Nova's internal host: the marker, on the configured endpoint", async () => {
    sim.maxLimit = 2;
    sim.novaLinkPrefix = 'http://nova-internal.cloud.invalid:8774';
    for (let i = 1; i <= 5; i++) sim.addServer({ name: `n${i}` });
    const list = await provider().instances.list();
    expect(list.map((i) => i.name)).toEqual(['n1', 'n2', 'n3', 'n4', 'n5']);
    const ids = [...sim.servers.keys()];
    expect(sim.requestsTo(/servers\/detail/).map((r) => r.path)).toEqual([
      '/compute/v2.1/servers/detail?limit=1000',
      `/compute/v2.1/servers/detail?limit=1000&marker=${ids[1]}`,
      `/compute/v2.1/servers/detail?limit=1000&marker=${ids[3]}`,
    ]);
  });

  it("takes one budget token per request, and waits (and holds the budget) for the rate limit middleware's X-Retry-After", async () => {
    sim.addServer({ name: 'web-1' });
    sim.rateLimit({ path: /\/servers\/detail$/, times: 1, retryAfterSeconds: 5 });
    const sleeps: number[] = [];
    const held: number[] = [];
    let tokens = 0;
    const p = createOpenStack(
      officialConfig(),
      {
        takeToken: async () => {
          tokens++;
        },
        rateLimited: (ms) => held.push(ms),
      },
      {
        sleep: async (ms) => {
          sleeps.push(ms);
        },
        retries: 2,
      },
    );
    expect(p.requestBudgeted).toBe(true);
    expect(await p.instances.list()).toHaveLength(1);
    expect(sim.requestsTo(/servers\/detail/).map((r) => r.status)).toEqual([429, 200]);
    expect(sleeps).toEqual([5000]);
    expect(held).toEqual([5000]);
    // Nova's two attempts; Keystone's token request takes none (client.ts: the identity client has no takeToken).
    expect(tokens).toBe(2);
    expect(sim.requestsTo(/auth\/tokens/)).toHaveLength(1);
  });

  it('throws on a 5xx of the second page: never a partial listing', async () => {
    sim.maxLimit = 2;
    for (let i = 1; i <= 5; i++) sim.addServer({ name: `n${i}` });
    sim.fault({ path: /servers\/detail/, status: 503, skip: 1 });
    const err = await provider()
      .instances.list()
      .catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as Error).message).toMatch(
      /GET \/compute\/v2\.1\/servers\/detail\?limit=1000&marker=.*: 503 Service Unavailable/,
    );
  });

  it('get: Nova itemNotFound is NotFound; another 404 is not; DELETED is not found; other regions are never', async () => {
    const server = sim.addServer({ name: 'here', status: 'SHUTOFF' });
    const p = provider();
    expect((await p.instances.get(`openstack:///${server.id}`)).state).toBe('stopped');
    expect((await p.instances.get(`openstack://RegionOne/${server.id}`)).name).toBe('here');
    await expect(p.instances.get('openstack:///0b3e6d8a-0000-4000-8000-000000000000')).rejects.toBeInstanceOf(
      NotFoundError,
    );

    sim.fault({ path: /servers\/proxy-404/, status: 404, body: { message: 'nginx: not found' } });
    await expect(p.instances.get('openstack:///proxy-404')).rejects.toBeInstanceOf(InvalidConfigError);
    // Nova's answer to a path no controller serves: webob's 404 in Nova's envelope (wsgi.py Fault).
    sim.fault({
      path: /servers\/route-404/,
      status: 404,
      body: { itemNotFound: { code: 404, message: 'The resource could not be found.' } },
    });
    await expect(p.instances.get('openstack:///route-404')).rejects.not.toBeInstanceOf(NotFoundError);

    const gone = sim.addServer({ name: 'gone', status: 'DELETED' });
    await expect(p.instances.get(`openstack:///${gone.id}`)).rejects.toBeInstanceOf(NotFoundError);

    const other = p.instances.get('openstack://RegionTwo/0b3e6d8a-0000-4000-8000-000000000000');
    await expect(other).rejects.toThrow('is in region RegionTwo, ccm talks to region RegionOne');
    await expect(other).rejects.not.toBeInstanceOf(NotFoundError);
  });
});

describe('catalog endpoints', () => {
  it('cuts a version the catalog already put on the Neutron or Octavia URL; keeps Nova’s', () => {
    expect(serviceRoot('network', 'http://h:9696/')).toBe('http://h:9696');
    expect(serviceRoot('network', 'http://h:9696/v2.0/')).toBe('http://h:9696');
    expect(serviceRoot('load-balancer', 'http://h/load-balancer/v2')).toBe('http://h/load-balancer');
    expect(serviceRoot('load-balancer', 'http://h:9876/v2.0')).toBe('http://h:9876');
    expect(serviceRoot('compute', 'http://h:8774/v2.1/a6944d763bf64ee6a275f1263fae0352')).toBe(
      'http://h:8774/v2.1/a6944d763bf64ee6a275f1263fae0352',
    );
  });
});

describe('server state and addresses', () => {
  it('SHUTOFF is stopped, DELETED is gone, ERROR, BUILD and the rest are running', () => {
    expect(serverState('SHUTOFF')).toBe('stopped');
    expect(serverState('DELETED')).toBe('gone');
    for (const status of [
      'ACTIVE',
      'ERROR',
      'BUILD',
      'REBOOT',
      'SHELVED_OFFLOADED',
      'SOFT_DELETED',
      'UNKNOWN',
    ]) {
      expect(serverState(status)).toBe('running');
    }
  });

  it('honours public-network-name, internal-network-name, access IPs and ipv6-support-disabled', () => {
    const server = {
      id: 'x',
      name: 'x',
      status: 'ACTIVE',
      flavor: {},
      accessIPv4: '203.0.113.7',
      accessIPv6: '2001:db8::7',
      addresses: {
        public: [{ addr: '198.51.100.2', version: 4, 'OS-EXT-IPS:type': 'fixed' as const }],
        private: [{ addr: '10.0.0.2', version: 4, 'OS-EXT-IPS:type': 'fixed' as const }],
        storage: [{ addr: '10.9.0.2', version: 4, 'OS-EXT-IPS:type': 'fixed' as const }],
      },
    };
    expect(
      serverAddresses(server, {
        ...NETWORKING,
        publicNetworkNames: ['public'],
        internalNetworkNames: ['private'],
      }),
    ).toEqual([
      ...externalIPs('203.0.113.7', '2001:db8::7'),
      ...internalIPs('10.0.0.2'),
      ...externalIPs('198.51.100.2'),
    ]);
    expect(serverAddresses(server, { ...NETWORKING, ipv6SupportDisabled: true })).toEqual([
      ...externalIPs('203.0.113.7'),
      ...internalIPs('10.0.0.2', '198.51.100.2', '10.9.0.2'),
    ]);
    // an access IP that is also on an excluded network is dropped with it, as the official controller does
    expect(
      serverAddresses(
        { ...server, accessIPv4: '10.9.0.2', accessIPv6: '' },
        { ...NETWORKING, internalNetworkNames: ['private'] },
      ),
    ).toEqual(internalIPs('10.0.0.2'));
  });
});
