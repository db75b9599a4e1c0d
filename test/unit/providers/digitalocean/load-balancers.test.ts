import { beforeEach, describe, expect, it } from 'vitest';
import { LOAD_BALANCER_ID } from '../../../../src/providers/digitalocean/annotations.js';
import { createDigitalOcean } from '../../../../src/providers/digitalocean/index.js';
import { InvalidConfigError, RetryableError } from '../../../../src/providers/errors.js';
import type { LoadBalancerRequest, LoadBalancers } from '../../../../src/providers/types.js';
import { DigitalOceanSimulator } from '../../../clouds/digitalocean/server.js';
import { requestService } from '../../../helpers/lb-request.js';
import { conformsToDigitalOceanOpenApi } from '../../../helpers/openapi.js';
import { quickProvider, useDigitalOceanSim } from './helpers.js';

const CLUSTER = '6f1c2b9e-3d4a-4c5b-9e8f-0a1b2c3d4e5f';
const TAG = `k8s:${CLUSTER}`;
const UID = '0b5f5a57-1b3c-4d2e-9f60-7c8d9e0f1a2b';
const NAME = 'a0b5f5a571b3c4d2e9f607c8d9e0f1a2';

const sim = useDigitalOceanSim();
let lbs: LoadBalancers;
let droplets: Record<string, unknown>[];

beforeEach(() => {
  droplets = sim.addDroplets(
    { name: 'w1', privateIP: '10.110.0.2', vpc: '5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d' },
    { name: 'w2', privateIP: '10.110.0.3' },
    { name: 'w3', privateIP: '10.110.0.4' },
  );
  const provider = quickProvider(sim);
  if (!provider.loadBalancers) throw new Error('no load balancers');
  lbs = provider.loadBalancers;
});

function id(i: number): number {
  return droplets[i]?.id as number;
}

function request(
  change: Partial<Omit<LoadBalancerRequest, 'service'>> & {
    service?: Partial<LoadBalancerRequest['service']>;
  } = {},
): LoadBalancerRequest {
  return {
    name: NAME,
    clusterID: CLUSTER,
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: [0, 1].map((i) => ({
      name: `w${i + 1}`,
      providerID: `digitalocean://${id(i)}`,
      addresses: [],
    })),
    ...change,
    service: requestService({ namespace: 'default', name: 'web', uid: UID, ...change.service }),
  };
}

/** The writes the API accepted (a change refused while the load balancer is busy is sent again). */
const writes = () =>
  sim.requests
    .filter((r) => r.method !== 'GET' && (r.status ?? 0) < 400)
    .map((r) => `${r.method} ${r.url.replace(/[0-9a-f-]{36}/, '<id>')}`);

/** ensure until the load balancer is active (the simulator activates it on the next read). */
async function created(req = request()) {
  await expect(lbs.ensure(req)).rejects.toBeInstanceOf(RetryableError);
  const status = await lbs.ensure(req);
  const lbId = status.annotations?.[LOAD_BALANCER_ID] ?? '';
  return { status, lbId, lb: sim.loadBalancers.get(lbId) };
}

