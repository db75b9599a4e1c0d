/**
 * What a credentials or cloud-config reload (InstanceCache.invalidate) does to Nodes waiting for a
 * listing. R9-S1 and RV-5 are outside reviews' reproductions (they failed on 4a6b18f and 3644dc2).
 * The harness: cloud-node-harness.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { cloudNodeController } from '../../../src/controllers/cloud-node.js';
import type { Controller } from '../../../src/controllers/manager.js';
import { harness, NEW, type SlowCloud, sleep, tainted } from './cloud-node-harness.js';

let running: Controller | undefined;
let cleanupCloud: SlowCloud | undefined;
afterEach(async () => {
  cleanupCloud?.releaseAll();
  if (cleanupCloud) cleanupCloud.autoMs = 0;
  await running?.stop();
  running = undefined;
});

describe('a listing dropped by invalidate()', () => {
  it('R9-S1: a refresh waiting on a listing that invalidate() dropped is served the listing that replaced it', async () => {
    const h = harness({ minIntervalMs: 50 });
    cleanupCloud = h.cloud;
    h.cloud.instances = [NEW];
    h.cloud.autoMs = 0;
    await h.cache.refreshIfOlderThan(0);
    await sleep(60);
    h.cloud.autoMs = undefined;
    running = cloudNodeController();
    await running.start(h.ctx);
    // t0: a periodic refresh starts with the old credentials / endpoint, and hangs (a blackholed
    // endpoint: 5 attempts x 30 s per page in the real HTTP client).
    void h.cache.refreshIfOlderThan(0);
    const hung = h.cloud.listings.at(-1);
    await sleep(10);
    // t1: the Node registers; its worker asks viewSince(t1) -> requestRefresh(), which awaits `hung`.
    h.createNode(tainted('w1', 'uid-1'));
    await sleep(20);
    // t2: the operator fixes the cloud config: invalidate() starts a listing with the new provider,
    // which answers at once. It started after w1 was first seen: it is fit to initialise w1.
    h.cloud.autoMs = 0;
    void h.cache.invalidate('cloud config changed');
    await sleep(500);
    const fresh = h.cache.view();
    expect(fresh.listingError).toBeUndefined();
    expect(fresh.index.byNodeName('w1')?.providerID).toBe('cloudlycke://new-B');
    // ... yet w1 is still tainted: its worker waits for the dropped listing of the old provider.
    const stuck = h.kube.nodes.get('w1')?.spec?.providerID;
    hung?.release();
    for (let i = 0; i < 50 && h.kube.nodes.get('w1')?.spec?.providerID === undefined; i++) await sleep(10);
    expect(h.kube.nodes.get('w1')?.spec?.providerID).toBe('cloudlycke://new-B');
    expect(stuck, 'w1 waited for a dropped listing while a fit one was in the cache').toBe(
      'cloudlycke://new-B',
    );
  });
});

describe('a Node waiting when the credentials are reloaded', () => {
  it("RV-5: is initialised from the reload's listing, not from one more listing after it", async () => {
    const h = harness(); // min interval 2 s, as in ccm run
    cleanupCloud = h.cloud;
    h.cloud.instances = [NEW];
    h.cloud.autoMs = 0;
    await h.cache.refreshIfOlderThan(0);
    await sleep(2100);
    h.cloud.autoMs = undefined;
    running = cloudNodeController();
    await running.start(h.ctx);
    void h.cache.refreshIfOlderThan(0); // a periodic listing with the old credentials, hung
    await sleep(10);
    h.createNode(tainted('w1', 'uid-1')); // its worker: viewSince -> requestRefresh, awaiting the hung one
    await sleep(20);
    h.cloud.autoMs = 1000; // every listing from now on takes 1 s
    const t0 = performance.now();
    void h.cache.invalidate('credentials changed'); // L1, started after w1 was seen
    let at: number | undefined;
    for (let i = 0; i < 800 && at === undefined; i++) {
      if (h.kube.nodes.get('w1')?.spec?.providerID) at = performance.now() - t0;
      else await sleep(10);
    }
    expect(
      { listingsAfterReload: h.cloud.listings.length - 2, initialisedWithin1900ms: (at ?? 1e9) < 1900 },
      `initialised ${Math.round(at ?? -1)} ms after the reload`,
    ).toEqual({ listingsAfterReload: 1, initialisedWithin1900ms: true });
  }, 20_000);
});
