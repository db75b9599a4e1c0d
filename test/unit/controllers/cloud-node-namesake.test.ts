/**
 * The cloud-node controller never initialises a tainted Node from a listing started before ccm first
 * saw that Node (name + UID). F1–F3 and M3 are an outside review's reproductions (they failed on
 * 84a3179); H2, M1, M2 and L1 are what held up in that review.
 * The harness: cloud-node-harness.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cloudNodeController } from '../../../src/controllers/cloud-node.js';
import { FirstSeen } from '../../../src/controllers/first-seen.js';
import type { Controller } from '../../../src/controllers/manager.js';
import { KubeApiError } from '../../../src/kube/errors.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';
import { harness, NEW, OLD, type SlowCloud, sleep, tainted } from './cloud-node-harness.js';
import { makeInstance } from './fixtures.js';

let running: Controller | undefined;
let cleanupCloud: SlowCloud | undefined;
afterEach(async () => {
  cleanupCloud?.releaseAll();
  if (cleanupCloud) cleanupCloud.autoMs = 0;
  await running?.stop();
  running = undefined;
});

describe('a tainted Node and a listing that may predate it', () => {
  it('F1: a Node replaced (new UID) while its worker waits for the refresh waits for a listing of its own', async () => {
    const h = harness({ minIntervalMs: 50 });
    cleanupCloud = h.cloud;
    h.cloud.instances = [OLD];
    h.cloud.autoMs = 0;
    await h.cache.refreshIfOlderThan(0); // a listing before anything
    h.cloud.autoMs = undefined;

    h.createNode(tainted('w1', 'uid-1'));
    running = cloudNodeController();
    await running.start(h.ctx);
    // The worker asked for a refresh (the listing predates uid-1): wait for that listing to start.
    while (h.cloud.listings.length < 2) await sleep(5);
    const refresh = h.cloud.listings[1] as (typeof h.cloud.listings)[number];
    expect(refresh.names).toEqual(['cloudlycke://old-A']);

    // While that listing is out: the machine is deleted and recreated under the same name, and so is
    // the Node (the watch shows both: delete uid-1, add uid-2).
    h.cloud.instances = [NEW];
    h.deleteNode('w1');
    await sleep(5);
    h.createNode(tainted('w1', 'uid-2', '200'));
    const uid2SeenAfter = performance.now();
    expect(refresh.startedAt).toBeLessThan(uid2SeenAfter);
    refresh.release();

    // Give the controller time; a correct controller asks for yet another listing for uid-2.
    h.cloud.autoMs = 0;
    for (let i = 0; i < 40 && h.kube.nodes.get('w1')?.spec?.providerID === undefined; i++) await sleep(10);
    const w1 = h.kube.nodes.get('w1');
    expect(w1?.metadata?.uid).toBe('uid-2');
    // uid-2 was first seen after the listing started: it must not carry the deleted instance's identity.
    expect(w1?.spec?.providerID).not.toBe('cloudlycke://old-A');
  });

  it('F2: a write that conflicts, then reads another Node (UID), is not planned again from the old listing', async () => {
    const h = harness({ minIntervalMs: 50 });
    cleanupCloud = h.cloud;
    h.cloud.instances = [OLD];
    h.cloud.autoMs = 0;
    h.createNode(tainted('w1', 'uid-1'));
    // The first write of uid-1's initialisation fails (API server 503, a partition, a timeout). Before
    // the retry: the machine is replaced under the same name, uid-1 deleted and uid-2 registered, and
    // the watch (cut) has not shown any of it. No listing is needed in between: the one in the cache
    // started after uid-1 was first seen, so it is "fresh" for uid-1.
    let failed = false;
    h.kube.failWith = (call) => {
      if (call.op === 'patchNode' && !failed) {
        failed = true;
        h.cloud.instances = [NEW];
        h.deleteNode('w1', true);
        h.createNode(tainted('w1', 'uid-2', '500'), true);
        throw new KubeApiError('patch node w1: 503 Service Unavailable', 503);
      }
    };
    running = cloudNodeController();
    await running.start(h.ctx);
    for (let i = 0; i < 100 && h.kube.nodes.get('w1')?.spec?.providerID === undefined; i++) await sleep(10);
    const w1 = h.kube.nodes.get('w1');
    expect(failed).toBe(true);
    expect(w1?.metadata?.uid).toBe('uid-2');
    // Every listing ccm made started before uid-2 existed: uid-2 must stay tainted or get new-B.
    const patches = h.kube.calls.filter((c) => c.op === 'patchNode');
    expect(w1?.spec?.providerID, JSON.stringify(patches)).not.toBe('cloudlycke://old-A');
  });

  it('F3: credentials reloaded while a refresh waits its 2 s: a Node seen after that listing started is not served by it', async () => {
    const h = harness({ minIntervalMs: 400 });
    cleanupCloud = h.cloud;
    const other = makeInstance({ providerID: 'cloudlycke://x-1', name: 'x' });
    h.cloud.instances = [other, OLD];
    h.cloud.autoMs = 0;
    await h.cache.refreshIfOlderThan(0); // t=0: a listing; the next one may start at t=400
    h.cloud.autoMs = undefined;
    running = cloudNodeController();
    await running.start(h.ctx);

    // t≈20: Node x arrives: the listing predates it, a refresh is asked (waits until t=400).
    await sleep(20);
    h.createNode(tainted('x', 'uid-x'));
    await sleep(20);
    // t≈40: credentials reloaded: a listing starts now, with w1 = old-A still in the cloud.
    void h.cache.invalidate('credentials changed');
    const invalidated = h.cloud.listings.at(-1);
    expect(invalidated?.names).toContain('cloudlycke://old-A');
    await sleep(30);
    // t≈70: old-A is gone, new-B takes its name, and its Node registers (first seen now).
    h.cloud.instances = [other, NEW];
    h.createNode(tainted('w1', 'uid-2'));
    const seenAt = performance.now();
    expect(invalidated?.startedAt).toBeLessThan(seenAt);
    // Let the waiting refresh resume (t=400), then answer the listing started at t≈40.
    await sleep(450);
    invalidated?.release();
    h.cloud.autoMs = 0;
    for (let i = 0; i < 50 && h.kube.nodes.get('w1')?.spec?.providerID === undefined; i++) await sleep(10);
    expect(h.kube.nodes.get('w1')?.spec?.providerID).not.toBe('cloudlycke://old-A');
  });

  it('F1b: the relist form of F1 (delete and recreate while the watch was away arrive as one update, new UID)', async () => {
    const h = harness({ minIntervalMs: 50 });
    cleanupCloud = h.cloud;
    h.cloud.instances = [OLD];
    h.cloud.autoMs = 0;
    await h.cache.refreshIfOlderThan(0);
    h.cloud.autoMs = undefined;
    h.createNode(tainted('w1', 'uid-1'));
    running = cloudNodeController();
    await running.start(h.ctx);
    while (h.cloud.listings.length < 2) await sleep(5);
    const refresh = h.cloud.listings[1] as (typeof h.cloud.listings)[number];
    h.cloud.instances = [NEW];
    // relist: one update uid-1 -> uid-2
    h.createNode(tainted('w1', 'uid-2', '200'));
    refresh.release();
    h.cloud.autoMs = 0;
    for (let i = 0; i < 40 && h.kube.nodes.get('w1')?.spec?.providerID === undefined; i++) await sleep(10);
    expect(h.kube.nodes.get('w1')?.metadata?.uid).toBe('uid-2');
    expect(h.kube.nodes.get('w1')?.spec?.providerID).not.toBe('cloudlycke://old-A');
  });
});

describe('steady arrival', () => {
  it('H2: 50 tainted Nodes a second for 6 s: listings stay coalesced (one per 2 s)', async () => {
    const h = harness(); // default 2 s
    cleanupCloud = h.cloud;
    h.cloud.autoMs = 200;
    h.cloud.instances = [];
    await h.cache.refreshIfOlderThan(0);
    running = cloudNodeController();
    await running.start(h.ctx);
    const addedAt = new Map<string, number>();
    const t0 = performance.now();
    for (let i = 0; i < 300; i++) {
      const name = `n${i}`;
      h.cloud.instances.push(makeInstance({ providerID: `cloudlycke://i-${i}`, name }));
      h.createNode(tainted(name, `uid-${i}`));
      addedAt.set(name, performance.now());
      await sleep(20);
    }
    const deadline = performance.now() + 6000;
    const done = () => [...addedAt.keys()].every((n) => h.kube.nodes.get(n)?.spec?.providerID);
    while (!done() && performance.now() < deadline) await sleep(20);
    expect(done()).toBe(true);
    const seconds = (performance.now() - t0) / 1000;
    const listings = h.cloud.listings.length - 1;
    expect(listings).toBeLessThanOrEqual(Math.ceil(seconds / 2) + 1);
  }, 30_000);
});

describe('memory', () => {
  it('M1: 2,000 tainted Nodes never initialised, then deleted, leave nothing in FirstSeen', async () => {
    let seen: { seen: Map<string, unknown> } | undefined;
    const orig = FirstSeen.prototype.at;
    FirstSeen.prototype.at = function (this: never, n: SlimNode) {
      seen = this;
      return orig.call(this, n);
    };
    try {
      const h = harness({ minIntervalMs: 20 });
      cleanupCloud = h.cloud;
      h.cloud.autoMs = 1;
      h.cloud.instances = [];
      await h.cache.refreshIfOlderThan(0);
      running = cloudNodeController();
      await running.start(h.ctx);
      for (let i = 0; i < 2000; i++) h.createNode(tainted(`m${i}`, `uid-m${i}`));
      await sleep(300);
      expect(seen?.seen.size).toBe(2000);
      for (let i = 0; i < 2000; i++) h.deleteNode(`m${i}`);
      await sleep(100);
      expect(seen?.seen.size).toBe(0);
    } finally {
      FirstSeen.prototype.at = orig;
    }
  });

  it('M2: Nodes deleted while the workers wait for the first listing leave at most `concurrency` entries, once', async () => {
    let seen: { seen: Map<string, unknown> } | undefined;
    const orig = FirstSeen.prototype.at;
    FirstSeen.prototype.at = function (this: never, n: SlimNode) {
      seen = this;
      return orig.call(this, n);
    };
    try {
      const h = harness({ minIntervalMs: 20 });
      cleanupCloud = h.cloud;
      h.cloud.instances = [];
      // No listing yet: every worker awaits the first one (hasListed false).
      for (let i = 0; i < 4; i++) h.createNode(tainted(`d${i}`, `uid-d${i}`));
      running = cloudNodeController();
      await running.start(h.ctx);
      await sleep(50);
      for (let i = 0; i < 4; i++) h.deleteNode(`d${i}`);
      expect(seen?.seen.size).toBe(0);
      h.cloud.releaseAll();
      h.cloud.autoMs = 0;
      await sleep(100);
      expect(seen?.seen.size).toBeLessThanOrEqual(4); // concurrency; a later Node of that name resets it (new UID)
    } finally {
      FirstSeen.prototype.at = orig;
    }
  });
});

describe('leadership', () => {
  it('L1: a new term with the informer kept: a Node replaced during standby (update, new UID) waits for a new listing', async () => {
    const h = harness({ minIntervalMs: 50 });
    cleanupCloud = h.cloud;
    h.cloud.instances = [OLD];
    h.cloud.autoMs = 5;
    // Term 1: uid-1 is tainted, but every write fails (not leading any more): nothing initialised.
    h.kube.failWith = (call) => {
      if (call.op === 'patchNode') throw new KubeApiError('not leading', 503);
    };
    h.createNode(tainted('w1', 'uid-1'));
    running = cloudNodeController();
    await running.start(h.ctx);
    await sleep(200);
    await running.stop();
    running = undefined;
    // Standby: the machine and the Node are replaced; the informer (kept) turns it into an update.
    const listingsBefore = h.cloud.listings.length;
    h.cloud.instances = [NEW];
    h.createNode(tainted('w1', 'uid-2', '200'));
    h.kube.failWith = () => undefined;
    // Term 2.
    running = cloudNodeController();
    await running.start(h.ctx);
    for (let i = 0; i < 50 && h.kube.nodes.get('w1')?.spec?.providerID === undefined; i++) await sleep(10);
    expect(h.cloud.listings.length).toBeGreaterThan(listingsBefore);
    expect(h.kube.nodes.get('w1')?.spec?.providerID).toBe('cloudlycke://new-B');
  });
});

describe('memory under churn', () => {
  it('M3: a tainted Node deleted while its worker waits for the refresh leaves no error behind', async () => {
    let lastErrors: Map<string, string> | undefined;
    const origSet = Map.prototype.set;
    Map.prototype.set = function (this: Map<unknown, unknown>, k: unknown, v: unknown) {
      if (typeof k === 'string' && k.startsWith('churn-') && typeof v === 'string')
        lastErrors = this as Map<string, string>;
      return origSet.call(this, k, v);
    } as typeof Map.prototype.set;
    try {
      const h = harness({ minIntervalMs: 30 });
      cleanupCloud = h.cloud;
      h.cloud.autoMs = 20;
      await h.cache.refreshIfOlderThan(0);
      running = cloudNodeController();
      await running.start(h.ctx);
      const rounds = 50;
      for (let r = 0; r < rounds; r++) {
        const names = [0, 1, 2, 3].map((i) => `churn-${r}-${i}`);
        for (const name of names) {
          h.cloud.instances.push(makeInstance({ providerID: `cloudlycke://${name}`, name }));
          h.createNode(tainted(name, `uid-${name}`));
        }
        await sleep(5); // the workers now wait for the listing that follows these Nodes' first sight
        for (const name of names) h.deleteNode(name); // e.g. an autoscaler gives up on the machine
        await sleep(80);
      }
      await sleep(300);
      expect(h.informer.store.size).toBe(0);
      expect([...(lastErrors ?? new Map()).entries()]).toEqual([]);
    } finally {
      Map.prototype.set = origSet;
    }
  });
});
