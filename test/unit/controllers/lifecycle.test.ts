import { describe, expect, it } from 'vitest';
import {
  hasShutdownTaint,
  isExcluded,
  isReady,
  type LifecycleInput,
  planLifecycle,
  shutdownTaint,
} from '../../../src/controllers/lifecycle.js';
import { LABEL_EXCLUDE_FROM_LIFECYCLE, TAINT_SHUTDOWN } from '../../../src/kube/well-known.js';
import {
  GRACE_MS,
  LONG_AGO,
  makeInstance,
  makeNode,
  NOW,
  type NodeOptions,
  shutdownTaintOnNode,
} from './fixtures.js';

const PID = 'cloudlycke://i-1';

function input(overrides: Partial<LifecycleInput> = {}): LifecycleInput {
  return {
    instance: undefined,
    listingOk: true,
    listingSize: 3,
    listingKnowsCluster: true,
    now: NOW,
    deletionGracePeriodMs: GRACE_MS,
    ...overrides,
  };
}

function node(options: NodeOptions = {}) {
  return makeNode({ providerID: PID, ...options });
}

describe('isExcluded', () => {
  const withLabel = (value: string) => makeNode({ labels: { [LABEL_EXCLUDE_FROM_LIFECYCLE]: value } });

  it('is false without the label', () => {
    expect(isExcluded(makeNode())).toBe(false);
  });

  it('is true for "true" and for any value that is not "false"', () => {
    for (const value of ['true', 'TRUE', 'yes', '1', 'anything'])
      expect(isExcluded(withLabel(value)), value).toBe(true);
  });

  it('is false for "false" in any case', () => {
    expect(isExcluded(withLabel('false'))).toBe(false);
    expect(isExcluded(withLabel('False'))).toBe(false);
  });
});

describe('isReady / hasShutdownTaint', () => {
  it('reads the Ready condition', () => {
    expect(isReady(makeNode({ ready: true }))).toBe(true);
    expect(isReady(makeNode({ ready: false }))).toBe(false);
    expect(isReady(makeNode({ ready: 'missing' }))).toBe(false);
  });

  it('finds the shutdown taint by key', () => {
    expect(hasShutdownTaint(makeNode({ taints: [{ key: TAINT_SHUTDOWN, effect: 'NoExecute' }] }))).toBe(true);
    expect(hasShutdownTaint(makeNode())).toBe(false);
  });

  it('plans the shutdown taint with effect NoSchedule', () => {
    expect(shutdownTaint).toEqual({ key: TAINT_SHUTDOWN, effect: 'NoSchedule' });
  });
});

