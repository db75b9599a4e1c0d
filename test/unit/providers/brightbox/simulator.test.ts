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