describe('ensure', () => {
  it('creates the load balancer, tagged, and answers RetryableError while it is new', async () => {
    const err = await lbs.ensure(request()).catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.retryAfterMs).toBe(10_000);
    expect(err.message).toMatch(
      /^load balancer a0b5f5a5\S+ \(\S+\) is still being set up at DigitalOcean \(status new\)/,
    );
    const [create] = sim.requestsTo('POST', '/v2/load_balancers');
    expect(create?.body).toEqual({
      name: NAME,
      region: 'nyc3',
      vpc_uuid: '5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d',
      droplet_ids: [id(0), id(1)],
      forwarding_rules: [
        { entry_protocol: 'tcp', entry_port: 80, target_protocol: 'tcp', target_port: 30080 },
      ],
      health_check: {
        protocol: 'tcp',
        port: 30080,
        path: '/',
        check_interval_seconds: 3,
        response_timeout_seconds: 5,
        unhealthy_threshold: 3,
        healthy_threshold: 5,
      },
      sticky_sessions: { type: 'none' },
      redirect_http_to_https: false,
      enable_proxy_protocol: false,
      enable_backend_keepalive: false,
      firewall: { allow: [], deny: [] },
      tags: [TAG],
    });
  });

  it('reports the IP and records the id once active; an unchanged Service writes nothing', async () => {
    const { status, lbId, lb } = await created();
    expect(status).toEqual({ ingress: [{ ip: lb?.ip }], annotations: { [LOAD_BALANCER_ID]: lbId } });
    expect(writes()).toEqual(['POST /v2/load_balancers']);

    // The API may drop the path of a tcp health check: no difference.
    (lb?.health_check as { path: string }).path = '';
    sim.requests.length = 0;
    const again = await lbs.ensure(request({ service: { annotations: { [LOAD_BALANCER_ID]: lbId } } }));
    expect(again).toEqual(status);
    // Found by the id annotation in the shared listing (one page, one request, as a read by id would
    // be, shared with every Service asking meanwhile); no write.
    expect(sim.requests.map((r) => `${r.method} ${r.url}`)).toEqual(['GET /v2/load_balancers?per_page=200']);
  });

  it('updates forwarding rules when the ports change, and backends when the Nodes change', async () => {
    const { lbId } = await created();
    sim.requests.length = 0;
    const req = request({
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 },
        { name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053 },
      ],
      nodes: [1, 2].map((i) => ({ name: `w${i + 1}`, providerID: `digitalocean://${id(i)}`, addresses: [] })),
      service: { annotations: { [LOAD_BALANCER_ID]: lbId } },
    });
    await lbs.ensure(req);
    expect(writes()).toEqual(['PUT /v2/load_balancers/<id>']);
    const lb = sim.loadBalancers.get(lbId);
    expect(lb?.forwarding_rules).toEqual([
      {
        entry_protocol: 'udp',
        entry_port: 53,
        target_protocol: 'udp',
        target_port: 30053,
        certificate_id: '',
        tls_passthrough: false,
      },
      {
        entry_protocol: 'tcp',
        entry_port: 80,
        target_protocol: 'tcp',
        target_port: 30080,
        certificate_id: '',
        tls_passthrough: false,
      },
    ]);
    expect(lb?.droplet_ids).toEqual([id(1), id(2)]);
    expect(lb?.tags).toEqual([TAG]);
    sim.requests.length = 0;
    await lbs.ensure(req);
    expect(writes()).toEqual([]);
  });

  it('maps the official annotations onto the load balancer', async () => {
    const annotations = {
      'service.beta.kubernetes.io/do-loadbalancer-name': 'web-public',
      'service.beta.kubernetes.io/do-loadbalancer-protocol': 'http',
      'service.beta.kubernetes.io/do-loadbalancer-tls-ports': '443',
      'service.beta.kubernetes.io/do-loadbalancer-certificate-id': 'b7e4c7a2-6a1e-4d5c-9f1b-2a3c4d5e6f70',
      'service.beta.kubernetes.io/do-loadbalancer-healthcheck-protocol': 'http',
      'service.beta.kubernetes.io/do-loadbalancer-healthcheck-path': '/ready',
      'service.beta.kubernetes.io/do-loadbalancer-healthcheck-port': '80',
      'service.beta.kubernetes.io/do-loadbalancer-healthcheck-check-interval-seconds': '10',
      'service.beta.kubernetes.io/do-loadbalancer-healthcheck-response-timeout-seconds': '7',
      'service.beta.kubernetes.io/do-loadbalancer-healthcheck-unhealthy-threshold': '4',
      'service.beta.kubernetes.io/do-loadbalancer-healthcheck-healthy-threshold': '2',
      'service.beta.kubernetes.io/do-loadbalancer-size-unit': '3',
      'service.beta.kubernetes.io/do-loadbalancer-sticky-sessions-type': 'cookies',
      'service.beta.kubernetes.io/do-loadbalancer-sticky-sessions-cookie-name': 'srv',
      'service.beta.kubernetes.io/do-loadbalancer-sticky-sessions-cookie-ttl': '300',
      'service.beta.kubernetes.io/do-loadbalancer-redirect-http-to-https': 'true',
      'service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol': 'True',
      'service.beta.kubernetes.io/do-loadbalancer-enable-backend-keepalive': '1',
      'service.beta.kubernetes.io/do-loadbalancer-http-idle-timeout-seconds': '120',
      'service.beta.kubernetes.io/do-loadbalancer-hostname': 'web.example.com',
    };
    const { status, lb } = await created(
      request({
        ports: [
          { name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 },
          { name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 },
        ],
        service: { annotations, loadBalancerSourceRanges: ['192.0.2.0/24'] },
      }),
    );
    expect(status.ingress).toEqual([{ hostname: 'web.example.com' }]);
    expect(lb).toMatchObject({
      name: 'web-public',
      size_unit: 3,
      forwarding_rules: [
        { entry_protocol: 'http', entry_port: 80, target_protocol: 'http', target_port: 30080 },
        {
          entry_protocol: 'https',
          entry_port: 443,
          target_protocol: 'http',
          target_port: 30443,
          certificate_id: 'b7e4c7a2-6a1e-4d5c-9f1b-2a3c4d5e6f70',
        },
      ],
      health_check: {
        protocol: 'http',
        port: 30080,
        path: '/ready',
        check_interval_seconds: 10,
        response_timeout_seconds: 7,
        unhealthy_threshold: 4,
        healthy_threshold: 2,
      },
      sticky_sessions: { type: 'cookies', cookie_name: 'srv', cookie_ttl_seconds: 300 },
      redirect_http_to_https: true,
      enable_proxy_protocol: true,
      enable_backend_keepalive: true,
      http_idle_timeout_seconds: 120,
      firewall: { allow: ['cidr:192.0.2.0/24'], deny: [] },
    });
  });

  it('passes TLS through, and health-checks kube-proxy for externalTrafficPolicy Local', async () => {
    const { lb } = await created(
      request({
        ports: [{ name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 }],
        service: {
          annotations: { 'service.beta.kubernetes.io/do-loadbalancer-tls-passthrough': 'true' },
          externalTrafficPolicy: 'Local',
          healthCheckNodePort: 32000,
        },
      }),
    );
    expect(lb?.forwarding_rules).toEqual([
      {
        entry_protocol: 'https',
        entry_port: 443,
        target_protocol: 'https',
        target_port: 30443,
        tls_passthrough: true,
        certificate_id: '',
      },
    ]);
    expect(lb?.health_check).toMatchObject({ protocol: 'http', port: 32000, path: '/healthz' });
  });

  it('matches Nodes without provider ID by droplet name, and leaves out a name two droplets share', async () => {
    sim.addDroplets({ name: 'twin' }, { name: 'twin' });
    await created(
      request({
        nodes: [
          { name: 'W1', providerID: '', addresses: [] },
          { name: 'twin', providerID: '', addresses: [] },
          { name: 'metal', providerID: 'baremetal://rack1/7', addresses: [] },
        ],
      }),
    );
    expect(sim.requestsTo('POST', '/v2/load_balancers')[0]?.body).toMatchObject({ droplet_ids: [id(0)] });
  });

  it('without a configured region, waits while no backend Node has a droplet, saying what to set', async () => {
    const err = await lbs.ensure(request({ nodes: [] })).catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toBe(
      "Service default/web has no backend Node with a DigitalOcean droplet, so the load balancer's region is unknown; set the region (env REGION, or key region of Secret kube-system/digitalocean) to create it without backends",
    );
    expect(writes()).toEqual([]);
  });

  it('with the region configured (REGION), creates the load balancer without backends there, as upstream asks', async () => {
    const configured = createDigitalOcean(
      { token: sim.token, baseUrl: sim.url, http: { backoff: { baseMs: 5 } } },
      { region: 'fra1' },
    ).loadBalancers as LoadBalancers;
    await expect(configured.ensure(request({ nodes: [] }))).rejects.toBeInstanceOf(RetryableError);
    const status = await configured.ensure(request({ nodes: [] }));
    expect(status.ingress).toEqual([{ ip: expect.any(String) }]);
    const [create] = sim.requestsTo('POST', '/v2/load_balancers');
    expect(create?.body).toMatchObject({ region: 'fra1', droplet_ids: [], tags: [TAG] });
    expect(create?.body).not.toHaveProperty('vpc_uuid');
    // The region does not come from a backend: no droplet was read.
    expect(sim.requestsTo('GET', /^\/v2\/droplets/)).toEqual([]);
  });

  it("the configured region wins over the backends; the VPC is configured (DO_CLUSTER_VPC_ID), else the backend's of that region", async () => {
    const vpc = '0d3f5a2e-7b1c-4e9d-8a6f-2c4b6d8e0f1a';
    const provider = (place: { region?: string; vpcId?: string }) =>
      createDigitalOcean({ token: sim.token, baseUrl: sim.url, http: { backoff: { baseMs: 5 } } }, place)
        .loadBalancers as LoadBalancers;
    // The backends' droplets are in nyc3 (the simulator's default).
    await provider({ region: 'nyc3', vpcId: vpc })
      .ensure(request())
      .catch(() => undefined);
    await provider({ region: 'nyc3' })
      .ensure(
        request({
          name: 'a1b5f5a571b3c4d2e9f607c8d9e0f1a2',
          service: { uid: '1b5f5a57-1b3c-4d2e-9f60-7c8d9e0f1a2b', name: 'two' },
        }),
      )
      .catch(() => undefined);
    const [first, second] = sim.requestsTo('POST', '/v2/load_balancers');
    expect(first?.body).toMatchObject({ region: 'nyc3', vpc_uuid: vpc });
    expect(second?.body).toMatchObject({ region: 'nyc3', vpc_uuid: '5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d' });
  });

  it('reports an errored load balancer and changes nothing', async () => {
    const { lbId } = await created();
    sim.setLoadBalancerStatus(lbId, 'errored');
    sim.requests.length = 0;
    const err = await lbs
      .ensure(request({ ports: [{ name: 'http', protocol: 'TCP', port: 8080, nodePort: 30081 }] }))
      .catch((e) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.retryAfterMs).toBe(0);
    expect(err.message).toMatch(
      /^DigitalOcean reports load balancer \S+ \(\S+\) as errored; look at it in the DigitalOcean control panel/,
    );
    expect(writes()).toEqual([]);
  });
});

