import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ownedName, RULE_SOURCE } from '../../../../src/providers/brightbox/load-balancers.js';
import { InvalidConfigError, RetryableError } from '../../../../src/providers/errors.js';
import type {
  LoadBalancerRequest,
  LoadBalancerStatus,
  LoadBalancers,
} from '../../../../src/providers/types.js';
import { type BrightboxSimulator, startBrightboxSimulator } from '../../../clouds/brightbox/simulator.js';
import { lbRequest, provider } from './helpers.js';

let sim: BrightboxSimulator;
let lbs: LoadBalancers;
let servers: string[];

beforeEach(async () => {
  sim = await startBrightboxSimulator();
  servers = [sim.addServer().id, sim.addServer().id, sim.addServer().id];
  lbs = provider(sim).loadBalancers as LoadBalancers;
});
afterEach(async () => {
  await sim.close();
});

/** Calls a load balancer method as the service controller would: again after each RetryableError. */
async function untilDone<T>(call: () => Promise<T>, max = 5): Promise<{ result: T; attempts: number }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { result: await call(), attempts: attempt };
    } catch (err) {
      if (!(err instanceof RetryableError) || attempt >= max) throw err;
    }
  }
}

async function ensureUntilDone(
  req: LoadBalancerRequest,
): Promise<{ status: LoadBalancerStatus; attempts: number }> {
  const { result, attempts } = await untilDone(() => lbs.ensure(req));
  return { status: result, attempts };
}

/** The attempts delete took. */
async function deleteUntilDone(req: LoadBalancerRequest): Promise<number> {
  return (await untilDone(() => lbs.delete(req))).attempts;
}

/** `call` writes nothing to the API: what was already done is not done again. */
async function expectNoWrites(call: () => Promise<unknown>): Promise<void> {
  const writes = sim.writeCount;
  await call();
  expect(sim.writeCount).toBe(writes);
}

/**
 * Resources in the simulator; a balancer being deleted, or deleted (the listing keeps it, as the
 * real one keeps deleted and failed balancers), no longer counts.
 */
function counts() {
  const live = [...sim.loadBalancers.values()].filter(
    (lb) => lb.status !== 'deleting' && lb.status !== 'deleted',
  );
  const sizes = COUNTED.map((name) => [name, sim[name].size]);
  return { loadBalancers: live.length, ...Object.fromEntries(sizes) } as Record<Counted, number>;
}
const COUNTED = ['cloudIPs', 'serverGroups', 'firewallPolicies', 'firewallRules'] as const;
type Counted = 'loadBalancers' | (typeof COUNTED)[number];
/** What one Service's load balancer is made of. */
const ONE_OF_EACH = { loadBalancers: 1, cloudIPs: 1, serverGroups: 1, firewallPolicies: 1, firewallRules: 1 };

