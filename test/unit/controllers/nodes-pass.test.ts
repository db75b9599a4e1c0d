import { describe, expect, it } from 'vitest';
import { syncedEvent } from '../../../src/controllers/node.js';
import {
  applyPlans,
  buildReport,
  type ClusterState,
  confirmDeletions,
  planNode,
  planPass,
  readState,
  resultOf,
  runNodesPass,
} from '../../../src/controllers/nodes-pass.js';
import { emptyPlan, hasWrites, type NodePlan } from '../../../src/controllers/plan.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';
import { TAINT_SHUTDOWN, TAINT_UNINITIALIZED } from '../../../src/kube/well-known.js';
import {
  InvalidConfigError,
  NotFoundError,
  RetryableError,
  UnauthorizedError,
} from '../../../src/providers/errors.js';
import { InstanceIndex } from '../../../src/providers/instance-index.js';
import type { Instance } from '../../../src/providers/types.js';
import {
  applyPlanToNode,
  FakeNodeClient,
  makeInstance,
  makeNode,
  makeProvider,
  NOW,
  passOptions,
  providedIP,
  shutdownTaintOnNode,
  uninitializedTaint,
} from './fixtures.js';

const options = passOptions(4);

/** A ClusterState as readState builds it (listingKnowsCluster computed the same way). */
function clusterState(nodes: SlimNode[], instances: Instance[], listingError?: string): ClusterState {
  const index = new InstanceIndex(listingError === undefined ? instances : []);
  return {
    nodes,
    index,
    ...(listingError !== undefined ? { listingError } : {}),
    listingKnowsCluster:
      listingError === undefined &&
      nodes.some((n) => Boolean(n.spec?.providerID && index.byProviderID(n.spec.providerID))),
  };
}

const dedicated = { key: 'dedicated', value: 'db', effect: 'NoExecute' };

/** An initialised, Ready Node whose instance (makeInstance()) is listed: the listing knows the cluster. */
const healthy = makeNode({
  name: 'healthy',
  providerID: 'cloudlycke://i-1',
  ready: true,
  addresses: [{ type: 'InternalIP', address: '10.0.0.11' }],
});

function expectNoWrites(plan: NodePlan): void {
  expect(plan.patch).toBeUndefined();
  expect(plan.addresses).toBeUndefined();
  expect(plan.events).toEqual([]);
  expect(plan.deletionCandidate).toBeUndefined();
  expect(plan.deletion).toBeUndefined();
  expect(hasWrites(plan)).toBe(false);
}

/** Plans a node, applies the plan the way the API server would, and plans again. */
function secondPass(node: SlimNode, instances: Instance[]): { first: NodePlan; second: NodePlan } {
  const provider = makeProvider(instances);
  const first = planNode(node, clusterState([node], instances), provider, options);
  const patched = applyPlanToNode(node, first);
  const second = planNode(patched, clusterState([patched], instances), provider, options);
  return { first, second };
}

describe('planNode: whose Nodes', () => {
  const provider = makeProvider();

  it('leaves a Node of another scheme alone entirely', () => {
    const node = makeNode({ providerID: 'digitalocean://12345', taints: [uninitializedTaint] });
    const plan = planNode(node, clusterState([node], [makeInstance()]), provider, options);
    expect(plan.skipped).toContain('digitalocean://12345');
    expectNoWrites(plan);
    expect(plan.changes).toEqual([]);
    expect(plan.error).toBeUndefined();
    expect(resultOf(plan)).toBe('skipped');
  });

  it('says which cloud it is not, with the right article: "an openstack instance", "a cloudlycke instance"', () => {
    const node = makeNode({ providerID: 'digitalocean://12345' });
    const state = clusterState([node], [makeInstance()]);
    expect(planNode(node, state, { ...provider, name: 'openstack' }, options).skipped).toBe(
      'provider ID digitalocean://12345 is not an openstack instance; Node left alone',
    );
    expect(planNode(node, state, { ...provider, name: 'cloudlycke' }, options).skipped).toBe(
      'provider ID digitalocean://12345 is not a cloudlycke instance; Node left alone',
    );
  });

  it('leaves a Node of another scheme alone even when it is NotReady and unlisted (never deleted)', () => {
    const node = makeNode({ providerID: 'aws:///eu-west-1a/i-0abc' });
    const plan = planNode(node, clusterState([node], [makeInstance()]), provider, options);
    expect(plan.skipped).toBeDefined();
    expectNoWrites(plan);
  });

  it('leaves a Node with a garbage provider ID alone', () => {
    for (const providerID of ['i-12345', 'cloudlycke:/i-1', 'cloudlycke://', 'kind://']) {
      const node = makeNode({ providerID, taints: [uninitializedTaint] });
      const plan = planNode(node, clusterState([node], [makeInstance()]), provider, options);
      expect(plan.skipped, providerID).toBeDefined();
      expectNoWrites(plan);
    }
  });
});

