/** Triton machines as instances, against the simulator: pagination, states, addresses, errors. */
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { resolveProviderValues } from '../../../../src/cli/provider-config.js';
import { budgetedProvider, TokenBucket } from '../../../../src/controllers/cloud-budget.js';
import {
  InvalidConfigError,
  NotFoundError,
  RetryableError,
  UnauthorizedError,
} from '../../../../src/providers/errors.js';
import { TritonClient } from '../../../../src/providers/triton/client.js';
import { triton } from '../../../../src/providers/triton/index.js';
import { addresses, tritonInstances } from '../../../../src/providers/triton/instances.js';
import { createSigner } from '../../../../src/providers/triton/signer.js';
import type { Provider, TakeToken } from '../../../../src/providers/types.js';
import { rejection as error } from '../../../helpers/rejection.js';
import { useTritonSim } from '../../../helpers/use-simulator.js';
import { externalIPs, internalIPs } from '../../helpers/addresses.js';

// These tests call the provider with no request budget, faster than CloudAPI's throttle allows
// (10 a second, bursts of 30): the throttle is tested in test/unit/clouds/triton-simulator.test.ts.
const tsim = useTritonSim({ login: 'demo', datacenter: 'eu-ams-1', throttle: false });
const { sim } = tsim;
beforeEach(() => {
  sim.machines.clear();
  sim.requests.length = 0;
  sim.faults.length = 0;
});

/** A provider whose ListMachines pages hold `pageSize` machines, with no waiting between retries. */
function provider(
  pageSize = 1000,
  extra: Record<string, string> = {},
  budget: { takeToken?: TakeToken; rateLimited?: (ms: number) => void } = {},
): Provider {
  const signer = createSigner({ account: 'demo', keyMaterial: tsim.key.privateKey });
  const client = new TritonClient({
    url: sim.url,
    account: 'demo',
    signer,
    secrets: [tsim.key.privateKey],
    pageSize,
    http: { sleep: async () => {}, retries: 2 },
    ...budget,
  });
  const region = extra.datacenter ?? 'eu-ams-1';
  return {
    name: 'triton',
    providerIdScheme: 'triton',
    instances: tritonInstances(client, async () => region),
  };
}

function machines(n: number) {
  return Array.from({ length: n }, (_, i) =>
    sim.addMachine({ name: `node-${i}`, ips: [`10.1.0.${i + 1}`], primaryIp: `10.1.0.${i + 1}` }),
  );
}

/**
 * What restify 4.3.3's throttle plugin answers (lib/plugins/throttle.js: TooManyRequestsError, whose
 * body code lib/errors/http_error.js makes from the status text), as CloudAPI mounts it.
 */
const TOO_MANY = { code: 'TooManyRequestsError', message: 'You have exceeded your request rate of 10 r/s.' };
/** CloudAPI's answer to a client that calls too often, as its docs/index.md names it. */
const THROTTLED = { code: 'RequestThrottled', message: 'slow down' };
/** A fault on the machine listing, GET /demo/machines. */
const listingFault = (fault: Omit<Parameters<typeof sim.fault>[0], 'path'>) =>
  sim.fault({ path: /^\/demo\/machines$/, ...fault });