describe('ownership', () => {
  it("never adopts, changes or deletes a load balancer without this cluster's tag", async () => {
    const rule = { entry_protocol: 'tcp', entry_port: 80, target_protocol: 'tcp', target_port: 30080 };
    const byHand = sim.addLoadBalancer({ name: NAME, forwarding_rules: [rule], droplet_ids: [id(0)] });
    const otherCluster = sim.addLoadBalancer({
      name: NAME,
      forwarding_rules: [rule],
      droplet_ids: [id(0)],
      tags: ['k8s:another-cluster'],
    });
    expect(await lbs.get(request())).toBeUndefined();

    // Named by the id annotation: refused with the reason.
    for (const foreign of [byHand, otherCluster]) {
      const req = request({ service: { annotations: { [LOAD_BALANCER_ID]: foreign.id as string } } });
      const err = await lbs.ensure(req).catch((e) => e);
      expect(err).toBeInstanceOf(InvalidConfigError);
      expect(err.message).toContain(
        `does not carry this cluster's tag ${TAG}; ccm takes over a load balancer it did not create only when handed it (ccm migrate --provider digitalocean)`,
      );
      await expect(lbs.updateNodes(req)).rejects.toBeInstanceOf(InvalidConfigError);
      await lbs.delete(req);
    }
    expect(writes()).toEqual([]);

    // Same name without the annotation: ccm makes its own, and deletes only that one.
    const { lbId } = await created();
    expect(lbId).not.toBe(byHand.id);
    expect(lbId).not.toBe(otherCluster.id);
    await lbs.delete(request());
    expect([...sim.loadBalancers.keys()].sort()).toEqual([byHand.id, otherCluster.id].sort());
    expect(writes()).toEqual(['POST /v2/load_balancers', 'DELETE /v2/load_balancers/<id>']);
    expect(sim.requestsTo('DELETE', /^\/v2\/load_balancers\//)[0]?.url).toBe(`/v2/load_balancers/${lbId}`);
  });

  it('of two load balancers of its own with one name (two creations of the Service), keeps the oldest and deletes the other', async () => {
    const rule = { entry_protocol: 'tcp', entry_port: 80, target_protocol: 'tcp', target_port: 30080 };
    const newer = sim.addLoadBalancer({
      name: NAME,
      forwarding_rules: [rule],
      tags: [TAG],
      created_at: '2026-11-25T10:00:05Z',
    });
    const older = sim.addLoadBalancer({
      name: NAME,
      forwarding_rules: [rule],
      tags: [TAG],
      created_at: '2026-11-25T10:00:01Z',
    });
    const status = await lbs.ensure(request());
    expect(status.annotations).toEqual({ [LOAD_BALANCER_ID]: older.id });
    expect([...sim.loadBalancers.keys()]).toEqual([older.id]);
    expect(sim.requestsTo('DELETE', /^\/v2\/load_balancers\//).map((r) => r.url)).toEqual([
      `/v2/load_balancers/${newer.id}`,
    ]);
  });

  it("deletes every load balancer of its own with the Service's name, the one its annotation names too, and no other", async () => {
    const { lbId } = await created();
    const rule = { entry_protocol: 'tcp', entry_port: 80, target_protocol: 'tcp', target_port: 30080 };
    sim.addLoadBalancer({ name: NAME, forwarding_rules: [rule], tags: [TAG] });
    const foreign = sim.addLoadBalancer({ name: NAME, forwarding_rules: [rule], tags: ['k8s:another'] });
    await lbs.delete(request({ service: { annotations: { [LOAD_BALANCER_ID]: lbId } } }));
    expect([...sim.loadBalancers.keys()]).toEqual([foreign.id]);
  });

  it('creates a new one when the load balancer its annotation names was deleted', async () => {
    const { lbId } = await created();
    sim.loadBalancers.delete(lbId);
    const req = request({ service: { annotations: { [LOAD_BALANCER_ID]: lbId } } });
    await expect(lbs.ensure(req)).rejects.toBeInstanceOf(RetryableError);
    expect(sim.loadBalancers.size).toBe(1);
    expect(writes()).toEqual(['POST /v2/load_balancers', 'POST /v2/load_balancers']);
  });

  it('leaves a disowned load balancer alone', async () => {
    const { lbId } = await created();
    sim.requests.length = 0;
    const req = request({
      ports: [{ name: 'http', protocol: 'TCP', port: 8080, nodePort: 30081 }],
      nodes: [],
      service: {
        annotations: { [LOAD_BALANCER_ID]: lbId, 'service.kubernetes.io/do-loadbalancer-disown': 'true' },
      },
    });
    expect((await lbs.ensure(req)).annotations).toEqual({ [LOAD_BALANCER_ID]: lbId });
    await lbs.updateNodes(req);
    await lbs.delete(req);
    expect(writes()).toEqual([]);
    expect(sim.loadBalancers.has(lbId)).toBe(true);
  });
});

describe('updateNodes and delete', () => {
  it('adds and removes droplets through the droplets endpoints, and does nothing when they match', async () => {
    const { lbId } = await created();
    sim.requests.length = 0;
    const req = request({
      nodes: [1, 2].map((i) => ({ name: `w${i + 1}`, providerID: `digitalocean://${id(i)}`, addresses: [] })),
      service: { annotations: { [LOAD_BALANCER_ID]: lbId } },
    });
    await lbs.updateNodes(req);
    expect(writes()).toEqual([
      'POST /v2/load_balancers/<id>/droplets',
      'DELETE /v2/load_balancers/<id>/droplets',
    ]);
    expect(sim.requestsTo('POST', /droplets$/)[0]?.body).toEqual({ droplet_ids: [id(2)] });
    expect(sim.requestsTo('DELETE', /droplets$/)[0]?.body).toEqual({ droplet_ids: [id(0)] });
    expect(sim.loadBalancers.get(lbId)?.droplet_ids).toEqual([id(1), id(2)]);
    sim.requests.length = 0;
    await lbs.updateNodes(req);
    expect(writes()).toEqual([]);
  });

  it('Services whose Nodes changed at once read their load balancers from one shared listing, then change one each', async () => {
    const services = Array.from({ length: 12 }, (_, i) => ({
      uid: `0b5f5a57-1b3c-4d2e-9f60-7c8d9e0f1a${String(i).padStart(2, '0')}`,
      name: `a0b5f5a571b3c4d2e9f607c8d9e0f1a${i.toString(16)}`,
    }));
    const ids: string[] = [];
    for (const s of services) {
      const { lbId } = await created(request({ name: s.name, service: { uid: s.uid, name: s.name } }));
      ids.push(lbId);
    }
    sim.requests.length = 0;
    const threeNodes = [0, 1, 2].map((i) => ({
      name: `w${i + 1}`,
      providerID: `digitalocean://${id(i)}`,
      addresses: [],
    }));
    await Promise.all(
      services.map((s, i) =>
        lbs.updateNodes(
          request({
            name: s.name,
            nodes: threeNodes,
            service: { uid: s.uid, name: s.name, annotations: { [LOAD_BALANCER_ID]: ids[i] as string } },
          }),
        ),
      ),
    );
    // The floor: one change per load balancer, and one listing for all (no read by id).
    expect(sim.requestsTo('GET', '/v2/load_balancers')).toHaveLength(1);
    expect(sim.requestsTo('GET', /^\/v2\/load_balancers\/[^/]+$/)).toHaveLength(0);
    // (Just created, each is still busy for a moment: a refused change is sent again, as it must be.)
    expect(writes().filter((w) => w.endsWith('/droplets'))).toHaveLength(12);
    for (const lbId of ids) expect(sim.loadBalancers.get(lbId)?.droplet_ids).toEqual([0, 1, 2].map(id));
    // Each reads a listing started after its own change: the next changes nothing.
    sim.requests.length = 0;
    await lbs.updateNodes(
      request({
        name: services[0]?.name as string,
        nodes: threeNodes,
        service: {
          uid: services[0]?.uid,
          name: services[0]?.name,
          annotations: { [LOAD_BALANCER_ID]: ids[0] as string },
        },
      }),
    );
    expect(writes()).toEqual([]);
  });

  it('by default, Services syncing one after another within 10 s share the last listing, except for what they wrote since', async () => {
    const shared = quickProvider(sim, 10_000).loadBalancers as LoadBalancers;
    const services = Array.from({ length: 5 }, (_, i) => ({
      uid: `0b5f5a57-1b3c-4d2e-9f60-7c8d9e0f1b${String(i).padStart(2, '0')}`,
      name: `a0b5f5a571b3c4d2e9f607c8d9e0f1b${i}`,
    }));
    const reqs: LoadBalancerRequest[] = [];
    for (const s of services) {
      const req = request({ name: s.name, service: { uid: s.uid, name: s.name } });
      await expect(shared.ensure(req)).rejects.toBeInstanceOf(RetryableError);
      const lbId = (await shared.ensure(req)).annotations?.[LOAD_BALANCER_ID] ?? '';
      reqs.push(
        request({
          name: s.name,
          service: { uid: s.uid, name: s.name, annotations: { [LOAD_BALANCER_ID]: lbId } },
        }),
      );
    }
    await new Promise((r) => setTimeout(r, 250)); // each is busy for 200 ms after its creation
    sim.requests.length = 0;
    const threeNodes = [0, 1, 2].map((i) => ({
      name: `w${i + 1}`,
      providerID: `digitalocean://${id(i)}`,
      addresses: [],
    }));
    for (const req of reqs) await shared.updateNodes({ ...req, nodes: threeNodes });
    // The listing that showed the last of them active started after every create: it answers all
    // five, and each costs only its change.
    expect(sim.requests.map((r) => `${r.method} ${r.url.replace(/[0-9a-f-]{36}/, '<id>')}`)).toEqual(
      reqs.map(() => 'POST /v2/load_balancers/<id>/droplets'),
    );
    // A Service that changed its load balancer since that listing reads a newer one: it sees its change.
    sim.requests.length = 0;
    await shared.updateNodes({ ...(reqs[0] as LoadBalancerRequest), nodes: threeNodes });
    expect(sim.requestsTo('GET', '/v2/load_balancers')).toHaveLength(1);
    expect(writes()).toEqual([]);
  });

  it('in an account of more than one page of load balancers, a lone Service reads its own by id, not every page', async () => {
    const { lbId } = await created();
    for (let i = 0; i < 200; i++) sim.addLoadBalancer({ name: `other-${i}`, tags: ['k8s:another-cluster'] });
    const req = request({ service: { annotations: { [LOAD_BALANCER_ID]: lbId } } });
    await lbs.updateNodes(req); // the listing (2 pages) tells how large the account is
    sim.requests.length = 0;
    await lbs.updateNodes(req);
    expect(sim.requests.map((r) => `${r.method} ${r.url.replace(lbId, '<id>')}`)).toEqual([
      'GET /v2/load_balancers/<id>',
    ]);
  });

  it('deletes its own by id while hundreds of deletions shift every listing between its pages', async () => {
    const { lbId } = await created();
    // Every listing counts one more than it shows, as one whose pages shifted under it does.
    const shifting: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      const url = new URL(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      if ((init?.method ?? 'GET') !== 'GET' || url.pathname !== '/v2/load_balancers') return res;
      const body = (await res.json()) as { meta: { total: number } };
      body.meta.total += 1;
      return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
    };
    // The client passes `http` on to its HttpClient, whose test seam takes a fetch.
    const http = { backoff: { baseMs: 5 }, fetch: shifting };
    const lister = createDigitalOcean(
      { token: sim.token, baseUrl: sim.url, http },
      {},
      { recentListingMs: 0, listingGapMs: 0 },
    ).loadBalancers as LoadBalancers;
    await lister.delete(request({ service: { annotations: { [LOAD_BALANCER_ID]: lbId } } }));
    expect(sim.loadBalancers.size).toBe(0);
    // A Service without its id is not deleted on such a listing: what it lacks may exist.
    await expect(lister.ensure(request())).rejects.toThrow(/the listing changed while it was read/);
    expect(sim.requestsTo('POST', '/v2/load_balancers')).toHaveLength(1);
  });

  it('deletes once, and a load balancer already gone is no error', async () => {
    const { lbId } = await created();
    const req = request({ service: { annotations: { [LOAD_BALANCER_ID]: lbId } } });
    await lbs.delete(req);
    await lbs.delete(req);
    expect(sim.loadBalancers.size).toBe(0);
    expect(writes()).toEqual(['POST /v2/load_balancers', 'DELETE /v2/load_balancers/<id>']);
  });
});

describe('bad annotations', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [
      { 'service.beta.kubernetes.io/do-loadbalancer-protocol': 'ftp' },
      /do-loadbalancer-protocol="ftp" is not valid; use one of tcp, http, https, http2$/,
    ],
    [
      { 'service.beta.kubernetes.io/do-loadbalancer-healthcheck-check-interval-seconds': '1' },
      /healthcheck-check-interval-seconds="1" is not valid; use a whole number from 3 to 300$/,
    ],
    [
      { 'service.beta.kubernetes.io/do-loadbalancer-size-unit': '0' },
      /size-unit="0" is not valid; use a whole number from 1 to 100$/,
    ],
    [
      { 'service.beta.kubernetes.io/do-loadbalancer-sticky-sessions-type': 'cookies' },
      /sticky-sessions-cookie-name is required with \S+=cookies/,
    ],
    [
      { 'service.beta.kubernetes.io/do-loadbalancer-protocol': 'https' },
      /port 80 uses https; set Service annotation \S+certificate-id .* or \S+tls-passthrough=true$/,
    ],
    [
      {
        'service.beta.kubernetes.io/do-loadbalancer-tls-ports': '8443',
        'service.beta.kubernetes.io/do-loadbalancer-tls-passthrough': 'true',
      },
      /tls-ports="8443" is not valid; use ports of the Service$/,
    ],
    [
      { 'service.beta.kubernetes.io/do-loadbalancer-enable-proxy-protocol': 'yes' },
      /enable-proxy-protocol="yes" is not valid; use true or false$/,
    ],
    [
      { [LOAD_BALANCER_ID]: 'lb-1' },
      /load-balancer-id="lb-1" is not valid; use a load balancer id \(a UUID\)$/,
    ],
  ];
  it.each(cases)('%j is refused before any request', async (annotations, message) => {
    const err = await lbs.ensure(request({ service: { annotations } })).catch((e) => e);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toMatch(message);
    expect(sim.requests).toHaveLength(0);
  });

  it('refuses SCTP ports and a cluster name that cannot be a tag', async () => {
    await expect(
      lbs.ensure(request({ ports: [{ name: 's', protocol: 'SCTP', port: 9, nodePort: 30009 }] })),
    ).rejects.toThrow(/SCTP; DigitalOcean load balancers forward TCP and UDP only/);
    await expect(lbs.ensure(request({ clusterID: 'prod cluster' }))).rejects.toThrow(
      /cluster name "prod cluster" cannot be a DigitalOcean tag/,
    );
    expect(sim.requests).toHaveLength(0);
  });
});

