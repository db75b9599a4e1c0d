/**
 * Review 45b, scenario A (docs/chaos.md): DigitalOcean creates the load balancer but its answer is
 * lost (a gateway's 504 after the work was done), and the user names the load balancer by
 * do-loadbalancer-name before ccm tries again. Before the fix ccm looked only by the new name and
 * created a second load balancer; the first, named from the Service's UID, was left over for good
 * (`no-orphan-or-twice-created-load-balancer`, `one-load-balancer-per-service`). Three replicas, the
 * real API server, the simulator behind the chaos proxy; about a minute and a half.
 */
import { expect, it } from 'vitest';
import { Invariants, sleep, verdict, waitFor, world3 } from './scenario.js';

const NAME = 'service.beta.kubernetes.io/do-loadbalancer-name';

it('a create answered 504 after the cloud made it, then the name annotation: one load balancer, none left over', async () => {
  const log: string[] = [];
  const world = await world3(log);
  const inv = new Invariants(world);
  try {
    world.proxy.fail({ kind: 'lost-answer', status: 504 });
    const svc = await world.addService();
    await waitFor(
      'the create',
      () => world.proxy.log.some((r) => world.cloud.isCreate(r.method, r.path)),
      60_000,
    );
    world.proxy.clear();
    await world.annotate(svc, NAME, 'name');
    log.push(`annotated ${svc.name} ${NAME}=${svc.annotations[NAME]}`);
    await sleep(20_000);
    await verdict(world, inv, log, 60_000);
  } finally {
    await world.stop();
  }
  expect(inv.violations).toEqual([]);
  const creates = world.proxy.log.filter((r) => world.cloud.isCreate(r.method, r.path));
  expect(creates.map((c) => c.outcome)).toEqual(['lost-answer']);
});
