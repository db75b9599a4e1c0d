/**
 * Review 48: a Node that joins while a Service's first successful sync is under way never becomes a
 * backend of its load balancer. src/controllers/service-controller.ts `onNodeChange` queues only
 * the Services in `lastBackends`, which a Service enters when its first sync succeeds, with the
 * backends read when that sync began. A sync that began before the Node joined and ends after it
 * records the old set, and nothing queues the Service again: there is no periodic pass over the
 * Services' backends (upstream's service controller has nodeSyncPeriod, 100 s, and re-syncs every
 * Service whose hosts differ: kubernetes/cloud-provider controllers/service/controller.go). At
 * DigitalOcean's limits a sync waits for the budget, for minutes under load (issue 48), so the window
 * is wide; here one slow listing (4 s) opens it.
 */
import { describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { TEST_CONTROLLER_OPTIONS, until, untilInitialised } from '../helpers/run.js';
import { lbService } from '../helpers/services.js';

const NS = 'default';

const world = useCloudWorld('digitalocean', {
  services: true,
  afterEachTest: (w) => {
    expect(w.sim.takeViolations()).toEqual([]);
  },
});

describe('review 48: a Node joining during a Service’s first sync', () => {
  it('becomes a backend of the Service’s load balancer', async () => {
    const names = ['w-0', 'w-1', 'w-2'];
    const droplets = world.sim.addDroplets(
      ...names.map((name, i) => ({ name, region: 'fra1', privateIP: `10.114.0.${10 + i}` })),
    );
    const { cloudListPeriodMs: _, ...options } = TEST_CONTROLLER_OPTIONS;
    await world.run({ cloudQps: undefined, cloudBurst: undefined, controllerOptions: options });
    await createNodes(world.api, [{ name: 'w-0' }, { name: 'w-1' }]);
    for (const name of ['w-0', 'w-1']) await untilInitialised(world.api, name);

    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    // The create is answered "still being set up"; the Service checks again in 10 s.
    await until(
      'the load balancer created',
      async () => world.sim.requestsTo('POST', '/v2/load_balancers').length === 1,
    );
    // That check's listing is slow (a slow API, or a long wait for the budget).
    world.sim.fault({ method: 'GET', path: '/v2/load_balancers', delayMs: 4000 });
    const listed = world.sim.requestsTo('GET', '/v2/load_balancers').length;
    await until(
      'the check under way',
      async () => world.sim.requestsTo('GET', '/v2/load_balancers').length > listed,
      30_000,
    );
    // Meanwhile a Node joins.
    await createNodes(world.api, [{ name: 'w-2' }]);
    await untilInitialised(world.api, 'w-2');
    await until(
      'the Service has its IP',
      async () =>
        Boolean(
          (await world.api.readNamespacedService({ namespace: NS, name: 'web' })).status?.loadBalancer
            ?.ingress?.[0]?.ip,
        ),
      30_000,
    );
    const want = droplets.map((d) => d.id as number).sort((a, b) => a - b);
    let have: number[] = [];
    try {
      await until(
        'the load balancer has all three Nodes',
        async () => {
          const lb = [...world.sim.loadBalancers.values()][0];
          have = [...((lb?.droplet_ids as number[]) ?? [])].sort((a, b) => a - b);
          return JSON.stringify(have) === JSON.stringify(want);
        },
        60_000,
      );
    } finally {
      console.log(`load balancer backends ${JSON.stringify(have)}, Nodes' droplets ${JSON.stringify(want)}`);
    }
  }, 180_000);
});
