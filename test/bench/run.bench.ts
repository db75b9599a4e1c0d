/**
 * Benchmark of `ccm run` (the built CLI, a separate process, leader election off, plain HTTP metrics)
 * against the real kube-apiserver of the tests. Not a test: it prints a table for the README.
 *
 *   npm run bench:run
 *
 * 1. burst: 1,000 tainted Nodes created at once; time until all are initialised, against a write-only
 *    baseline in the same run: the same creates plus the same writes ccm makes per Node (patch, event),
 *    sent by a plain client at the same concurrency with no ccm running.
 * 2. steady arrival: 50 tainted Nodes a second for 60 s; per Node, creation → taint removed (p50/p99),
 *    seen by the benchmark's own watch.
 * 3. RSS of ccm with 5,000 Nodes cached, all initialised, idle (VmRSS of the process).
 * 4. cloud listings and by-ID lookups with 5,000 Nodes, 0 / 100 / 1,000 of them NotReady, counted by
 *    ccm's own metrics over 60 s with the periods divided by 12 (monitor 5 s → 417 ms, listing 1 m → 5 s),
 *    i.e. 12 minutes of controller time each; per hour = × 5.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { mapLimit } from '../../src/controllers/concurrency.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createInformer } from '../../src/kube/informer.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { fixtureApi, nodeObject } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { setReady, spawnCcmRun, until } from '../helpers/run.js';
import { percentile } from '../helpers/stats.js';

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const CONCURRENCY = 32;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const names = (prefix: string, n: number) =>
  Array.from({ length: n }, (_, i) => `${prefix}-${String(i).padStart(5, '0')}`);
const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

const files = new Set<string>();
process.on('exit', () => {
  for (const f of files) rmSync(f, { force: true });
});

function inventory(ids: string[]): string {
  const path = join(tmpdir(), `ccm-run-bench-${ids.length}-${process.pid}.yaml`);
  files.add(path);
  writeFileSync(
    path,
    stringify({
      defaults: { type: 'vbox.vm.1g.2cpu', region: 'virtualbox', zone: 'virtualbox' },
      instances: ids.map((id, i) => ({ id, addresses: [{ type: 'InternalIP', address: ip(i) }] })),
    }),
  );
  return path;
}

/** Tainted Nodes as a kubelet with --node-ip registers them: addresses already equal to the cloud's. */
function kubeletNode(name: string, i: number) {
  return {
    name,
    providedNodeIP: ip(i),
    addresses: [
      { type: 'InternalIP', address: ip(i) },
      { type: 'Hostname', address: name },
    ],
  };
}

function transportFor(cp: ControlPlane, context: string): KubeTransport {
  return new KubeTransport(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, context, env: {} }));
}

/** ccm run over the inventory at the benchmark's concurrency (test/helpers/run.ts spawnCcmRun). */
function startCcm(cp: ControlPlane, inv: string, extra: string[] = []) {
  return spawnCcmRun(
    [
      '--provider',
      'cloudlycke',
      '--kubeconfig',
      cp.kubeconfigPath,
      '--cloud-config',
      inv,
      '--concurrency',
      String(CONCURRENCY),
      '--log-level',
      'warn',
      ...extra,
    ],
    // e.g. BENCH_CCM_NODE_OPTIONS="--max-old-space-size=128" to measure ccm with a heap cap
    { ...process.env, NODE_OPTIONS: process.env.BENCH_CCM_NODE_OPTIONS ?? '' },
  );
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024);
}

const IDLE_S = Number(process.env.BENCH_IDLE_S ?? 60);

async function heapUsedMb(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return Math.round(Number(/^ccm_nodejs_heap_size_used_bytes (\S+)/m.exec(text)?.[1] ?? 0) / 1e6);
}

async function cloudCounts(url: string) {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = (op: string) =>
    [
      ...text.matchAll(new RegExp(`^ccm_cloud_requests_total\\{[^}]*operation="${op}"[^}]*\\} (\\d+)`, 'gm')),
    ].reduce((n, m) => n + Number(m[1]), 0);
  return { list: sum('list'), get: sum('get') };
}

