/**
 * Two replicas of the built `ccm run` (separate processes, default lease timings 15 s / 10 s / 2 s):
 * only the leader writes (the API server's audit log, by User-Agent, which carries each replica's
 * identity); SIGKILL of the leader → the standby takes over once the lease runs out; SIGTERM → the
 * Lease is released, the standby takes over within 3 s and the old leader exits 0 within 10 s, its
 * event loop run dry rather than ended by process.exit().
 */

import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { afterAll, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { CCM_USER } from '../controlplane/harness.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { writeInventory } from '../helpers/inventory.js';
import { until } from '../helpers/run.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

const world = useCloudWorld('cloudlycke');
const replicas: Replica[] = [];
afterAll(async () => {
  for (const r of replicas) r.child.kill('SIGKILL');
  await Promise.allSettled(replicas.map((r) => r.child));
});

interface Replica {
  child: ResultPromise;
  lines: { msg: string; identity?: string; time: number }[];
  /** What it printed that is not a log line: Node's --trace-exit warning. */
  other: string[];
  identity: () => string | undefined;
  leadingSince: () => number | undefined;
}

function start(inventory: string): Replica {
  const child = execa(
    process.execPath,
    [
      bin,
      ...world.args(['run'], ['--cloud-config', inventory]),
      '--secure-port=-1',
      '--leader-elect-resource-name',
      'ccm-replicas',
      '--log-level',
      'debug',
    ],
    {
      reject: false,
      // --trace-exit: Node warns when process.exit() ends the process (src/cli/end-process.ts).
      env: { KUBECONFIG: undefined, CCM_PROVIDER: undefined, NODE_OPTIONS: '--trace-exit' },
      stdin: 'ignore',
      buffer: false,
    },
  );
  const lines: Replica['lines'] = [];
  const other: string[] = [];
  let rest = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    rest += chunk.toString();
    const parts = rest.split('\n');
    rest = parts.pop() ?? '';
    for (const p of parts) {
      if (p.startsWith('{')) lines.push(JSON.parse(p));
      else if (p.trim()) other.push(p);
    }
  });
  const replica: Replica = {
    child,
    lines,
    other,
    identity: () => lines.find((l) => l.identity)?.identity,
    leadingSince: () => lines.find((l) => String(l.msg).startsWith('became leader of '))?.time,
  };
  replicas.push(replica);
  return replica;
}

const tainted = async (name: string) =>
  (await world.api.readNode({ name })).spec?.taints?.some(
    (t) => t.key === 'node.cloudprovider.kubernetes.io/uninitialized',
  );

it('only the leader writes; SIGKILL and SIGTERM hand over as the Lease says', async () => {
  const inventory = writeInventory([{ id: 'n1' }, { id: 'n2' }, { id: 'n3' }]);
  const a = start(inventory);
  await until('a leads', async () => a.leadingSince(), 45_000);
  const b = start(inventory);
  await until('b stands by', async () => b.lines.some((l) => l.msg.startsWith('the leader is')), 45_000);
  const idA = a.identity() as string;
  const idB = b.identity() as string;
  expect(idA).not.toBe(idB);

  await createNodes(world.api, [{ name: 'n1' }]);
  await until('n1 initialised', async () => !(await tainted('n1')));
  const writes = await world.cp.writes(CCM_USER);
  const byA = writes.filter((e) => e.userAgent?.includes(idA));
  const byB = writes.filter((e) => e.userAgent?.includes(idB));
  expect(byA.some((e) => e.objectRef?.resource === 'nodes' && e.objectRef.name === 'n1')).toBe(true);
  expect(byA.some((e) => e.objectRef?.resource === 'leases')).toBe(true);
  expect(byB).toEqual([]);

  // SIGKILL: nothing released; B waits out the lease (15 s from when it last saw A renew).
  const killedAt = Date.now();
  a.child.kill('SIGKILL');
  await until('b leads', async () => b.leadingSince(), 25_000);
  const takeoverAfterKill = (b.leadingSince() as number) - killedAt;
  console.log(`takeover after SIGKILL: ${takeoverAfterKill} ms`);
  expect(takeoverAfterKill).toBeLessThanOrEqual(15_000 + 2_400 + 1_000);
  await createNodes(world.api, [{ name: 'n2' }]);
  await until('n2 initialised by b', async () => !(await tainted('n2')));
  const n2Writes = (await world.cp.writes(CCM_USER)).filter((e) => e.objectRef?.name === 'n2');
  expect(n2Writes.length).toBeGreaterThan(0);
  expect(n2Writes.every((e) => e.userAgent?.includes(idB))).toBe(true);

  // SIGTERM: B releases the Lease; C takes over at its next try.
  const c = start(inventory);
  await until('c stands by', async () => c.lines.some((l) => l.msg.startsWith('the leader is')), 45_000);
  const termAt = Date.now();
  b.child.kill('SIGTERM');
  const exited = await b.child;
  const exitAfter = Date.now() - termAt;
  await until('c leads', async () => c.leadingSince(), 10_000).catch((err) => {
    console.log(
      'B:',
      b.lines.slice(-15).map((l) => l.msg),
      'C:',
      c.lines.map((l) => l.msg),
    );
    throw err;
  });
  const takeoverAfterTerm = (c.leadingSince() as number) - termAt;
  console.log(`takeover after SIGTERM: ${takeoverAfterTerm} ms; exit after ${exitAfter} ms`);
  expect(exited.exitCode).toBe(0);
  // Ended by its event loop running dry, not by process.exit(), which can hang in Node 24.
  expect(b.other.filter((l) => /Exited the environment/.test(l))).toEqual([]);
  expect(exitAfter).toBeLessThan(10_000);
  expect(takeoverAfterTerm).toBeLessThan(3_000);
  expect(b.lines.some((l) => l.msg === 'released the leader Lease')).toBe(true);
  await createNodes(world.api, [{ name: 'n3' }]);
  await until('n3 initialised by c', async () => !(await tainted('n3')));
}, 180_000);
