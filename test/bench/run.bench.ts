/**
 * Benchmark of `ccm run` (the built CLI, a separate process, leader election off, plain HTTP metrics)
 * against the real kube-apiserver of the tests. Not a test: it prints a table for the README.
 *
 *   npm run bench:run
 *
 * 1. burst: 5,000 tainted Nodes (BENCH_BURST_N) created at once; time until all are initialised by
 *    `ccm run` with its default flags, against a write-only baseline in the same run: the same creates
 *    plus the same writes ccm makes per Node (patch, event), sent by a plain client at 32 at a time
 *    with no ccm running (what the API server can take).
 * 2. steady arrival: 50 tainted Nodes a second for 60 s, then 20 Nodes one every 3 s; per Node,
 *    creation → taint removed (p50/p99), seen by the benchmark's own watch.
 * 3. RSS of ccm with 5,000 Nodes cached, all initialised, idle (VmRSS of the process).
 * 4. cloud listings and by-ID lookups with 5,000 Nodes, 0 / 100 / 1,000 of them NotReady, counted by
 *    ccm's own metrics over 60 s with the periods divided by 12 (monitor 5 s → 417 ms, listing 1 m → 5 s),
 *    i.e. 12 minutes of controller time each; per hour = × 5.
 * 5. peak RSS (VmHWM) of `ccm run --provider digitalocean` against the DigitalOcean simulator (droplets
 *    of the OpenAPI example's size) at 1,000 and 5,000 Nodes (BENCH_PEAK_SIZES), with default Node
 *    settings and with the Deployment's environment: N tainted Nodes initialised, 60 s steady, then
 *    10 Nodes NotReady for 60 s (BENCH_PEAK_STEADY_S), as issue 28's outside harness ran it.
 *
 * BENCH_ONLY=burst,steady,big,peak picks sections; BENCH_SNAPSHOT_DIR=dir adds a heap snapshot to each peak run; BENCH_CCM_CONCURRENCY passes --concurrency to ccm;
 * BENCH_CCM_AS_DEPLOYED=1 runs ccm with the Deployment's environment (sections 1–4).
 */
import type { ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUN_ENV } from '../../src/cli/manifests.js';
import { mapLimit } from '../../src/controllers/concurrency.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createInformer } from '../../src/kube/informer.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { createNodes, fixtureApi, nodeObject } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { CLOUDLYCKE_LABELS } from '../helpers/cloud-world.js';
import { writeFleetInventory } from '../helpers/inventory.js';
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
  return writeFleetInventory(path, ids, ip);
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

/** Registers the i-th Node as its kubelet does, straight through the transport. */
function register(http: KubeTransport, name: string, i: number) {
  return http.request({
    method: 'POST',
    path: '/api/v1/nodes',
    body: nodeObject(kubeletNode(name, i)),
    discardResponse: true,
    timeoutMs: 120_000,
  });
}

/** Registers every Node, CONCURRENCY at a time. */
function registerAll(http: KubeTransport, ids: string[]) {
  return mapLimit(ids, CONCURRENCY, (name, i) => register(http, name, i));
}

function transportFor(cp: ControlPlane, context: string): KubeTransport {
  return new KubeTransport(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, context, env: {} }));
}

interface CcmCloud {
  args: string[];
  env?: Record<string, string>;
  nodeOptions?: string;
}

const cloudlycke = (inv: string): CcmCloud => ({ args: ['--provider', 'cloudlycke', '--cloud-config', inv] });

