import { describe, expect, it } from 'vitest';
import { AddressPool } from '../../../../src/providers/cloudlycke/address-pool.js';
import { CloudlyckeLoadBalancers } from '../../../../src/providers/cloudlycke/load-balancers.js';
import { InvalidConfigError, RetryableError } from '../../../../src/providers/errors.js';
import type { LoadBalancerRequest } from '../../../../src/providers/types.js';
import { requestService } from '../../../helpers/lb-request.js';

function req(
  name: string,
  over: Partial<LoadBalancerRequest['service']> = {},
  cluster = 'c-1',
): LoadBalancerRequest {
  return {
    name: `a${name}`,
    clusterID: cluster,
    service: requestService({ namespace: 'ns', name, uid: `uid-${name}`, ...over }),
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: [],
  };
}

const pool = (...entries: string[]) => {
  const parsed = AddressPool.parse(entries, 'loadBalancerPool');
  return new CloudlyckeLoadBalancers({ pool: async () => parsed });
};

describe('AddressPool', () => {
  it('a CIDR leaves out network and broadcast, a range is taken whole', () => {
    const p = AddressPool.parse(['192.168.56.240/30', '10.0.0.5-10.0.0.6'], 'x');
    expect(p.size).toBe(4n);
    expect(p.firstFree(() => false)).toBe('192.168.56.241');
    expect(p.firstFree((a) => a.startsWith('192.'))).toBe('10.0.0.5');
    expect(p.normalise('192.168.56.240')).toBeUndefined();
    expect(p.normalise('10.0.0.6')).toBe('10.0.0.6');
  });
  it('IPv6', () => {
    const p = AddressPool.parse(['fd00::10-fd00::11'], 'x');
    expect(p.firstFree((a) => a === 'fd00::10')).toBe('fd00::11');
  });
  it.each([['10.0.0.0/33'], ['10.0.0.9-10.0.0.1'], ['10.0.0.1-fd00::1'], ['nonsense']])(
    'refuses %s in one line',
    (entry) => {
      expect(() => AddressPool.parse([entry], 'inventory i.yaml: loadBalancerPool')).toThrow(
        InvalidConfigError,
      );
      expect(() => AddressPool.parse([entry], 'inventory i.yaml: loadBalancerPool')).toThrow(
        /^inventory i.yaml: loadBalancerPool: .*; use a CIDR/,
      );
    },
  );
});

describe('Cloudlycke load balancers', () => {
  it('one address per Service, never shared, recorded on the Service with its UID and cluster', async () => {
    const lbs = pool('10.0.0.1-10.0.0.3');
    const a = await lbs.ensure(req('a'));
    const b = await lbs.ensure(req('b'));
    expect(a.ingress).toEqual([{ ip: '10.0.0.1', ipMode: 'VIP' }]);
    expect(b.ingress[0]?.ip).toBe('10.0.0.2');
    expect(JSON.parse(a.annotations?.['cloudlycke.ccm.io/allocation'] ?? '')).toEqual({
      ip: '10.0.0.1',
      uid: 'uid-a',
      cluster: 'c-1',
    });
    expect((await lbs.ensure(req('a'))).ingress[0]?.ip).toBe('10.0.0.1');
  });

  it('a new instance (restart, new leader) recovers the allocations from the Services', async () => {
    const first = pool('10.0.0.1-10.0.0.3');
    await first.ensure(req('a'));
    const b = await first.ensure(req('b'));
    const record = b.annotations ?? {};
    const second = pool('10.0.0.1-10.0.0.3');
    second.observe([req('b', { annotations: record })]);
    // a is new to this instance; b keeps 10.0.0.2, so a must not get it
    expect((await second.ensure(req('c'))).ingress[0]?.ip).toBe('10.0.0.1');
    expect((await second.ensure(req('b', { annotations: record }))).ingress[0]?.ip).toBe('10.0.0.2');
  });

  it('ignores a record copied to another Service or from another cluster', async () => {
    const lbs = pool('10.0.0.1-10.0.0.3');
    const copied = JSON.stringify({ ip: '10.0.0.3', uid: 'uid-x', cluster: 'c-1' });
    const foreign = JSON.stringify({ ip: '10.0.0.3', uid: 'uid-y', cluster: 'c-2' });
    lbs.observe([
      req('z', { annotations: { 'cloudlycke.ccm.io/allocation': copied } }),
      req('y', { annotations: { 'cloudlycke.ccm.io/allocation': foreign } }),
    ]);
    expect(await lbs.get(req('z'))).toBeUndefined();
    expect(await lbs.get(req('y'))).toBeUndefined();
  });

  it('a requested address (spec.loadBalancerIP or annotation) must be in the pool and free', async () => {
    const lbs = pool('10.0.0.1-10.0.0.3');
    expect((await lbs.ensure(req('a', { loadBalancerIP: '10.0.0.3' }))).ingress[0]?.ip).toBe('10.0.0.3');
    await expect(
      lbs.ensure(req('b', { annotations: { 'cloudlycke.ccm.io/load-balancer-ip': '10.0.0.3' } })),
    ).rejects.toThrow(
      'address 10.0.0.3 is held by Service ns/a; ask for another address of the pool 10.0.0.1-10.0.0.3',
    );
    await expect(lbs.ensure(req('c', { loadBalancerIP: '192.168.1.1' }))).rejects.toThrow(
      /^spec.loadBalancerIP "192.168.1.1" is not an address of the pool 10.0.0.1-10.0.0.3/,
    );
  });

  it('an exhausted pool is a retryable failure naming the pool; delete releases the address', async () => {
    const lbs = pool('10.0.0.1-10.0.0.1');
    await lbs.ensure(req('a'));
    const err = await lbs.ensure(req('b')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RetryableError);
    expect((err as Error).message).toMatch(/pool 10.0.0.1-10.0.0.1 is exhausted \(1 addresses, all held\)/);
    await lbs.delete(req('a'));
    expect(await lbs.get(req('a'))).toBeUndefined();
    expect((await lbs.ensure(req('b'))).ingress[0]?.ip).toBe('10.0.0.1');
  });

  it('ports map to node ports; backends follow updateNodes', async () => {
    const lbs = pool('10.0.0.1/32');
    await lbs.ensure(req('a'));
    await lbs.updateNodes({
      ...req('a'),
      nodes: [{ name: 'n1', providerID: 'cloudlycke://n1', addresses: [] }],
    });
    expect(lbs.list()).toEqual([
      {
        ip: '10.0.0.1',
        service: 'ns/a',
        ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
        backends: [{ name: 'n1', providerID: 'cloudlycke://n1', addresses: [] }],
      },
    ]);
  });

  it('no pool: one line saying where to set it', async () => {
    const lbs = new CloudlyckeLoadBalancers({ pool: async () => undefined });
    await expect(lbs.ensure(req('a'))).rejects.toThrow(
      /no load balancer address pool is configured; set loadBalancerPool/,
    );
  });
});
