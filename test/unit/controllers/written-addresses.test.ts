import { describe, expect, it } from 'vitest';
import { WrittenAddresses } from '../../../src/controllers/node-reconcile.js';
import type { NodePlan } from '../../../src/controllers/plan.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';

const cloud = [{ type: 'InternalIP' as const, address: '10.114.0.3' }];
const node = (addresses: { type: string; address: string }[], uid = 'u1') =>
  ({ metadata: { name: 'worker-2', uid }, status: { addresses } }) as unknown as SlimNode;
const plan = (): NodePlan =>
  ({
    name: 'worker-2',
    addresses: cloud,
    changes: ['set addresses InternalIP=10.114.0.3'],
  }) as unknown as NodePlan;

describe('the addresses ccm just wrote', () => {
  it('are not written again while the watch still shows the Node from before the write', () => {
    let now = 0;
    const written = new WrittenAddresses(10_000, () => now);
    written.wrote(node([]), cloud);
    // The taint's removal, seen before the status write: the kubelet's addresses still.
    const p = plan();
    written.dropRepeat(node([{ type: 'Hostname', address: 'worker-2' }]), p);
    expect(p.addresses).toBeUndefined();
    expect(p.changes).toEqual([]);
    // The watch caught up: forgotten, and a later change is written again.
    written.dropRepeat(node(cloud), plan());
    const later = plan();
    now = 1;
    written.dropRepeat(node([{ type: 'Hostname', address: 'worker-2' }]), later);
    expect(later.addresses).toEqual(cloud);
  });

  it('are written again after the lag allowed, or for a new Node of the same name', () => {
    let now = 0;
    const written = new WrittenAddresses(10_000, () => now);
    written.wrote(node([]), cloud);
    const namesake = plan();
    written.dropRepeat(node([], 'u2'), namesake);
    expect(namesake.addresses).toEqual(cloud);
    written.wrote(node([]), cloud);
    now = 10_001;
    const late = plan();
    written.dropRepeat(node([]), late);
    expect(late.addresses).toEqual(cloud);
  });
});
