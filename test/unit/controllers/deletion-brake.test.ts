/**
 * The deletion brake's decision (src/controllers/deletion-brake.ts), edge by edge: a single Node, two,
 * exactly at the ratio, the window's end, the rate's spacing, a release, unreadable deletions, and
 * which Nodes one listing counts as missing.
 */
import { describe, expect, it } from 'vitest';
import { viewOf } from '../../../src/controllers/cloud-view.js';
import {
  type BrakeInput,
  type BrakeNode,
  brakeVerdict,
  DEFAULT_BRAKE_OPTIONS,
  holdId,
  managedNodes,
  type RecentDeletion,
  rateAllowance,
  waitingReason,
} from '../../../src/controllers/deletion-brake.js';
import { LABEL_EXCLUDE_FROM_LIFECYCLE } from '../../../src/kube/well-known.js';
import { GRACE_MS, makeInstance, makeNode, NOW } from './fixtures.js';

const T = NOW.getTime();
const MIN = 60_000;

const nodes = (n: number, prefix = 'n'): BrakeNode[] =>
  Array.from({ length: n }, (_, i) => ({
    name: `${prefix}${i}`,
    uid: `uid-${prefix}${i}`,
    providerID: `cloudlycke://${prefix}${i}`,
  }));

function verdict(managed: number, missing: number, overrides: Partial<BrakeInput> = {}) {
  const all = nodes(managed);
  return brakeVerdict({
    managed: all,
    missing: all.slice(0, missing),
    deletions: [],
    now: T,
    options: DEFAULT_BRAKE_OPTIONS,
    ...overrides,
  });
}

/** Deletions of other (already gone) Nodes, `agoMs` before now. */
const deleted = (...agoMs: number[]): RecentDeletion[] =>
  agoMs.map((ago, i) => ({ uid: `gone-${i}`, name: `gone-${i}`, at: T - ago }));

describe('the share', () => {
  it('never holds a single Node alone, whatever its share', () => {
    expect(verdict(1, 1).held).toBeUndefined();
    expect(verdict(2, 1).held).toBeUndefined();
  });

  it('holds two Nodes of two, and one of two when the other was just deleted', () => {
    expect(verdict(2, 2).held).toMatch(/^the instances of 2 of 2 Nodes \(100%\) are missing/);
    // The other Node is gone already: its deletion counts, in the share and in the whole.
    const v = verdict(1, 1, { deletions: deleted(MIN) });
    expect(v).toMatchObject({ affected: 2, total: 2 });
    expect(v.held).toContain('with 1 deleted in the last 10m');
  });

  it('holds above the ratio only, not at it', () => {
    // 11 of 20 = 0.55 exactly: not more than --max-deletion-ratio.
    expect(verdict(20, 11).held).toBeUndefined();
    expect(verdict(20, 12).held).toMatch(/12 of 20 Nodes \(60%\).*above --max-deletion-ratio 0\.55$/);
    expect(verdict(100, 55).held).toBeUndefined();
    expect(verdict(100, 56).held).toBeDefined();
    const options = { ...DEFAULT_BRAKE_OPTIONS, maxRatio: 0.3 };
    expect(verdict(10, 3, { options }).held).toBeUndefined();
    expect(verdict(10, 4, { options }).held).toBeDefined();
  });

  it('counts the deletions of the window, and forgets them when it ends', () => {
    // 4 deleted out of 10, then 2 of the other 6 lost: 6 of 10.
    const recent = deleted(MIN, 2 * MIN, 9 * MIN, 9.5 * MIN);
    expect(verdict(6, 2, { deletions: recent })).toMatchObject({ affected: 6, total: 10 });
    expect(verdict(6, 2, { deletions: recent }).held).toBeDefined();
    // A minute later the two oldest are out of the window: 4 of 8.
    const later = recent.map((d) => ({ ...d, at: d.at - MIN }));
    expect(verdict(6, 2, { deletions: later })).toMatchObject({ affected: 4, total: 8 });
    expect(verdict(6, 2, { deletions: later }).held).toBeUndefined();
    const gone = recent.map((d) => ({ ...d, at: d.at - 10 * MIN }));
    expect(verdict(6, 2, { deletions: gone })).toMatchObject({ affected: 2, total: 6, recent: [] });
  });

  it('counts a Node deleted a moment ago once, though it is still listed', () => {
    const all = nodes(4);
    const first = all[0] as BrakeNode;
    const v = brakeVerdict({
      managed: all,
      missing: all.slice(0, 2),
      deletions: [{ uid: first.uid, name: first.name, at: T - 1000 }],
      now: T,
      options: DEFAULT_BRAKE_OPTIONS,
    });
    expect(v).toMatchObject({ affected: 2, total: 4 });
    expect(v.held).toBeUndefined();
    expect(v.counted.map((n) => n.name)).toEqual(['n1']);
  });

  it('holds nothing when nothing is missing, whatever was deleted', () => {
    expect(verdict(3, 0, { deletions: deleted(1, 2, 3, 4, 5) }).held).toBeUndefined();
  });

  it('deletes nothing while the recent deletions cannot be read, and holds nothing either (no hold, no Event)', () => {
    const v = verdict(10, 1, { deletionsError: 'configmaps is forbidden' });
    expect(v.held).toBeUndefined();
    expect(v.unjudged).toMatch(/^not deleted this pass: .*could not be read \(configmaps is forbidden\)/);
    expect(verdict(10, 0, { deletionsError: 'x' }).unjudged).toBeUndefined();
  });

  it('counts a deletion whose time lies ahead of now (another clock) inside the window', () => {
    const v = verdict(5, 1, {
      deletions: deleted(1, 2, 3, 4, 5).map((d) => ({ ...d, at: d.at + 30 * 60_000 })),
    });
    expect(v.held).toMatch(/6 of 10/);
  });
});

