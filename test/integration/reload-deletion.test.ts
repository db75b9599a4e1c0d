/**
 * A deletion is confirmed with the credentials that made the listing (issue 23, item 8).
 *
 * The lifecycle controller reads the cached view, and before its confirming lookup the credentials
 * are reloaded: `ccm run` swaps the provider, then invalidates the cache (src/cli/run/reload.ts).
 * The lookup then asks another account, which answers "not found" for every instance of this
 * cluster; its own listing, which would have shown that, was never consulted. The test makes that
 * interleaving explicit: the view is read, the reload happens, then the Node is reconciled with the
 * view read before it. The Nodes are on the real kube-apiserver; the two accounts are Cloudlycke
 * inventories behind the budgeted provider `ccm run` uses.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { pino } from 'pino';
import { afterAll, expect, it } from 'vitest';
import { budgetedProvider, type ProviderHolder, TokenBucket } from '../../src/controllers/cloud-budget.js';
import { DEFAULT_BRAKE_OPTIONS } from '../../src/controllers/deletion-brake.js';
import { DeletionGuard } from '../../src/controllers/deletion-guard.js';
import { InstanceCache } from '../../src/controllers/instance-cache.js';
import type { ControllerContext } from '../../src/controllers/manager.js';
import { createMetrics } from '../../src/controllers/metrics.js';
import { reconcileNode } from '../../src/controllers/node-reconcile.js';
import { createNodeClient } from '../../src/kube/nodes.js';
import { type SlimNode, slimNode } from '../../src/kube/slim-node.js';
import { cloudlycke } from '../../src/providers/cloudlycke/index.js';
import { createNodes } from '../controlplane/fixtures.js';
import { CLOUDLYCKE_DEFAULTS as DEFAULTS, useCloudWorld } from '../helpers/cloud-world.js';
import { writeInventory } from '../helpers/inventory.js';

const world = useCloudWorld('cloudlycke');
const inventories: string[] = [];

afterAll(() => {
  for (const path of inventories) rmSync(dirname(path), { recursive: true, force: true });
});

it('a lookup made with reloaded credentials does not confirm a deletion from the listing made with the old ones', async () => {
  // This cluster's account lists w1 but no longer gone-1; another account knows none of them.
  const ours = writeInventory([{ id: 'w1' }], DEFAULTS);
  const theirs = writeInventory([{ id: 'elsewhere' }], DEFAULTS);
  inventories.push(ours, theirs);
  await createNodes(world.api, [
    { name: 'w1', providerID: 'cloudlycke://w1', tainted: false },
    { name: 'gone-1', providerID: 'cloudlycke://gone-1', tainted: false, ready: false },
  ]);
  const nodes = async (): Promise<SlimNode[]> => (await world.api.listNode()).items.map(slimNode);
  let known = await nodes();

  const holder: ProviderHolder = { current: cloudlycke.create({ inventory: ours }, {}) };
  const provider = budgetedProvider(holder, new TokenBucket(100, 100));
  const cloud = new InstanceCache({ list: () => provider.instances.list(), nodes: () => known });
  const kube = createNodeClient(world.transport());
  const ctx = {
    kube,
    provider,
    cloud,
    options: { deletionGracePeriodMs: 0 },
  } as unknown as ControllerContext;
  // The lifecycle controller's deletion brake, as it runs: 1 Node of 2 is never held.
  const brake = new DeletionGuard({
    kube,
    transport: world.transport(),
    log: pino({ level: 'silent' }),
    metrics: createMetrics(),
    options: DEFAULT_BRAKE_OPTIONS,
    deletionGracePeriodMs: 0,
    scheme: () => provider.providerIdScheme,
    nodes: () => known,
    status: {},
  });
  const reload = (inventory: string) => {
    holder.current = cloudlycke.create({ inventory }, {});
    return cloud.invalidate('credentials changed (test)');
  };
  const reconcile = async (view = cloud.view()) =>
    reconcileNode(ctx, slimNode(await world.api.readNode({ name: 'gone-1' })), view, {
      cloudNode: false,
      lifecycle: true,
      brake,
    });
  const exists = async (name: string) =>
    (await world.api.listNode({ fieldSelector: `metadata.name=${name}` })).items.length === 1;

  const before = await cloud.refreshIfOlderThan(0);
  expect(before.listingKnowsCluster).toBe(true);
  const newListing = reload(theirs);
  const { plan } = await reconcile(before);
  expect(plan.deletion).toBeUndefined();
  expect(plan.error).toContain('credentials or cloud config changed');
  expect(await exists('gone-1')).toBe(true);

  // With the other account's own listing, nothing of this cluster is a candidate at all.
  await newListing;
  expect((await reconcile()).plan.deletionCandidate).toBeUndefined();
  expect(await exists('gone-1')).toBe(true);

  // The same Node, listing and lookup with this cluster's own credentials: deleted. The reload was
  // all that kept it.
  known = await nodes();
  await reload(ours);
  expect((await reconcile()).plan.deletion).toBeDefined();
  expect(await exists('gone-1')).toBe(false);
  expect(await exists('w1')).toBe(true);
});
