/**
 * `cluster prepare --provider cloudlycke`: the kubelet's --provider-id is the provider ID of the
 * instance `nodes init` would find for the Node — never a guess from the hostname (issue 6, item 4).
 */
import { describe, expect, it } from 'vitest';
import { instanceProviderID } from '../../../src/cli/cluster-prepare.js';
import type { Instance } from '../../../src/providers/types.js';

function instance(
  id: string,
  name: string,
  ips: string[] = [],
  state: Instance['state'] = 'running',
): Instance {
  return {
    providerID: `cloudlycke://${id}`,
    name,
    state,
    type: '',
    region: '',
    zone: '',
    addresses: ips.map((address) => ({ type: 'InternalIP' as const, address })),
    labels: {},
  };
}

describe('instanceProviderID', () => {
  const listing = [
    instance('vm-a', 'cp-1', ['192.168.56.10']),
    instance('vm-b', 'worker-1', ['192.168.56.11']),
    instance('vm-c', 'old', ['192.168.56.12'], 'gone'),
  ];

  it("uses the matching instance's own provider ID (the inventory id), not the Node name", () => {
    expect(instanceProviderID(listing, 'cloudlycke', 'cp-1', [])).toBe('cloudlycke://vm-a');
    expect(instanceProviderID(listing, 'cloudlycke', 'WORKER-1', [])).toBe('cloudlycke://vm-b');
  });

  it("finds a host whose hostname differs from its machine by the kubelet's --node-ip", () => {
    expect(instanceProviderID(listing, 'cloudlycke', 'node-7f3a', ['192.168.56.11'])).toBe(
      'cloudlycke://vm-b',
    );
  });

  it('refuses when neither the name nor the node IP names one live instance', () => {
    expect(() => instanceProviderID(listing, 'cloudlycke', 'k8s-node-1', [])).toThrow(
      /cannot tell which cloudlycke instance this host is \(no instance is named "k8s-node-1"; the kubelet has no --node-ip among 2 listed\); pass --provider-id/,
    );
    // a gone record is no match
    expect(() => instanceProviderID(listing, 'cloudlycke', 'old', ['192.168.56.12'])).toThrow(
      /--provider-id/,
    );
    const twins = [instance('x', 'n', ['10.0.0.1']), instance('y', 'n', ['10.0.0.1'])];
    expect(() => instanceProviderID(twins, 'cloudlycke', 'n', ['10.0.0.1'])).toThrow(
      /several instances are named "n"; several instances have --node-ip 10\.0\.0\.1/,
    );
  });
});
