import { describe, expect, it } from 'vitest';
import {
  AddressMismatchError,
  canonicalIP,
  checkProvidedIPs,
  desiredAddresses,
  providedNodeIPs,
  sameAddresses,
} from '../../../src/controllers/node-addresses.js';
import type { NodeAddress } from '../../../src/providers/types.js';
import { externalIPs, hostname, internalIPs } from '../helpers/addresses.js';
import { makeNode, providedIP } from './fixtures.js';

describe('canonicalIP', () => {
  it('returns an IPv4 address as it is, trimmed', () => {
    expect(canonicalIP('10.0.0.1')).toBe('10.0.0.1');
    expect(canonicalIP(' 192.168.1.20 ')).toBe('192.168.1.20');
  });

  it('gives compressed and expanded IPv6 the same text', () => {
    const compressed = canonicalIP('2001:db8::1');
    expect(compressed).toBe('2001:db8::1');
    expect(canonicalIP('2001:0db8:0000:0000:0000:0000:0000:0001')).toBe(compressed);
    expect(canonicalIP('2001:0db8:0::1')).toBe(compressed);
    expect(canonicalIP('2001:DB8::1')).toBe(compressed);
  });

  it('returns undefined for anything that is not an IP', () => {
    for (const garbage of ['', 'node-1', '10.0.0', '10.0.0.256', '2001:db8:::1', '10.0.0.1/24', 'fe80::g']) {
      expect(canonicalIP(garbage), garbage).toBeUndefined();
    }
  });

  it('returns undefined (does not throw) for an IPv6 address with a zone, which is not a node IP', () => {
    // Go's net.ParseIP (what the reference uses) rejects zones; canonicalIP must not throw on them.
    expect(() => canonicalIP('fe80::1%eth0')).not.toThrow();
    expect(canonicalIP('fe80::1%eth0')).toBeUndefined();
  });
});

describe('providedNodeIPs', () => {
  it('is undefined without the annotation or with an empty one', () => {
    expect(providedNodeIPs(makeNode())).toBeUndefined();
    expect(providedNodeIPs(makeNode({ annotations: providedIP('') }))).toBeUndefined();
    expect(providedNodeIPs(makeNode({ annotations: providedIP('  ') }))).toBeUndefined();
  });

  it('parses one IP', () => {
    expect(providedNodeIPs(makeNode({ annotations: providedIP('10.0.0.11') }))).toEqual(['10.0.0.11']);
  });

  it('parses a dual-stack pair in its order, canonicalising IPv6', () => {
    expect(providedNodeIPs(makeNode({ annotations: providedIP('10.0.0.11,2001:0db8::0011') }))).toEqual([
      '10.0.0.11',
      '2001:db8::11',
    ]);
    expect(providedNodeIPs(makeNode({ annotations: providedIP('2001:db8::11, 10.0.0.11') }))).toEqual([
      '2001:db8::11',
      '10.0.0.11',
    ]);
  });

  it('rejects three IPs', () => {
    const result = providedNodeIPs(makeNode({ annotations: providedIP('10.0.0.1,10.0.0.2,2001:db8::1') }));
    expect(result).toMatchObject({ error: expect.stringContaining('10.0.0.1,10.0.0.2,2001:db8::1') });
  });

  it('rejects garbage, alone or in a pair', () => {
    for (const value of ['node-1', '10.0.0.1,', '10.0.0.1,nonsense', '10.0.0.300']) {
      const result = providedNodeIPs(makeNode({ annotations: providedIP(value) }));
      expect(result, value).toMatchObject({ error: expect.any(String) });
    }
  });

  it('rejects two IPs of the same family: a pair must be dual-stack (reference ParseNodeIPAnnotation)', () => {
    expect(providedNodeIPs(makeNode({ annotations: providedIP('10.0.0.1,10.0.0.2') }))).toMatchObject({
      error: expect.any(String),
    });
    expect(providedNodeIPs(makeNode({ annotations: providedIP('2001:db8::1,2001:db8::2') }))).toMatchObject({
      error: expect.any(String),
    });
  });
});