const asDeployed: Readonly<Record<string, string>> = process.env.BENCH_CCM_AS_DEPLOYED ? RUN_ENV : {};
/** How a row names the Deployment's environment (cronjob-resources.test.ts reads it back). */
const DEPLOYMENT_ENV = `the Deployment's ${Object.entries(RUN_ENV)
  .map(([k, v]) => `\`${k}="${v}"\``)
  .join(' ')}`;
const settings = process.env.BENCH_CCM_AS_DEPLOYED ? DEPLOYMENT_ENV : 'default Node/V8 settings';

/** ccm run (test/helpers/run.ts spawnCcmRun) with ccm's default flags unless BENCH_CCM_CONCURRENCY is set. */
function startCcm(cp: ControlPlane, cloud: CcmCloud, extra: string[] = []) {
  const concurrency = process.env.BENCH_CCM_CONCURRENCY;
  return spawnCcmRun(
    [
      ...cloud.args,
      '--kubeconfig',
      cp.kubeconfigPath,
      ...(concurrency ? ['--concurrency', concurrency] : []),
      '--log-level',
      'warn',
      ...extra,
    ],
    // e.g. BENCH_CCM_NODE_OPTIONS="--max-old-space-size=128" to measure ccm with a heap cap;
    // BENCH_CCM_AS_DEPLOYED=1 with the Deployment's environment (NODE_OPTIONS, MALLOC_ARENA_MAX)
    {
      ...process.env,
      ...asDeployed,
      ...cloud.env,
      NODE_OPTIONS: cloud.nodeOptions ?? process.env.BENCH_CCM_NODE_OPTIONS ?? asDeployed.NODE_OPTIONS ?? '',
    },
  );
}

async function stopCcm(child: ChildProcess) {
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

function rssMb(pid: number, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0) / 1024);
}
const load1 = () => loadavg()[0]?.toFixed(1) ?? '?';

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

/** A taintWatch whose first listing is done: every later taint removal is timed. */
async function syncedTaintWatch(cp: ControlPlane) {
  const watch = taintWatch(cp);
  await until('watch synced', async () => watch.informer.hasSynced());
  return watch;
}

const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  process.stderr.write(`${line}\n`);
};

const only = (process.env.BENCH_ONLY ?? 'burst,steady,big').split(',');

/**
 * Runs section `name` when BENCH_ONLY picks it, on a control plane of its own (stopped after): `n`
 * Node names `<name>-NNNNN`, their Cloudlycke inventory and a transport as the fixtures admin.
 */
async function section(
  name: string,
  n: number,
  run: (s: { cp: ControlPlane; ids: string[]; inv: string; http: KubeTransport }) => Promise<void>,
): Promise<void> {
  if (!only.includes(name)) return;
  const cp = await startControlPlane();
  try {
    const ids = names(name, n);
    await run({ cp, ids, inv: inventory(ids), http: transportFor(cp, 'fixtures') });
  } finally {
    await cp.stop();
  }
}

// --- 1. burst of 5,000, against a write-only baseline -------------------------------------------
const BURST_N = Number(process.env.BENCH_BURST_N ?? 5000);
await section('burst', BURST_N, async ({ cp, ids, inv, http }) => {
  // Baseline: the creates, then per Node the writes ccm makes (merge patch of the Node, one event).
  const t0 = performance.now();
  let tWrites = t0;
  await registerAll(http, ids);
  tWrites = performance.now();
  await mapLimit(ids, CONCURRENCY, async (name) => {
    await http.request({
      method: 'PATCH',
      path: `/api/v1/nodes/${name}`,
      contentType: 'application/merge-patch+json',
      body: {
        metadata: { labels: CLOUDLYCKE_LABELS },
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
  const baselineWrites = (performance.now() - tWrites) / 1000;
  const deleteAll = async () => {
    await fixtureApi(cp.kubeconfigPath).deleteCollectionNode({});
    await until(
      'nodes gone',
      async () => (await fixtureApi(cp.kubeconfigPath).listNode({ limit: 1 })).items.length === 0,
      60_000,
    );
  };
  await deleteAll();

  const { child } = await startCcm(cp, cloudlycke(inv));
  const watch = await syncedTaintWatch(cp);
  const t1 = performance.now();
  await registerAll(http, ids);
  await until('all initialised', async () => ids.every((n) => watch.removedAt.has(n)), 600_000);
  const withCcm = (Math.max(...ids.map((n) => watch.removedAt.get(n) as number)) - t1) / 1000;
  await watch.informer.stop();
  await stopCcm(child);

  // The same Nodes already registered when ccm starts (a restart, or ccm deployed after the
  // kubelets): start → all initialised, against the baseline's writes alone.
  await deleteAll();
  await registerAll(http, ids);
  const watch2 = await syncedTaintWatch(cp);
  const t2 = performance.now();
  const late = await startCcm(cp, cloudlycke(inv));
  await until('all initialised', async () => ids.every((n) => watch2.removedAt.has(n)), 600_000);
  const startToDone = (Math.max(...ids.map((n) => watch2.removedAt.get(n) as number)) - t2) / 1000;
  await watch2.informer.stop();
  await stopCcm(late.child);
  say(
    `| ${BURST_N.toLocaleString('en')} tainted Nodes already there: ccm start → all initialised (--concurrency ${process.env.BENCH_CCM_CONCURRENCY ?? 'default'}) | ${startToDone.toFixed(1)} s | the baseline's writes alone ${baselineWrites.toFixed(1)} s → ratio ${(startToDone / baselineWrites).toFixed(2)}; load ${load1()} |`,
  );
  say(
    `| burst of ${BURST_N.toLocaleString('en')} tainted Nodes: all initialised (ccm's --concurrency ${process.env.BENCH_CCM_CONCURRENCY ?? 'default'}) | ${withCcm.toFixed(1)} s | write-only baseline ${baseline.toFixed(1)} s → ratio ${(withCcm / baseline).toFixed(2)} (target ≤ 1.25); load ${load1()} |`,
  );
});