describe('planNode: initialisation', () => {
  it('initialises a tainted Node without provider ID by its name, case-insensitively', () => {
    const instance = makeInstance({ name: 'Worker-1', providerID: 'cloudlycke://i-7' });
    const node = makeNode({
      name: 'worker-1',
      taints: [uninitializedTaint, dedicated],
      addresses: [{ type: 'Hostname', address: 'worker-1' }],
    });
    const plan = planNode(node, clusterState([node], [instance]), makeProvider([instance]), options);
    expect(plan.error).toBeUndefined();
    expect(plan.patch).toEqual({
      labels: {
        'node.kubernetes.io/instance-type': 'small',
        'beta.kubernetes.io/instance-type': 'small',
        'topology.kubernetes.io/zone': 'eu-north-a',
        'failure-domain.beta.kubernetes.io/zone': 'eu-north-a',
        'topology.kubernetes.io/region': 'eu-north',
        'failure-domain.beta.kubernetes.io/region': 'eu-north',
      },
      providerID: 'cloudlycke://i-7',
      taints: [dedicated],
    });
    expect(plan.addresses).toEqual([
      { type: 'InternalIP', address: '10.0.0.11' },
      { type: 'Hostname', address: 'worker-1' },
    ]);
    expect(plan.events).toEqual([syncedEvent]);
    expect(plan.deletionCandidate).toBeUndefined();
    expect(resultOf(plan)).toBe('initialized');
  });

  it('initialises a tainted Node with its own provider ID from the instance with that ID', () => {
    const mine = makeInstance({ providerID: 'cloudlycke://i-1', name: 'something-else', type: 'large' });
    const namesake = makeInstance({ providerID: 'cloudlycke://i-2', name: 'worker-1', type: 'tiny' });
    const node = makeNode({ providerID: 'cloudlycke://i-1', taints: [uninitializedTaint], ready: true });
    const plan = planNode(node, clusterState([node], [mine, namesake]), makeProvider(), options);
    expect(plan.patch?.providerID).toBeUndefined();
    expect(plan.patch?.labels?.['node.kubernetes.io/instance-type']).toBe('large');
    expect(plan.patch?.taints).toEqual([]);
  });

  it('fails a tainted Node whose name several instances share, writing nothing', () => {
    const instances = [
      makeInstance({ name: 'worker-1', providerID: 'cloudlycke://i-1' }),
      makeInstance({ name: 'WORKER-1', providerID: 'cloudlycke://i-2' }),
    ];
    const node = makeNode({ taints: [uninitializedTaint] });
    const plan = planNode(node, clusterState([node], instances), makeProvider(instances), options);
    expect(plan.error).toContain('several cloud instances');
    expectNoWrites(plan);
    expect(plan.changes).toEqual([]);
    expect(resultOf(plan)).toBe('failed');
  });

  it('fails a tainted Node whose name no instance has, writing nothing', () => {
    const node = makeNode({ name: 'worker-9', taints: [uninitializedTaint] });
    const plan = planNode(node, clusterState([node], [makeInstance()]), makeProvider(), options);
    expect(plan.error).toContain('worker-9');
    expectNoWrites(plan);
  });

  it('fails a tainted Node with a provider ID that the listing lacks, writing nothing before the grace period', () => {
    const node = makeNode({
      providerID: 'cloudlycke://i-9',
      taints: [uninitializedTaint],
      created: new Date(NOW.getTime() - 1000),
    });
    const plan = planNode(node, clusterState([node], [makeInstance()]), makeProvider(), options);
    expect(plan.error).toContain('cloudlycke://i-9');
    expectNoWrites(plan);
  });

  it('fails a tainted Node when the listing failed, writing nothing', () => {
    for (const providerID of [undefined, 'cloudlycke://i-1']) {
      const node = makeNode({ ...(providerID ? { providerID } : {}), taints: [uninitializedTaint] });
      const plan = planNode(
        node,
        clusterState([node], [], 'cloud listing failed: HTTP 503'),
        makeProvider(),
        options,
      );
      expect(plan.error, String(providerID)).toBe('cloud listing failed: HTTP 503');
      expectNoWrites(plan);
      expect(plan.changes).toEqual([]);
    }
  });

  it('never initialises from an instance in state gone, by name or by provider ID (issue 23, item 5)', () => {
    const gone = makeInstance({ name: 'worker-1', providerID: 'cloudlycke://old', state: 'gone' });
    for (const node of [
      makeNode({ taints: [uninitializedTaint], ready: true }),
      makeNode({ providerID: 'cloudlycke://old', taints: [uninitializedTaint], ready: true }),
    ]) {
      const plan = planNode(node, clusterState([node], [gone]), makeProvider([gone]), options);
      expect(plan.error).toContain('cloudlycke://old');
      expect(plan.error).toContain('gone');
      expectNoWrites(plan);
      expect(resultOf(plan)).toBe('failed');
    }
  });

  it("initialises by name from the live instance when a deleted namesake's record is still listed (issue 23, item 5)", () => {
    const instances = [
      makeInstance({ name: 'worker-1', providerID: 'cloudlycke://old', state: 'gone' }),
      makeInstance({ name: 'worker-1', providerID: 'cloudlycke://new' }),
    ];
    const node = makeNode({ taints: [uninitializedTaint] });
    const plan = planNode(node, clusterState([node], instances), makeProvider(instances), options);
    expect(plan.error).toBeUndefined();
    expect(plan.patch?.providerID).toBe('cloudlycke://new');
  });

  it('keeps the taint and writes nothing when the provided node IP is not an instance address', () => {
    const node = makeNode({ taints: [uninitializedTaint], annotations: providedIP('10.9.9.9') });
    const plan = planNode(node, clusterState([node], [makeInstance()]), makeProvider(), options);
    expect(plan.error).toContain('10.9.9.9');
    expectNoWrites(plan);
    expect(plan.changes).toEqual([]);
  });

  it('does not untaint a Node when neither the Node nor the cloud has a provider ID (reference: error, retry)', () => {
    const instance = makeInstance({ providerID: '' });
    const node = makeNode({ taints: [uninitializedTaint] });
    const plan = planNode(node, clusterState([node], [instance]), makeProvider([instance]), options);
    expect(plan.error).toBeDefined();
    expect(plan.patch?.taints).toBeUndefined();
  });

  it('removes the init taint and adds the shutdown taint in ONE patch', () => {
    const instance = makeInstance({ state: 'stopped' });
    const node = makeNode({
      providerID: 'cloudlycke://i-1',
      taints: [uninitializedTaint, dedicated],
      ready: false,
    });
    const plan = planNode(node, clusterState([node], [instance]), makeProvider([instance]), options);
    expect(plan.error).toBeUndefined();
    expect(plan.patch?.taints).toEqual([dedicated, { key: TAINT_SHUTDOWN, effect: 'NoSchedule' }]);
    expect(plan.patch?.labels).toBeDefined();
    expect(plan.changes).toEqual(
      expect.arrayContaining([
        `remove taint ${TAINT_UNINITIALIZED}`,
        expect.stringContaining(`add taint ${TAINT_SHUTDOWN}`),
      ]),
    );
    expect(plan.events).toEqual([syncedEvent]);
  });
});

