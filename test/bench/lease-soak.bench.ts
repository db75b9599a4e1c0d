/**
 * Soak benchmark of leader election (issue 23, item 3). Not a test: it prints a table for the README.
 *
 *   npm run bench:soak                          # 10 minutes
 *   BENCH_SOAK_MINUTES=2 npm run bench:soak     # shorter
 *
 * Two `ccm run` replicas in this process, one leading and one standing by on the same Lease, with
 * --leader-elect-retry-period at its minimum (1 ms, the smallest duration the flag takes), against
 * the real kube-apiserver of the tests. Every 30 s, after a full garbage collection: the V8 heap in
 * use, and the abort listeners on every AbortSignal of the process (node:events getEventListeners;
 * the signals are found by watching addEventListener). Before 56da0b9 each wait of the elector left
 * one listener (~590 bytes) on its long-lived stop signal: at this period the heap and the listener
 * count of that one signal grew with every renewal. The Lease requests are counted by the API
 * server's own metrics.
 */
import { getEventListeners } from 'node:events';
import https from 'node:https';
import { cpus, loadavg } from 'node:os';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { startRun } from '../../src/cli/run.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { writeInventory } from '../helpers/inventory.js';
import { runInput } from '../helpers/run.js';

const MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 10);
const SAMPLE_MS = 30_000;
const RETRY_PERIOD_MS = 1;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

// Every AbortSignal that ever gets a listener, held weakly so the bench keeps none alive.
const signals = new Set<WeakRef<AbortSignal>>();
const tracked = new WeakSet<AbortSignal>();
const forget = new FinalizationRegistry<WeakRef<AbortSignal>>((ref) => signals.delete(ref));
const addEventListener = EventTarget.prototype.addEventListener;
AbortSignal.prototype.addEventListener = function (this: AbortSignal, ...args: unknown[]) {
  if (!tracked.has(this)) {
    tracked.add(this);
    const ref = new WeakRef(this);
    signals.add(ref);
    forget.register(this, ref);
  }
  return (addEventListener as (...a: unknown[]) => void).apply(this, args);
};

function abortListeners(): { total: number; most: number; signals: number } {
  let total = 0;
  let most = 0;
  let live = 0;
  for (const ref of signals) {
    const signal = ref.deref();
    if (!signal) continue;
    live++;
    const n = getEventListeners(signal, 'abort').length;
    total += n;
    most = Math.max(most, n);
  }
  return { total, most, signals: live };
}

async function settledHeap(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(50);
  }
  return process.memoryUsage().heapUsed;
}

/** Lease requests the API server answered, by verb, from its own metrics. */
async function leaseRequests(cp: ControlPlane): Promise<Record<string, number>> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = https.get(
      `${cp.server}/metrics`,
      { ca: Buffer.from(cp.caData, 'base64'), headers: { authorization: `Bearer ${cp.adminToken}` } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve(body));
      },
    );
    req.on('error', reject);
  });
  const counts: Record<string, number> = {};
  for (const m of text.matchAll(/^apiserver_request_total\{([^}]*)\} (\S+)$/gm)) {
    const labels = m[1] as string;
    if (!labels.includes('resource="leases"')) continue;
    const verb = /verb="([^"]+)"/.exec(labels)?.[1] ?? '?';
    counts[verb] = (counts[verb] ?? 0) + Number(m[2]);
  }
  return counts;
}

const discard = new Writable({
  write(_chunk, _enc, cb) {
    cb();
  },
});

const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