/** Watches Nodes and records when each first shows no uninitialized taint. */
function taintWatch(cp: ControlPlane) {
  const removedAt = new Map<string, number>();
  const informer = createInformer<{ name: string; tainted: boolean }>({
    transport: transportFor(cp, 'fixtures'),
    path: '/api/v1/nodes',
    resource: 'nodes',
    slim: (raw) => {
      const n = raw as { metadata: { name: string }; spec?: { taints?: { key: string }[] } };
      const tainted = (n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);
      if (!tainted && !removedAt.has(n.metadata.name)) removedAt.set(n.metadata.name, performance.now());
      return { name: n.metadata.name, tainted };
    },
  });
  informer.start();
  return { removedAt, informer };
}

const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  process.stderr.write(`${line}\n`);
};

const only = (process.env.BENCH_ONLY ?? 'burst,steady,big').split(',');

// --- 1. burst of 1,000, against a write-only baseline -------------------------------------------
if (only.includes('burst')) {
  const cp = await startControlPlane();
  try {
    const ids = names('burst', 1000);
    const inv = inventory(ids);
    const http = transportFor(cp, 'fixtures');
    // Baseline: the creates, then per Node the writes ccm makes (merge patch of the Node, one event).
    const t0 = performance.now();
    await mapLimit(ids, CONCURRENCY, async (name, i) => {
      await http.request({
        method: 'POST',
        path: '/api/v1/nodes',
        body: nodeObject(kubeletNode(name, i)),
        discardResponse: true,
        timeoutMs: 120_000,
      });
    });
    await mapLimit(ids, CONCURRENCY, async (name) => {
      await http.request({
        method: 'PATCH',
        path: `/api/v1/nodes/${name}`,
        contentType: 'application/merge-patch+json',
        body: {
          metadata: {
            labels: {
              'node.kubernetes.io/instance-type': 'vbox.vm.1g.2cpu',
              'beta.kubernetes.io/instance-type': 'vbox.vm.1g.2cpu',
              'topology.kubernetes.io/zone': 'virtualbox',
              'failure-domain.beta.kubernetes.io/zone': 'virtualbox',
              'topology.kubernetes.io/region': 'virtualbox',
              'failure-domain.beta.kubernetes.io/region': 'virtualbox',
            },
          },
          spec: { providerID: `cloudlycke://${name}`, taints: [] },
        },
        discardResponse: true,
        timeoutMs: 120_000,
      });
      await http.request({
        method: 'POST',
        path: '/api/v1/namespaces/default/events',
        body: {
          metadata: { generateName: `${name}.` },
          involvedObject: { kind: 'Node', name },
          type: 'Normal',
          reason: 'Synced',
          message: 'baseline',
          source: { component: 'bench' },
        },
        discardResponse: true,
        timeoutMs: 120_000,
      });
    });
    const baseline = (performance.now() - t0) / 1000;
    await fixtureApi(cp.kubeconfigPath).deleteCollectionNode({});
    await until(
      'nodes gone',
      async () => (await fixtureApi(cp.kubeconfigPath).listNode({ limit: 1 })).items.length === 0,
      60_000,
    );

    const ccm = await startCcm(cp, inv);
    const watch = taintWatch(cp);
    await until('watch synced', async () => watch.informer.hasSynced());
    const t1 = performance.now();
    await mapLimit(ids, CONCURRENCY, async (name, i) => {
      await http.request({
        method: 'POST',
        path: '/api/v1/nodes',
        body: nodeObject(kubeletNode(name, i)),
        discardResponse: true,
        timeoutMs: 120_000,
      });
    });
    await until('all initialised', async () => ids.every((n) => watch.removedAt.has(n)), 120_000);
    const withCcm = (Math.max(...ids.map((n) => watch.removedAt.get(n) as number)) - t1) / 1000;
    await watch.informer.stop();
    await ccm.stop();
    say(
      `| burst of 1,000 tainted Nodes: all initialised | ${withCcm.toFixed(1)} s | write-only baseline ${baseline.toFixed(1)} s → ratio ${(withCcm / baseline).toFixed(2)} (target ≤ 1.25) |`,
    );
  } finally {
    await cp.stop();
  }
}