// --- 2. steady arrival: 50 Nodes/s for 60 s, then one Node every 3 s ------------------------------
const SPARSE_N = 20;
await section('steady', 3000 + SPARSE_N, async ({ cp, ids, inv, http }) => {
  const stream = ids.slice(0, 3000);
  const sparse = ids.slice(3000);
  const { child } = await startCcm(cp, cloudlycke(inv));
  const watch = await syncedTaintWatch(cp);
  const createdAt = new Map<string, number>();
  const arrive = async (names: string[], everyMs: number, first: number) => {
    const start = performance.now();
    const pending: Promise<unknown>[] = [];
    for (let i = 0; i < names.length; i++) {
      const wait = start + i * everyMs - performance.now();
      if (wait > 0) await sleep(wait);
      const name = names[i] as string;
      createdAt.set(name, performance.now());
      pending.push(register(http, name, first + i));
    }
    await Promise.all(pending);
    await until('all initialised', async () => names.every((n) => watch.removedAt.has(n)), 60_000);
    return names.map((n) => (watch.removedAt.get(n) as number) - (createdAt.get(n) as number));
  };
  const latencies = await arrive(stream, 20, 0);
  const alone = await arrive(sparse, 3000, stream.length);
  await watch.informer.stop();
  await stopCcm(child);
  const ms = (xs: number[], p: number) => Math.round(percentile(xs, p));
  say(
    `| steady 50 tainted Nodes/s for 60 s (3,000): creation → taint removed | p50 ${ms(latencies, 50)} ms, p99 ${ms(latencies, 99)} ms, max ${Math.round(Math.max(...latencies))} ms | target p99 ≤ 1 s |`,
  );
  say(
    `| one tainted Node every 3 s (${SPARSE_N}): creation → taint removed | p50 ${ms(alone, 50)} ms, max ${Math.round(Math.max(...alone))} ms | — |`,
  );
});

