/**
 * A Node whose server is gone, still in the cluster (the deletion brake holds it, or the lifecycle
 * controller has not deleted it yet), must not fail the load balancer of every Service: Brightbox
 * refuses a balancer node that is no server of the account (the simulator's assumption, see its
 * parseNodes), and ccm sent every backend Node's server. The chaos run's review found the shape on
 * DigitalOcean (run-digitalocean-vanished-backend.test.ts); this is Brightbox's. Real
 * kube-apiserver, Brightbox simulator, `ccm run` in process.
 */
import { describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { addBrightboxWorkers } from '../helpers/cloud-nodes.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { until, untilInitialised } from '../helpers/run.js';
import { lbService, untilIngress } from '../helpers/services.js';

const NS = 'default';
const world = useCloudWorld('brightbox', { services: true });

const liveBalancers = () =>
  [...world.sim.loadBalancers.values()].filter((lb) => lb.status !== 'deleting' && lb.status !== 'deleted');

describe('a load balancer while a backend Node has lost its server', () => {
  for (const how of ['deleted from the account', 'listed as deleted'] as const) {
    it(`a server ${how}: left out of the balancer's nodes and server group, and the Service gets its address`, async () => {
      addBrightboxWorkers(world.sim);
      await world.run();
      await createNodes(world.api, [{ name: 'srv-aaaaa' }, { name: 'worker-b' }]);
      await untilInitialised(world.api, 'srv-aaaaa', 'ExternalIP');
      await untilInitialised(world.api, 'worker-b', 'ExternalIP');

      // The server goes; its Node stays (Ready: nothing deletes it), a backend still.
      if (how === 'deleted from the account') world.sim.servers.delete('srv-aaaaa');
      else (world.sim.servers.get('srv-aaaaa') as { status: string }).status = 'deleted';
      const listings = world.sim.count('GET', '/1.0/servers');
      await until(
        'a listing made after the server went',
        async () => world.sim.count('GET', '/1.0/servers') > listings,
      );

      await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
      await untilIngress(world.api, NS, 'web', 30_000);
      const [lb] = liveBalancers();
      expect(liveBalancers()).toHaveLength(1);
      expect(lb?.nodes).toEqual(['srv-bbbbb']);
      const groups = [...world.sim.serverGroups.values()].filter((g) => g.servers.length > 0);
      expect(groups.map((g) => g.servers)).toEqual([['srv-bbbbb']]);
      expect(world.sim.requests.filter((r) => r.method !== 'GET' && r.status >= 400)).toEqual([]);
    }, 90_000);
  }
});
