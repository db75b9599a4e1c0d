/**
 * A Node whose droplet is gone, still in the cluster (the deletion brake holds it, or the lifecycle
 * controller has not deleted it yet), must not keep every new load balancer from being made. The
 * chaos run (docs/chaos.md) saw `DigitalOcean reading droplet 100001 failed: GET /v2/droplets/100001:
 * 404` again and again: a new load balancer's region and VPC were read off the first backend droplet
 * only. Real kube-apiserver, DigitalOcean simulator, `ccm run` in process.
 */
import { describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { TEST_CONTROLLER_OPTIONS, until, untilInitialised } from '../helpers/run.js';
import { lbService, untilIngress } from '../helpers/services.js';

const NS = 'default';
const GONE_VPC = '11111111-2222-4333-8444-555555555555';
const LIVE_VPC = '66666666-7777-4888-9999-aaaaaaaaaaaa';

const world = useCloudWorld('digitalocean', {
  services: true,
  afterEachTest: (w) => {
    expect(w.sim.takeViolations()).toEqual([]);
  },
});

/** Two droplets in fra1; the one with the lower id (the first backend) is the one that goes. */
function twoDroplets() {
  const [gone, live] = world.sim.addDroplets(
    { name: 'w-gone', region: 'fra1', privateIP: '10.114.0.51', vpc: GONE_VPC },
    { name: 'w-live', region: 'fra1', privateIP: '10.114.0.52', vpc: LIVE_VPC },
  );
  return { gone: gone?.id as number, live: live?.id as number };
}

const reads = (id: number) => world.sim.requestsTo('GET', `/v2/droplets/${id}`).length;

function onlyLoadBalancer() {
  const all = [...world.sim.loadBalancers.values()];
  expect(all).toHaveLength(1);
  return all[0] as Record<string, unknown>;
}

describe('a new load balancer while a backend Node has lost its droplet', () => {
  it('is placed by a droplet that exists, from the shared listing (no read of it), over the existing droplets only', async () => {
    const { gone, live } = twoDroplets();
    await world.run();
    await createNodes(world.api, [{ name: 'w-gone' }, { name: 'w-live' }]);
    await untilInitialised(world.api, 'w-gone');
    await untilInitialised(world.api, 'w-live');

    // The droplet is deleted; its Node stays (Ready: nothing deletes it), a backend still.
    world.sim.removeDroplet(gone);
    const listings = world.sim.requestsTo('GET', '/v2/droplets').length;
    await until(
      'a listing made after the droplet went',
      async () => world.sim.requestsTo('GET', '/v2/droplets').length > listings,
    );
    const readsBefore = { gone: reads(gone), live: reads(live) };

    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    await untilIngress(world.api, NS, 'web', 30_000);
    const lb = onlyLoadBalancer();
    expect(lb.region).toMatchObject({ slug: 'fra1' });
    expect(lb.vpc_uuid).toBe(LIVE_VPC);
    expect(lb.droplet_ids).toEqual([live]);
    expect(world.sim.requestsTo('POST', '/v2/load_balancers').map((r) => r.status)).toEqual([202]);
    // The listing showed the live droplet: no read. The gone one, which it did not show, read once.
    expect(reads(live) - readsBefore.live).toBe(0);
    expect(reads(gone) - readsBefore.gone).toBe(1);

    // A second Service: the gone droplet, known gone, is not read again.
    await world.api.createNamespacedService({ namespace: NS, body: lbService('web-2') });
    await untilIngress(world.api, NS, 'web-2', 30_000);
    expect(reads(gone) - readsBefore.gone).toBe(1);
    const second = [...world.sim.loadBalancers.values()].find((x) => x.id !== lb.id);
    expect(second?.droplet_ids).toEqual([live]);
  }, 90_000);

  it('with no listing (--controllers service): reads the backends in turn, past the 404, at most a few', async () => {
    const { gone, live } = twoDroplets();
    world.sim.removeDroplet(gone);
    // Initialised Nodes (provider IDs set): the service controller alone never lists the droplets.
    await createNodes(world.api, [
      { name: 'w-gone', providerID: `digitalocean://${gone}`, tainted: false },
      { name: 'w-live', providerID: `digitalocean://${live}`, tainted: false },
    ]);
    await world.run({ controllers: 'service', controllerOptions: { ...TEST_CONTROLLER_OPTIONS } });
    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    await untilIngress(world.api, NS, 'web', 30_000);
    const lb = onlyLoadBalancer();
    expect(lb.region).toMatchObject({ slug: 'fra1' });
    expect(lb.vpc_uuid).toBe(LIVE_VPC);
    expect(lb.droplet_ids).toEqual([live]);
    expect(world.sim.requestsTo('GET', '/v2/droplets')).toEqual([]);
    expect([reads(gone), reads(live)]).toEqual([1, 1]);
  }, 60_000);
});