describe('list', () => {
  it('pages with offset/limit until a short page, each page starting at the last machine of the one before', async () => {
    const made = machines(5);
    const list = await provider(2).instances.list();
    expect(list.map((i) => i.name).sort()).toEqual(made.map((m) => m.name).sort());
    const pages = sim.requests.filter((r) => r.path === '/demo/machines').map((r) => r.query);
    expect(pages).toEqual([
      '?offset=0&limit=2',
      '?offset=1&limit=2',
      '?offset=2&limit=2',
      '?offset=3&limit=2',
      '?offset=4&limit=2',
    ]);
  });

  it('asks one more page when the last one is exactly full', async () => {
    machines(3);
    expect(await provider(2).instances.list()).toHaveLength(3);
    expect(sim.requests.filter((r) => r.path === '/demo/machines')).toHaveLength(3);
  });

  // x-resource-count is the page's length (sdc-cloudapi lib/machines.js), so it cannot show that a
  // machine destroyed on an earlier page shifted the next page's first machine out of reach.
  it('a machine destroyed on an earlier page while the listing is read does not hide the next one', async () => {
    machines(6);
    const ordered = (await provider(2).instances.list()).map((i) => i.name);
    sim.requests.length = 0;
    let destroyed = false;
    sim.onListPage = (offset) => {
      if (offset === 0 || destroyed) return;
      destroyed = true;
      const first = [...sim.machines.values()].find((m) => m.name === ordered[0]);
      if (first) first.state = 'deleted';
    };
    try {
      const list = await provider(2).instances.list();
      expect(list.map((i) => i.name).sort()).toEqual(ordered.slice(1).sort());
    } finally {
      sim.onListPage = undefined;
    }
    // The second page no longer held the first page's last machine: the listing began again.
    expect(sim.requests.filter((r) => r.path === '/demo/machines').map((r) => r.query)).toEqual([
      '?offset=0&limit=2',
      '?offset=1&limit=2',
      '?offset=0&limit=2',
      '?offset=1&limit=2',
      '?offset=2&limit=2',
      '?offset=3&limit=2',
      '?offset=4&limit=2',
    ]);
  });

  it('machines destroyed during every one of three listings: a RetryableError, never a partial list', async () => {
    machines(6);
    sim.onListPage = (offset) => {
      if (offset === 0) return;
      const first = [...sim.machines.values()]
        .filter((m) => m.state !== 'deleted')
        .sort((a, b) => (a.id < b.id ? 1 : -1))[0];
      if (first) first.state = 'deleted';
    };
    try {
      const err = await error(provider(2).instances.list());
      expect(err).toBeInstanceOf(RetryableError);
      expect(err.message).toBe(
        'ListMachines: machines were destroyed while each of 3 listings was read, so a page boundary moved every time; trying again later',
      );
    } finally {
      sim.onListPage = undefined;
    }
  });

  it('a machine created while the listing is read shifts the rest on: each machine is listed once', async () => {
    const made = machines(5);
    let created = false;
    sim.onListPage = (offset) => {
      if (offset === 0 || created) return;
      created = true;
      // uuid order: a new machine anywhere before the boundary
      sim.addMachine({ id: 'ffffffff-ffff-4fff-8fff-ffffffffffff', name: 'newcomer' });
    };
    try {
      // The newcomer went in before the boundary, where the listing had been: this pass misses it.
      const list = await provider(2).instances.list();
      expect(list.map((i) => i.name).sort()).toEqual(made.map((m) => m.name).sort());
    } finally {
      sim.onListPage = undefined;
    }
  });

  it('maps id, name, package, data centre, state and addresses', async () => {
    const running = sim.addMachine({
      name: 'worker-1',
      package: 'k8s-8g',
      ips: ['165.225.1.10', '192.168.128.5', '10.88.88.26', 'dhcp'],
      primaryIp: '10.88.88.26',
    });
    sim.addMachine({ name: 'sleepy', state: 'stopped', ips: ['172.16.0.9'] });
    sim.addMachine({ name: 'booting', state: 'provisioning' });
    const p = triton.create({ url: sim.url, account: 'demo', keyMaterial: tsim.key.privateKey }, {});
    const list = await p.instances.list();
    expect(list.find((i) => i.name === 'worker-1')).toEqual({
      providerID: `triton://${running.id}`,
      name: 'worker-1',
      state: 'running',
      type: 'k8s-8g',
      // from ListDatacenters: the entry whose URL is the configured one
      region: 'eu-ams-1',
      zone: '',
      addresses: [...internalIPs('10.88.88.26', '192.168.128.5'), ...externalIPs('165.225.1.10')],
      labels: {},
    });
    expect(Object.fromEntries(list.map((i) => [i.name, i.state]))).toEqual({
      'worker-1': 'running',
      sleepy: 'stopped',
      booting: 'running',
    });
    // the data centre is asked once per provider, not per page or per call
    await p.instances.list();
    expect(sim.requests.filter((r) => r.path === '/demo/datacenters')).toHaveLength(1);
  });

  it('TRITON_DATACENTER wins; a URL no data centre has is a configuration error', async () => {
    machines(1);
    const configured = triton.create(
      { url: sim.url, account: 'demo', keyMaterial: tsim.key.privateKey, datacenter: 'home-1' },
      {},
    );
    expect((await configured.instances.list())[0]?.region).toBe('home-1');
    expect(sim.requests.some((r) => r.path === '/demo/datacenters')).toBe(false);

    const other = triton.create(
      { url: sim.url.replace('127.0.0.1', 'localhost'), account: 'demo', keyMaterial: tsim.key.privateKey },
      {},
    );
    const err = await error(other.instances.list());
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toMatch(
      /none of the data centres CloudAPI lists \(eu-ams-1, us-other-1\) has the URL http:\/\/localhost:\d+; set TRITON_DATACENTER/,
    );
  });

  it('a failed page fails the whole listing: never a partial one', async () => {
    machines(5);
    listingFault({ status: 503, body: { code: 'InternalError', message: 'moray down' }, after: 1 });
    const err = await error(provider(2).instances.list());
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toContain('503');
  });

  it('throttling (420 and 429, RequestThrottled) is retried like a rate limit', async () => {
    machines(1);
    listingFault({ status: 420, body: THROTTLED, times: 1 });
    listingFault({ status: 429, body: THROTTLED, times: 1, headers: { 'retry-after': '1' } });
    expect(await provider().instances.list()).toHaveLength(1);
    expect(sim.requests.filter((r) => r.path === '/demo/machines').map((r) => r.status)).toEqual([
      420, 429, 200,
    ]);
  });

  it('takes one token of the shared budget per request sent (each page, each retry), and tells it of a 429', async () => {
    machines(3);
    // Pages of 2 over 3 machines: offset 0, 1 and 2. The second fails once, the third is throttled once.
    listingFault({ status: 503, after: 1, times: 1 });
    listingFault({ status: 429, body: TOO_MANY, after: 2, times: 1 });
    let tokens = 0;
    const held: number[] = [];
    const budgeted = provider(
      2,
      {},
      {
        takeToken: async () => {
          tokens++;
        },
        rateLimited: (ms) => held.push(ms),
      },
    );
    expect(await budgeted.instances.list()).toHaveLength(3);
    expect(sim.requests.map((r) => `${r.query} ${r.status}`)).toEqual([
      '?offset=0&limit=2 200',
      '?offset=1&limit=2 503',
      '?offset=1&limit=2 200',
      '?offset=2&limit=2 429',
      '?offset=2&limit=2 200',
    ]);
    expect(tokens).toBe(5);
    // CloudAPI says nothing of when to come back: the budget holds for the client's backoff.
    expect(held).toHaveLength(1);
  });

  it("takes `ccm run`'s budget per request, so the controllers' wrapper charges nothing per operation", async () => {
    machines(2);
    listingFault({ status: 503, times: 1, headers: { 'retry-after': '0' } });
    const bucket = new TokenBucket(1000, 1000);
    const take = vi.spyOn(bucket, 'take');
    const p = triton.create(
      { url: sim.url, account: 'demo', keyMaterial: tsim.key.privateKey, datacenter: 'eu-ams-1' },
      {
        takeToken: async () => {
          await bucket.take();
        },
      },
    );
    expect(p.requestBudgeted).toBe(true);
    expect(await budgetedProvider({ current: p }, bucket).instances.list()).toHaveLength(2);
    expect(sim.requests.map((r) => r.status)).toEqual([503, 200]);
    expect(take).toHaveBeenCalledTimes(2);
    expect(
      triton.create({ url: sim.url, account: 'demo', keyMaterial: tsim.key.privateKey }, {}).requestBudgeted,
    ).toBeUndefined();
  });

  it("restify's throttle answer that does not stop is a RetryableError that says so", async () => {
    listingFault({ status: 429, body: TOO_MANY });
    const err = await error(provider().instances.list());
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toContain(
      'CloudAPI throttled the request (429: You have exceeded your request rate of 10 r/s.)',
    );
  });

  it('throttling that does not stop is a RetryableError', async () => {
    listingFault({ status: 420, body: THROTTLED });
    const err = await error(provider().instances.list());
    expect(err).toBeInstanceOf(RetryableError);
  });

  it('401 is Unauthorized, never an empty listing', async () => {
    listingFault({ status: 403, body: { code: 'NotAuthorized', message: 'You do not have permission' } });
    expect(await error(provider().instances.list())).toBeInstanceOf(UnauthorizedError);
  });
});

