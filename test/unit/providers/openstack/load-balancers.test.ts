import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { InvalidConfigError, RetryableError } from '../../../../src/providers/errors.js';
import { ANNOTATIONS } from '../../../../src/providers/openstack/annotations.js';
import { parseCloudConfig } from '../../../../src/providers/openstack/config.js';
import { createOpenStack } from '../../../../src/providers/openstack/index.js';
import type { LoadBalancers } from '../../../../src/providers/types.js';
import { FLOATING_NETWORK_ID, SUBNET_ID } from '../../../clouds/openstack/octavia.js';
import { OpenStackSimulator } from '../../../clouds/openstack/simulator.js';
import { useSimulator } from '../../../helpers/use-simulator.js';
import { node, request } from './lb-request.js';

const fixture = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../../../fixtures/openstack/${name}`, import.meta.url)), 'utf8');

const sim = useSimulator(() => new OpenStackSimulator().start(), { each: true });

function lbs(extra = ''): LoadBalancers {
  const text = sim.cloudConf('occm-cloud-config').replace('[BlockStorage]', `${extra}\n[BlockStorage]`);
  const provider = createOpenStack(parseCloudConfig(text), {}, { sleep: async () => {}, retries: 1 });
  if (!provider.loadBalancers) throw new Error('no load balancers');
  return provider.loadBalancers;
}

/** Calls `step` the way the service controller does: again after each RetryableError. */
async function converge<T>(
  step: () => Promise<T>,
  max = 30,
): Promise<{ result: T; retries: RetryableError[] }> {
  const retries: RetryableError[] = [];
  for (let i = 0; i < max; i++) {
    try {
      return { result: await step(), retries };
    } catch (err) {
      if (!(err instanceof RetryableError)) throw err;
      retries.push(err);
    }
  }
  throw new Error(`did not converge: ${retries.at(-1)?.message}`);
}

const onlyLb = () => [...sim.octavia.loadBalancers.values()].map((r) => r.lb);

describe('Octavia load balancers', () => {
  it('creates one fully populated load balancer, waits for ACTIVE, then gets a floating IP: one call', async () => {
    const p = lbs('create-monitor=true');
    const req = request();
    const status = await p.ensure(req);
    // PENDING_CREATE was read once, then the load balancer was read again until ACTIVE.
    expect(sim.requestsTo(/\/lbaas\/loadbalancers\/[^/]+$/, 'GET').length).toBeGreaterThanOrEqual(1);

    const created = sim.requestsTo(/\/lbaas\/loadbalancers$/, 'POST')[0]?.body as {
      loadbalancer: Record<string, unknown>;
    };
    expect(created.loadbalancer).toEqual({
      name: 'ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90',
      description:
        'Kubernetes Service default/web (cluster c0ffee00-1111-2222-3333-444455556666), managed by ccm',
      vip_subnet_id: SUBNET_ID,
      tags: ['ccm-cluster:c0ffee00-1111-2222-3333-444455556666', 'ccm-service:default/web'],
      listeners: [
        {
          name: 'ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90_tcp_80',
          protocol: 'TCP',
          protocol_port: 80,
          connection_limit: -1,
          timeout_client_data: 50000,
          timeout_member_connect: 5000,
          timeout_member_data: 50000,
          timeout_tcp_inspect: 0,
          tags: ['ccm-cluster:c0ffee00-1111-2222-3333-444455556666', 'ccm-service:default/web'],
          default_pool: {
            name: 'ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90_tcp_80',
            protocol: 'TCP',
            lb_algorithm: 'ROUND_ROBIN',
            session_persistence: null,
            tags: ['ccm-cluster:c0ffee00-1111-2222-3333-444455556666', 'ccm-service:default/web'],
            members: [
              { name: 'w1', address: '10.0.0.11', protocol_port: 30080, subnet_id: SUBNET_ID },
              { name: 'w2', address: '10.0.0.12', protocol_port: 30080, subnet_id: SUBNET_ID },
            ],
            healthmonitor: { type: 'TCP', delay: 5, timeout: 3, max_retries: 1, max_retries_down: 3 },
          },
        },
      ],
    });
    // Every top-level key we send is one the api-ref's fully populated request uses (or tags).
    const sample = JSON.parse(fixture('octavia-loadbalancer-full-create-request.json')).loadbalancer;
    for (const key of Object.keys(created.loadbalancer))
      expect([...Object.keys(sample), 'tags', 'vip_network_id']).toContain(key);

    const [lb] = onlyLb();
    expect(status).toEqual({
      ingress: [{ ip: '172.24.4.10' }],
      annotations: { 'loadbalancer.openstack.org/load-balancer-id': lb?.id },
    });
    const [fip] = sim.octavia.floatingIps.values();
    expect(fip).toMatchObject({ floating_network_id: FLOATING_NETWORK_ID, port_id: lb?.vip_port_id });
    expect(await p.get(req)).toEqual(status);
    // a second ensure of an unchanged Service changes nothing
    const writes = sim.requests.filter((r) => r.method !== 'GET').length;
    await p.ensure(req);
    expect(sim.requests.filter((r) => r.method !== 'GET').length).toBe(writes);
  });

  it('updates listeners when ports change, and members when nodes change', async () => {
    const p = lbs();
    await converge(() => p.ensure(request()));
    const ports = [
      { name: 'https', protocol: 'TCP' as const, port: 443, nodePort: 30443 },
      { name: 'dns', protocol: 'UDP' as const, port: 53, nodePort: 30053 },
    ];
    // Four changes (two listeners, each with its pool; the old port's pool and listener go), each
    // waited for: one call, no retry.
    await p.ensure(request({ ports }));
    const lbId = String(onlyLb()[0]?.id);
    const shape = () =>
      sim.octavia.tree(lbId).map((t) => ({
        listener: `${t.listener.protocol} ${t.listener.protocol_port}`,
        members: t.members.map((m) => `${m.address}:${m.protocol_port}`),
      }));
    expect(shape()).toEqual([
      { listener: 'TCP 443', members: ['10.0.0.11:30443', '10.0.0.12:30443'] },
      { listener: 'UDP 53', members: ['10.0.0.11:30053', '10.0.0.12:30053'] },
    ]);

    await p.updateNodes(request({ ports, nodes: [node('w2', '10.0.0.12'), node('w3', '10.0.0.13')] }));
    expect(shape()).toEqual([
      { listener: 'TCP 443', members: ['10.0.0.12:30443', '10.0.0.13:30443'] },
      { listener: 'UDP 53', members: ['10.0.0.12:30053', '10.0.0.13:30053'] },
    ]);
    const batch = sim.requestsTo(/\/members$/, 'PUT').at(-1)?.body as { members: unknown[] };
    expect(batch.members).toEqual([
      { name: 'w2', address: '10.0.0.12', protocol_port: 30053, subnet_id: SUBNET_ID },
      { name: 'w3', address: '10.0.0.13', protocol_port: 30053, subnet_id: SUBNET_ID },
    ]);
  });

  it('applies annotations: timeouts, connection limit, health monitor, Local traffic policy, source ranges', async () => {
    const p = lbs();
    const req = request(
      {},
      {
        annotations: {
          [ANNOTATIONS.timeoutClientData.key]: '60000',
          [ANNOTATIONS.connectionLimit.key]: '100',
          [ANNOTATIONS.enableHealthMonitor.key]: 'true',
          [ANNOTATIONS.healthMonitorDelay.key]: '10',
          [ANNOTATIONS.healthMonitorTimeout.key]: '4',
          [ANNOTATIONS.healthMonitorMaxRetries.key]: '2',
        },
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 32000,
        loadBalancerSourceRanges: ['192.168.32.0/24'],
        sessionAffinity: 'ClientIP',
      },
    );
    await converge(() => p.ensure(req));
    const [t] = sim.octavia.tree(String(onlyLb()[0]?.id));
    expect(t?.listener).toMatchObject({
      timeout_client_data: 60000,
      connection_limit: 100,
      allowed_cidrs: ['192.168.32.0/24'],
    });
    expect(t?.pool).toMatchObject({ session_persistence: { type: 'SOURCE_IP', cookie_name: null } });
    // Octavia's extra persistence fields are not a difference: a second ensure writes nothing.
    const writes = sim.requests.filter((r) => r.method !== 'GET').length;
    await p.ensure(req);
    expect(sim.requests.filter((r) => r.method !== 'GET').length).toBe(writes);
    expect(t?.monitor).toMatchObject({
      type: 'HTTP',
      url_path: '/healthz',
      delay: 10,
      timeout: 4,
      max_retries: 2,
    });
    expect(t?.members.map((m) => m.monitor_port)).toEqual([32000, 32000]);

    // the annotation changes: the listener is updated in place
    await converge(() =>
      p.ensure({
        ...req,
        service: {
          ...req.service,
          annotations: { ...req.service.annotations, [ANNOTATIONS.connectionLimit.key]: '200' },
        },
      }),
    );
    expect(sim.octavia.tree(String(onlyLb()[0]?.id))[0]?.listener.connection_limit).toBe(200);
  });

  it('refuses a bad annotation naming it and its accepted values, before any call', async () => {
    const p = lbs();
    await expect(
      p.ensure(request({}, { annotations: { [ANNOTATIONS.keepFloatingIp.key]: 'yes please' } })),
    ).rejects.toThrow(
      new InvalidConfigError(
        'annotation loadbalancer.openstack.org/keep-floatingip: "yes please" is not valid; use true or false',
      ),
    );
    await expect(
      p.ensure(request({}, { annotations: { [ANNOTATIONS.healthMonitorMaxRetries.key]: '0' } })),
    ).rejects.toThrow(
      'annotation loadbalancer.openstack.org/health-monitor-max-retries: "0" is not valid; use a whole number from 1 to 10',
    );
    await expect(
      p.ensure(request({}, { annotations: { 'loadbalancer.openstack.org/proxy-protocol': 'true' } })),
    ).rejects.toThrow(
      'annotation loadbalancer.openstack.org/proxy-protocol: PROXY protocol pools are not supported; remove it',
    );
    expect(sim.requests).toEqual([]);
  });

  it('an internal load balancer has the VIP as ingress and no floating IP', async () => {
    const p = lbs();
    const { result } = await converge(() =>
      p.ensure(request({}, { annotations: { [ANNOTATIONS.internal.key]: 'true' } })),
    );
    expect(result.ingress).toEqual([{ ip: onlyLb()[0]?.vip_address }]);
    expect(sim.octavia.floatingIps.size).toBe(0);
  });

  it('ERROR in Octavia is a retryable error saying so, retried with the Service backoff (no fixed delay)', async () => {
    const p = lbs();
    sim.octavia.failNextProvisioning = true;
    const failed = (await p.ensure(request()).catch((e: unknown) => e)) as RetryableError;
    expect(failed).toBeInstanceOf(RetryableError);
    expect(failed.retryAfterMs).toBe(0);
    expect(failed.message).toMatch(
      /^Octavia load balancer ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90 \(.*\) is in provisioning status ERROR; ccm retries/,
    );
    // nothing else was created beside the one load balancer
    expect(onlyLb()).toHaveLength(1);
    expect(sim.octavia.floatingIps.size).toBe(0);
  });

  it('delete removes exactly what ccm created: the load balancer (cascade) and its own floating IP', async () => {
    const p = lbs();
    const req = request();
    await converge(() => p.ensure(req));
    await p.delete(req);
    expect(sim.requestsTo(/\/lbaas\/loadbalancers\/[^/]+\?cascade=true/, 'DELETE')).toHaveLength(1);
    expect(sim.octavia.floatingIps.size).toBe(0);
    // delete returns once Octavia has removed it (PENDING_DELETE was waited out).
    expect(sim.octavia.loadBalancers.size).toBe(0);
    expect(await p.get(req)).toBeUndefined();
    await p.delete(req); // already gone: nothing to do
  });

  it('a cascade delete that ends in ERROR is not done: the next try deletes again', async () => {
    const p = lbs();
    const req = request();
    await p.ensure(req);
    const [record] = sim.octavia.loadBalancers.values();
    // The simulator settles a delete to DELETED; this one fails the way Octavia's can.
    const lbId = String(record?.lb.id);
    sim.fault({
      method: 'DELETE',
      path: /\/lbaas\/loadbalancers\/[^/]+$/,
      status: 204,
      body: undefined,
      times: 1,
    });
    if (record) record.lb.provisioning_status = 'ERROR';
    const err = (await p.delete(req).catch((e: unknown) => e)) as RetryableError;
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toBe(
      `Octavia load balancer ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90 (${lbId}) is ERROR after ccm deleted it; ccm deletes it again`,
    );
    await p.delete(req);
    expect(sim.octavia.loadBalancers.size).toBe(0);
    expect(sim.requestsTo(/\/lbaas\/loadbalancers\/[^/]+\?cascade=true/, 'DELETE')).toHaveLength(2);
  });

  it('keep-floatingip keeps the address; a floating IP ccm did not create is only disassociated', async () => {
    const p = lbs();
    const keep = request({}, { annotations: { [ANNOTATIONS.keepFloatingIp.key]: 'true' } });
    await converge(() => p.ensure(keep));
    await p.delete(keep);
    expect([...sim.octavia.floatingIps.values()].map((f) => f.port_id)).toEqual([null]);

    sim.octavia.floatingIps.clear();
    // An admin allocates the address (Neutron lets only an admin or manager choose it).
    sim.octavia.roles = ['admin'];
    const own = sim.octavia.neutron('POST', '/v2.0/floatingips', new URL('http://x'), {
      floatingip: { floating_network_id: FLOATING_NETWORK_ID, floating_ip_address: '172.24.4.200' },
    });
    sim.octavia.roles = ['member'];
    expect(own[0]).toBe(201);
    const other = request(
      { name: 'b1b2c3d4e5f60718293a4b5c6d7e8f90' },
      { loadBalancerIP: '172.24.4.200', name: 'api' },
    );
    const { result } = await converge(() => p.ensure(other));
    expect(result.ingress).toEqual([{ ip: '172.24.4.200' }]);
    await p.delete(other);
    expect([...sim.octavia.floatingIps.values()].map((f) => [f.floating_ip_address, f.port_id])).toEqual([
      ['172.24.4.200', null],
    ]);
  });

  it('never adopts, changes or deletes a load balancer without this cluster’s tag', async () => {
    const p = lbs();
    const req = request();
    for (const tags of [[], ['ccm-cluster:another-cluster']]) {
      sim.octavia.loadBalancers.clear();
      sim.octavia.route('POST', '/loadbalancers', new URL('http://x'), {
        loadbalancer: { name: 'ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90', vip_subnet_id: SUBNET_ID, tags },
      });
      const before = sim.requests.length;
      await expect(p.ensure(req)).rejects.toThrow(
        'a load balancer named ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90 exists in Octavia without the tag ccm-cluster:c0ffee00-1111-2222-3333-444455556666: ccm never adopts it; delete or rename it',
      );
      await expect(p.updateNodes(req)).rejects.toBeInstanceOf(InvalidConfigError);
      expect(await p.get(req)).toBeUndefined();
      await p.delete(req);
      expect(
        sim.requests.slice(before).filter((r) => r.method !== 'GET' && !r.path.includes('auth/tokens')),
      ).toEqual([]);
      expect(onlyLb()).toHaveLength(1);
    }
  });

  it('a load balancer still PENDING after 15 s of waiting is left to the next try, which finishes it', async () => {
    const p = lbs();
    await p.ensure(request());
    sim.octavia.settleAfterReads = 20;
    const reads = () => sim.requestsTo(/\/lbaas\/loadbalancers\/[^/]+$/, 'GET').length;
    const before = reads();
    const err = await p
      .updateNodes(request({ nodes: [node('w9', '10.0.0.19')] }))
      .catch((e: unknown) => e as RetryableError);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err?.retryAfterMs).toBe(5000);
    expect(err?.message).toMatch(/is busy \(updating the members for TCP 80\); checking again in 5 s$/);
    // 15 polls, one a second, after the change (the test's sleep is instant).
    expect(reads() - before).toBe(16);
    sim.octavia.settleAfterReads = 1;
    await converge(() => p.updateNodes(request({ nodes: [node('w9', '10.0.0.19')] })));
    expect(sim.octavia.tree(String(onlyLb()[0]?.id))[0]?.members.map((m) => m.address)).toEqual([
      '10.0.0.19',
    ]);
  });

  it('asks what Octavia accepts from its version document: before API 2.5 (no tags) it refuses, saying so', async () => {
    (sim as { octaviaV2Alias: boolean }).octaviaV2Alias = false;
    const p = lbs();
    const err = (await p.ensure(request()).catch((e: unknown) => e)) as Error;
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(
      'Service default/web: ccm tags its load balancers to know them, which needs Octavia API v2.5 (Stein); this Octavia serves v2.0',
    );
    expect(sim.requests.filter((r) => r.method !== 'GET' && !r.path.endsWith('/auth/tokens'))).toEqual([]);
  });

  it('sends only the attributes the Octavia API version knows, on /v2.0; never allowed_cidrs null', async () => {
    sim.octavia.apiMinor = 5; // Stein: tags and timeouts, no allowed_cidrs (2.12), no HTTP monitor on UDP (2.16)
    sim.octavia.settleAfterReads = 0;
    const p = lbs('create-monitor=true');
    const ranges = { loadBalancerSourceRanges: ['10.0.0.0/8'] };
    await expect(p.ensure(request({}, ranges))).rejects.toThrow(
      'Service default/web: loadBalancerSourceRanges (listener allowed_cidrs) needs Octavia API v2.12 (Train); this Octavia serves v2.5',
    );
    const udpLocal = request(
      { ports: [{ name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053 }] },
      { externalTrafficPolicy: 'Local', healthCheckNodePort: 32000 },
    );
    await converge(() => p.ensure(udpLocal));
    const timeout = { annotations: { [ANNOTATIONS.timeoutClientData.key]: '60000' } };
    await converge(() => p.ensure({ ...udpLocal, service: { ...udpLocal.service, ...timeout } }));
    const octavia = sim.requests.filter((r) => r.path.startsWith('/load-balancer/v'));
    for (const r of octavia) expect(r.path).toMatch(/^\/load-balancer\/v2\.0\/lbaas\//);
    expect(octavia.every((r) => r.status < 400)).toBe(true);
    for (const r of sim.requestsTo(/\/listeners/, 'PUT'))
      expect(Object.keys((r.body as { listener: object }).listener)).not.toContain('allowed_cidrs');
    const lbId = String(onlyLb()[0]?.id);
    // A UDP pool's monitor is UDP-CONNECT before 2.16, and the members have no monitor_port.
    expect(sim.octavia.tree(lbId)[0]?.monitor).toMatchObject({ type: 'UDP-CONNECT' });
    expect(sim.octavia.tree(lbId)[0]?.members.every((m) => m.monitor_port === null)).toBe(true);
    expect(sim.octavia.tree(lbId)[0]?.listener.timeout_client_data).toBe(60000);
  });

  it('the ovn provider gets no HTTP health monitor, timeouts or allowed_cidrs (as the official controller)', async () => {
    const p = lbs('create-monitor=true\nlb-provider=ovn');
    await converge(() =>
      p.ensure(request({}, { externalTrafficPolicy: 'Local', healthCheckNodePort: 32000 })),
    );
    const post = sim.requestsTo(/\/lbaas\/loadbalancers$/, 'POST')[0];
    const listener =
      (post?.body as { loadbalancer: { listeners: Record<string, unknown>[] } } | undefined)?.loadbalancer
        .listeners[0] ?? {};
    expect(Object.keys(listener).filter((k) => k.startsWith('timeout_') || k === 'allowed_cidrs')).toEqual(
      [],
    );
    expect(sim.octavia.tree(String(onlyLb()[0]?.id))[0]?.monitor).toMatchObject({ type: 'TCP' });
    await expect(p.ensure(request({}, { loadBalancerSourceRanges: ['10.0.0.0/8'] }))).rejects.toThrow(
      /needs Octavia API v2\.12 \(Train\) \(and the ovn provider never has it\)/,
    );
  });

  it('a member change Octavia fails (members ERROR, load balancer ACTIVE again) is sent once more', async () => {
    const p = lbs();
    await converge(() => p.ensure(request()));
    const lbId = String(onlyLb()[0]?.id);
    // The batch fails the way Octavia's does: MembersToErrorOnRevertTask marks the members ERROR
    // and the load balancer ACTIVE, so its provisioning_status alone says all went well.
    sim.octavia.failNextProvisioning = true;
    // A Node added: after the failed batch the members are the ones wanted, all of them ERROR.
    const nodes = [node('w1', '10.0.0.11'), node('w2', '10.0.0.12'), node('w3', '10.0.0.13')];
    await p.updateNodes(request({ nodes }));
    expect(sim.requestsTo(/\/members$/, 'PUT')).toHaveLength(2);
    const [tree] = sim.octavia.tree(lbId);
    expect(tree?.members.map((m) => `${m.address} ${m.provisioning_status}`)).toEqual([
      '10.0.0.11 ACTIVE',
      '10.0.0.12 ACTIVE',
      '10.0.0.13 ACTIVE',
    ]);
    expect(onlyLb()[0]?.provisioning_status).toBe('ACTIVE');
  });

  it('a child Octavia fails twice is a retryable error naming it, and the next call sends it again', async () => {
    const p = lbs();
    await converge(() => p.ensure(request()));
    const lbId = String(onlyLb()[0]?.id);
    // Every member change fails while Octavia is broken.
    const nodes = [node('w3', '10.0.0.13')];
    const putMembers = sim.requestsTo(/\/members$/, 'PUT').length;
    const realPut = sim.octavia.route.bind(sim.octavia);
    sim.octavia.route = (method, path, url, body) => {
      if (method === 'PUT' && path.endsWith('/members')) sim.octavia.failNextProvisioning = true;
      return realPut(method, path, url, body);
    };
    const err = await p.updateNodes(request({ nodes })).catch((e: unknown) => e as RetryableError);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err?.retryAfterMs).toBe(0);
    expect(err?.message).toMatch(
      new RegExp(
        `^Octavia load balancer ccm_a1b2c3d4e5f60718293a4b5c6d7e8f90 \\(${lbId}\\) is ACTIVE but the members for TCP 80 failed twice: Octavia left member\\(s\\) [0-9a-f-]+(, [0-9a-f-]+)* in provisioning status ERROR; ccm tries again later`,
      ),
    );
    expect(sim.requestsTo(/\/members$/, 'PUT').length - putMembers).toBe(2);
    // Octavia works again: the next call sends the members once more and is done.
    sim.octavia.route = realPut;
    await p.updateNodes(request({ nodes }));
    expect(sim.octavia.tree(lbId)[0]?.members.map((m) => `${m.address} ${m.provisioning_status}`)).toEqual([
      '10.0.0.13 ACTIVE',
    ]);
  });

  it('a listener, pool or health monitor change Octavia fails is sent again by ensure', async () => {
    const p = lbs('create-monitor=true');
    await converge(() => p.ensure(request()));
    const lbId = String(onlyLb()[0]?.id);
    sim.octavia.failNextProvisioning = true;
    const timeout = { annotations: { [ANNOTATIONS.timeoutClientData.key]: '60000' } };
    await p.ensure(request({}, timeout));
    expect(sim.requestsTo(/\/listeners\/[^/]+$/, 'PUT')).toHaveLength(2);
    const [tree] = sim.octavia.tree(lbId);
    expect(tree?.listener.provisioning_status).toBe('ACTIVE');
    expect(tree?.listener.timeout_client_data).toBe(60000);

    const before = sim.requestsTo(/\/healthmonitors\/[^/]+$/, 'PUT').length;
    sim.octavia.failNextProvisioning = true;
    await p.ensure(
      request({}, { annotations: { ...timeout.annotations, [ANNOTATIONS.healthMonitorDelay.key]: '7' } }),
    );
    expect(sim.requestsTo(/\/healthmonitors\/[^/]+$/, 'PUT').length - before).toBe(2);
    expect(sim.octavia.tree(lbId)[0]?.monitor?.provisioning_status).toBe('ACTIVE');
  });

  it('a load balancer in ERROR gets no change: Octavia would refuse it (409), ccm says ERROR', async () => {
    const p = lbs();
    await converge(() => p.ensure(request()));
    const [record] = sim.octavia.loadBalancers.values();
    if (record) record.lb.provisioning_status = 'ERROR';
    const before = sim.requests.length;
    await expect(p.updateNodes(request({ nodes: [node('w9', '10.0.0.19')] }))).rejects.toThrow(
      /is in provisioning status ERROR; ccm retries/,
    );
    expect(sim.requests.slice(before).filter((r) => r.method !== 'GET')).toEqual([]);
  });

  it('a load balancer busy in Octavia (409 or PENDING_*) is retried later, not failed', async () => {
    const p = lbs();
    await converge(() => p.ensure(request()));
    sim.fault({
      method: 'PUT',
      path: /\/members$/,
      status: 409,
      body: {
        faultcode: 'Client',
        faultstring: 'Load Balancer x is immutable and cannot be updated.',
        debuginfo: null,
      },
      times: 1,
    });
    const err = await p
      .updateNodes(request({ nodes: [node('w9', '10.0.0.19')] }))
      .catch((e: unknown) => e as RetryableError);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err?.retryAfterMs).toBe(5000);
    await converge(() => p.updateNodes(request({ nodes: [node('w9', '10.0.0.19')] })));
    expect(sim.octavia.tree(String(onlyLb()[0]?.id))[0]?.members.map((m) => m.address)).toEqual([
      '10.0.0.19',
    ]);
  });

  it('source ranges are compared as Octavia keeps them (canonical, a set): out of order or with host bits, one PUT', async () => {
    const p = lbs();
    await converge(() => p.ensure(request()));
    const lbId = String(onlyLb()[0]?.id);
    const ranges = {
      loadBalancerSourceRanges: ['192.168.0.0/16', '10.0.0.1/8', '2001:db8:0:0:1::1/64', '10.0.0.0/8'],
    };
    await converge(() => p.ensure(request({}, ranges)));
    await converge(() => p.ensure(request({}, ranges)));
    const puts = sim.requestsTo(/\/listeners\/[^/]+$/, 'PUT');
    expect(puts).toHaveLength(1);
    expect(
      (puts[0]?.body as { listener: { allowed_cidrs: unknown } } | undefined)?.listener.allowed_cidrs,
    ).toEqual(['10.0.0.0/8', '192.168.0.0/16', '2001:db8::/64']);
    expect(sim.octavia.tree(lbId)[0]?.listener.allowed_cidrs).toEqual([
      '10.0.0.0/8',
      '192.168.0.0/16',
      '2001:db8::/64',
    ]);
  });

  it('reads every page of members: past pagination_max_limit nothing is sent again', async () => {
    sim.octavia.pageMax = 2;
    // Octavia's links name its own URL (api_base_uri); the token never goes there.
    sim.octavia.apiBaseUri = 'https://octavia.internal.invalid:9876';
    const p = lbs();
    const nodes = ['w1', 'w2', 'w3', 'w4', 'w5'].map((n, i) => node(n, `10.0.0.${11 + i}`));
    await converge(() => p.ensure(request({ nodes })));
    const before = sim.requests.length;
    await p.updateNodes(request({ nodes }));
    await converge(() => p.ensure(request({ nodes })));
    const after = sim.requests.slice(before);
    expect(after.filter((r) => r.method !== 'GET')).toEqual([]);
    const pages = after
      .filter((r) => /\/members(\?|$)/.test(r.path))
      .map((r) => r.path.replace(/marker=[^&]+/, 'marker=…'));
    const poolPath = `/load-balancer/v2.0/lbaas/pools/${String(sim.octavia.tree(String(onlyLb()[0]?.id))[0]?.pool?.id)}/members`;
    const pass = [poolPath, `${poolPath}?marker=…`, `${poolPath}?marker=…`];
    expect(pages).toEqual([...pass, ...pass]);
  });

  it("1001 Nodes, past Octavia's default page of 1000: the members are sent once", async () => {
    const p = lbs();
    const nodes = Array.from({ length: 1001 }, (_, i) =>
      node(`n${String(i).padStart(4, '0')}`, `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`),
    );
    await converge(() => p.ensure(request({ nodes: nodes.slice(0, 2) })));
    await p.updateNodes(request({ nodes }));
    await p.updateNodes(request({ nodes }));
    expect(sim.requestsTo(/\/members$/, 'PUT')).toHaveLength(1);
    expect(sim.octavia.tree(String(onlyLb()[0]?.id))[0]?.members).toHaveLength(1001);
  });

  it('a pool Octavia left in ERROR is repaired by updateNodes too: Octavia refuses members until it is ACTIVE', async () => {
    const p = lbs();
    await converge(() => p.ensure(request()));
    const lbId = String(onlyLb()[0]?.id);
    const pool = sim.octavia.tree(lbId)[0]?.pool;
    if (pool) pool.provisioning_status = 'ERROR';
    await p.updateNodes(request({ nodes: [node('w1', '10.0.0.11'), node('w3', '10.0.0.13')] }));
    expect(sim.requestsTo(/\/pools\/[^/]+$/, 'PUT')).toHaveLength(1);
    expect(sim.requestsTo(/\/members$/, 'PUT').map((r) => r.status)).toEqual([202]);
    expect(sim.octavia.tree(lbId)[0]?.members.map((m) => m.address)).toEqual(['10.0.0.11', '10.0.0.13']);
  });

  it("a framework's 404 (pecan's, Neutron's HTTPNotFound) is never read as gone", async () => {
    const p = lbs();
    await converge(() => p.ensure(request()));
    const lbId = String(onlyLb()[0]?.id);
    sim.fault({
      method: 'GET',
      path: /\/lbaas\/loadbalancers\/[^/]+$/,
      status: 404,
      body: { faultcode: 'Client', faultstring: 'The resource could not be found.', debuginfo: null },
      times: 1,
    });
    const err = await p.ensure(request({ nodes: [node('w9', '10.0.0.19')] })).catch((e: Error) => e);
    expect(String(err)).not.toMatch(/disappeared/);
    expect(err).not.toBeInstanceOf(RetryableError);

    sim.fault({
      method: 'DELETE',
      path: /\/floatingips\/[^/]+$/,
      status: 404,
      body: {
        NeutronError: { type: 'HTTPNotFound', message: 'The resource could not be found.', detail: '' },
      },
      times: 1,
    });
    await expect(p.delete(request())).rejects.toThrow(/404/);
    expect(sim.requestsTo(/\/lbaas\/loadbalancers\/[^/]+\?cascade=true$/, 'DELETE')).toEqual([]);
    expect(onlyLb().map((lb) => lb.id)).toEqual([lbId]);
  });

  it('spec.loadBalancerIP not yet allocated: a member may not choose the address (403), ccm says what to do', async () => {
    const p = lbs();
    const wanted = request({}, { loadBalancerIP: '172.24.4.200' });
    const err = (await p.ensure(wanted).catch((e: unknown) => e)) as Error;
    expect(sim.requestsTo(/\/v2\.0\/floatingips$/, 'POST').map((r) => r.status)).toEqual([403]);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toBe(
      `spec.loadBalancerIP 172.24.4.200: Neutron refused to create a floating IP with that address (403: only an admin or the project's manager may choose it); create it first (openstack floating ip create --floating-ip-address 172.24.4.200 ${FLOATING_NETWORK_ID}), which ccm then associates, or give ccm's user the manager role`,
    );
    sim.octavia.roles = ['member', 'manager'];
    const { result } = await converge(() => lbs().ensure(wanted));
    expect(result.ingress).toEqual([{ ip: '172.24.4.200' }]);
  });
});
