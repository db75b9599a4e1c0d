/**
 * The simulator against the reference shapes (test/fixtures/brightbox, see SOURCES.md): it must answer
 * with the same keys, and our client must read the reference payloads.
 */
import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isBrightboxNotFound } from '../../../../src/providers/brightbox/client.js';
import { addressesOf } from '../../../../src/providers/brightbox/instances.js';
import { type BrightboxSimulator, startBrightboxSimulator } from '../../../clouds/brightbox/simulator.js';
import { client, lbRequest, provider } from './helpers.js';

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/brightbox/${name}.json`, import.meta.url), 'utf8'));

/** Keys of an object and of the objects (or first array items) inside it, as dotted paths. */
function shape(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) return value.length > 0 ? shape(value[0], `${prefix}[]`) : [];
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>)
    .flatMap(([k, v]) => [`${prefix}${k}`, ...shape(v, `${prefix}${k}.`)])
    .sort();
}

let sim: BrightboxSimulator;
beforeEach(async () => {
  sim = await startBrightboxSimulator({ lbCreatingReads: 0 });
});
afterEach(async () => {
  await sim.close();
});

describe('the Brightbox simulator answers in the reference shapes', () => {
  it('servers, cloud IPs, load balancers, server groups and firewall policies', async () => {
    const server = sim.addServer({ ipv6: '2a02:1348:17c:1::a' });
    sim.addCloudIP({ mappedTo: server.interfaces[0]?.id });
    const lbs = provider(sim).loadBalancers;
    const req = lbRequest([server.id]);
    await lbs?.ensure(req).catch(() => {});
    await lbs?.ensure(req);
    const c = client(sim);
    const [apiServer] = await c.get<unknown[]>('servers');
    // The reference server is in a group; ours is in the balancer's group, so both have the key.
    expect(shape(apiServer)).toEqual(shape(fixture('server')));
    const cloudIPs = await c.get<{ load_balancer: unknown }[]>('cloud_ips');
    expect(shape(cloudIPs.find((x) => x.load_balancer))).toEqual(shape(fixture('cloud_ip')));
    const [lb] = await c.get<unknown[]>('load_balancers');
    expect(shape(lb)).toEqual(shape(fixture('load_balancer')));
    const [policy] = await c.get<unknown[]>('firewall_policies');
    expect(shape(policy)).toEqual(shape(fixture('firewall_policy')));
    const [group] = await c.get<unknown[]>('server_groups');
    expect(shape(group)).toEqual(shape(fixture('server_group')));
    const notFound = await fetch(`${sim.url}/1.0/servers/srv-zzzzz`, {
      headers: { authorization: `Bearer ${sim.issuedTokens[0]}` },
    });
    expect(notFound.status).toBe(404);
    expect(shape(await notFound.json())).toEqual(shape(fixture('not_found')));
  });

  it('refuses what the API refuses: unknown keys, bad enums, unknown servers', async () => {
    const c = client(sim);
    const server = sim.addServer();
    const listener = { protocol: 'http', in: 80, out: 30080 };
    const healthcheck = { type: 'http', port: 30080 };
    const bad = [
      { listeners: [listener], healthcheck, colour: 'red' },
      { listeners: [{ ...listener, protocol: 'udp' }], healthcheck },
      { listeners: [listener], healthcheck, policy: 'fastest' },
      { listeners: [listener], healthcheck, nodes: [{ node: 'srv-nope1' }] },
      { listeners: [listener] },
      { listeners: [{ ...listener, protocol: 'https' }], healthcheck },
    ];
    for (const body of bad) {
      await expect(c.post('load_balancers', body), JSON.stringify(body)).rejects.toThrow();
    }
    await expect(
      c.post('load_balancers', { listeners: [listener], healthcheck, nodes: [{ node: server.id }] }),
    ).resolves.toBeDefined();
  });
});

describe('the Brightbox simulator answers as gobrightbox expects', () => {
  /** A raw request with a fresh token, as the SDK sends it. */
  async function call(method: string, path: string, body?: unknown) {
    if (sim.issuedTokens.length === 0) await client(sim).verify();
    const res = await fetch(`${sim.url}/1.0/${path}`, {
      method,
      headers: {
        authorization: `Bearer ${sim.issuedTokens.at(-1)}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return {
      status: res.status,
      type: res.headers.get('content-type'),
      json: text ? JSON.parse(text) : text,
    };
  }

  /** Creates a balancer of `node` with one listener, 80 to 30080, and reads it once (it is then active); its id. */
  async function activeBalancer(node: string, protocol: 'tcp' | 'http'): Promise<string> {
    const created = await call('POST', 'load_balancers', {
      nodes: [{ node }],
      listeners: [{ protocol, in: 80, out: 30080 }],
      healthcheck: { type: protocol, port: 30080 },
    });
    const id = created.json.id as string;
    await call('GET', `load_balancers/${id}`);
    return id;
  }

  it('DELETE of a cloud IP, firewall rule, firewall policy and server group answers the resource', async () => {
    const cip = sim.addCloudIP({ name: 'spare' });
    const group = sim.addServerGroup({ name: 'g' });
    const policy = sim.addFirewallPolicy({ name: 'p' });
    const rule = await call('POST', 'firewall_rules', {
      firewall_policy: policy.id,
      protocol: 'tcp',
      source: 'any',
      destination_port: '80',
    });
    for (const [path, id] of [
      [`cloud_ips/${cip.id}`, cip.id],
      [`firewall_rules/${rule.json.id}`, rule.json.id],
      [`firewall_policies/${policy.id}`, policy.id],
      [`server_groups/${group.id}`, group.id],
    ]) {
      const answer = await call('DELETE', path as string);
      expect(answer.status, path).toBe(202);
      expect(answer.json, path).toMatchObject({ id });
    }
    expect([
      sim.cloudIPs.size,
      sim.firewallRules.size,
      sim.firewallPolicies.size,
      sim.serverGroups.size,
    ]).toEqual([0, 0, 0, 0]);
  });

  it('destroys a server group that still has a firewall policy, as the official controller needs', async () => {
    // brightbox-cloud-controller-manager load_balancer_cloud.go l.109 then l.112: the group is
    // destroyed before its firewall policy.
    const group = sim.addServerGroup({ name: 'g' });
    const policy = sim.addFirewallPolicy({ name: 'p', serverGroup: group.id });
    expect((await call('DELETE', `server_groups/${group.id}`)).status).toBe(202);
    expect(sim.serverGroups.has(group.id)).toBe(false);
    expect((await call('DELETE', `firewall_policies/${policy.id}`)).status).toBe(202);
  });

  it('keeps a deleted load balancer in the listing and its GET, with status deleted', async () => {
    const server = sim.addServer();
    const id = await activeBalancer(server.id, 'tcp');
    expect((await call('DELETE', `load_balancers/${id}`)).json).toMatchObject({ status: 'deleting' });
    const seen: string[] = [];
    for (let i = 0; i < 3; i++) {
      const all = (await call('GET', 'load_balancers')).json as { id: string; status: string }[];
      seen.push(all.find((lb) => lb.id === id)?.status ?? '(absent)');
    }
    expect(seen).toEqual(['deleting', 'deleted', 'deleted']);
    expect((await call('GET', `load_balancers/${id}`)).json).toMatchObject({ id, status: 'deleted' });
  });

  it('load balancer actions take JSON arrays as the SDK sends them, and lock and unlock', async () => {
    const [a, b] = [sim.addServer(), sim.addServer()];
    const lb = await activeBalancer(a.id, 'http');
    const added = await call('POST', `load_balancers/${lb}/add_nodes`, [{ node: b.id }]);
    expect(added.json.nodes.map((n: { id: string }) => n.id)).toEqual([a.id, b.id]);
    const removed = await call('POST', `load_balancers/${lb}/remove_nodes`, [{ node: a.id }]);
    expect(removed.json.nodes.map((n: { id: string }) => n.id)).toEqual([b.id]);
    const listener = { protocol: 'tcp', in: 8080, out: 30081, timeout: 50000 };
    const more = await call('POST', `load_balancers/${lb}/add_listeners`, [listener]);
    expect(more.json.listeners).toContainEqual({ ...listener, proxy_protocol: null });
    const fewer = await call('POST', `load_balancers/${lb}/remove_listeners`, [listener]);
    expect(fewer.json.listeners.map((l: { in: number }) => l.in)).toEqual([80]);
    // An object where the SDK sends an array is refused, as is an unknown server.
    expect((await call('POST', `load_balancers/${lb}/add_nodes`, { nodes: [{ node: a.id }] })).status).toBe(
      422,
    );
    expect((await call('POST', `load_balancers/${lb}/add_nodes`, [{ node: 'srv-nope1' }])).status).toBe(422);

    expect((await call('PUT', `load_balancers/${lb}/lock_resource`)).json).toMatchObject({
      id: lb,
      locked: true,
    });
    expect((await call('DELETE', `load_balancers/${lb}`)).status).toBe(409);
    expect((await call('PUT', `load_balancers/${lb}/unlock_resource`)).json).toMatchObject({ locked: false });
    expect((await call('DELETE', `load_balancers/${lb}`)).json).toMatchObject({ id: lb, status: 'deleting' });
  });

  it('firewall policies are applied to and removed from a server group by their actions', async () => {
    const [g1, g2] = [sim.addServerGroup(), sim.addServerGroup()];
    const policy = sim.addFirewallPolicy({ name: 'p', serverGroup: g1.id });
    const other = sim.addFirewallPolicy({ name: 'q' });
    // Applied already: removed first, as terraform-provider-brightbox does.
    expect(
      (await call('POST', `firewall_policies/${policy.id}/apply_to`, { server_group: g2.id })).status,
    ).toBe(422);
    expect(
      (await call('POST', `firewall_policies/${policy.id}/remove`, { server_group: g2.id })).status,
    ).toBe(422);
    const removed = await call('POST', `firewall_policies/${policy.id}/remove`, { server_group: g1.id });
    expect(removed.json).toMatchObject({ id: policy.id, server_group: null });
    const applied = await call('POST', `firewall_policies/${policy.id}/apply_to`, { server_group: g2.id });
    expect(applied.json).toMatchObject({ id: policy.id, server_group: { id: g2.id } });
    // One policy per group.
    expect(
      (await call('POST', `firewall_policies/${other.id}/apply_to`, { server_group: g2.id })).status,
    ).toBe(422);
  });

  it("answers an unknown route with Brightbox's JSON error, never plain text", async () => {
    for (const [method, path] of [
      ['GET', 'volcanoes'],
      ['POST', 'load_balancers/lba-zzzzz/explode'],
      ['POST', 'servers/srv-zzzzz/reboot'],
    ] as const) {
      const sim404 = await call(method, path, method === 'POST' ? {} : undefined);
      expect(sim404.status, path).toBe(404);
      expect(sim404.type, path).toMatch(/^application\/json/);
      expect(sim404.json, path).toMatchObject({
        error_name: expect.any(String),
        errors: [expect.any(String)],
      });
    }
  });
});

describe('the client reads the reference payloads', () => {
  it('addresses of the reference server, as the official controller reports them', () => {
    expect(addressesOf(fixture('server'))).toEqual([
      { type: 'Hostname', address: 'srv-k8s01' },
      { type: 'ExternalDNS', address: 'srv-k8s01.gb1.brightbox.com' },
      { type: 'ExternalIP', address: '10.241.200.10' },
      { type: 'ExternalIP', address: '2a02:1348:17c:1::a' },
      { type: 'ExternalIP', address: '109.107.37.10' },
      { type: 'ExternalDNS', address: 'cip-k8s01.gb1.brightbox.com' },
    ]);
  });

  it("Brightbox's own not-found body, and nothing else", () => {
    expect(isBrightboxNotFound(fixture('not_found'))).toBe(true);
    expect(isBrightboxNotFound('Not Found')).toBe(false);
    expect(isBrightboxNotFound({ message: 'not found' })).toBe(false);
  });
});