describe('the hold id', () => {
  it('names the set: the same Nodes in any order give one id, another set another', () => {
    const id = holdId(['cloudlycke://a', 'cloudlycke://b']);
    expect(id).toMatch(/^2-[0-9a-f]{8}$/);
    expect(holdId(['cloudlycke://b', 'cloudlycke://a'])).toBe(id);
    expect(holdId(['cloudlycke://a', 'cloudlycke://c'])).not.toBe(id);
    expect(verdict(10, 8).id).toBe(holdId(nodes(8).map((n) => n.providerID)));
  });
});

describe('a release', () => {
  it('lets the released Nodes through, and counts neither them nor their deletions', () => {
    const held = verdict(10, 8);
    const providerIDs = new Set(held.counted.map((n) => n.providerID));
    const released = verdict(10, 8, { release: { id: held.id, providerIDs } });
    expect(released.held).toBeUndefined();
    expect(released.released.size).toBe(8);
    // Five of them deleted under the release, the other three not yet: still nothing held.
    const all = nodes(10);
    const afterFive = brakeVerdict({
      managed: all.slice(5),
      missing: all.slice(5, 8),
      deletions: all.slice(0, 5).map((n) => ({ uid: n.uid, name: n.name, at: T - 1000, release: held.id })),
      now: T,
      release: { id: held.id, providerIDs },
      options: DEFAULT_BRAKE_OPTIONS,
    });
    expect(afterFive).toMatchObject({ affected: 0, total: 2, recent: [] });
    expect(afterFive.held).toBeUndefined();
    expect(afterFive.allowedNow).toBe(3);
  });

  it('does not cover a Node lost after it: a new loss is judged on its own', () => {
    const all = nodes(10);
    const v = brakeVerdict({
      managed: all,
      missing: all.slice(0, 8),
      deletions: [],
      now: T,
      release: { id: 'x', providerIDs: new Set(all.slice(0, 6).map((n) => n.providerID)) },
      options: DEFAULT_BRAKE_OPTIONS,
    });
    // 2 of the 4 not released: 50%, not held; the id names those two alone.
    expect(v).toMatchObject({ affected: 2, total: 4 });
    expect(v.held).toBeUndefined();
    expect(v.id).toBe(holdId(['cloudlycke://n6', 'cloudlycke://n7']));
  });
});