describe('planLifecycle', () => {
  it('does nothing to an excluded Node, whatever the cloud says, and says why', () => {
    const excluded = node({ labels: { [LABEL_EXCLUDE_FROM_LIFECYCLE]: 'true' } });
    const gone = planLifecycle(excluded, input());
    expect(gone).toMatchObject({
      action: 'none',
      note: expect.stringContaining(LABEL_EXCLUDE_FROM_LIFECYCLE),
    });
    expect(planLifecycle(excluded, input({ instance: makeInstance({ state: 'stopped' }) })).action).toBe(
      'none',
    );
  });

  it('manages a Node whose exclude label is "false"', () => {
    const notExcluded = node({ labels: { [LABEL_EXCLUDE_FROM_LIFECYCLE]: 'false' } });
    expect(planLifecycle(notExcluded, input()).action).toBe('deletion-candidate');
  });

  it('removes the shutdown taint from a Ready Node only when it is there', () => {
    expect(planLifecycle(node({ ready: true, taints: [shutdownTaintOnNode] }), input())).toEqual({
      action: 'remove-shutdown-taint',
    });
    expect(planLifecycle(node({ ready: true }), input())).toEqual({ action: 'none' });
  });

  it('never makes a Ready Node a deletion candidate, even when the listing lacks it', () => {
    expect(planLifecycle(node({ ready: true }), input({ instance: undefined })).action).toBe('none');
  });

  it('adds the shutdown taint to a NotReady Node whose instance is stopped, once', () => {
    const stopped = makeInstance({ state: 'stopped' });
    expect(planLifecycle(node(), input({ instance: stopped }))).toEqual({ action: 'add-shutdown-taint' });
    expect(planLifecycle(node({ taints: [shutdownTaintOnNode] }), input({ instance: stopped }))).toEqual({
      action: 'none',
    });
  });

  it('treats a Node without a Ready condition as not ready', () => {
    const stopped = makeInstance({ state: 'stopped' });
    expect(planLifecycle(node({ ready: 'missing' }), input({ instance: stopped })).action).toBe(
      'add-shutdown-taint',
    );
  });

  it('does nothing to a NotReady Node whose instance is running', () => {
    expect(planLifecycle(node(), input({ instance: makeInstance({ state: 'running' }) }))).toEqual({
      action: 'none',
    });
  });

  it('does nothing to a Node without a provider ID', () => {
    expect(planLifecycle(makeNode(), input()).action).toBe('none');
    expect(planLifecycle(makeNode({ providerID: '' }), input()).action).toBe('none');
  });

  it('concludes nothing from a failed listing, even one that seemed to know the cluster', () => {
    // Every other rule would let this Node through (issue 6, item 7): only listingOk stands in the way.
    expect(planLifecycle(node(), input()).action).toBe('deletion-candidate');
    expect(
      planLifecycle(node(), input({ listingOk: false, listingSize: 3, listingKnowsCluster: true })).action,
    ).toBe('none');
    expect(
      planLifecycle(node(), input({ listingOk: false, instance: makeInstance({ state: 'stopped' }) })).action,
    ).toBe('none');
  });

  it('deletes nothing on an empty listing, and says so', () => {
    // listingKnowsCluster left true so that the empty-listing rule alone keeps the Node.
    const decision = planLifecycle(node(), input({ listingSize: 0, listingKnowsCluster: true }));
    expect(decision).toMatchObject({ action: 'none', note: expect.stringContaining('no instances') });
  });

  it("deletes nothing when the listing holds none of the cluster's instances, and says so", () => {
    const decision = planLifecycle(node(), input({ listingKnowsCluster: false }));
    expect(decision).toMatchObject({ action: 'none', note: expect.stringContaining('none of this cluster') });
  });

  it('still taints a stopped instance when the listing knows the cluster only through it', () => {
    const stopped = makeInstance({ state: 'stopped' });
    expect(planLifecycle(node(), input({ instance: stopped, listingKnowsCluster: true })).action).toBe(
      'add-shutdown-taint',
    );
  });

  it('keeps a Node inside its deletion grace period, with a note', () => {
    const created = new Date(NOW.getTime() - GRACE_MS + 1000);
    const decision = planLifecycle(node({ created }), input());
    expect(decision.action).toBe('none');
    expect(decision).toMatchObject({
      note: expect.stringContaining(new Date(created.getTime() + GRACE_MS).toISOString()),
    });
  });

  it('never deletes a Node without a creationTimestamp', () => {
    const decision = planLifecycle(node({ created: null }), input());
    expect(decision).toMatchObject({ action: 'none', note: expect.any(String) });
  });

  it('makes an unlisted, NotReady, old enough Node a deletion candidate by its own provider ID', () => {
    expect(planLifecycle(node({ created: LONG_AGO }), input())).toEqual({
      action: 'deletion-candidate',
      providerID: PID,
    });
    const justOld = new Date(NOW.getTime() - GRACE_MS);
    expect(planLifecycle(node({ created: justOld }), input()).action).toBe('deletion-candidate');
  });

  it('makes a Node whose listed instance is "gone" only a candidate, never a deletion', () => {
    expect(planLifecycle(node(), input({ instance: makeInstance({ state: 'gone' }) }))).toEqual({
      action: 'deletion-candidate',
      providerID: PID,
    });
  });
});
