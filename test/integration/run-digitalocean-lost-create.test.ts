/**
 * A load balancer create whose answer is lost (DigitalOcean made it; a gateway answered 504), then the
 * user names the load balancer by do-loadbalancer-name before ccm tries again. ccm must find the one
 * it made (its cluster tag, the name it gives from the Service's UID), rename it and keep it, never
 * create a second one. Review 45b, finding 1 (scenario A); it failed before the fix with two load
 * balancers, the one named from the UID left over for good. Real kube-apiserver, the DigitalOcean
 * simulator, `ccm run` in process.
 */
import { describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { type InProcess, until, untilInitialised } from '../helpers/run.js';
import { lbService, MERGE_PATCH, untilIngress, untilServiceGone } from '../helpers/services.js';

const NAME = 'service.beta.kubernetes.io/do-loadbalancer-name';
const LB_ID = 'kubernetes.digitalocean.com/load-balancer-id';
const NS = 'default';

const world = useCloudWorld('digitalocean', {
  services: true,
  afterEachTest: (w) => {
    expect(w.sim.takeViolations()).toEqual([]);
  },
});
let ccm: InProcess | undefined;

const uidName = (uid: string) => `a${uid.replace(/-/g, '')}`.slice(0, 32);

describe('a load balancer create whose answer was lost', () => {
  it('then a do-loadbalancer-name: the load balancer made is found, renamed and kept; none made twice', async () => {
    world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.21' });
    ccm = await world.run({});
    await createNodes(world.api, [{ name: 'worker-1' }]);
    await untilInitialised(world.api, 'worker-1');

    let annotated: Promise<unknown> | undefined;
    world.sim.fault({
      method: 'POST',
      path: '/v2/load_balancers',
      lostAnswer: true,
      status: 504,
      // The user names the load balancer while ccm waits to try again.
      after: () => {
        annotated = world.api.patchNamespacedService(
          { name: 'web', namespace: NS, body: { metadata: { annotations: { [NAME]: 'web-lb' } } } },
          MERGE_PATCH,
        );
      },
    });
    const created = await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    await until('the create answered 504', async () =>
      world.sim.requestsTo('POST', '/v2/load_balancers').some((r) => r.status === 504),
    );
    await annotated;
    // The load balancer the lost create made carries the name ccm gives from the Service's UID.
    expect([...world.sim.loadBalancers.values()].map((lb) => lb.name)).toEqual([
      uidName(created.metadata?.uid ?? ''),
    ]);

    const svc = await untilIngress(world.api, NS, 'web', 45_000);
    await until('the load balancer renamed', async () =>
      [...world.sim.loadBalancers.values()].every((lb) => lb.name === 'web-lb'),
    );
    const lbs = [...world.sim.loadBalancers.values()];
    expect(lbs).toHaveLength(1);
    expect(world.sim.requestsTo('POST', '/v2/load_balancers')).toHaveLength(1);
    expect(svc.metadata?.annotations?.[LB_ID]).toBe(lbs[0]?.id);
    expect(svc.status?.loadBalancer?.ingress).toEqual([
      expect.objectContaining({ ip: lbs[0]?.ip as string }),
    ]);

    await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
    await untilServiceGone(world.api, NS, 'web', 20_000);
    expect(world.sim.loadBalancers.size).toBe(0);
    await ccm.stop();
    ccm = undefined;
  }, 90_000);

  it('then the Service deleted with a do-loadbalancer-name: the load balancer made is deleted too', async () => {
    world.sim.addDroplets({ name: 'worker-1', privateIP: '10.114.0.21' });
    world.sim.fault({ method: 'POST', path: '/v2/load_balancers', lostAnswer: true, status: 504 });
    ccm = await world.run({});
    await createNodes(world.api, [{ name: 'worker-1' }]);
    await untilInitialised(world.api, 'worker-1');
    await world.api.createNamespacedService({ namespace: NS, body: lbService('web') });
    await until('the create answered 504', async () =>
      world.sim.requestsTo('POST', '/v2/load_balancers').some((r) => r.status === 504),
    );
    await world.api.patchNamespacedService(
      { name: 'web', namespace: NS, body: { metadata: { annotations: { [NAME]: 'web-lb' } } } },
      MERGE_PATCH,
    );
    await world.api.deleteNamespacedService({ name: 'web', namespace: NS });
    await untilServiceGone(world.api, NS, 'web', 30_000);
    expect(world.sim.loadBalancers.size).toBe(0);
    await ccm.stop();
    ccm = undefined;
  }, 90_000);
});