describe('ensure', () => {
  it('builds cloud IP, server group, firewall policy with one rule and load balancer, and maps the cloud IP', async () => {
    const req = lbRequest(servers.slice(0, 2));
    const first = await lbs.ensure(req).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(RetryableError);
    expect((first as RetryableError).retryAfterMs).toBeGreaterThan(0);
    expect((first as Error).message).toMatch(/still building load balancer lba-/);

    const { status } = await ensureUntilDone(req);
    expect(counts()).toEqual(ONE_OF_EACH);
    const name = ownedName(req);
    const [lb] = [...sim.loadBalancers.values()];
    const [cip] = [...sim.cloudIPs.values()];
    const [group] = [...sim.serverGroups.values()];
    const [policy] = [...sim.firewallPolicies.values()];
    const [rule] = [...sim.firewallRules.values()];
    expect(lb).toMatchObject({
      name,
      status: 'active',
      nodes: servers.slice(0, 2),
      listeners: [{ protocol: 'http', in: 80, out: 30080, timeout: 50000, proxy_protocol: null }],
      healthcheck: expect.objectContaining({ type: 'http', port: 30080, request: '/healthz' }),
      httpsRedirect: false,
    });
    expect(cip).toMatchObject({ name, mappedTo: lb?.id });
    expect(group).toMatchObject({ name, servers: servers.slice(0, 2) });
    expect(group?.description).toContain(req.clusterID);
    expect(policy).toMatchObject({ name, serverGroup: group?.id });
    expect(rule).toMatchObject({
      policy: policy?.id,
      protocol: 'tcp',
      source: RULE_SOURCE,
      destinationPort: '30080',
    });
    expect(status.ingress).toEqual([
      { ip: cip?.publicIPv4, ipMode: 'Proxy' },
      { ip: cip?.publicIPv6, ipMode: 'Proxy' },
      { hostname: `${cip?.id}.gb1.brightbox.com` },
    ]);
    expect(await lbs.get(req)).toEqual(status);
  });

  it('writes nothing when everything is already as wanted', async () => {
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    await expectNoWrites(() => lbs.ensure(req));
  });

  it('follows changed ports: listeners, health check and the firewall rule', async () => {
    await ensureUntilDone(lbRequest(servers));
    const changed = lbRequest(servers, {
      ports: [
        { name: 'http', protocol: 'TCP', port: 80, nodePort: 30081 },
        { name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 },
      ],
    });
    await ensureUntilDone(changed);
    const [lb] = [...sim.loadBalancers.values()];
    const [cip] = [...sim.cloudIPs.values()];
    expect(lb?.listeners.map((l) => [l.protocol, l.in, l.out])).toEqual([
      ['http', 80, 30081],
      ['https', 443, 30443],
    ]);
    // https listeners get a Let's Encrypt certificate for the cloud IP's names, and http redirects
    expect(lb?.domains).toEqual([`${cip?.id}.gb1.brightbox.com`, cip?.reverseDNS].sort());
    expect(lb?.httpsRedirect).toBe(true);
    expect([...sim.firewallRules.values()].map((r) => r.destinationPort)).toEqual(['30081,30443']);
    expect(counts()).toEqual(ONE_OF_EACH);
  });

  it('follows changed Nodes in the server group and the balancer (updateNodes)', async () => {
    await ensureUntilDone(lbRequest(servers.slice(0, 2)));
    await lbs.updateNodes(lbRequest([servers[1] as string, servers[2] as string]));
    const [lb] = [...sim.loadBalancers.values()];
    const [group] = [...sim.serverGroups.values()];
    expect(lb?.nodes).toEqual([servers[1], servers[2]]);
    expect([...(group?.servers ?? [])].sort()).toEqual([servers[1], servers[2]].sort());
  });

  it('leaves `nodes` out when no Node is left, as gobrightbox does, and then writes nothing more', async () => {
    // gobrightbox load_balancers.go l.91: Nodes is omitempty, the SDK never sends "nodes": [];
    // the official controller's buildLoadBalancerNodes gives nil for no Nodes.
    const bodies: string[] = [];
    const spy: typeof fetch = async (input, init) => {
      if (init?.method === 'PUT' || init?.method === 'POST') bodies.push(String(init.body));
      return fetch(input, init);
    };
    lbs = provider(sim, { http: { retries: 0, sleep: async () => {}, fetch: spy } })
      .loadBalancers as LoadBalancers;
    await ensureUntilDone(lbRequest([]));
    const created = bodies.find((b) => b.includes('"listeners"'));
    expect(created).toBeDefined();
    expect(created).not.toContain('"nodes"');
    await ensureUntilDone(lbRequest(servers.slice(0, 1)));
    expect([...sim.loadBalancers.values()][0]?.nodes).toEqual(servers.slice(0, 1));
    bodies.length = 0;
    await ensureUntilDone(lbRequest([]));
    // Nothing else changed: no PUT at all (one without `nodes` could not clear them). The group is
    // emptied, the balancer keeps its last node, and the next syncs write nothing.
    expect(bodies.filter((b) => b.includes('"listeners"'))).toEqual([]);
    expect([...sim.loadBalancers.values()][0]?.nodes).toEqual(servers.slice(0, 1));
    expect([...sim.serverGroups.values()][0]?.servers).toEqual([]);
    await expectNoWrites(() => lbs.ensure(lbRequest([])));
  });

  it('takes a Node without provider ID by its name when that is a server id, and skips foreign ones', async () => {
    const req = lbRequest([], {
      nodes: [
        { name: servers[0] as string, providerID: '', addresses: [] },
        { name: 'bare-metal-1', providerID: '', addresses: [] },
        { name: 'do-node', providerID: 'digitalocean://123', addresses: [] },
      ],
    });
    await ensureUntilDone(req);
    expect([...sim.loadBalancers.values()][0]?.nodes).toEqual([servers[0]]);
  });

  it('applies the annotations: policy, tcp listeners, proxy protocol, timeouts, health check', async () => {
    const req = lbRequest(servers, {
      service: {
        annotations: {
          'service.beta.kubernetes.io/brightbox-load-balancer-policy': 'round-robin',
          'service.beta.kubernetes.io/brightbox-load-balancer-listener-protocol': 'tcp',
          'service.beta.kubernetes.io/brightbox-load-balancer-listener-proxy-protocol': 'v2',
          'service.beta.kubernetes.io/brightbox-load-balancer-listener-idle-timeout': '120000',
          'service.beta.kubernetes.io/brightbox-load-balancer-healthcheck-timeout': '3000',
          'service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval': '7000',
          'service.beta.kubernetes.io/brightbox-load-balancer-healthcheck-healthy-threshold': '2',
          'service.beta.kubernetes.io/brightbox-load-balancer-healthcheck-unhealthy-threshold': '4',
        },
      },
    });
    await ensureUntilDone(req);
    const [lb] = [...sim.loadBalancers.values()];
    expect(lb).toMatchObject({
      policy: 'round-robin',
      listeners: [{ protocol: 'tcp', in: 80, out: 30080, timeout: 120000, proxy_protocol: 'v2' }],
      healthcheck: {
        type: 'tcp',
        port: 30080,
        request: '/',
        interval: 7000,
        timeout: 3000,
        threshold_up: 2,
        threshold_down: 4,
      },
    });
    // Without the annotation, proxy_protocol is left out (gobrightbox sends no null) and goes away.
    const plain = lbRequest(servers);
    plain.service.annotations = {
      'service.beta.kubernetes.io/brightbox-load-balancer-listener-protocol': 'tcp',
    };
    await ensureUntilDone(plain);
    expect(sim.loadBalancers.get(lb?.id as string)?.listeners).toEqual([
      { protocol: 'tcp', in: 80, out: 30080, timeout: 50000, proxy_protocol: null },
    ]);
  });

  it('checks Local traffic policy Services on the health check node port, which the rule opens too', async () => {
    const req = lbRequest(servers, {
      service: { externalTrafficPolicy: 'Local', healthCheckNodePort: 32000 },
    });
    await ensureUntilDone(req);
    const [lb] = [...sim.loadBalancers.values()];
    expect(lb?.healthcheck).toMatchObject({ type: 'http', port: 32000, request: '/healthz' });
    expect([...sim.firewallRules.values()][0]?.destinationPort).toBe('30080,32000');
  });

  it('puts back a rule changed by hand and removes rules added to its policy', async () => {
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    const [rule] = [...sim.firewallRules.values()];
    if (rule) Object.assign(rule, { destinationPort: '1-65535', source: 'any' });
    sim.firewallRules.set('fwr-extra', { ...(rule as NonNullable<typeof rule>), id: 'fwr-extra' });
    await lbs.ensure(req);
    expect([...sim.firewallRules.values()]).toEqual([
      expect.objectContaining({
        id: rule?.id,
        destination: null,
        destinationPort: '30080',
        source: RULE_SOURCE,
      }),
    ]);
  });

  it('replaces a rule given a destination by hand instead of sending a null, which gobrightbox never does', async () => {
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    const [rule] = [...sim.firewallRules.values()];
    if (rule) Object.assign(rule, { destination: 'any' });
    await lbs.ensure(req);
    const rules = [...sim.firewallRules.values()];
    expect(rules).toEqual([
      expect.objectContaining({ destination: null, destinationPort: '30080', source: RULE_SOURCE }),
    ]);
    expect(rules[0]?.id).not.toBe(rule?.id);
    await expectNoWrites(() => lbs.ensure(req));
  });

  it("re-points its firewall policy with Brightbox's remove and apply_to actions, not PUT server_group", async () => {
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    const [policy] = [...sim.firewallPolicies.values()];
    const [group] = [...sim.serverGroups.values()];
    // Someone moved the policy to a group of their own.
    const theirs = sim.addServerGroup({ name: 'theirs' });
    if (policy) policy.serverGroup = theirs.id;
    await lbs.ensure(req);
    expect(policy?.serverGroup).toBe(group?.id);
    expect(sim.count('POST', `/1.0/firewall_policies/${policy?.id}/remove`)).toBe(1);
    expect(sim.count('POST', `/1.0/firewall_policies/${policy?.id}/apply_to`)).toBe(1);
    expect(sim.count('PUT', /^\/1\.0\/firewall_policies\//)).toBe(0);
    // Its group deleted by hand: the policy is on none and is applied to the new group.
    if (policy) policy.serverGroup = undefined;
    if (group) sim.serverGroups.delete(group.id);
    await lbs.ensure(req);
    const fresh = [...sim.serverGroups.values()].find((g) => g.name === ownedName(req));
    expect(fresh?.id).not.toBe(group?.id);
    expect(policy?.serverGroup).toBe(fresh?.id);
    expect(sim.count('POST', `/1.0/firewall_policies/${policy?.id}/remove`)).toBe(1);
    // Taken off the other group, then apply_to fails: the next ensure applies it.
    if (policy) policy.serverGroup = theirs.id;
    sim.inject({ method: 'POST', path: `/1.0/firewall_policies/${policy?.id}/apply_to`, status: 503 });
    await expect(lbs.ensure(req)).rejects.toBeInstanceOf(RetryableError);
    expect(policy?.serverGroup).toBeUndefined();
    await lbs.ensure(req);
    expect(policy?.serverGroup).toBe(fresh?.id);
  });

  it('terminates TLS on the SSL ports named by number or port name', async () => {
    const req = lbRequest(servers, {
      ports: [
        { name: 'web', protocol: 'TCP', port: 80, nodePort: 30080 },
        { name: 'alt-tls', protocol: 'TCP', port: 8443, nodePort: 30443 },
      ],
      service: {
        annotations: {
          'service.beta.kubernetes.io/brightbox-load-balancer-ssl-ports': 'alt-tls',
          'service.beta.kubernetes.io/brightbox-load-balancer-ssl-domains': 'shop.example.com',
        },
      },
    });
    await ensureUntilDone(req);
    const [lb] = [...sim.loadBalancers.values()];
    expect(lb?.listeners.map((l) => l.protocol)).toEqual(['http', 'https']);
    expect(lb?.domains).toContain('shop.example.com');
  });

  it("reports the balancer only once Let's Encrypt has validated every domain, as the official controller", async () => {
    sim.acmeValidReads = 3;
    const req = lbRequest(servers, {
      ports: [{ name: 'https', protocol: 'TCP', port: 443, nodePort: 30443 }],
      service: {
        annotations: { 'service.beta.kubernetes.io/brightbox-load-balancer-ssl-domains': 'shop.example.com' },
      },
    });
    const errors: string[] = [];
    let status: LoadBalancerStatus | undefined;
    for (let i = 0; i < 10 && !status; i++) {
      status = await lbs.ensure(req).catch((err: unknown) => {
        expect(err).toBeInstanceOf(RetryableError);
        errors.push((err as Error).message);
        return undefined;
      });
    }
    expect(status?.ingress.length).toBeGreaterThan(0);
    expect(
      errors.some((e) =>
        /Let's Encrypt has not validated \S+ for load balancer lba-\S+ yet \(pending\)/.test(e),
      ),
    ).toBe(true);
    const [lb] = [...sim.loadBalancers.values()];
    expect(Object.values(lb?.acme ?? {}).map((d) => d.status)).toEqual(['valid', 'valid', 'valid']);

    // A name Let's Encrypt refuses: not ready, saying why and what to do.
    sim.rejectDomain(lb?.id as string, 'shop.example.com', 'DNS problem: NXDOMAIN');
    const err = await lbs.ensure(req).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as Error).message).toMatch(
      /^Let's Encrypt refused shop\.example\.com for load balancer lba-\S+: DNS problem: NXDOMAIN; point the name at cloud IP [\d.]+, or remove it from service\.beta\.kubernetes\.io\/brightbox-load-balancer-ssl-domains$/,
    );
  });

  it('rejects a bad annotation naming it and its accepted values, before any call', async () => {
    const before = sim.requests.length;
    const err = await lbs
      .ensure(
        lbRequest(servers, {
          service: {
            annotations: { 'service.beta.kubernetes.io/brightbox-load-balancer-policy': 'fastest' },
          },
        }),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect((err as Error).message).toBe(
      'annotation service.beta.kubernetes.io/brightbox-load-balancer-policy="fastest" is not valid; accepted: least-connections | round-robin | source-address',
    );
    expect(sim.requests.length).toBe(before);
  });

  it('rejects what Brightbox balancers cannot do: UDP, session affinity, source ranges', async () => {
    const cases: Parameters<typeof lbRequest>[1][] = [
      { ports: [{ name: 'dns', protocol: 'UDP', port: 53, nodePort: 30053 }] },
      { service: { sessionAffinity: 'ClientIP' } },
      { service: { loadBalancerSourceRanges: ['203.0.113.0/24'] } },
    ];
    for (const c of cases) {
      await expect(lbs.ensure(lbRequest(servers, c))).rejects.toBeInstanceOf(InvalidConfigError);
    }
    expect(sim.writeCount).toBe(0);
  });
});

describe("two cloud IPs with the Service's name", () => {
  it('keeps the one in use, whatever the listing order, and releases the one a late create left', async () => {
    const req = lbRequest(servers);
    const { status } = await ensureUntilDone(req);
    const [inUse] = [...sim.cloudIPs.values()];
    // The old leader's POST /cloud_ips lands after the new leader's, and the account lists it first.
    const late = sim.addCloudIP({ name: ownedName(req) });
    const entries = [...sim.cloudIPs.entries()].reverse();
    sim.cloudIPs.clear();
    for (const [k, v] of entries) sim.cloudIPs.set(k, v);
    const { status: after } = await ensureUntilDone(req);
    expect(sim.cloudIPs.has(inUse?.id ?? '')).toBe(true);
    expect(sim.cloudIPs.has(late.id)).toBe(false);
    expect(after.ingress).toEqual(status.ingress);
  });
});

describe('cloud IPs named by the Service', () => {
  it('maps the annotated cloud IP, never deletes it, and releases the one ccm had allocated', async () => {
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    const allocated = [...sim.cloudIPs.values()][0];
    const own = sim.addCloudIP({ name: 'shop ip' });
    const annotated = lbRequest(servers, {
      service: {
        annotations: { 'service.beta.kubernetes.io/brightbox-load-balancer-cloudip-allocations': own.id },
      },
    });
    const status = await lbs.ensure(annotated);
    const [lb] = [...sim.loadBalancers.values()];
    expect(sim.cloudIPs.get(own.id)?.mappedTo).toBe(lb?.id);
    expect(sim.cloudIPs.has(allocated?.id ?? '')).toBe(false);
    expect(status.ingress[0]).toEqual({ ip: own.publicIPv4, ipMode: 'Proxy' });

    await deleteUntilDone(annotated);
    expect(sim.cloudIPs.get(own.id)).toMatchObject({ name: 'shop ip', mappedTo: undefined });
    expect(sim.cloudIPs.size).toBe(1);
  });

  it('finds spec.loadBalancerIP among the account cloud IPs', async () => {
    const own = sim.addCloudIP();
    await ensureUntilDone(lbRequest(servers, { service: { loadBalancerIP: own.publicIPv4 } }));
    expect(sim.cloudIPs.get(own.id)?.mappedTo).toBe([...sim.loadBalancers.keys()][0]);
    expect(sim.cloudIPs.size).toBe(1);
  });

  it('refuses a cloud IP mapped elsewhere, and an unknown one, with what to do', async () => {
    const server = sim.servers.get(servers[0] as string);
    const busy = sim.addCloudIP({ mappedTo: server?.interfaces[0]?.id });
    const annotate = (id: string) =>
      lbRequest(servers, {
        service: {
          annotations: { 'service.beta.kubernetes.io/brightbox-load-balancer-cloudip-allocations': id },
        },
      });
    const err = await ensureUntilDone(annotate(busy.id)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect((err as Error).message).toContain(`cloud IP ${busy.id} is mapped to`);
    expect(sim.cloudIPs.get(busy.id)?.mappedTo).toBe(server?.interfaces[0]?.id);

    const unknown = await lbs.ensure(annotate('cip-zzzzz')).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(InvalidConfigError);
    expect((unknown as Error).message).toContain('cip-zzzzz, which this Brightbox account does not have');
  });
});

describe('delete', () => {
  it('removes the balancer, its cloud IP, server group and firewall policy with its rule, and nothing else', async () => {
    // Things that are not this Service's: hand-made, another Service's, another cluster's.
    const userGroup = sim.addServerGroup({ name: 'web servers', servers: [servers[0] as string] });
    const userPolicy = sim.addFirewallPolicy({ name: 'web', serverGroup: userGroup.id });
    const userIP = sim.addCloudIP({ name: 'mail' });
    const other = lbRequest(servers, { name: 'a0000000000000000000000000000000', service: { name: 'api' } });
    const foreign = lbRequest(servers, { clusterID: 'another-cluster' });
    const req = lbRequest(servers);
    for (const r of [other, foreign, req]) await ensureUntilDone(r);
    expect(counts()).toEqual({
      loadBalancers: 3,
      cloudIPs: 4,
      serverGroups: 4,
      firewallPolicies: 4,
      firewallRules: 3,
    });
    // Everything but this Service's four resources and its rule, as it is now.
    const name = ownedName(req);
    const ourPolicy = [...sim.firewallPolicies.values()].find((p) => p.name === name)?.id;
    const snapshot = () =>
      JSON.stringify(
        [sim.loadBalancers, sim.cloudIPs, sim.serverGroups, sim.firewallPolicies, sim.firewallRules].map(
          (m) =>
            [...m.values()].filter(
              (v) =>
                (v as { name?: string }).name !== name && (v as { policy?: string }).policy !== ourPolicy,
            ),
        ),
      );
    const before = snapshot();

    // Brightbox is still deleting the balancer: the call is not done, and its cloud IP, group and
    // policy wait for it.
    const first = await lbs.delete(req).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(RetryableError);
    expect((first as Error).message).toMatch(/still deleting load balancer lba-/);
    expect(counts().cloudIPs).toBe(4);
    expect(await deleteUntilDone(req)).toBe(1);
    expect(counts()).toEqual({
      loadBalancers: 2,
      cloudIPs: 3,
      serverGroups: 3,
      firewallPolicies: 3,
      firewallRules: 2,
    });
    expect(snapshot()).toBe(before);
    expect(sim.serverGroups.get(userGroup.id)?.servers).toEqual([servers[0]]);
    expect(sim.firewallPolicies.has(userPolicy.id)).toBe(true);
    expect(sim.cloudIPs.has(userIP.id)).toBe(true);
    expect(await lbs.get(req)).toBeUndefined();
    expect(await lbs.get(foreign)).toBeDefined();

    await expectNoWrites(() => lbs.delete(req));
  });

  it('accepts a DELETE answered with the resource (as Brightbox does) or with an empty 202', async () => {
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    // The simulator answers the resource; these two answer 202 with no body instead.
    for (const path of [/^\/1\.0\/cloud_ips\//, /^\/1\.0\/server_groups\//]) {
      sim.inject({ method: 'DELETE', path, status: 202, body: '', apply: true });
    }
    await deleteUntilDone(req);
    expect(counts()).toEqual({
      loadBalancers: 0,
      cloudIPs: 0,
      serverGroups: 0,
      firewallPolicies: 0,
      firewallRules: 0,
    });
  });

  it('is done only once Brightbox has removed the balancer; one that ends failed counts as erased', async () => {
    await sim.close();
    sim = await startBrightboxSimulator({ lbDeletingReads: 3 });
    servers = [sim.addServer().id];
    lbs = provider(sim).loadBalancers as LoadBalancers;
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    const [lb] = [...sim.loadBalancers.values()];
    await expect(lbs.delete(req)).rejects.toThrow(/still deleting load balancer lba-/);
    await expect(lbs.delete(req)).rejects.toThrow(/still deleting load balancer lba-/);
    // While the balancer is there, so is everything else of the Service: the finalizer stays.
    expect([sim.cloudIPs.size, sim.serverGroups.size, sim.firewallPolicies.size]).toEqual([1, 1, 1]);
    // Brightbox reports it failed: not alive, so erased for the official controller (k8ssdk
    // ErrorIfNotErased); ccm sends no second DELETE and removes the rest.
    (lb as { status: string }).status = 'failed';
    expect(await deleteUntilDone(req)).toBe(1);
    const deletes = sim.requests.filter(
      (r) => r.method === 'DELETE' && r.path.endsWith(`/load_balancers/${lb?.id}`),
    );
    expect(deletes).toHaveLength(1);
    expect(counts()).toEqual({
      loadBalancers: 1,
      cloudIPs: 0,
      serverGroups: 0,
      firewallPolicies: 0,
      firewallRules: 0,
    });
    expect(await lbs.get(req)).toBeUndefined();
  });

  it('passes over the deleted and failed balancers the listing keeps, as the official controller', async () => {
    // k8ssdk v2.1.1 brightbox_interface.go l.69-70, l.93: only active or creating balancers count.
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    await deleteUntilDone(req);
    const [deleted] = [...sim.loadBalancers.values()];
    expect(deleted?.status).toBe('deleted');
    // The deleted balancer is still listed, and still carries the Service's name.
    const listed = await provider(sim).loadBalancers?.get(req);
    expect(listed).toBeUndefined();
    expect(sim.requests.some((r) => r.method === 'GET' && r.path === '/1.0/load_balancers')).toBe(true);
    // A new ensure builds a new balancer beside it; a failed one beside that is passed over too.
    const { status } = await ensureUntilDone(req);
    const live = [...sim.loadBalancers.values()].filter((lb) => lb.status === 'active');
    expect(live).toHaveLength(1);
    (live[0] as { status: string }).status = 'failed';
    const again = await ensureUntilDone(req);
    expect(again.status.ingress).toEqual(status.ingress);
    expect([...sim.loadBalancers.values()].map((lb) => lb.status)).toEqual(['deleted', 'failed', 'active']);
    await expectNoWrites(() => lbs.ensure(req));
    // The balancer fails with the Service's cloud IP on it: delete still releases the cloud IP.
    const current = [...sim.loadBalancers.values()].find((lb) => lb.status === 'active');
    (current as { status: string }).status = 'failed';
    await deleteUntilDone(req);
    expect(counts()).toMatchObject({ cloudIPs: 0, serverGroups: 0, firewallPolicies: 0 });
    expect(await lbs.get(req)).toBeUndefined();
  });

  it('never adopts resources of another cluster with the same Service', async () => {
    const foreign = lbRequest(servers, { clusterID: 'another-cluster' });
    await ensureUntilDone(foreign);
    const before = counts();
    await ensureUntilDone(lbRequest(servers));
    expect(counts()).toEqual({
      loadBalancers: before.loadBalancers + 1,
      cloudIPs: before.cloudIPs + 1,
      serverGroups: before.serverGroups + 1,
      firewallPolicies: before.firewallPolicies + 1,
      firewallRules: before.firewallRules + 1,
    });
  });
});

describe('a failure after each step', () => {
  const wanted = { loadBalancers: 1, cloudIPs: 1, serverGroups: 1, firewallPolicies: 1, firewallRules: 1 };

  async function writesOfCleanEnsure(): Promise<number> {
    sim.lbCreatingReads = 0;
    await ensureUntilDone(lbRequest(servers.slice(0, 2)));
    return sim.writeCount;
  }

  for (const apply of [false, true]) {
    it(`is finished by the next ensure without duplicates (${apply ? 'done, answer lost' : 'refused'})`, async () => {
      const steps = await writesOfCleanEnsure();
      expect(steps).toBe(7); // cloud IP, group, its servers, policy, rule, balancer, map
      for (let step = 1; step <= steps; step++) {
        await sim.close();
        sim = await startBrightboxSimulator({ lbCreatingReads: 0 });
        const ids = [sim.addServer().id, sim.addServer().id];
        lbs = provider(sim).loadBalancers as LoadBalancers;
        sim.failWrite(step, { status: 500, apply });
        const req = lbRequest(ids);
        const { status } = await ensureUntilDone(req);
        expect(
          sim.requests.filter((r) => r.status === 500),
          `step ${step}`,
        ).toHaveLength(1);
        expect(counts(), `step ${step}`).toEqual(wanted);
        expect(status.ingress.length).toBe(3);
        expect([...sim.cloudIPs.values()][0]?.mappedTo).toBe([...sim.loadBalancers.keys()][0]);
        expect([...sim.serverGroups.values()][0]?.servers).toEqual(ids);
      }
    });
  }

  it('in delete is finished by the next delete, leaving nothing of the Service', async () => {
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    const deleteWrites = await (async () => {
      const w = sim.writeCount;
      await deleteUntilDone(req);
      return sim.writeCount - w;
    })();
    expect(deleteWrites).toBe(6); // unmap, balancer, cloud IP, policy, group's servers, group
    for (let step = 1; step <= deleteWrites; step++) {
      await sim.close();
      sim = await startBrightboxSimulator({ lbCreatingReads: 0 });
      const ids = [sim.addServer().id];
      lbs = provider(sim).loadBalancers as LoadBalancers;
      const r = lbRequest(ids);
      await ensureUntilDone(r);
      sim.failWrite(step, { status: 503, apply: step % 2 === 0 });
      await expect(lbs.delete(r)).rejects.toBeInstanceOf(RetryableError);
      // The service controller deletes again only while get reports something: whatever is left
      // must be reported, or the finalizer goes and it stays behind.
      const left = sim.loadBalancers.size + Object.values(counts()).reduce((a, b) => a + b, 0);
      expect(Boolean(await lbs.get(r)), `step ${step}`).toBe(left > 0);
      await deleteUntilDone(r);
      expect(counts(), `step ${step}`).toEqual({
        loadBalancers: 0,
        cloudIPs: 0,
        serverGroups: 0,
        firewallPolicies: 0,
        firewallRules: 0,
      });
    }
  });
});

describe('credentials during a reconcile', () => {
  it('renews a token the API stopped accepting mid-ensure, and the ensure succeeds', async () => {
    const req = lbRequest(servers);
    await ensureUntilDone(req);
    sim.expireTokens();
    await expect(lbs.ensure(req)).resolves.toMatchObject({ ingress: expect.any(Array) });
    expect(sim.count('POST', /^\/token\/?$/)).toBe(2);
    expect(sim.requests.filter((r) => r.status === 401)).toHaveLength(1);
    expect(sim.requests.filter((r) => r.status >= 400 && r.status !== 401)).toEqual([]);
  });
});
