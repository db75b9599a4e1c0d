/**
 * Hand-made chaos scenarios (review 45b): the chaos world (3 replicas, the real API server, a cloud
 * simulator behind the attributing proxy) with faults done at the moment they matter (the proxy's
 * `tap` sees each request as it arrives), judged by the chaos run's invariants as run.ts does.
 */
import { Invariants } from './invariants.js';
import { roleOf } from './replicas.js';
import { startWorld, type World } from './world.js';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function waitFor(what: string, fn: () => Promise<boolean> | boolean, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (
    !(await Promise.resolve()
      .then(fn)
      .catch(() => false))
  ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

/** The DigitalOcean world with a leader and 3 initialised Nodes. */
export async function world3(log: string[]): Promise<World> {
  const world = await startWorld('digitalocean');
  log.push(`folder ${world.dir}`);
  try {
    await waitFor(
      'a leader',
      async () => (await Promise.all(world.replicas.map(roleOf))).includes('leading'),
      90_000,
    );
    for (let i = 0; i < 3; i++) await world.addNode();
    await waitFor(
      'Nodes initialised',
      async () =>
        (await world.api.listNode()).items.every(
          (n) => n.spec?.providerID && !(n.spec.taints ?? []).some((t) => t.key.includes('uninitialized')),
        ),
      60_000,
    );
  } catch (err) {
    await world.stop();
    throw err;
  }
  return world;
}

/** Judges everything left, settles within `boundMs`, and prints the creates and the Lease timeline. */
export async function verdict(world: World, inv: Invariants, log: string[], boundMs: number): Promise<void> {
  inv.checkContinuously(0);
  await inv.checkSettled(boundMs);
  inv.finish();
  for (const v of inv.violations) log.push(`VIOLATION [${v.invariant}] ${v.what}`);
  const creates = world.proxy.log.filter((r) => world.cloud.isCreate(r.method, r.path));
  for (const c of creates)
    log.push(
      `create by ${c.replica} at ${new Date(c.at).toISOString()} ${c.outcome} ${c.status ?? ''} ${c.deliveredAt ? `delivered ${new Date(c.deliveredAt).toISOString()}` : ''} ${c.body?.slice(0, 120)}`,
    );
  log.push(
    `Lease writes: ${inv.leaseWrites.map((w) => `${new Date(w.at).toISOString().slice(11, 23)} ${w.holder.slice(-8)}`).join(', ')}`,
  );
  console.log(log.join('\n'));
}

export { Invariants };
