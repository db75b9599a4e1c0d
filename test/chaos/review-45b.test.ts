/**
 * Review 45b's other hand-made chaos scenarios, outside `npm test` (scenario A is the regression test
 * ci-lost-create-answer.test.ts). Run one at a time:
 *
 *   bash .ci/node node_modules/.bin/vitest run --config test/chaos/review.vitest.config.ts -t '<name>'
 *
 * B fails, and is expected to: it is the limit of Lease-based leader election without fencing that
 * docs/chaos.md ("What a Lease cannot promise") describes. It is kept to show that limit, and to
 * measure anything that narrows it.
 */
import { expect, it } from 'vitest';
import { currentLeader } from './faults.js';
import { Invariants, sleep, verdict, waitFor, world3 } from './scenario.js';

/** A2: a create's answer lost (504 after the cloud made it), then the Service deleted. Held. */
it('A2: create answered 504 after the cloud made it, then the Service deleted', async () => {
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
    await world.deleteService(svc);
    await sleep(45_000);
    await verdict(world, inv, log, 60_000);
  } finally {
    await world.stop();
  }
  expect(inv.violations).toEqual([]);
});

/**
 * B: the leader's create is on the wire when the network drops its packets (a partition of that
 * replica; its bytes wait in TCP retransmission), and the replica stalls (SIGSTOP: a VM steal, a
 * long GC) past the Lease. A standby takes over and creates the load balancer; the partition heals
 * while the old leader is still waiting for its answer, and TCP delivers the old create.
 */
it('B: a create held by a partition and delivered after the Lease moved', async () => {
  const log: string[] = [];
  const world = await world3(log);
  const inv = new Invariants(world);
  try {
    const leader = await currentLeader(world);
    if (!leader) throw new Error('no leader');
    log.push(`leader ${leader.name} ${leader.identity}`);
    let trapped = false;
    world.proxy.tap = (entry) => {
      if (!trapped && entry.replica === leader.name && world.cloud.isCreate(entry.method, entry.path)) {
        trapped = true;
        world.proxy.partition(leader.name, { deliverOnHeal: true });
      }
    };
    await world.addService();
    await waitFor('the leader’s create on the wire', () => trapped, 60_000);
    leader.paused = true;
    leader.child.kill('SIGSTOP');
    log.push(`paused ${leader.name} at ${new Date().toISOString()}`);
    await waitFor(
      'another leader',
      async () => {
        const l = await currentLeader(world);
        return Boolean(l && l !== leader);
      },
      30_000,
    );
    // The new leader's own create: give it time to make one.
    await sleep(8000);
    world.proxy.heal(leader.name);
    log.push(`healed at ${new Date().toISOString()}`);
    await sleep(2000);
    leader.child.kill('SIGCONT');
    leader.paused = false;
    await sleep(40_000);
    await verdict(world, inv, log, 60_000);
  } finally {
    await world.stop();
  }
  expect(inv.violations).toEqual([]);
});