// --- 3 + 4. 5,000 Nodes: RSS idle; cloud calls with 0 / 100 / 1,000 NotReady ---------------------
await section('big', 5000, async ({ cp, ids, inv, http }) => {
  const api = fixtureApi(cp.kubeconfigPath);
  await mapLimit(ids, CONCURRENCY, async (name, i) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await register(http, name, i);
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
  const idle = await startCcm(cp, cloudlycke(inv));
  const watch = taintWatch(cp);
  await until('all 5,000 initialised', async () => ids.every((n) => watch.removedAt.has(n)), 300_000);
  await watch.informer.stop();
  await sleep(IDLE_S * 1000);
  const rss = rssMb(idle.child.pid as number);
  const heap = await heapUsedMb(idle.url);
  await stopCcm(idle.child);
  say(
    `| RSS of \`ccm run\` with 5,000 Nodes cached, idle ${IDLE_S} s, ${settings} | ${rss} MB (V8 heap in use ${heap} MB) | target ≤ 150 MB |`,
  );

  const { child, url } = await startCcm(cp, cloudlycke(inv), [
    '--node-monitor-period',
    '417ms',
    '--cloud-list-period',
    '5s',
  ]);
  let down = 0;
  for (const notReady of process.env.BENCH_RSS_ONLY ? [] : [0, 100, 1000]) {
    await mapLimit(ids.slice(down, notReady), 32, async (name) => {
      await setReady(api, name, false);
    });
    down = notReady;
    await sleep(6000);
    const a = await cloudCounts(url);
    await sleep(60_000);
    const b = await cloudCounts(url);
    say(
      `| 5,000 Nodes, ${notReady.toLocaleString('en')} NotReady: cloud calls in 12 min of controller time (periods ÷ 12) | ${b.list - a.list} listings, ${b.get - a.get} lookups | per hour: ${(b.list - a.list) * 5} listings, ${(b.get - a.get) * 5} lookups |`,
    );
  }
  await stopCcm(child);
});

// --- 5. peak RSS of `ccm run --provider digitalocean`, default settings and the Deployment's ----------
if (only.includes('peak')) {
  const sizes = (process.env.BENCH_PEAK_SIZES ?? '1000,5000').split(',').map(Number);
  const steadyS = Number(process.env.BENCH_PEAK_STEADY_S ?? 60);
  // BENCH_SNAPSHOT_DIR: a heap snapshot of ccm at the end of each run, written there.
  const snapshots = process.env.BENCH_SNAPSHOT_DIR;
  for (const n of sizes) {
    const [cp, sim] = await Promise.all([startControlPlane(), DigitalOceanSimulator.start()]);
    try {
      const ids = names('do', n);
      const privateIP = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
      sim.addDroplets(
        ...ids.map((name, i) => ({
          name,
          privateIP: privateIP(i),
          publicIP: `198.51.${(i >> 8) & 255}.${i & 255}`,
        })),
      );
      const api = fixtureApi(cp.kubeconfigPath);
      const doCloud = (deployment: Readonly<Record<string, string>>): CcmCloud => {
        const { NODE_OPTIONS: nodeOptions = '', ...env } = deployment;
        return {
          args: ['--provider', 'digitalocean', '--cloud-api-url', sim.url],
          env: { DO_ACCESS_TOKEN: sim.token, ...env },
          nodeOptions: snapshots
            ? `${nodeOptions} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshots}`.trim()
            : nodeOptions,
        };
      };
      for (const [label, environment] of [
        ['default Node settings', {}],
        [DEPLOYMENT_ENV, RUN_ENV],
      ] as const) {
        // Kubelets with --cloud-provider=external and --node-ip: matched to droplets by name.
        await createNodes(
          api,
          ids.map((name, i) => ({ name, providedNodeIP: privateIP(i) })),
          CONCURRENCY,
        );
        const watch = taintWatch(cp);
        const loadBefore = load1();
        const ccm = await startCcm(cp, doCloud(environment));
        const pid = ccm.child.pid as number;
        // The peak so far at the end of each phase: where the memory was needed.
        const phases: string[] = [`ready ${rssMb(pid, 'VmHWM')}`];
        await until(`all ${n} initialised`, async () => ids.every((id) => watch.removedAt.has(id)), 600_000);
        phases.push(`initialised ${rssMb(pid, 'VmHWM')}`);
        await watch.informer.stop();
        await sleep(steadyS * 1000);
        phases.push(`steady ${rssMb(pid, 'VmHWM')}`);
        await mapLimit(ids.slice(0, 10), 10, async (name) => {
          await setReady(api, name, false);
        });
        await sleep(steadyS * 1000);
        const peak = rssMb(pid, 'VmHWM');
        phases.push(`10 NotReady ${peak}`);
        const rss = rssMb(pid);
        const heap = await heapUsedMb(ccm.url);
        if (snapshots) {
          // After the figures: writing a snapshot takes memory of its own (heap-summary.mjs reads it).
          const before = new Set(readdirSync(snapshots));
          ccm.child.kill('SIGUSR2');
          await until(
            'heap snapshot written',
            async () =>
              readdirSync(snapshots).some((f) => !before.has(f) && f.endsWith('.heapsnapshot')) &&
              (await fetch(`${ccm.url}/healthz`).catch(() => undefined))?.ok === true,
            300_000,
          );
        }
        await stopCcm(ccm.child);
        say(
          `| peak RSS (VmHWM) of ccm run --provider digitalocean, ${n.toLocaleString('en')} Nodes, ${label} | **${peak} MiB** (peak after each phase: ${phases.join(', ')}; RSS at the end ${rss} MiB, V8 heap in use ${heap} MB) | target ≤ ${n <= 1000 ? 74 : 115} MiB; load ${loadBefore} → ${load1()} |`,
        );
        await api.deleteCollectionNode({});
        await until('nodes gone', async () => (await api.listNode({ limit: 1 })).items.length === 0, 120_000);
      }
    } finally {
      await Promise.all([cp.stop(), sim.stop()]);
    }
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