describe('desiredAddresses', () => {
  const cloud: NodeAddress[] = [...internalIPs('10.0.0.11', '10.0.0.12'), ...externalIPs('203.0.113.5')];

  it('is undefined when the cloud reports no addresses (the Node is left as it is)', () => {
    const node = makeNode({ addresses: [hostname('worker-1')] });
    expect(desiredAddresses(node, [])).toBeUndefined();
  });

  it('returns the cloud addresses, copied, when there is nothing else to do', () => {
    const result = desiredAddresses(makeNode(), cloud);
    expect(result).toEqual(cloud);
    expect(result).not.toBe(cloud);
  });

  it("appends the kubelet's Hostname address when the cloud has none", () => {
    const node = makeNode({
      addresses: [...internalIPs('192.168.99.1'), hostname('worker-1')],
    });
    expect(desiredAddresses(node, cloud)).toEqual([...cloud, { type: 'Hostname', address: 'worker-1' }]);
  });

  it("does not keep the Node's Hostname when the cloud has one", () => {
    const node = makeNode({ addresses: [hostname('worker-1')] });
    const withHostname: NodeAddress[] = [...cloud, { type: 'Hostname', address: 'worker-1.cloud.example' }];
    expect(desiredAddresses(node, withHostname)).toEqual(withHostname);
  });

  it('puts the provided IP first and drops other addresses of the same type', () => {
    const node = makeNode({
      annotations: providedIP('10.0.0.12'),
      addresses: [hostname('worker-1')],
    });
    expect(desiredAddresses(node, cloud)).toEqual([
      ...internalIPs('10.0.0.12'),
      ...externalIPs('203.0.113.5'),
      hostname('worker-1'),
    ]);
  });

  it('matches a provided IPv6 address written differently from the cloud', () => {
    const node = makeNode({ annotations: providedIP('2001:0db8:0:0::0011') });
    const v6cloud: NodeAddress[] = internalIPs('10.0.0.11', '2001:db8::11', '2001:db8::12');
    expect(desiredAddresses(node, v6cloud)).toEqual(internalIPs('2001:db8::11'));
  });

  it('orders a dual-stack pair as the annotation does, each first of its type', () => {
    const dual: NodeAddress[] = [
      ...internalIPs('2001:db8::11', '10.0.0.11', '10.0.0.12'),
      ...externalIPs('203.0.113.5'),
    ];
    const v4first = makeNode({ annotations: providedIP('10.0.0.11,2001:db8::11') });
    expect(desiredAddresses(v4first, dual)).toEqual([
      ...internalIPs('10.0.0.11', '2001:db8::11'),
      ...externalIPs('203.0.113.5'),
    ]);
    const v6first = makeNode({ annotations: providedIP('2001:db8::11,10.0.0.11') });
    expect(desiredAddresses(v6first, dual)).toEqual([
      ...internalIPs('2001:db8::11', '10.0.0.11'),
      ...externalIPs('203.0.113.5'),
    ]);
  });

  it('keeps every address of the other type when the provided IP is external', () => {
    const node = makeNode({ annotations: providedIP('203.0.113.5') });
    expect(desiredAddresses(node, cloud)).toEqual([
      ...externalIPs('203.0.113.5'),
      ...internalIPs('10.0.0.11', '10.0.0.12'),
    ]);
  });

  it('throws AddressMismatchError, one line, when the provided IP is not an address of the instance', () => {
    const node = makeNode({
      annotations: providedIP('10.9.9.9'),
      addresses: [hostname('worker-1')],
    });
    let error: unknown;
    try {
      desiredAddresses(node, cloud);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(AddressMismatchError);
    const message = (error as Error).message;
    expect(message).toContain('10.9.9.9');
    expect(message).toContain('10.0.0.11');
    expect(message).not.toContain('\n');
  });

  it('throws AddressMismatchError for a malformed annotation', () => {
    const node = makeNode({ annotations: providedIP('not-an-ip') });
    expect(() => desiredAddresses(node, cloud)).toThrow(AddressMismatchError);
  });

  it('throws for a dual-stack pair whose second IP the cloud does not have', () => {
    const node = makeNode({ annotations: providedIP('10.0.0.11,2001:db8::99') });
    expect(() => desiredAddresses(node, cloud)).toThrow(AddressMismatchError);
  });
});

describe('sameAddresses', () => {
  const a: NodeAddress = { type: 'InternalIP', address: '10.0.0.11' };
  const b: NodeAddress = { type: 'ExternalIP', address: '203.0.113.5' };

  it('is true for equal lists', () => {
    expect(sameAddresses([a, b], [{ ...a }, { ...b }])).toBe(true);
    expect(sameAddresses([], [])).toBe(true);
  });

  it('compares by type, not by position: another order of the types is the same (issue 6, item 6)', () => {
    expect(sameAddresses([a, b], [b, a])).toBe(true);
    const h: NodeAddress = { type: 'Hostname', address: 'worker-1' };
    expect(sameAddresses([a, b, h], [h, b, a])).toBe(true);
  });

  it('sees a change of the first address of a type (the one the kubelet uses), and of the set', () => {
    const a2: NodeAddress = { type: 'InternalIP', address: '10.0.0.12' };
    expect(sameAddresses([a, a2], [a2, a])).toBe(false);
    expect(sameAddresses([a, a], [a, a2])).toBe(false);
    expect(sameAddresses([a, a2, b], [b, a, a2])).toBe(true);
  });

  it('compares type and address, and length', () => {
    expect(sameAddresses([a], [{ type: 'ExternalIP', address: a.address }])).toBe(false);
    expect(sameAddresses([a], [{ type: a.type, address: '10.0.0.12' }])).toBe(false);
    expect(sameAddresses([a], [a, b])).toBe(false);
    expect(sameAddresses([a, b], [a])).toBe(false);
  });
});

describe('checkProvidedIPs (before initialisation)', () => {
  it('fails when the cloud reports no addresses at all: nothing confirms the provided IP (issue 6, item 5)', () => {
    const node = makeNode({ annotations: providedIP('192.168.56.11') });
    expect(() => checkProvidedIPs(node, [])).toThrow(AddressMismatchError);
    expect(() => checkProvidedIPs(node, [])).toThrow(/the cloud reports none/);
  });

  it('passes when the cloud has the provided IP, and without an annotation', () => {
    const cloud: NodeAddress[] = internalIPs('192.168.56.11');
    expect(() =>
      checkProvidedIPs(makeNode({ annotations: providedIP('192.168.56.11') }), cloud),
    ).not.toThrow();
    expect(() => checkProvidedIPs(makeNode(), [])).not.toThrow();
  });
});