describe('get', () => {
  it('returns the machine by its provider ID', async () => {
    const [m] = machines(1);
    const got = await provider(1000, { datacenter: 'eu-ams-1' }).instances.get(`triton://${m?.id}`);
    expect(got).toMatchObject({ name: 'node-0', state: 'running', region: 'eu-ams-1' });
  });

  it("is NotFound for CloudAPI's own ResourceNotFound and for a destroyed machine (410)", async () => {
    const p = provider(1000, { datacenter: 'eu-ams-1' });
    expect(await error(p.instances.get('triton://0b1f2d4e-0000-4000-8000-000000000000'))).toBeInstanceOf(
      NotFoundError,
    );
    const gone = sim.addMachine({ name: 'gone', state: 'deleted' });
    expect(await error(p.instances.get(`triton://${gone.id}`))).toBeInstanceOf(NotFoundError);
  });

  it('a failed machine: absent from the listing, found by GetMachine as shut down, never gone', async () => {
    const p = provider(1000, { datacenter: 'eu-ams-1' });
    const failed = sim.addMachine({ name: 'failed', state: 'failed' });
    expect((await p.instances.list()).map((i) => i.name)).not.toContain('failed');
    expect(await p.instances.get(`triton://${failed.id}`)).toMatchObject({
      name: 'failed',
      state: 'stopped',
      addresses: [],
    });
  });

  it('a 404 that is not CloudAPI speaking (a proxy, a wrong path) is never NotFound', async () => {
    const [m] = machines(1);
    sim.fault({ path: /^\/demo\/machines\//, status: 404, body: '<html>nginx</html>' });
    const err = await error(provider(1000, { datacenter: 'x' }).instances.get(`triton://${m?.id}`));
    expect(err).not.toBeInstanceOf(NotFoundError);
    expect(err).toBeInstanceOf(InvalidConfigError);
  });

  it("a 410 without CloudAPI's record of the destroyed machine (a proxy, an empty body) is never NotFound", async () => {
    const [m] = machines(1);
    for (const body of ['<html><body>410 Gone</body></html>', '', { code: 'Gone', message: 'retired' }]) {
      sim.faults.length = 0;
      sim.fault({ path: /^\/demo\/machines\//, status: 410, body });
      const err = await error(provider(1000, { datacenter: 'x' }).instances.get(`triton://${m?.id}`));
      expect(err).not.toBeInstanceOf(NotFoundError);
    }
  });

  it('a 5xx or a timeout is never NotFound', async () => {
    const [m] = machines(1);
    sim.fault({ path: /^\/demo\/machines\//, status: 500, body: { code: 'InternalError', message: 'oops' } });
    expect(
      await error(provider(1000, { datacenter: 'x' }).instances.get(`triton://${m?.id}`)),
    ).toBeInstanceOf(RetryableError);
  });

  it('refuses a provider ID of another scheme', async () => {
    expect(await error(provider().instances.get('digitalocean://123'))).toBeInstanceOf(InvalidConfigError);
  });

  it('refuses a machine id that is no UUID (a Node may write its own providerID), asking nothing', async () => {
    for (const id of ['..', '%2e%2e', 'x?role=admin', 'machines']) {
      const err = await error(provider().instances.get(`triton://${id}`));
      expect(err, id).toBeInstanceOf(InvalidConfigError);
      expect(err.message, id).toContain('is not a Triton one (triton://<machine uuid>)');
    }
    expect(sim.requests).toEqual([]);
  });
});

describe('addresses', () => {
  it('private and shared ranges are internal, the rest external, the primary first of its kind', () => {
    expect(
      addresses({
        id: 'x',
        name: 'x',
        state: 'running',
        ips: ['8.8.8.8', '100.64.1.1', '172.32.0.1', 'fd00::1', '2001:db8::1', '172.31.255.1', '8.8.4.4'],
        primaryIp: '8.8.4.4',
      }),
    ).toEqual([
      ...internalIPs('100.64.1.1', 'fd00::1', '172.31.255.1'),
      ...externalIPs('8.8.4.4', '8.8.8.8', '172.32.0.1', '2001:db8::1'),
    ]);
  });
});

describe('configuration', () => {
  it('TRITON_* first, SDC_* as fallback, --cloud-api-url over both', () => {
    const env = {
      SDC_URL: 'https://sdc.example.com',
      SDC_ACCOUNT: 'old',
      TRITON_ACCOUNT: 'new',
      SDC_KEY_ID: 'aa',
    };
    expect(resolveProviderValues(triton, {}, env)).toMatchObject({
      url: 'https://sdc.example.com',
      account: 'new',
      keyId: 'aa',
    });
    expect(resolveProviderValues(triton, { 'cloud-api-url': 'https://flag.example.com' }, env).url).toBe(
      'https://flag.example.com',
    );
  });

  it('needs a URL and an account, and https except on loopback', () => {
    expect(() => triton.create({ account: 'demo', keyMaterial: tsim.key.privateKey }, {})).toThrow(
      'the CloudAPI URL is not set; set TRITON_URL (or --cloud-api-url)',
    );
    expect(() => triton.create({ url: sim.url, keyMaterial: tsim.key.privateKey }, {})).toThrow(
      'the account is not set; set TRITON_ACCOUNT',
    );
    expect(() =>
      triton.create(
        { url: 'http://cloudapi.example.com', account: 'demo', keyMaterial: tsim.key.privateKey },
        {},
      ),
    ).toThrow('the CloudAPI URL http://cloudapi.example.com must use https');
  });
});
