import { describe, expect, it } from 'vitest';
import {
  AddressMismatchError,
  isUninitialized,
  planInitialization,
  planInitializedNode,
  syncedEvent,
} from '../../../src/controllers/node.js';
import { TAINT_UNINITIALIZED } from '../../../src/kube/well-known.js';
import { makeInstance, makeNode, providedIP, uninitializedTaint } from './fixtures.js';

// Each label pair, GA then beta, written out (not imported from src) so that a misspelt name fails here.
const [GA_TYPE, BETA_TYPE] = ['node.kubernetes.io/instance-type', 'beta.kubernetes.io/instance-type'];
const [GA_ZONE, BETA_ZONE] = ['topology.kubernetes.io/zone', 'failure-domain.beta.kubernetes.io/zone'];
const [GA_REGION, BETA_REGION] = [
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/region',
];

describe('isUninitialized', () => {
  it('is true only with the uninitialized taint', () => {
    expect(isUninitialized(makeNode({ taints: [uninitializedTaint] }))).toBe(true);
    expect(isUninitialized(makeNode({ taints: [{ key: 'other', effect: 'NoSchedule' }] }))).toBe(false);
    expect(isUninitialized(makeNode())).toBe(false);
  });
});

describe('planInitialization', () => {
  it('sets the provider ID when the Node has none', () => {
    const sync = planInitialization(makeNode({ taints: [uninitializedTaint] }), makeInstance());
    expect(sync.providerID).toBe('cloudlycke://i-1');
    expect(sync.initialized).toBe(true);
    expect(sync.changes).toContain('set providerID cloudlycke://i-1');
  });

  it('treats an empty provider ID as none', () => {
    const sync = planInitialization(
      makeNode({ providerID: '', taints: [uninitializedTaint] }),
      makeInstance(),
    );
    expect(sync.providerID).toBe('cloudlycke://i-1');
  });

  it('never changes an existing provider ID', () => {
    const node = makeNode({ providerID: 'cloudlycke://i-1', taints: [uninitializedTaint] });
    const sync = planInitialization(node, makeInstance({ providerID: 'cloudlycke://i-other' }));
    expect(sync.providerID).toBeUndefined();
    expect(sync.changes.join('\n')).not.toContain('providerID');
  });

  it('sets both labels of each pair for non-empty type, zone and region', () => {
    const sync = planInitialization(makeNode({ taints: [uninitializedTaint] }), makeInstance());
    expect(sync.labels).toEqual({
      [GA_TYPE]: 'small',
      [BETA_TYPE]: 'small',
      [GA_ZONE]: 'eu-north-a',
      [BETA_ZONE]: 'eu-north-a',
      [GA_REGION]: 'eu-north',
      [BETA_REGION]: 'eu-north',
    });
  });

  it('sets no label of a pair whose value is empty', () => {
    const sync = planInitialization(
      makeNode({ taints: [uninitializedTaint] }),
      makeInstance({ type: '', zone: '', region: 'eu-north' }),
    );
    expect(sync.labels).toEqual({ [GA_REGION]: 'eu-north', [BETA_REGION]: 'eu-north' });
  });

  it('leaves out labels that already have the value, and corrects those that differ', () => {
    const node = makeNode({
      taints: [uninitializedTaint],
      labels: { [GA_TYPE]: 'small', [BETA_TYPE]: 'small', [GA_ZONE]: 'stale', [BETA_ZONE]: 'eu-north-a' },
    });
    const sync = planInitialization(node, makeInstance({ region: '' }));
    expect(sync.labels).toEqual({ [GA_ZONE]: 'eu-north-a' });
  });

  it('adds additional labels, never overwriting an existing key', () => {
    const node = makeNode({ taints: [uninitializedTaint], labels: { team: 'blue' } });
    const sync = planInitialization(
      node,
      makeInstance({ type: '', zone: '', region: '', labels: { team: 'red', 'cloudlycke.io/rack': 'r7' } }),
    );
    expect(sync.labels).toEqual({ 'cloudlycke.io/rack': 'r7' });
  });

  it('never uses the kubernetes.io or k8s.io domains (including subdomains) for additional labels', () => {
    const sync = planInitialization(
      makeNode({ taints: [uninitializedTaint] }),
      makeInstance({
        type: '',
        zone: '',
        region: '',
        labels: {
          'kubernetes.io/hostname': 'evil',
          'node.kubernetes.io/exclude-from-external-load-balancers': 'true',
          'node-role.kubernetes.io/control-plane': '',
          'k8s.io/x': '1',
          'sub.k8s.io/y': '2',
          'example.com/kubernetes.io': 'ok-value-path',
          'notkubernetes.io/z': 'ok',
          plain: 'ok',
        },
      }),
    );
    expect(sync.labels).toEqual({
      'example.com/kubernetes.io': 'ok-value-path',
      'notkubernetes.io/z': 'ok',
      plain: 'ok',
    });
  });

  it('removes every uninitialized taint and keeps the others', () => {
    const other = { key: 'dedicated', value: 'db', effect: 'NoExecute' };
    const node = makeNode({
      taints: [uninitializedTaint, other, { key: TAINT_UNINITIALIZED, effect: 'NoExecute' }],
    });
    const sync = planInitialization(node, makeInstance());
    expect(sync.taints).toEqual([other]);
    expect(sync.changes).toContain(`remove taint ${TAINT_UNINITIALIZED}`);
  });

  it('plans the addresses when they differ and not when they are the same', () => {
    const instance = makeInstance();
    const differs = planInitialization(makeNode({ taints: [uninitializedTaint] }), instance);
    expect(differs.addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.11' }]);
    const same = planInitialization(
      makeNode({ taints: [uninitializedTaint], addresses: [{ type: 'InternalIP', address: '10.0.0.11' }] }),
      instance,
    );
    expect(same.addresses).toBeUndefined();
  });

  it('plans no addresses when the cloud has none', () => {
    const sync = planInitialization(
      makeNode({ taints: [uninitializedTaint] }),
      makeInstance({ addresses: [] }),
    );
    expect(sync.addresses).toBeUndefined();
  });

  it('throws AddressMismatchError when the provided node IP is not an instance address', () => {
    const node = makeNode({ taints: [uninitializedTaint], annotations: providedIP('10.9.9.9') });
    expect(() => planInitialization(node, makeInstance())).toThrow(AddressMismatchError);
  });

  it('keeps the taint when a provided node IP meets a cloud with no addresses (issue 6, item 5)', () => {
    const node = makeNode({ taints: [uninitializedTaint], annotations: providedIP('192.168.56.11') });
    expect(() => planInitialization(node, makeInstance({ addresses: [] }))).toThrow(AddressMismatchError);
  });

  it('does not mutate the Node', () => {
    const node = makeNode({ taints: [uninitializedTaint], labels: { a: 'b' } });
    const before = structuredClone(node);
    planInitialization(node, makeInstance({ labels: { c: 'd' } }));
    expect(node).toEqual(before);
  });
});

describe('planInitializedNode', () => {
  it('copies a beta label to its GA twin when they differ', () => {
    const node = makeNode({
      labels: {
        [BETA_TYPE]: 'large',
        [GA_TYPE]: 'small',
        [BETA_ZONE]: 'z1',
        [BETA_REGION]: 'r1',
        [GA_REGION]: 'r1',
      },
    });
    const sync = planInitializedNode(node, undefined);
    expect(sync.labels).toEqual({ [GA_TYPE]: 'large', [GA_ZONE]: 'z1' });
    expect(sync.initialized).toBe(false);
  });

  it('copies nothing when no beta label exists, even if a GA label does', () => {
    const node = makeNode({ labels: { [GA_TYPE]: 'small', [GA_ZONE]: 'z1' } });
    const sync = planInitializedNode(node, undefined);
    expect(sync.labels).toEqual({});
    expect(sync.changes).toEqual([]);
  });

  it('copies an empty beta value too when the GA label is missing', () => {
    const sync = planInitializedNode(makeNode({ labels: { [BETA_ZONE]: '' } }), undefined);
    expect(sync.labels).toEqual({ [GA_ZONE]: '' });
  });

  it('refreshes addresses only when they changed', () => {
    const instance = makeInstance({
      addresses: [
        { type: 'InternalIP', address: '10.0.0.11' },
        { type: 'ExternalIP', address: '203.0.113.5' },
      ],
    });
    const hostname = { type: 'Hostname', address: 'worker-1' };
    const stale = makeNode({ addresses: [{ type: 'InternalIP', address: '10.0.0.99' }, hostname] });
    const changed = planInitializedNode(stale, instance);
    expect(changed.addresses).toEqual([...instance.addresses, hostname]);
    expect(changed.changes).toHaveLength(1);

    const current = makeNode({ addresses: [...instance.addresses, hostname] });
    const unchanged = planInitializedNode(current, instance);
    expect(unchanged.addresses).toBeUndefined();
    expect(unchanged.changes).toEqual([]);
  });

  it('plans no addresses without an instance or when the cloud has none', () => {
    const node = makeNode({ addresses: [{ type: 'InternalIP', address: '10.0.0.99' }] });
    expect(planInitializedNode(node, undefined).addresses).toBeUndefined();
    expect(planInitializedNode(node, makeInstance({ addresses: [] })).addresses).toBeUndefined();
  });

  it('still copies labels when the provided node IP is not an instance address, and reports the address problem (issue 6, item 6)', () => {
    const node = makeNode({
      labels: { [BETA_ZONE]: 'z1' },
      annotations: providedIP('10.9.9.9'),
      addresses: [{ type: 'InternalIP', address: '10.9.9.9' }],
    });
    const sync = planInitializedNode(node, makeInstance());
    expect(sync.labels).toEqual({ [GA_ZONE]: 'z1' });
    expect(sync.addresses).toBeUndefined();
    expect(sync.addressProblem).toMatch(/10\.9\.9\.9.*--node-ip/);
  });

  it('writes no addresses when the cloud lists the same ones in another order (issue 6, item 6)', () => {
    const instance = makeInstance({
      addresses: [
        { type: 'ExternalIP', address: '203.0.113.5' },
        { type: 'InternalIP', address: '10.0.0.11' },
      ],
    });
    const node = makeNode({
      addresses: [
        { type: 'InternalIP', address: '10.0.0.11' },
        { type: 'ExternalIP', address: '203.0.113.5' },
        { type: 'Hostname', address: 'worker-1' },
      ],
    });
    const sync = planInitializedNode(node, instance);
    expect(sync.addresses).toBeUndefined();
    expect(sync.changes).toEqual([]);
  });

  it('never plans a provider ID or taints', () => {
    const sync = planInitializedNode(makeNode(), makeInstance());
    expect(sync.providerID).toBeUndefined();
    expect(sync.taints).toBeUndefined();
  });
});

describe('syncedEvent', () => {
  it('is the reference Normal/Synced event of the cloud node controller', () => {
    expect(syncedEvent).toMatchObject({
      type: 'Normal',
      reason: 'Synced',
      component: 'cloud-node-controller',
    });
  });
});
