import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { regionOfZone } from '../../../../src/providers/brightbox/instances.js';
import {
  InvalidConfigError,
  NotFoundError,
  RetryableError,
  UnauthorizedError,
} from '../../../../src/providers/errors.js';
import type { Instances } from '../../../../src/providers/types.js';
import { type BrightboxSimulator, startBrightboxSimulator } from '../../../clouds/brightbox/simulator.js';
import { externalDNS, externalIPs, hostname } from '../../helpers/addresses.js';
import { expectRefusedProviderIDs } from '../../helpers/provider-ids.js';
import { provider } from './helpers.js';

let sim: BrightboxSimulator;
let instances: Instances;
beforeEach(async () => {
  sim = await startBrightboxSimulator();
  instances = provider(sim).instances;
});
afterEach(async () => {
  await sim.close();
});

describe('Brightbox instances', () => {
  it("lists servers with provider ID, zone, region, type and the official controller's addresses", async () => {
    const web = sim.addServer({
      id: 'srv-web01',
      name: 'web-1',
      zone: 'gb1-b',
      serverType: '4gb.ssd',
      ipv4: '10.240.0.5',
      ipv6: '2a02:1348:17c:1::5',
    });
    const cip = sim.addCloudIP({ mappedTo: web.interfaces[0]?.id, publicIPv4: '109.107.35.1' });
    sim.addServer({ id: 'srv-off01', status: 'inactive' });
    sim.addServer({ id: 'srv-del01', status: 'deleted' });
    sim.addServer({ id: 'srv-new01', status: 'creating' });
    sim.addServer({ id: 'srv-bye01', status: 'deleting' });
    sim.addServer({ id: 'srv-na001', status: 'unavailable' });
    sim.addServer({ id: 'srv-bad01', status: 'failed' });

    const list = await instances.list();
    expect(sim.count('GET', '/1.0/servers')).toBe(1);
    expect(list[0]).toEqual({
      providerID: 'brightbox://srv-web01',
      name: 'web-1',
      state: 'running',
      type: '4gb.ssd',
      zone: 'gb1-b',
      region: 'gb1',
      addresses: [
        hostname('srv-web01'),
        externalDNS('srv-web01.gb1.brightbox.com'),
        ...externalIPs('10.240.0.5', '2a02:1348:17c:1::5', '109.107.35.1'),
        externalDNS(`${cip.id}.gb1.brightbox.com`),
      ],
      labels: {},
    });
    expect(list.map((i) => [i.providerID, i.state])).toEqual([
      ['brightbox://srv-web01', 'running'],
      ['brightbox://srv-off01', 'stopped'],
      ['brightbox://srv-new01', 'running'],
      ['brightbox://srv-bye01', 'running'],
      ['brightbox://srv-na001', 'stopped'],
    ]);
  });

  it('throws on a failed listing instead of returning part of it', async () => {
    sim.addServer();
    sim.inject({ path: '/1.0/servers', status: 500 });
    await expect(instances.list()).rejects.toBeInstanceOf(RetryableError);
  });

  it('leaves deleted and failed servers out of the listing: no Node is initialised from one', async () => {
    // A Node named like a deleted server (by id or by name) must not be matched to it.
    sim.addServer({ id: 'srv-del01', name: 'web-1', status: 'deleted' });
    sim.addServer({ id: 'srv-bad01', name: 'web-2', status: 'failed' });
    sim.addServer({ id: 'srv-web03', name: 'web-3' });
    expect((await instances.list()).map((i) => i.providerID)).toEqual(['brightbox://srv-web03']);
  });

  it('gets one server as the official controller reads its status: only inactive and unavailable are shut down', async () => {
    const states = {
      creating: 'running',
      active: 'running',
      deleting: 'running',
      inactive: 'stopped',
      unavailable: 'stopped',
    } as const;
    for (const [status, state] of Object.entries(states)) {
      const server = sim.addServer({ status: status as keyof typeof states });
      await expect(instances.get(`brightbox://${server.id}`), status).resolves.toMatchObject({ state });
    }
  });

  it("answers not found for Brightbox's own 404 and for a server it answers as deleted or failed", async () => {
    // brightbox-cloud-controller-manager instances.go l.141-144 and instances_test.go l.238-243:
    // a GET answering status deleted or failed means the instance does not exist.
    sim.addServer({ id: 'srv-del01', status: 'deleted' });
    sim.addServer({ id: 'srv-bad01', status: 'failed' });
    await expect(instances.get('brightbox://srv-gone1')).rejects.toBeInstanceOf(NotFoundError);
    await expect(instances.get('brightbox://srv-del01')).rejects.toBeInstanceOf(NotFoundError);
    await expect(instances.get('brightbox://srv-del01')).rejects.toThrow(/server srv-del01 as deleted/);
    await expect(instances.get('brightbox://srv-bad01')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('never reads an auth error, an outage or a foreign 404 as gone', async () => {
    sim.addServer({ id: 'srv-abcde' });
    sim.inject({
      path: '/1.0/servers/srv-abcde',
      status: 403,
      body: { error_name: 'forbidden', errors: ['no'] },
    });
    await expect(instances.get('brightbox://srv-abcde')).rejects.toBeInstanceOf(UnauthorizedError);
    sim.inject({ path: '/1.0/servers/srv-abcde', status: 502 });
    await expect(instances.get('brightbox://srv-abcde')).rejects.toBeInstanceOf(RetryableError);
    sim.inject({ path: '/1.0/servers/srv-abcde', status: 404, body: 'Not Found' });
    await expect(instances.get('brightbox://srv-abcde')).rejects.toBeInstanceOf(InvalidConfigError);
  });

  it('refuses a provider ID that is not brightbox://srv-xxxxx, without calling the API', async () => {
    await expectRefusedProviderIDs(instances, [
      'digitalocean://123',
      'brightbox://lba-abcde',
      'brightbox://x/srv-abcde',
      'brightbox://srv-ABCDE',
    ]);
    expect(sim.requests).toEqual([]);
  });

  it('derives the region from the zone handle', () => {
    expect(regionOfZone('gb1-a')).toBe('gb1');
    expect(regionOfZone('gb1s-b')).toBe('gb1s');
    expect(regionOfZone('gb1')).toBe('gb1');
  });
});

describe('a lookup answered with another server', () => {
  it('is never this server gone, even when that server is deleted', async () => {
    const live = sim.addServer();
    const other = sim.addServer();
    const record = sim.servers.get(other.id);
    if (record) record.status = 'deleted';
    // Something between ccm and the API mixes up answers: the lookup of one gets the other.
    const mixed = provider(sim, {
      http: {
        fetch: async (input: string | URL | Request, init?: RequestInit) => {
          const url = new URL(String(input instanceof Request ? input.url : input));
          url.pathname = url.pathname.replace(`/servers/${live.id}`, `/servers/${other.id}`);
          return fetch(url, init);
        },
      },
    }).instances;
    const err = await mixed.get(`brightbox://${live.id}`).catch((e) => e);
    expect(err).not.toBeInstanceOf(NotFoundError);
    expect(err).toBeInstanceOf(RetryableError);
  });
});