describe('planNode: initialised Nodes and lifecycle', () => {
  it('copies beta labels to GA and refreshes addresses of an initialised Node', () => {
    const instance = makeInstance({ addresses: [{ type: 'InternalIP', address: '10.0.0.12' }] });
    const node = makeNode({
      providerID: 'cloudlycke://i-1',
      ready: true,
      labels: { 'beta.kubernetes.io/instance-type': 'large', 'node.kubernetes.io/instance-type': 'small' },
      addresses: [{ type: 'InternalIP', address: '10.0.0.11' }],
    });
    const plan = planNode(node, clusterState([node], [instance]), makeProvider(), options);
    expect(plan.patch).toEqual({ labels: { 'node.kubernetes.io/instance-type': 'large' } });
    expect(plan.addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.12' }]);
    expect(plan.events).toEqual([]);
    expect(resultOf(plan)).toBe('updated');
  });

  it('removes the shutdown taint of a Ready Node', () => {
    const instance = makeInstance();
    const node = makeNode({
      providerID: 'cloudlycke://i-1',
      ready: true,
      taints: [dedicated, shutdownTaintOnNode],
      addresses: [{ type: 'InternalIP', address: '10.0.0.11' }],
    });
    const plan = planNode(node, clusterState([node], [instance]), makeProvider(), options);
    expect(plan.patch).toEqual({ taints: [dedicated] });
  });

  it('makes an unlisted NotReady Node a deletion candidate without planning any write', () => {
    const node = makeNode({ providerID: 'cloudlycke://i-9' });
    const plan = planNode(node, clusterState([healthy, node], [makeInstance()]), makeProvider(), options);
    expect(plan.deletionCandidate).toEqual({ providerID: 'cloudlycke://i-9' });
    expect(plan.deletion).toBeUndefined();
    expect(plan.error).toBeUndefined();
    expect(plan.patch).toBeUndefined();
  });

  it("makes no candidate when the listing holds none of the cluster's instances", () => {
    const node = makeNode({ providerID: 'cloudlycke://i-9' });
    const plan = planNode(node, clusterState([node], [makeInstance()]), makeProvider(), options);
    expect(plan.deletionCandidate).toBeUndefined();
    expect(plan.notes.join(' ')).toContain('none of this cluster');
  });

  it('makes no candidate on an empty listing or a failed one', () => {
    const node = makeNode({ providerID: 'cloudlycke://i-9' });
    const empty = planNode(node, clusterState([node], []), makeProvider(), options);
    expect(empty.deletionCandidate).toBeUndefined();
    expect(empty.notes.join(' ')).toContain('no instances');
    const failed = planNode(
      node,
      clusterState([node], [], 'cloud listing failed: timeout'),
      makeProvider(),
      options,
    );
    expect(failed.deletionCandidate).toBeUndefined();
    expect(failed.error).toBe('cloud listing failed: timeout');
  });

  it('still reconciles labels of an initialised Node when the listing failed, and reports the failure', () => {
    const node = makeNode({
      providerID: 'cloudlycke://i-1',
      labels: { 'failure-domain.beta.kubernetes.io/zone': 'z' },
    });
    const plan = planNode(
      node,
      clusterState([node], [], 'cloud listing failed: timeout'),
      makeProvider(),
      options,
    );
    expect(plan.patch).toEqual({ labels: { 'topology.kubernetes.io/zone': 'z' } });
    expect(plan.addresses).toBeUndefined();
    expect(plan.error).toBe('cloud listing failed: timeout');
  });

  it('does not tie a Node without provider ID to an instance for lifecycle or addresses', () => {
    const instance = makeInstance({
      state: 'stopped',
      addresses: [{ type: 'InternalIP', address: '10.0.0.12' }],
    });
    const node = makeNode({ addresses: [{ type: 'InternalIP', address: '10.0.0.11' }] });
    const plan = planNode(node, clusterState([node], [instance]), makeProvider(), options);
    expectNoWrites(plan);
    expect(resultOf(plan)).toBe('unchanged');
  });
});

describe('planNode: idempotence (a second pass over the patched Node writes nothing)', () => {
  it('after initialising by name', () => {
    const instance = makeInstance({ name: 'WORKER-1', labels: { 'cloudlycke.io/rack': 'r1' } });
    const node = makeNode({
      taints: [uninitializedTaint],
      addresses: [{ type: 'Hostname', address: 'worker-1' }],
    });
    const { first, second } = secondPass(node, [instance]);
    expect(first.patch).toBeDefined();
    expect(second.patch).toBeUndefined();
    expect(second.addresses).toBeUndefined();
    expect(second.events).toEqual([]);
    expect(second.changes).toEqual([]);
    expect(second.error).toBeUndefined();
  });

  it('after initialising with a provided dual-stack IP, a Hostname address, other taints and a shutdown', () => {
    const instance = makeInstance({
      state: 'stopped',
      addresses: [
        { type: 'InternalIP', address: '10.0.0.12' },
        { type: 'InternalIP', address: '10.0.0.11' },
        { type: 'InternalIP', address: '2001:db8::11' },
        { type: 'ExternalIP', address: '203.0.113.5' },
      ],
      labels: { 'cloudlycke.io/rack': 'r1', team: 'cloud' },
    });
    const node = makeNode({
      providerID: 'cloudlycke://i-1',
      taints: [dedicated, uninitializedTaint],
      labels: { team: 'blue' },
      annotations: providedIP('10.0.0.11,2001:0db8::11'),
      addresses: [
        { type: 'InternalIP', address: '10.0.0.11' },
        { type: 'Hostname', address: 'worker-1' },
      ],
    });
    const { first, second } = secondPass(node, [instance]);
    expect(first.patch?.taints).toEqual([dedicated, { key: TAINT_SHUTDOWN, effect: 'NoSchedule' }]);
    expect(first.addresses).toEqual([
      { type: 'InternalIP', address: '10.0.0.11' },
      { type: 'InternalIP', address: '2001:db8::11' },
      { type: 'ExternalIP', address: '203.0.113.5' },
      { type: 'Hostname', address: 'worker-1' },
    ]);
    expect(second.patch).toBeUndefined();
    expect(second.addresses).toBeUndefined();
    expect(second.events).toEqual([]);
    expect(second.changes).toEqual([]);
  });

  it('after removing the shutdown taint of a Ready Node', () => {
    const node = makeNode({ providerID: 'cloudlycke://i-1', ready: true, taints: [shutdownTaintOnNode] });
    const { first, second } = secondPass(node, [makeInstance()]);
    expect(first.patch?.taints).toEqual([]);
    expect(second.patch).toBeUndefined();
    expect(second.addresses).toBeUndefined();
    expect(second.changes).toEqual([]);
  });
});

describe('planPass', () => {
  it('plans every Node, in order', () => {
    const nodes = [makeNode({ name: 'a' }), makeNode({ name: 'b' }), makeNode({ name: 'c' })];
    const plans = planPass(clusterState(nodes, []), makeProvider(), options);
    expect(plans.map((p) => p.name)).toEqual(['a', 'b', 'c']);
  });
});

describe('confirmDeletions', () => {
  function candidate(name: string, providerID: string, extra: Partial<NodePlan> = {}): NodePlan {
    return { ...emptyPlan(name), deletionCandidate: { providerID }, ...extra };
  }

  it('turns a "not found" answer into a deletion and drops every other write', async () => {
    const provider = makeProvider([], async (id) => {
      throw new NotFoundError(`instance ${id} not found`);
    });
    const plan = candidate('n1', 'cloudlycke://i-9', {
      patch: { labels: { 'topology.kubernetes.io/zone': 'z' } },
      addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
      events: [{ ...syncedEvent }],
      changes: ['label topology.kubernetes.io/zone=z'],
    });
    await confirmDeletions([plan], provider, 2);
    expect(provider.getCalls).toEqual(['cloudlycke://i-9']);
    expect(plan.deletion?.reason).toContain('not found');
    expect(plan.patch).toBeUndefined();
    expect(plan.addresses).toBeUndefined();
    expect(plan.events).toEqual([]);
    expect(plan.changes).toEqual([expect.stringContaining('delete Node')]);
    expect(plan.error).toBeUndefined();
    expect(resultOf(plan)).toBe('deleted');
  });

  it('keeps a Node whose instance the lookup returns in any state, even "gone": only NotFoundError deletes (issue 6, item 8)', async () => {
    for (const state of ['running', 'stopped', 'gone'] as const) {
      const provider = makeProvider([makeInstance({ providerID: 'cloudlycke://i-9', state })]);
      const plan = candidate('n1', 'cloudlycke://i-9');
      await confirmDeletions([plan], provider, 1);
      expect(plan.deletion, state).toBeUndefined();
      expect(plan.error).toBeUndefined();
      expect(plan.notes).toEqual([expect.stringContaining(state)]);
      expect(resultOf(plan)).toBe('unchanged');
    }
  });

  it('never deletes on an error of any other kind, and reports it', async () => {
    const errors = [
      new UnauthorizedError('the cloud refused the token (401)'),
      new RetryableError('HTTP 503', 1000),
      new InvalidConfigError('bad region'),
      new Error('socket hang up'),
    ];
    for (const error of errors) {
      const provider = makeProvider([], async () => {
        throw error;
      });
      const plan = candidate('n1', 'cloudlycke://i-9', { patch: { labels: { a: 'b' } } });
      await confirmDeletions([plan], provider, 1);
      expect(plan.deletion, error.name).toBeUndefined();
      expect(plan.error).toContain(error.message);
      expect(plan.error).toContain('not deleted');
      expect(resultOf(plan)).toBe('failed');
    }
  });

  it('asks the cloud exactly once per candidate and never about other Nodes', async () => {
    const provider = makeProvider([], async (id) => {
      throw new NotFoundError(id);
    });
    const plans = [
      candidate('a', 'cloudlycke://i-a'),
      emptyPlan('b'),
      candidate('c', 'cloudlycke://i-c'),
      { ...emptyPlan('d'), skipped: 'foreign' },
      candidate('e', 'cloudlycke://i-e'),
    ];
    await confirmDeletions(plans, provider, 2);
    expect([...provider.getCalls].sort()).toEqual([
      'cloudlycke://i-a',
      'cloudlycke://i-c',
      'cloudlycke://i-e',
    ]);
    expect(provider.listCalls).toBe(0);
    expect(plans.map((p) => Boolean(p.deletion))).toEqual([true, false, true, false, true]);
  });

  it('asks the cloud nothing when there are no candidates', async () => {
    const provider = makeProvider();
    await confirmDeletions([emptyPlan('a'), emptyPlan('b')], provider, 4);
    await confirmDeletions([], provider, 4);
    expect(provider.getCalls).toEqual([]);
  });

  it('reports a tainted Node whose instance is confirmed gone as deleted, not failed', async () => {
    // The instance vanished before the Node was initialised: planNode records an init error AND a
    // deletion candidate; once the cloud confirms "not found", the Node is deleted by applyPlans.
    const node = makeNode({ providerID: 'cloudlycke://i-9', taints: [uninitializedTaint] });
    const state = clusterState([node, healthy], [makeInstance()]);
    const provider = makeProvider([], async (id) => {
      throw new NotFoundError(id);
    });
    const plans = planPass(state, provider, options);
    expect(plans[0]?.deletionCandidate).toBeDefined();
    await confirmDeletions(plans, provider, 1);
    const kube = new FakeNodeClient([node, healthy]);
    const applied = await applyPlans(plans, state, kube, provider, options);
    expect(kube.ops()).toContain('deleteNode');
    const report = buildReport(provider, applied, state, false);
    expect(report.summary.deleted).toBe(1);
    expect(report.summary.failed).toBe(0);
    expect(report.nodes[0]?.result).toBe('deleted');
  });
});

describe('applyPlans', () => {
  function initScenario() {
    const instance = makeInstance();
    const node = makeNode({ taints: [uninitializedTaint], resourceVersion: '100' });
    const state = clusterState([node], [instance]);
    const provider = makeProvider([instance]);
    const plans = planPass(state, provider, options);
    return { instance, node, state, provider, plans };
  }

  /** Applies the plans of initScenario while every `op` call to the API server fails with `error`. */
  async function applyFailing(op: string, error: Error) {
    const { node, state, provider, plans } = initScenario();
    const kube = new FakeNodeClient([node]);
    kube.failWith = (call) => {
      if (call.op === op) throw error;
    };
    const applied = await applyPlans(plans, state, kube, provider, options);
    return { kube, applied };
  }

  it('patches the Node conditionally on its resourceVersion, then status, then records events', async () => {
    const { node, state, provider, plans } = initScenario();
    const kube = new FakeNodeClient([node]);
    const applied = await applyPlans(plans, state, kube, provider, options);
    expect(kube.ops()).toEqual(['patchNode', 'patchNodeStatus', 'createEvent']);
    const [patch, status, event] = kube.calls;
    expect(patch).toMatchObject({
      op: 'patchNode',
      name: 'worker-1',
      body: {
        metadata: { resourceVersion: '100', labels: expect.any(Object) },
        spec: { providerID: 'cloudlycke://i-1', taints: [] },
      },
    });
    expect(status).toEqual({
      op: 'patchNodeStatus',
      name: 'worker-1',
      body: { status: { addresses: [{ type: 'InternalIP', address: '10.0.0.11' }] } },
    });
    expect(event).toMatchObject({
      op: 'createEvent',
      event: { type: 'Normal', reason: 'Synced', component: 'cloud-node-controller' },
    });
    expect(applied[0]?.error).toBeUndefined();
    expect(resultOf(applied[0] as NodePlan)).toBe('initialized');
  });

  it('never overwrites a Node changed since it was read: the precondition fails, it is re-read and re-planned', async () => {
    const { node, state, provider, plans } = initScenario();
    const changedMeanwhile = structuredClone(node);
    changedMeanwhile.metadata = { ...changedMeanwhile.metadata, resourceVersion: '101' };
    changedMeanwhile.spec = {
      ...changedMeanwhile.spec,
      taints: [uninitializedTaint, { key: 'maintenance', effect: 'NoSchedule' }],
    };
    const kube = new FakeNodeClient([changedMeanwhile]);
    const applied = await applyPlans(plans, state, kube, provider, options);
    expect(kube.ops()).toEqual(['patchNode', 'getNode', 'patchNode', 'patchNodeStatus', 'createEvent']);
    const patch = kube.calls[2];
    expect(patch?.op === 'patchNode' && patch.body).toMatchObject({
      metadata: { resourceVersion: '101' },
      spec: { taints: [{ key: 'maintenance', effect: 'NoSchedule' }] },
    });
    expect(applied[0]?.error).toBeUndefined();
  });

  it('gives up after a bounded number of conflicts, failing only that Node', async () => {
    const { kube, applied } = await applyFailing('patchNode', new KubeApiError('conflict', 409));
    const patchCount = kube.ops().filter((op) => op === 'patchNode').length;
    expect(patchCount).toBeGreaterThan(1);
    expect(patchCount).toBeLessThanOrEqual(5);
    expect(kube.ops()).not.toContain('createEvent');
    expect(applied[0]?.error).toContain('conflict');
  });

  it('does not retry on other API errors', async () => {
    const { kube, applied } = await applyFailing(
      'patchNode',
      new KubeApiError('patch node worker-1: forbidden', 403),
    );
    expect(kube.ops()).toEqual(['patchNode']);
    expect(applied[0]?.error).toContain('forbidden');
  });

  it('fails only the Node that vanished after a 409, and applies the others', async () => {
    const instances = [
      makeInstance({ name: 'a', providerID: 'cloudlycke://i-a' }),
      makeInstance({ name: 'b', providerID: 'cloudlycke://i-b' }),
    ];
    const nodes = [
      makeNode({ name: 'a', taints: [uninitializedTaint] }),
      makeNode({ name: 'b', taints: [uninitializedTaint] }),
    ];
    const state = clusterState(nodes, instances);
    const provider = makeProvider(instances);
    const plans = planPass(state, provider, options);
    const kube = new FakeNodeClient([nodes[1] as SlimNode]); // "a" was deleted by someone else
    kube.failWith = (call) => {
      if (call.op === 'patchNodeStatus' && call.name === 'a')
        throw new KubeApiError('patch node a: conflict', 409);
    };
    const applied = await applyPlans(plans, state, kube, provider, { ...options, concurrency: 1 });
    expect(applied.map((p) => p.name)).toEqual(['a', 'b']);
    expect(applied[0]?.error).toBeDefined();
    expect(applied[1]?.error).toBeUndefined();
  });

  it('deletes the evaluated Node after recording DeletingNode', async () => {
    const node = makeNode({
      name: 'gone-1',
      providerID: 'cloudlycke://i-9',
      uid: 'uid-42',
      resourceVersion: '77',
    });
    const state = clusterState([node, healthy], [makeInstance()]);
    const provider = makeProvider([], async (id) => {
      throw new NotFoundError(id);
    });
    const plans = planPass(state, provider, options);
    await confirmDeletions(plans, provider, 1);
    const kube = new FakeNodeClient([node, healthy]);
    const applied = await applyPlans(plans, state, kube, provider, options);
    expect(kube.ops()).toEqual(['createEvent', 'deleteNode']);
    expect(kube.calls[0]).toMatchObject({
      event: { type: 'Normal', reason: 'DeletingNode', component: 'cloud-node-lifecycle-controller' },
    });
    const deleted = kube.calls[1];
    expect(deleted?.op === 'deleteNode' && deleted.node.metadata).toMatchObject({
      name: 'gone-1',
      uid: 'uid-42',
      resourceVersion: '77',
    });
    expect(resultOf(applied[0] as NodePlan)).toBe('deleted');
  });

  it('records DeletingNodeFailed and fails the Node when the delete is refused, without retrying', async () => {
    const node = makeNode({ providerID: 'cloudlycke://i-9' });
    const state = clusterState([node], [makeInstance({ providerID: 'cloudlycke://other', name: 'other' })]);
    const plan: NodePlan = { ...emptyPlan('worker-1'), deletion: { reason: 'gone' } };
    const kube = new FakeNodeClient([node]);
    kube.failWith = (call) => {
      if (call.op === 'deleteNode') throw new KubeApiError('delete node worker-1: forbidden', 403);
    };
    const applied = await applyPlans([plan], state, kube, makeProvider(), options);
    expect(kube.ops()).toEqual(['createEvent', 'deleteNode', 'createEvent']);
    expect(kube.calls[2]).toMatchObject({ event: { type: 'Warning', reason: 'DeletingNodeFailed' } });
    expect(applied[0]?.error).toContain('forbidden');
  });

  it('on a 409 from delete re-reads the Node and deletes it with the new preconditions while it still qualifies', async () => {
    const node = makeNode({ name: 'gone-1', providerID: 'cloudlycke://i-9', resourceVersion: '77' });
    const state = clusterState([node, healthy], [makeInstance()]);
    const provider = makeProvider([], async (id) => {
      throw new NotFoundError(id);
    });
    const plans = planPass(state, provider, options);
    await confirmDeletions(plans, provider, 1);
    const touched = structuredClone(node);
    touched.metadata = { ...touched.metadata, resourceVersion: '78' };
    const kube = new FakeNodeClient([touched, healthy]);
    kube.failWith = (call, n) => {
      if (call.op === 'deleteNode' && n === 1) throw new KubeApiError('delete node gone-1: conflict', 409);
    };
    const applied = await applyPlans(plans, state, kube, provider, options);
    const deletes = kube.calls.filter((c) => c.op === 'deleteNode');
    expect(deletes.map((d) => d.op === 'deleteNode' && d.node.metadata?.resourceVersion)).toEqual([
      '77',
      '78',
    ]);
    expect(resultOf(applied[0] as NodePlan)).toBe('deleted');
  });

  it('does not let a failed event block the change itself', async () => {
    const { kube, applied } = await applyFailing(
      'createEvent',
      new KubeApiError('create event: forbidden', 403),
    );
    expect(kube.ops()).toEqual(['patchNode', 'patchNodeStatus', 'createEvent']);
    expect(applied[0]?.error).toBeUndefined();
    expect(applied[0]?.notes.join()).toContain('event Synced not recorded');
  });

  it('sends nothing for a plan with an error and no writes, or with nothing to do', async () => {
    const node = makeNode({ taints: [uninitializedTaint] });
    const state = clusterState([node, makeNode({ name: 'idle' })], [], 'cloud listing failed: HTTP 500');
    const plans = planPass(state, makeProvider(), options);
    expect(plans[0]?.error).toBeDefined();
    const kube = new FakeNodeClient(state.nodes);
    await applyPlans(plans, state, kube, makeProvider(), options);
    expect(kube.calls).toEqual([]);
  });

  it('reports progress once per Node', async () => {
    const nodes = [makeNode({ name: 'a' }), makeNode({ name: 'b' })];
    const state = clusterState(nodes, []);
    const plans = planPass(state, makeProvider(), options);
    const seen: [number, number][] = [];
    await applyPlans(plans, state, new FakeNodeClient(nodes), makeProvider(), options, (done, total) =>
      seen.push([done, total]),
    );
    expect(seen).toEqual([
      [1, 2],
      [2, 2],
    ]);
  });
});

describe('resultOf and buildReport', () => {
  const plans: NodePlan[] = [
    { ...emptyPlan('skipped'), skipped: 'foreign provider ID' },
    { ...emptyPlan('failed'), error: 'boom', notes: ['a note'] },
    { ...emptyPlan('deleted'), deletion: { reason: 'gone' }, changes: ['delete Node (gone)'] },
    { ...emptyPlan('initialized'), events: [{ ...syncedEvent }], patch: { taints: [] } },
    { ...emptyPlan('updated-patch'), patch: { labels: { a: 'b' } } },
    { ...emptyPlan('updated-addresses'), addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
    emptyPlan('unchanged'),
  ];

  it('classifies each plan', () => {
    expect(plans.map(resultOf)).toEqual([
      'skipped',
      'failed',
      'deleted',
      'initialized',
      'updated',
      'updated',
      'unchanged',
    ]);
  });

  it('puts skipped before failed', () => {
    expect(resultOf({ ...emptyPlan('x'), skipped: 's', error: 'e' })).toBe('skipped');
  });

  it('counts results, carries reasons and notes, the provider and the listing', () => {
    const state: ClusterState = {
      nodes: [],
      index: new InstanceIndex([makeInstance(), makeInstance({ providerID: 'cloudlycke://i-2' })]),
      listingError: 'cloud listing failed: x',
      listingKnowsCluster: false,
    };
    const report = buildReport(makeProvider(), plans, state, true);
    expect(report.provider).toBe('cloudlycke');
    expect(report.dryRun).toBe(true);
    expect(report.cloudInstances).toBe(2);
    expect(report.listingError).toBe('cloud listing failed: x');
    expect(report.summary).toEqual({
      total: 7,
      initialized: 1,
      updated: 2,
      deleted: 1,
      held: 0,
      waiting: 0,
      unchanged: 1,
      skipped: 1,
      unknown: 0,
      failed: 1,
    });
    expect(report.nodes[0]).toEqual({
      name: 'skipped',
      result: 'skipped',
      changes: [],
      reason: 'foreign provider ID',
    });
    expect(report.nodes[1]).toEqual({
      name: 'failed',
      result: 'failed',
      changes: [],
      reason: 'boom',
      notes: ['a note'],
    });
    expect(report.nodes[6]).toEqual({ name: 'unchanged', result: 'unchanged', changes: [] });
  });

  it('reports a Node the failed listing left uncompared as unknown, in the words of nodes list', () => {
    const listingError = 'cloud listing failed: timed out';
    const state: ClusterState = { ...clusterState([], []), listingError };
    const report = buildReport(
      makeProvider(),
      [
        { ...emptyPlan('waits'), error: listingError },
        { ...emptyPlan('own'), error: 'no instance named own' },
      ],
      state,
      false,
    );
    expect(report.nodes.map((n) => [n.name, n.result, n.reason])).toEqual([
      ['waits', 'unknown', 'the cloud listing failed, so this Node was not compared with its instance'],
      ['own', 'failed', 'no instance named own'],
    ]);
    expect(report.summary).toMatchObject({ unknown: 1, failed: 1 });
    expect(report.listingError).toBe(listingError);
  });

  it('has no listingError key when the listing succeeded', () => {
    const report = buildReport(makeProvider(), [], clusterState([], []), false);
    expect(report).not.toHaveProperty('listingError');
    expect(report.summary.total).toBe(0);
  });
});

describe('readState and runNodesPass', () => {
  it('turns a transient listing failure into listingError and keeps the Nodes', async () => {
    const provider = makeProvider();
    provider.instances.list = async () => {
      throw new RetryableError('HTTP 503 from the cloud');
    };
    const kube = new FakeNodeClient([makeNode()]);
    const state = await readState(kube, provider);
    expect(state.nodes).toHaveLength(1);
    expect(state.index.size).toBe(0);
    expect(state.listingError).toContain('HTTP 503 from the cloud');
  });

  it('counts only running or stopped instances as knowing the cluster, never a "gone" record (issue 6, item 4)', async () => {
    const node = makeNode({ providerID: 'cloudlycke://i-1' });
    const gone = await readState(new FakeNodeClient([node]), makeProvider([makeInstance({ state: 'gone' })]));
    expect(gone.listingKnowsCluster).toBe(false);
    for (const state of ['running', 'stopped'] as const) {
      const live = await readState(new FakeNodeClient([node]), makeProvider([makeInstance({ state })]));
      expect(live.listingKnowsCluster, state).toBe(true);
    }
  });

  it('aborts on credential and configuration errors', async () => {
    for (const error of [new UnauthorizedError('401'), new InvalidConfigError('bad')]) {
      const provider = makeProvider();
      provider.instances.list = async () => {
        throw error;
      };
      await expect(readState(new FakeNodeClient([]), provider)).rejects.toBe(error);
    }
  });

  it('writes nothing in a dry run, and nothing on a second pass over an unchanged cluster', async () => {
    const instances = [
      makeInstance({ name: 'a', providerID: 'cloudlycke://i-a' }),
      makeInstance({ name: 'b', providerID: 'cloudlycke://i-b', state: 'stopped' }),
    ];
    const kube = new FakeNodeClient([
      makeNode({ name: 'a', taints: [uninitializedTaint], ready: true }),
      makeNode({ name: 'b', providerID: 'cloudlycke://i-b', taints: [uninitializedTaint] }),
      makeNode({ name: 'foreign', providerID: 'digitalocean://1' }),
    ]);
    const provider = makeProvider(instances);
    const dry = await runNodesPass(kube, provider, { ...options, dryRun: true });
    expect(kube.writes).toBe(0);
    expect(dry.summary).toMatchObject({ initialized: 2, skipped: 1 });

    const first = await runNodesPass(kube, provider, options);
    expect(first.summary).toMatchObject({ initialized: 2, skipped: 1, failed: 0 });
    const writesAfterFirst = kube.writes;
    expect(writesAfterFirst).toBeGreaterThan(0);

    const second = await runNodesPass(kube, provider, options);
    expect(kube.writes).toBe(writesAfterFirst);
    expect(second.summary).toMatchObject({ unchanged: 2, skipped: 1, failed: 0 });
  });
});

describe('planNode: an initialised Node with a provided node IP the instance lacks (issue 6, item 6)', () => {
  it('keeps reconciling its labels, writes no addresses and reports the problem as a note', () => {
    const node = makeNode({
      providerID: 'cloudlycke://i-1',
      labels: { 'failure-domain.beta.kubernetes.io/zone': 'z' },
      annotations: providedIP('10.9.9.9'),
      addresses: [{ type: 'InternalIP', address: '10.9.9.9' }],
    });
    const plan = planNode(node, clusterState([node], [makeInstance()]), makeProvider(), options);
    expect(plan.patch).toEqual({ labels: { 'topology.kubernetes.io/zone': 'z' } });
    expect(plan.addresses).toBeUndefined();
    expect(plan.error).toBeUndefined();
    expect(plan.notes.join(' ')).toContain('10.9.9.9');
    expect(resultOf(plan)).toBe('updated');
  });
});
