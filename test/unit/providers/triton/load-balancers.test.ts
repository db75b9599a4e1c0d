/**
 * CNS service load balancing against the simulator: the `triton.cns.services` tag on exactly the
 * backend machines, merged with what others put there, and only ccm's entries ever removed.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { InvalidConfigError, RetryableError } from '../../../../src/providers/errors.js';
import { TritonClient } from '../../../../src/providers/triton/client.js';
import { CnsLoadBalancers } from '../../../../src/providers/triton/load-balancers.js';
import { createSigner } from '../../../../src/providers/triton/signer.js';
import type { LoadBalancerRequest } from '../../../../src/providers/types.js';
import type { SimMachine } from '../../../clouds/triton/server.js';
import { requestService } from '../../../helpers/lb-request.js';
import { rejection as error } from '../../../helpers/rejection.js';
import { useTritonSim } from '../../../helpers/use-simulator.js';

const CLUSTER = 'c0ffee00-1111-4222-8333-444455556666';
const SERVICES = 'triton.cns.services';

// These tests call the provider with no request budget, faster than CloudAPI's throttle allows
// (10 a second, bursts of 30): the throttle is tested in test/unit/clouds/triton-simulator.test.ts.
const tsim = useTritonSim({
  login: 'demo',
  accountId: 'b89d9dd3-62ce-4f6f-eb0d-f78e57d515d9',
  throttle: false,
});
const { sim } = tsim;
let client: TritonClient;
let m1: SimMachine;
let m2: SimMachine;
let m3: SimMachine;

beforeAll(() => {
  client = new TritonClient({
    url: sim.url,
    account: 'demo',
    signer: createSigner({ account: 'demo', keyMaterial: tsim.key.privateKey }),
    secrets: [],
    http: { sleep: async () => {}, retries: 1 },
  });
});
beforeEach(() => {
  sim.machines.clear();
  sim.requests.length = 0;
  sim.faults.length = 0;
  sim.tagDelayMs = 0;
  sim.onTagsRead = undefined;
  sim.account.cnsEnabled = true;
  m1 = sim.addMachine({ name: 'w1', ips: ['10.0.0.1'], tags: { role: 'worker' } });
  m2 = sim.addMachine({ name: 'w2', ips: ['10.0.0.2'], tags: { [SERVICES]: 'dns:53', owner: 'ops' } });
  m3 = sim.addMachine({ name: 'w3', ips: ['10.0.0.3'] });
});

function lbs(options: Partial<ConstructorParameters<typeof CnsLoadBalancers>[1]> = {}) {
  return new CnsLoadBalancers(client, {
    datacenter: async () => 'us-test-1',
    cnsSuffix: 'triton.zone',
    settleDelayMs: 1,
    ...options,
  });
}

function request(
  uid: string,
  nodes: SimMachine[],
  overrides: Partial<LoadBalancerRequest> & { annotations?: Record<string, string> } = {},
): LoadBalancerRequest {
  const { annotations, ...rest } = overrides;
  return {
    name: `a${uid.replace(/-/g, '')}`.slice(0, 32),
    clusterID: CLUSTER,
    service: requestService({
      namespace: 'default',
      name: `svc-${uid.slice(0, 4)}`,
      uid,
      annotations: annotations ?? {},
    }),
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: nodes.map((m, i) => ({
      name: m.name,
      // one Node without a provider ID yet: matched by name
      providerID: i === 0 ? '' : `triton://${m.id}`,
      addresses: [],
    })),
    ...rest,
  };
}

const WEB = '11111111-aaaa-4bbb-8ccc-000000000001';
const API = '22222222-aaaa-4bbb-8ccc-000000000002';

function tags(m: SimMachine) {
  return sim.machines.get(m.id)?.tags ?? {};
}

describe('ensure', () => {
  it('tags exactly the backend machines, keeps what others put there, reports the CNS host name', async () => {
    const status = await lbs().ensure(
      request(WEB, [m1, m2], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } }),
    );
    expect(status).toEqual({
      ingress: [{ hostname: 'web.svc.b89d9dd3-62ce-4f6f-eb0d-f78e57d515d9.us-test-1.triton.zone' }],
    });
    expect(tags(m1)).toEqual({
      role: 'worker',
      [SERVICES]: 'web:30080',
      [`ccm.cns.${WEB}`]: JSON.stringify({
        cluster: CLUSTER,
        service: 'default/svc-1111',
        entries: ['web:30080'],
      }),
    });
    expect(tags(m2)[SERVICES]).toBe('dns:53,web:30080');
    expect(tags(m2).owner).toBe('ops');
    expect(tags(m3)).toEqual({});
  });

  it('the default CNS name is the load balancer name; a second ensure writes nothing', async () => {
    const req = request(WEB, [m1]);
    const status = await lbs().ensure(req);
    expect(status.ingress[0]?.hostname).toBe(`${req.name}.svc.${sim.account.id}.us-test-1.triton.zone`);
    const writes = () => sim.requests.filter((r) => r.method !== 'GET').length;
    const before = writes();
    await lbs().ensure(req);
    expect(writes()).toBe(before);
  });

  it('two Services sharing a machine keep both entries, even when ensured at the same time', async () => {
    const lb = lbs();
    await Promise.all([
      lb.ensure(request(WEB, [m1, m2], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } })),
      lb.ensure(
        request(API, [m2, m3], {
          annotations: { 'triton.ccm.io/cns-service-name': 'api' },
          ports: [
            { name: 'grpc', protocol: 'TCP', port: 9000, nodePort: 31000 },
            { name: 'http', protocol: 'TCP', port: 80, nodePort: 31001 },
          ],
        }),
      ),
    ]);
    expect(tags(m1)[SERVICES]).toBe('web:30080');
    expect(String(tags(m2)[SERVICES]).split(',').sort()).toEqual([
      'api:31000',
      'api:31001',
      'dns:53',
      'web:30080',
    ]);
    expect(tags(m3)[SERVICES]).toBe('api:31000,api:31001');

    // deleting one leaves every other tag untouched
    const before = { m1: { ...tags(m1) }, m2: { ...tags(m2) }, m3: { ...tags(m3) } };
    await lb.delete(request(WEB, [m1, m2]));
    expect(tags(m1)).toEqual({ role: 'worker' });
    const { [`ccm.cns.${WEB}`]: _web, ...m2Rest } = before.m2;
    expect(tags(m2)).toEqual({
      ...m2Rest,
      [SERVICES]: String(before.m2[SERVICES]).replace(',web:30080', ''),
    });
    expect(tags(m3)).toEqual(before.m3);
  });

  it('ports changed: its old entries go, the new ones come, others stay', async () => {
    const lb = lbs();
    const req = request(WEB, [m2], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } });
    await lb.ensure(req);
    await lb.ensure({ ...req, ports: [{ name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 }] });
    expect(tags(m2)[SERVICES]).toBe('dns:53,web:30443');
  });

  it('service-port mode publishes the Service port', async () => {
    await lbs().ensure(
      request(WEB, [m3], {
        annotations: {
          'triton.ccm.io/cns-service-name': 'web',
          'triton.ccm.io/cns-srv-port': 'service-port',
        },
      }),
    );
    expect(tags(m3)[SERVICES]).toBe('web:80');
  });

  it('an entry that was there before ccm is not claimed, so it is never taken off', async () => {
    sim.machine(m3.id).tags = { [SERVICES]: 'web:30080' };
    const lb = lbs();
    const req = request(WEB, [m3], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } });
    await lb.ensure(req);
    expect(JSON.parse(String(tags(m3)[`ccm.cns.${WEB}`])).entries).toEqual([]);
    await lb.delete(req);
    expect(tags(m3)).toEqual({ [SERVICES]: 'web:30080' });
  });

  it('a bad annotation is an InvalidConfigError naming it and its accepted values', async () => {
    const bad = [
      ['triton.ccm.io/cns-service-name', 'Web_1', /not valid; use a DNS label/],
      ['triton.ccm.io/cns-srv-port', 'both', /use "node-port" \(default\) or "service-port"/],
    ] as const;
    for (const [annotation, value, accepted] of bad) {
      const err = await error(lbs().ensure(request(WEB, [m1], { annotations: { [annotation]: value } })));
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect(err.message).toContain(`annotation ${annotation}="${value}" is not valid`);
      expect(err.message).toMatch(accepted);
    }
    expect(sim.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('CNS disabled on the account, or a loadBalancerIP, is a configuration error and writes nothing', async () => {
    sim.account.cnsEnabled = false;
    expect((await error(lbs().ensure(request(WEB, [m1])))).message).toMatch(
      /Triton CNS is not enabled for account demo/,
    );
    sim.account.cnsEnabled = true;
    const req = request(WEB, [m1]);
    const err = await error(lbs().ensure({ ...req, service: { ...req.service, loadBalancerIP: '1.2.3.4' } }));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(sim.requests.filter((r) => r.method !== 'GET')).toEqual([]);
  });
});

describe('nodes and deletion', () => {
  it('a Node leaving the backend set loses only this Service’s entries', async () => {
    const lb = lbs();
    const req = request(WEB, [m1, m2], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } });
    await lb.ensure(req);
    await lb.updateNodes({ ...req, nodes: request(WEB, [m1]).nodes });
    expect(tags(m2)).toEqual({ [SERVICES]: 'dns:53', owner: 'ops' });
    expect(tags(m1)[SERVICES]).toBe('web:30080');
    await lb.updateNodes({
      ...req,
      nodes: [...req.nodes, { name: 'w3', providerID: `triton://${m3.id}`, addresses: [] }],
    });
    expect(tags(m3)[SERVICES]).toBe('web:30080');
  });

  it('get: undefined before ensure and after delete, the status in between', async () => {
    const lb = lbs();
    const req = request(WEB, [m1]);
    expect(await lb.get(req)).toBeUndefined();
    await lb.ensure(req);
    expect((await lb.get(req))?.ingress[0]?.hostname).toContain(`${req.name}.svc.`);
    await lb.delete(req);
    expect(await lb.get(req)).toBeUndefined();
    await lb.delete(req); // already gone: nothing to do
  });

  it('an owner tag of another cluster is never adopted, changed or deleted', async () => {
    const foreign = JSON.stringify({
      cluster: 'other-cluster',
      service: 'default/web',
      entries: ['web:30080'],
    });
    sim.machine(m1.id).tags = { [SERVICES]: 'web:30080', [`ccm.cns.${WEB}`]: foreign };
    const lb = lbs();
    const req = request(WEB, [m1], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } });
    expect(await lb.get(req)).toBeUndefined();
    await lb.delete(req);
    const err = await error(lb.ensure(req));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toContain('of cluster "other-cluster"');
    expect(tags(m1)).toEqual({ [SERVICES]: 'web:30080', [`ccm.cns.${WEB}`]: foreign });
  });

  it('the same entry claimed by two Services stays until the last one goes', async () => {
    const lb = lbs();
    const a = request(WEB, [m1], { annotations: { 'triton.ccm.io/cns-service-name': 'shared' } });
    const b = request(API, [m1], { annotations: { 'triton.ccm.io/cns-service-name': 'shared' } });
    await lb.ensure(a);
    await lb.ensure(b);
    await lb.delete(a);
    expect(tags(m1)[SERVICES]).toBe('shared:30080');
    await lb.delete(b);
    expect(tags(m1)).toEqual({ role: 'worker' });
  });
});

describe('failed machines (CloudAPI lists them only with tombstone)', () => {
  it('delete takes ccm’s entries and owner tag off a machine that failed meanwhile', async () => {
    const lb = lbs();
    const req = request(WEB, [m1, m2], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } });
    await lb.ensure(req);
    sim.machine(m2.id).state = 'failed';
    expect((await lb.get(req))?.ingress[0]?.hostname).toContain('web.svc.');
    await lb.delete(req);
    expect(tags(m2)).toEqual({ [SERVICES]: 'dns:53', owner: 'ops' });
    expect(tags(m1)).toEqual({ role: 'worker' });
    expect(await lb.get(req)).toBeUndefined();
    const listings = sim.requests.filter((r) => r.method === 'GET' && r.path === '/demo/machines');
    expect(listings.every((r) => new URLSearchParams(r.query).get('tombstone') === 'true')).toBe(true);
  });

  it('a failed machine is never a backend: its entries go when the Service is reconciled', async () => {
    const lb = lbs();
    const req = request(WEB, [m1, m3], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } });
    await lb.ensure(req);
    sim.machine(m3.id).state = 'failed';
    await lb.updateNodes(req); // still named as a backend Node
    expect(tags(m3)).toEqual({});
    expect(tags(m1)[SERVICES]).toBe('web:30080');
  });

  it('a destroyed machine in the tombstone listing is left alone', async () => {
    const lb = lbs();
    const req = request(WEB, [m1, m3], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } });
    await lb.ensure(req);
    sim.machine(m3.id).state = 'deleted';
    sim.requests.length = 0;
    await lb.delete(req);
    expect(sim.requests.some((r) => r.path.startsWith(`/demo/machines/${m3.id}`))).toBe(false);
    expect(tags(m1)).toEqual({ role: 'worker' });
  });
});

describe('tag validation (node-triton-tags, as VMAPI runs it)', () => {
  it('an entry VMAPI refuses (set outside CloudAPI) is a configuration error naming the reason', async () => {
    // Written straight into the simulator's state, as vmadm on the compute node could: CloudAPI
    // would refuse it. ccm keeps others' entries, so its write carries it and is refused.
    sim.machine(m1.id).tags = { [SERVICES]: 'legacy:80:foo=bar' };
    const err = await error(lbs().ensure(request(WEB, [m1])));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(
      `AddMachineTags of machine ${m1.id}: CloudAPI refused the request (409 ValidationFailed: error adding tags: Invalid tag parameters: invalid "triton.cns.services" tag: service property "foo" is not a valid property name)`,
    );
    expect(tags(m1)).toEqual({ [SERVICES]: 'legacy:80:foo=bar' });
  });
});

describe('a listing that moves while it is read', () => {
  it('machines destroyed between pages: no backend drops out of the CNS service, and a new one is still added', async () => {
    const paged = new TritonClient({
      url: sim.url,
      account: 'demo',
      signer: createSigner({ account: 'demo', keyMaterial: tsim.key.privateKey }),
      secrets: [],
      pageSize: 2,
      http: { sleep: async () => {}, retries: 1 },
    });
    for (const m of [m1, m2, m3]) sim.machines.delete(m.id);
    // ids fix VMAPI's order (uuid, descending): two doomed machines, then the backends.
    const doomed = ['ffffffff-0000-4000-8000-000000000001', 'fffffffe-0000-4000-8000-000000000001'];
    for (const [i, id] of doomed.entries()) sim.addMachine({ id, name: `doomed-${i}` });
    const backends = ['30000000', '20000000', '10000000'].map((p, i) =>
      sim.addMachine({ id: `${p}-0000-4000-8000-000000000001`, name: `b${i}` }),
    );
    await lbs().ensure(
      request(WEB, backends.slice(0, 2), { annotations: { 'triton.ccm.io/cns-service-name': 'web' } }),
    );
    sim.onListPage = (offset) => {
      const next = doomed.map((id) => sim.machines.get(id)).find((m) => m && m.state !== 'deleted');
      if (offset > 0 && next) next.state = 'deleted';
    };
    try {
      await new CnsLoadBalancers(paged, {
        datacenter: async () => 'us-test-1',
        cnsSuffix: 'triton.zone',
        settleDelayMs: 1,
      }).updateNodes(request(WEB, backends, { annotations: { 'triton.ccm.io/cns-service-name': 'web' } }));
    } finally {
      sim.onListPage = undefined;
    }
    for (const m of backends) expect(tags(m)[SERVICES]).toBe('web:30080');
  });
});

describe('concurrent writers and asynchronous tag writes', () => {
  it('waits for CloudAPI to apply the write (read back until it shows)', async () => {
    sim.tagDelayMs = 30;
    const lb = lbs({ settleDelayMs: 20, attempts: 10 });
    await lb.ensure(request(WEB, [m1, m2], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } }));
    expect(tags(m2)[SERVICES]).toBe('dns:53,web:30080');
  });

  it('an entry of ccm dropped by another writer right after its write is put back', async () => {
    let reads = 0;
    sim.onTagsRead = (id) => {
      // Another tool read the tags before ccm wrote, and writes its own value after: ccm's entry is lost.
      if (id === m2.id && ++reads === 2) sim.machine(m2.id).tags[SERVICES] = 'dns:53,ntp:123';
    };
    await lbs().ensure(request(WEB, [m2], { annotations: { 'triton.ccm.io/cns-service-name': 'web' } }));
    expect(tags(m2)[SERVICES]).toBe('dns:53,ntp:123,web:30080');
  });

  it('tags that never settle are a RetryableError with a delay', async () => {
    sim.tagDelayMs = 60_000;
    const err = await error(lbs({ attempts: 2 }).ensure(request(WEB, [m1])));
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as RetryableError).retryAfterMs).toBeGreaterThan(0);
    expect(err.message).toContain(`machine ${m1.id} did not settle`);
  });
});