// --- 2. steady arrival: 50 Nodes/s for 60 s -----------------------------------------------------
if (only.includes('steady')) {
  const cp = await startControlPlane();
  try {
    const ids = names('steady', 3000);
    const inv = inventory(ids);
    const http = transportFor(cp, 'fixtures');
    const ccm = await startCcm(cp, inv);
    const watch = taintWatch(cp);
    await until('watch synced', async () => watch.informer.hasSynced());
    const createdAt = new Map<string, number>();
    const start = performance.now();
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < ids.length; i++) {
      const due = start + i * 20;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      const name = ids[i] as string;
      createdAt.set(name, performance.now());
      pending.push(
        http.request({
          method: 'POST',
          path: '/api/v1/nodes',
          body: nodeObject(kubeletNode(name, i)),
          discardResponse: true,
          timeoutMs: 120_000,
        }),
      );
    }
    await Promise.all(pending);
    await until('all initialised', async () => ids.every((n) => watch.removedAt.has(n)), 60_000);
    const latencies = ids.map((n) => (watch.removedAt.get(n) as number) - (createdAt.get(n) as number));
    await watch.informer.stop();
    await ccm.stop();
    say(
      `| steady 50 tainted Nodes/s for 60 s (3,000): creation → taint removed | p50 ${Math.round(percentile(latencies, 50))} ms, p99 ${Math.round(percentile(latencies, 99))} ms, max ${Math.round(Math.max(...latencies))} ms | target p99 ≤ 1 s |`,
    );
  } finally {
    await cp.stop();
  }
}

// --- 3 + 4. 5,000 Nodes: RSS idle; cloud calls with 0 / 100 / 1,000 NotReady ---------------------
if (only.includes('big')) {
  const cp = await startControlPlane();
  try {
    const ids = names('big', 5000);
    const inv = inventory(ids);
    const api = fixtureApi(cp.kubeconfigPath);
    const http = transportFor(cp, 'fixtures');
    await mapLimit(ids, CONCURRENCY, async (name, i) => {
      for (let attempt = 0; ; attempt++) {
        try {
          await http.request({
            method: 'POST',
            path: '/api/v1/nodes',
            body: nodeObject(kubeletNode(name, i)),
            discardResponse: true,
            timeoutMs: 120_000,
          });
          return;
        } catch (err) {
          // 409: an earlier attempt went through
          if ((err as { status?: number }).status === 409) return;
          if (attempt >= 3) throw err;
        }
      }
    });
    // Idle at the default periods: after start-up nothing runs but a look at the (all Ready) Nodes
    // every 5 s; the cached listing is refreshed every 5 min.
    const idle = await startCcm(cp, inv);
    const watch = taintWatch(cp);
    await until('all 5,000 initialised', async () => ids.every((n) => watch.removedAt.has(n)), 300_000);
    await watch.informer.stop();
    await sleep(IDLE_S * 1000);
    const rss = rssMb(idle.child.pid as number);
    const heap = await heapUsedMb(idle.url);
    await idle.stop();
    say(
      `| RSS of ccm run with 5,000 Nodes cached, idle ${IDLE_S} s at default periods | ${rss} MB (V8 heap in use ${heap} MB) | target ≤ 150 MB |`,
    );

    const ccm = await startCcm(cp, inv, ['--node-monitor-period', '417ms', '--cloud-list-period', '5s']);
    let down = 0;
    for (const notReady of process.env.BENCH_RSS_ONLY ? [] : [0, 100, 1000]) {
      await mapLimit(ids.slice(down, notReady), 32, async (name) => {
        await setReady(api, name, false);
      });
      down = notReady;
      await sleep(6000);
      const a = await cloudCounts(ccm.url);
      await sleep(60_000);
      const b = await cloudCounts(ccm.url);
      say(
        `| 5,000 Nodes, ${notReady.toLocaleString('en')} NotReady: cloud calls in 12 min of controller time (periods ÷ 12) | ${b.list - a.list} listings, ${b.get - a.get} lookups | per hour: ${(b.list - a.list) * 5} listings, ${(b.get - a.get) * 5} lookups |`,
      );
    }
    await ccm.stop();
  } finally {
    await cp.stop();
  }
}

const load = loadavg()
  .map((l) => l.toFixed(1))
  .join(' / ');
console.log(
  `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, --concurrency ${CONCURRENCY}, load average at the end ${load}\n`,
);
console.log('| measurement | result | reference |');
console.log('|---|---|---|');
for (const line of out) console.log(line);