describe('a load balancer that is busy', () => {
  it('sends the second of two back-to-back changes again once the first is applied, not a token error', async () => {
    // A busy window far longer than a loaded machine's gap between two requests (the default 200 ms
    // was not, under the stress run), and well inside the client's 1-2-4-8-8 s of waiting.
    const slow = await DigitalOceanSimulator.start({ busyAfterChangeMs: 2500 });
    try {
      const ids = slow.addDroplets({ name: 'w1' }, { name: 'w2' }, { name: 'w3' }).map((d) => d.id as number);
      const balancers = createDigitalOcean({ token: slow.token, baseUrl: slow.url })
        .loadBalancers as LoadBalancers;
      const node = (i: number) => ({
        name: `w${i + 1}`,
        providerID: `digitalocean://${ids[i]}`,
        addresses: [],
      });
      const first = request({ nodes: [node(0), node(1)] });
      await expect(balancers.ensure(first)).rejects.toBeInstanceOf(RetryableError);
      const lbId = (await balancers.ensure(first)).annotations?.[LOAD_BALANCER_ID] ?? '';
      await new Promise((r) => setTimeout(r, 2600));
      slow.requests.length = 0;
      await balancers.updateNodes(
        request({ nodes: [node(1), node(2)], service: { annotations: { [LOAD_BALANCER_ID]: lbId } } }),
      );
      // The add is a change too, so the remove right after it meets the API's 403 and is sent again.
      const refused = slow.requests.filter((r) => r.status === 403);
      expect(refused.map((r) => `${r.method} ${r.url.replace(/[0-9a-f-]{36}/, '<id>')}`)).toContain(
        'DELETE /v2/load_balancers/<id>/droplets',
      );
      expect(slow.loadBalancers.get(lbId)?.droplet_ids).toEqual([ids[1], ids[2]]);
      expect(slow.takeViolations()).toEqual([]);
    } finally {
      await slow.stop();
    }
  }, 30_000);

  it('reports a load balancer that stays busy as retryable, after waiting, and never as a token problem', async () => {
    const slow = await DigitalOceanSimulator.start({ busyAfterChangeMs: 3_600_000 });
    try {
      const [droplet] = slow.addDroplets({ name: 'w1' });
      const waits: number[] = [];
      const provider = createDigitalOcean({
        token: slow.token,
        baseUrl: slow.url,
        http: { backoff: { baseMs: 5 }, sleep: async (ms) => void waits.push(ms) },
      });
      const balancers = provider.loadBalancers as LoadBalancers;
      const req = request({
        nodes: [{ name: 'w1', providerID: `digitalocean://${droplet?.id}`, addresses: [] }],
      });
      await expect(balancers.ensure(req)).rejects.toBeInstanceOf(RetryableError);
      const status = await balancers.ensure(req);
      const err = await balancers
        .ensure({ ...req, ports: [{ name: 'https', protocol: 'TCP', port: 8080, nodePort: 30081 }] })
        .catch((e) => e);
      expect(err).toBeInstanceOf(RetryableError);
      expect(err.retryAfterMs).toBe(10_000);
      expect(err.message).toBe(
        `DigitalOcean updating load balancer ${NAME} (${status.annotations?.[LOAD_BALANCER_ID]}): the load balancer is still applying a previous change after 23 s; ccm tries again in 10 s`,
      );
      expect(waits).toEqual([1_000, 2_000, 4_000, 8_000, 8_000]);
      const refused = slow.requests.filter((r) => r.status === 403);
      expect(refused).toHaveLength(6);
      expect(slow.takeViolations()).toEqual([]);
    } finally {
      await slow.stop();
    }
  });

  it('changes nothing on a load balancer that is still new', async () => {
    const young = await DigitalOceanSimulator.start({ lbActivationPolls: 1_000 });
    try {
      const [a, b] = young.addDroplets({ name: 'w1' }, { name: 'w2' });
      const balancers = createDigitalOcean({ token: young.token, baseUrl: young.url })
        .loadBalancers as LoadBalancers;
      const node = (d: typeof a) => ({
        name: String(d?.name),
        providerID: `digitalocean://${d?.id}`,
        addresses: [],
      });
      await expect(balancers.ensure(request({ nodes: [node(a)] }))).rejects.toBeInstanceOf(RetryableError);
      young.requests.length = 0;
      const err = await balancers.updateNodes(request({ nodes: [node(a), node(b)] })).catch((e) => e);
      expect(err).toBeInstanceOf(RetryableError);
      expect(err.message).toMatch(/is still being set up at DigitalOcean \(status new\)/);
      expect(young.requests.filter((r) => r.method !== 'GET')).toEqual([]);
      expect(young.takeViolations()).toEqual([]);
    } finally {
      await young.stop();
    }
  });
});

