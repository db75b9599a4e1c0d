/**
 * A Node and its droplet replaced under the same name while ccm is busy with the old Node: the new
 * Node (another UID) must never be initialised from a listing made before ccm saw it, which may show
 * the deleted droplet. Real kube-apiserver, the DigitalOcean simulator, `ccm run` in process. Both
 * cases are an outside review's reproductions (they failed on 84a3179).
 */
import { describe, expect, it } from 'vitest';
import type { Provider } from '../../src/providers/types.js';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, until, untilInitialised } from '../helpers/run.js';

const world = useCloudWorld('digitalocean');
let ccm: InProcess | undefined;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a Node recreated under the same name while the refresh listing is out', () => {
  it('the new Node gets the new droplet, not the deleted one, and is not deleted afterwards', async () => {
    const [old] = world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.21' });
    let hold = false;
    let heldListings = 0;
    let release: () => void = () => {};
    const released = () => new Promise<void>((r) => (release = r));
    ccm = await world.run(
      {
        controllerOptions: {
          concurrency: 4,
          deletionGracePeriodMs: 0,
          nodeMonitorPeriodMs: 200,
          nodeStatusUpdateFrequencyMs: 600_000,
          cloudListPeriodMs: 600_000,
        },
      },
      {
        wrapProvider: (p: Provider): Provider => ({
          ...p,
          instances: {
            ...p.instances,
            list: async (signal) => {
              const snapshot = await p.instances.list(signal); // the cloud as the listing starts
              if (hold) {
                heldListings++;
                await released();
              }
              return snapshot;
            },
          },
        }),
      },
    );
    await sleep(1000);
    hold = true;
    await createNodes(world.api, [{ name: 'worker-1' }]);
    // The worker asks for a listing (the cached one predates the Node); it is slow to answer.
    await until('the refresh listing is out', async () => heldListings > 0, 10_000);

    // Meanwhile: Node and droplet replaced under the same name.
    await world.api.deleteNode({ name: 'worker-1' });
    await until(
      'worker-1 gone',
      async () => (await world.api.listNode({ fieldSelector: 'metadata.name=worker-1' })).items.length === 0,
    );
    world.sim.removeDroplet(old?.id as number);
    const [recreated] = world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.22' });
    await createNodes(world.api, [{ name: 'worker-1' }]);
    await sleep(500); // the watch shows the new Node
    hold = false;
    release();

    const second = await untilInitialised(world.api, 'worker-1');
    // What would follow from a wrong identity: the next listing does not show the old droplet, so the lifecycle
    // controller may take the (healthy, its droplet running) new Node for one whose machine is gone.
    await createNodes(world.api, [{ name: 'trigger-a-listing' }]);
    await sleep(5000);
    const after = await world.api.listNode({ fieldSelector: 'metadata.name=worker-1' });
    expect(after.items.map((n) => n.metadata?.uid)).toEqual([second.metadata?.uid]);
    expect(second.spec?.providerID).toBe(`digitalocean://${recreated?.id}`);
    expect(second.status?.addresses).not.toContainEqual({ type: 'InternalIP', address: '10.114.0.21' });
  }, 60_000);
});

describe('a write for the old Node that fails, then conflicts, while the watch is cut', () => {
  it('the Node read again after the 409 is another Node (UID): it is not planned from the old listing', async () => {
    const { faultProxy } = await import('../helpers/kube-fault-proxy.js');
    const [old] = world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.21' });
    // uid-1 exists before ccm starts: its first listing of Nodes shows it. The Node watch is then cut
    // (held by the proxy: the informer keeps uid-1 and hears of nothing after).
    await createNodes(world.api, [{ name: 'worker-1' }]);
    const uid1 = (await world.api.readNode({ name: 'worker-1' })).metadata?.uid;
    let failPatches = true;
    let swapping: Promise<void> | undefined;
    let recreatedId: number | undefined;
    const proxy = await faultProxy(world.cp, (req) => {
      const [path, query = ''] = (req.url ?? '').split('?');
      if (req.method === 'GET' && path === '/api/v1/nodes' && query.includes('watch=1')) return 'hold';
      if (req.method === 'PATCH' && path === '/api/v1/nodes/worker-1' && failPatches) {
        // The first write of uid-1's initialisation fails (an API server restarting); meanwhile the
        // machine is replaced under the same name and so is the Node.
        swapping ??= (async () => {
          await world.api.deleteNode({ name: 'worker-1' });
          await until(
            'worker-1 gone',
            async () =>
              (await world.api.listNode({ fieldSelector: 'metadata.name=worker-1' })).items.length === 0,
          );
          world.sim.removeDroplet(old?.id as number);
          const [recreated] = world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.22' });
          recreatedId = recreated?.id as number;
          await createNodes(world.api, [{ name: 'worker-1' }]);
          failPatches = false;
        })();
        return 503;
      }
      return undefined;
    });
    try {
      ccm = await world.run({
        kubeconfig: proxy.kubeconfigPath,
        controllerOptions: {
          concurrency: 4,
          deletionGracePeriodMs: 0,
          nodeMonitorPeriodMs: 200,
          nodeStatusUpdateFrequencyMs: 600_000,
          cloudListPeriodMs: 600_000,
        },
      });
      await until('the swap is done', async () => swapping !== undefined && !failPatches, 30_000);
      // The informer, its watch held, still shows uid-1: every attempt plans uid-1, conflicts, and
      // finds another Node. That one stays tainted until the watch shows it (then it waits for a
      // listing of its own): it never gets the deleted droplet.
      const replaced = () =>
        ccm?.logs.some((l) => l.includes('replaced by a new Node of the same name')) ?? false;
      await until('the conflict is seen as another Node', async () => replaced(), 30_000);
      await sleep(1000);
      const now = await world.api.readNode({ name: 'worker-1' });
      expect(now.metadata?.uid).not.toBe(uid1);
      expect(now.spec?.providerID).toBeUndefined();
      expect(now.spec?.taints?.map((t) => t.key)).toContain('node.cloudprovider.kubernetes.io/uninitialized');
      expect(recreatedId).toBeDefined();
    } finally {
      await ccm?.stop();
      await proxy.close();
    }
  }, 90_000);
});