let cp: ControlPlane | undefined;
try {
  cp = await startControlPlane();
  const inventory = writeInventory([{ id: 'w1' }], {
    type: 'vbox.vm.1g.2cpu',
    region: 'virtualbox',
    zone: 'virtualbox',
  });
  const replicas = [];
  for (const id of ['a', 'b']) {
    const handle = await startRun(
      runInput(cp.kubeconfigPath, inventory, {
        logLevel: 'info',
        leaderElect: true,
        securePort: -1,
        lease: {
          durationMs: 15_000,
          renewDeadlineMs: 10_000,
          retryPeriodMs: RETRY_PERIOD_MS,
          name: 'ccm-soak',
          namespace: 'kube-system',
        },
      }),
      { logDestination: discard, prettyLogs: false, identity: `soak-${id}` },
    );
    let ended: number | undefined;
    void handle.done.then((code) => {
      ended = code;
    });
    replicas.push({ handle, ended: () => ended });
    // The first one takes the Lease before the second starts: one leader, one standby.
    await sleep(2000);
  }

  const samples: {
    min: number;
    heap: number;
    listeners: ReturnType<typeof abortListeners>;
    lease: Record<string, number>;
  }[] = [];
  const loads: number[] = [];
  const t0 = Date.now();
  for (;;) {
    const heap = await settledHeap();
    samples.push({
      min: (Date.now() - t0) / 60_000,
      heap,
      listeners: abortListeners(),
      lease: await leaseRequests(cp),
    });
    loads.push(loadavg()[0] as number);
    const s = samples.at(-1) as (typeof samples)[number];
    process.stderr.write(
      `${s.min.toFixed(1)} min: heap ${mb(s.heap)} MB, abort listeners ${s.listeners.total} (most on one signal ${s.listeners.most}), lease ${JSON.stringify(s.lease)}\n`,
    );
    if (Date.now() - t0 >= MINUTES * 60_000) break;
    await sleep(SAMPLE_MS);
  }
  const exits = replicas.map((r) => r.ended());
  for (const r of replicas) await r.handle.shutdown('bench done');

  // Least-squares slope of the heap after the first two minutes (start-up and JIT settled).
  const settled = samples.filter((s) => s.min >= 2);
  const steady = settled.length >= 2 ? settled : samples;
  const n = steady.length;
  const mx = steady.reduce((a, s) => a + s.min, 0) / n;
  const my = steady.reduce((a, s) => a + s.heap, 0) / n;
  const slope =
    steady.reduce((a, s) => a + (s.min - mx) * (s.heap - my), 0) /
    steady.reduce((a, s) => a + (s.min - mx) ** 2, 0);
  const first = samples[0] as (typeof samples)[number];
  const last = samples.at(-1) as (typeof samples)[number];
  const renewals = (last.lease.PUT ?? 0) - (first.lease.PUT ?? 0);
  const gets = (last.lease.GET ?? 0) - (first.lease.GET ?? 0);
  const minutes = last.min - first.min;
  const heaps = steady.map((s) => s.heap);
  const listeners = samples.map((s) => s.listeners.total);
  const most = samples.map((s) => s.listeners.most);

  console.log(
    `${cpus().length} × ${cpus()[0]?.model.trim()}, Node ${process.version}, load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)} during the run`,
  );
  console.log('');
  console.log(
    '| minute | V8 heap in use after GC | abort listeners (all signals) | most on one signal | Lease updates so far |',
  );
  console.log('|---|---|---|---|---|');
  for (const s of samples.filter((_, i) => i % 2 === 0 || i === samples.length - 1)) {
    console.log(
      `| ${s.min.toFixed(1)} | ${mb(s.heap)} MB | ${s.listeners.total} | ${s.listeners.most} | ${((s.lease.PUT ?? 0) - (first.lease.PUT ?? 0)).toLocaleString('en')} |`,
    );
  }
  console.log('');
  console.log(
    `- ${minutes.toFixed(1)} min, retry period ${RETRY_PERIOD_MS} ms: ${renewals.toLocaleString('en')} Lease updates (${Math.round(renewals / minutes / 60)}/s, the leader's renewals) and ${gets.toLocaleString('en')} Lease reads (${Math.round(gets / minutes / 60)}/s, both replicas)`,
  );
  console.log(
    `- heap ${steady === settled ? 'from minute 2 on' : 'over the run'}: ${mb(Math.min(...heaps))}–${mb(Math.max(...heaps))} MB, slope ${(slope / 1024).toFixed(1)} KB/min; the leak fixed in 56da0b9 (~590 bytes a wait) would be ~${Math.round((renewals * 590) / minutes / 1024).toLocaleString('en')} KB/min at these renewals alone`,
  );
  console.log(
    `- abort listeners: ${Math.min(...listeners)}–${Math.max(...listeners)} in all, ${Math.min(...most)}–${Math.max(...most)} on any one signal`,
  );
  console.log(
    `- replicas still running at the end: ${exits.every((e) => e === undefined) ? 'both' : `exit codes ${exits.join(', ')}`}`,
  );
} finally {
  await cp?.stop();
}