describe('the rate', () => {
  const options = { rate: 0.1, burst: 3, windowMs: 10 * MIN };

  it('allows the burst at once, then one each 1/rate seconds', () => {
    expect(rateAllowance([], T, options)).toEqual({ allowedNow: 3, nextInMs: 0 });
    expect(rateAllowance([T, T, T], T, options)).toEqual({ allowedNow: 0, nextInMs: 10_000 });
    expect(rateAllowance([T - 4000, T - 4000, T - 4000], T, options)).toEqual({
      allowedNow: 0,
      nextInMs: 6000,
    });
    expect(rateAllowance([T - 10_000, T - 10_000, T - 10_000], T, options).allowedNow).toBe(1);
    expect(rateAllowance([T - 30_000, T - 30_000, T - 30_000], T, options).allowedNow).toBe(3);
    // Never more than the burst, however long ago.
    expect(rateAllowance([T - 9 * MIN], T, options).allowedNow).toBe(3);
  });

  it('spaces a long run of deletions 1/rate apart after the burst', () => {
    const times: number[] = [];
    for (let t = T; times.length < 10; t += 500) {
      const { allowedNow } = rateAllowance(times, t, options);
      for (let i = 0; i < allowedNow && times.length < 10; i++) times.push(t);
    }
    const gaps = times.slice(3).map((t, i) => t - (times[i + 2] as number));
    expect(times.slice(0, 3)).toEqual([T, T, T]);
    expect(gaps).toEqual(Array(7).fill(10_000));
  });

  it('carries over a debt: deletions faster than the rate (two processes at once) delay the next', () => {
    expect(rateAllowance([T, T, T, T, T], T, options)).toEqual({ allowedNow: 0, nextInMs: 30_000 });
  });

  it('is part of a verdict outside a hold', () => {
    const v = verdict(30, 10, { deletions: deleted(1000, 1000, 1000) });
    expect(v.held).toBeUndefined();
    expect(v).toMatchObject({ allowedNow: 0, recent: [T - 1000, T - 1000, T - 1000] });
    expect(v.nextInMs).toBeGreaterThan(0);
  });
});

describe('managedNodes', () => {
  const OLD = new Date(T - 2 * GRACE_MS);
  const listed = (...ids: string[]) =>
    viewOf({ instances: ids.map((id) => makeInstance({ name: id, providerID: `cloudlycke://${id}` })) }, [
      makeNode({ name: 'a', providerID: 'cloudlycke://a' }),
    ]);
  const node = (name: string, options: Parameters<typeof makeNode>[0] = { name }) =>
    makeNode({ providerID: `cloudlycke://${name}`, created: OLD, ...options, name });

  it('counts Nodes of this scheme not excluded; missing: lost from the listing, Ready or not, past grace', () => {
    const all = [
      node('a'),
      node('ready-lost', { name: 'ready-lost', ready: true }),
      node('notready-lost', { name: 'notready-lost', ready: false }),
      node('unknown-lost', { name: 'unknown-lost', ready: 'missing' }),
      node('young-lost', { name: 'young-lost', ready: false, created: new Date(T - 1000) }),
      node('pet', { name: 'pet', ready: false, labels: { [LABEL_EXCLUDE_FROM_LIFECYCLE]: 'true' } }),
      makeNode({ name: 'droplet', providerID: 'digitalocean://1', ready: false, created: OLD }),
      makeNode({ name: 'no-id', ready: false, created: OLD }),
    ];
    const { managed, missing } = managedNodes(all, listed('a'), 'cloudlycke', NOW, GRACE_MS);
    expect(managed.map((n) => n.name)).toEqual([
      'a',
      'ready-lost',
      'notready-lost',
      'unknown-lost',
      'young-lost',
    ]);
    expect(missing.map((n) => n.name)).toEqual(['ready-lost', 'notready-lost', 'unknown-lost']);
  });

  it('counts an instance the listing shows as gone as missing', () => {
    const view = viewOf(
      {
        instances: [
          makeInstance({ name: 'a', providerID: 'cloudlycke://a' }),
          makeInstance({ name: 'b', providerID: 'cloudlycke://b', state: 'gone' }),
        ],
      },
      [node('a')],
    );
    expect(managedNodes([node('a'), node('b')], view, 'cloudlycke', NOW, GRACE_MS).missing).toHaveLength(1);
  });

  it('finds nothing missing in a listing that cannot be trusted', () => {
    const all = [node('a'), node('b')];
    const failed = viewOf({ error: new Error('boom') }, all);
    const empty = viewOf({ instances: [] }, all);
    const foreign = viewOf({ instances: [makeInstance({ name: 'x', providerID: 'cloudlycke://x' })] }, all);
    for (const view of [failed, empty, foreign]) {
      const { managed, missing } = managedNodes(all, view, 'cloudlycke', NOW, GRACE_MS);
      expect(managed).toHaveLength(2);
      expect(missing).toEqual([]);
    }
  });
});

describe('waitingReason', () => {
  it("counts the pass's own deletions: after a burst of 3 the next is 1/rate away", () => {
    const options = { ...DEFAULT_BRAKE_OPTIONS, rate: 2 };
    const v = verdict(30, 10, { options });
    expect(waitingReason(v, options, T, 3)).toBe(
      'deletion waits for --node-deletion-rate 2/s (3 deleted in the last 10m, 3 at most at once); the next in 1s',
    );
    const slow = verdict(30, 10, { deletions: deleted(1000, 1000, 1000) });
    expect(waitingReason(slow, DEFAULT_BRAKE_OPTIONS, T)).toMatch(/\(3 deleted .*\); the next in 9s$/);
  });
});