describe('tags', () => {
  it('are sent at creation only, and ownership holds on what creation set', async () => {
    const { lbId } = await created();
    await lbs.ensure(request({ ports: [{ name: 'http', protocol: 'TCP', port: 81, nodePort: 30081 }] }));
    const put = sim.requestsTo('PUT', `/v2/load_balancers/${lbId}`).find((r) => (r.status ?? 0) < 400);
    expect(put?.body).not.toHaveProperty('tags');
    expect(sim.loadBalancers.get(lbId)?.tags).toEqual([TAG]);
    await lbs.delete(request());
    expect(sim.loadBalancers.has(lbId)).toBe(false);
  });

  it('the simulator keeps the creation tags whatever a PUT carries, as the API does', async () => {
    const { lbId, lb } = await created();
    await new Promise((r) => setTimeout(r, 250)); // past the busy window after creation
    const res = await fetch(`${sim.url}/v2/load_balancers/${lbId}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${sim.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: lb?.name,
        region: 'nyc3',
        forwarding_rules: lb?.forwarding_rules,
        droplet_ids: lb?.droplet_ids,
        tags: ['k8s:another-cluster'],
      }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { load_balancer: { tags: string[] } }).load_balancer.tags).toEqual([TAG]);
    expect(sim.loadBalancers.get(lbId)?.tags).toEqual([TAG]);
  });
});

conformsToDigitalOceanOpenApi();

describe('a name chosen by annotation, shared by two Services of one cluster', () => {
  // The ownership tag names the cluster, not the Service: two Services may carry one
  // do-loadbalancer-name, and neither's load balancer is the other's to delete.
  const NAMED = 'service.beta.kubernetes.io/do-loadbalancer-name';
  const service = (uid: string, namespace: string, annotations: Record<string, string>) =>
    request({
      name: `a${uid.replace(/-/g, '').slice(0, 31)}`,
      service: { namespace, name: 'web', uid, annotations },
    });
  const shop = (a: Record<string, string> = {}) =>
    service('11111111-1b3c-4d2e-9f60-7c8d9e0f1a2b', 'shop', { [NAMED]: 'web', ...a });
  const blog = (a: Record<string, string>) => service('22222222-1b3c-4d2e-9f60-7c8d9e0f1a2b', 'blog', a);
  /** The load balancers of shop (named web) and blog (named web-blog), both created. */
  const shopAndBlog = async () => ({
    shopId: (await created(shop())).lbId,
    blogId: (await created(blog({ [NAMED]: 'web-blog' }))).lbId,
  });

  it("deleting one Service never deletes the other's load balancer, renamed to the same name", async () => {
    const { shopId, blogId } = await shopAndBlog();
    await lbs.ensure(blog({ [NAMED]: 'web', [LOAD_BALANCER_ID]: blogId }));
    expect(sim.loadBalancers.get(blogId)?.name).toBe('web');
    await lbs.delete(shop({ [LOAD_BALANCER_ID]: shopId }));
    expect(sim.loadBalancers.has(blogId)).toBe(true);
    expect(sim.loadBalancers.has(shopId)).toBe(false);
  });

  it("a Service whose annotation was just edited to another's name deletes only its own", async () => {
    const { shopId, blogId } = await shopAndBlog();
    await lbs.delete(blog({ [NAMED]: 'web', [LOAD_BALANCER_ID]: blogId }));
    expect(sim.loadBalancers.has(shopId)).toBe(true);
    expect(sim.loadBalancers.has(blogId)).toBe(false);
  });

  it('a third Service of that name deletes neither of the two in use: one line says what to do', async () => {
    const { shopId, blogId } = await shopAndBlog();
    await lbs.ensure(blog({ [NAMED]: 'web', [LOAD_BALANCER_ID]: blogId }));
    const err = await lbs
      .ensure(service('33333333-1b3c-4d2e-9f60-7c8d9e0f1a2b', 'wiki', { [NAMED]: 'web' }))
      .catch((e) => e);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect(err.message).toMatch(
      /^2 DigitalOcean load balancers named web carry tag k8s:\S+ \(.+\); give each Service its own/,
    );
    expect(sim.loadBalancers.has(shopId) && sim.loadBalancers.has(blogId)).toBe(true);
  });
});
