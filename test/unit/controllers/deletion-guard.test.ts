/**
 * `ccm run`'s deletion brake (src/controllers/deletion-guard.ts) on a fake API server: a hold larger
 * than the event recorder's queue tells every held Node (review 45, finding 6), and a record of
 * deletions that cannot be read holds nothing and tells nobody.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { viewOf } from '../../../src/controllers/cloud-view.js';
import { DEFAULT_BRAKE_OPTIONS } from '../../../src/controllers/deletion-brake.js';
import { DeletionGuard, type HoldStatus } from '../../../src/controllers/deletion-guard.js';
import { createMetrics } from '../../../src/controllers/metrics.js';
import type { KubeTransport } from '../../../src/kube/transport.js';
import { FakeNodeClient, makeInstance, makeNode, NOW } from './fixtures.js';

function world(total: number, lost: number) {
  const nodes = Array.from({ length: total }, (_, i) =>
    makeNode({ name: `n${String(i).padStart(4, '0')}`, providerID: `cloudlycke://n${i}`, ready: false }),
  );
  const instances = nodes.slice(lost).map((n, i) =>
    makeInstance({
      providerID: n.spec?.providerID ?? '',
      name: n.metadata?.name ?? '',
      addresses: [{ type: 'InternalIP', address: `10.0.${i >> 8}.${i & 255}` }],
    }),
  );
  const kube = new FakeNodeClient(nodes);
  kube.serverNow = () => NOW.getTime();
  const status: HoldStatus = {};
  const metrics = createMetrics();
  const guard = new DeletionGuard({
    kube,
    transport: {} as KubeTransport,
    log: pino({ level: 'silent' }),
    metrics,
    options: DEFAULT_BRAKE_OPTIONS,
    deletionGracePeriodMs: 0,
    scheme: () => 'cloudlycke',
    nodes: () => nodes,
    status,
    now: () => NOW.getTime(),
  });
  const view = viewOf({ instances }, nodes);
  return { nodes, kube, guard, view, status, metrics };
}

describe('the deletion guard of ccm run', () => {
  it('tells each of 1,200 held Nodes, each once, with an Event sent at once (not the recorder’s queue of 1,000)', async () => {
    const { nodes, kube, guard, view } = world(2000, 1200);
    await guard.review(view);
    for (const node of nodes.slice(0, 1200)) expect((await guard.admit(node, view)).kind).toBe('held');
    for (const node of nodes.slice(0, 1200)) await guard.admit(node, view);
    const told = kube.calls.filter((c) => c.op === 'createEvent');
    expect(told).toHaveLength(1200);
    expect(told.every((c) => c.op === 'createEvent' && c.event.direct === true)).toBe(true);
  });

  it('a Node whose Event failed is told again, and once stored never again', async () => {
    const { nodes, kube, guard, view } = world(10, 6);
    let fail = true;
    kube.failWith = (call) => {
      if (call.op === 'createEvent' && fail) throw new Error('429 Too Many Requests');
    };
    const node = nodes[0] as (typeof nodes)[number];
    const tries = () =>
      kube.calls.filter((c) => c.op === 'createEvent' && c.event.node.metadata?.name === node.metadata?.name);
    await guard.review(view); // told at the review: refused
    await guard.admit(node, view); // told again: refused
    expect(tries()).toHaveLength(2);
    fail = false;
    await guard.admit(node, view); // stored
    await guard.admit(node, view);
    await guard.review(view);
    expect(tries()).toHaveLength(3);
  });

  it('an unreadable record of deletions: a single lost Node is neither deleted nor held, and nobody is told', async () => {
    const { nodes, kube, guard, view, status, metrics } = world(10, 1);
    kube.deletionRecordError = new Error('configmaps "ccm-node-deletions" is forbidden');
    await guard.review(view);
    const admission = await guard.admit(nodes[0] as never, view);
    expect(admission).toMatchObject({ kind: 'unjudged' });
    expect(status.current).toBeUndefined();
    expect((await metrics.nodeDeletionsHeld.get()).values[0]?.value ?? 0).toBe(0);
    expect(kube.calls.filter((c) => c.op === 'createEvent')).toEqual([]);
  });
});
