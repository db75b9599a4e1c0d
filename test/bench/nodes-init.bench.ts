/**
 * Benchmark: `ccm nodes init` over N tainted Nodes against the real kube-apiserver, as the built CLI
 * runs it (a separate process, JSON report). Not a test: it prints a table for the README.
 *
 *   npm run bench                  # 100, 1,000 and 5,000 Nodes
 *   npm run bench -- 200 2000      # other sizes
 *   BENCH_SCENARIOS='with --' npm run bench   # only the scenarios whose name contains this
 *   BENCH_NODE_OPTIONS=--max-semi-space-size=1 npm run bench   # extra Node flags for the CLI, to compare heap settings
 * Wall time is the CLI process from start to exit, including Node start-up and module loading.
 * Writes are counted by the API server's audit log; cloud calls come from the report.
 *
 * Two kinds of freshly registered Nodes, as the kubelet leaves them with --cloud-provider=external:
 *   without --node-ip: no addresses yet, so every Node needs a status write (3 writes per Node);
 *   with --node-ip:    InternalIP + Hostname already equal to the cloud's (2 writes per Node).
 */
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { createNodes } from '../controlplane/fixtures.js';
import { CCM_USER } from '../controlplane/harness.js';
import { cloudWorld, instanceIp as ip } from '../helpers/cloud-world.js';

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const runs = sizes.length > 0 ? sizes : [100, 1000, 5000];
const concurrency = process.env.BENCH_CONCURRENCY ?? '32';
const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

/** Runs the built CLI under GNU time: CPU seconds (user + system) are not inflated by a busy machine. */
async function ccm(args: string[]) {
  const run = await execa('/usr/bin/time', ['-f', 'cpu-seconds %U %S', process.execPath, bin, ...args], {
    reject: false,
    env: {
      KUBECONFIG: undefined,
      CCM_PROVIDER: undefined,
      CLOUDLYCKE_INVENTORY: undefined,
      // BENCH_NODE_OPTIONS: extra Node flags for the CLI, to compare heap settings.
      NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS,
    },
    stdin: 'ignore',
    timeout: 600_000,
  });
  const cpu = /cpu-seconds ([\d.]+) ([\d.]+)/.exec(String(run.stderr));
  return {
    exitCode: run.exitCode ?? -1,
    stdout: String(run.stdout),
    stderr: String(run.stderr),
    cpuSeconds: cpu ? Number(cpu[1]) + Number(cpu[2]) : Number.NaN,
  };
}

const scenarios = [
  { name: 'kubelet without --node-ip', kubeletAddresses: false },
  { name: 'kubelet with --node-ip', kubeletAddresses: true },
].filter((s) => s.name.includes(process.env.BENCH_SCENARIOS ?? ''));

interface Row {
  scenario: string;
  nodes: number;
  pass: string;
  seconds: number;
  cpuSeconds: number;
  writes: number;
  cloudCalls: number;
  initialized: number;
  failed: number;
  maxRssMb: number;
}

const rows: Row[] = [];
for (const scenario of scenarios)
  for (const n of runs) {
    // N instances in the inventory (named node-00000 …, addresses instanceIp(i)) and their Nodes.
    const world = await cloudWorld('cloudlycke', { instances: n });
    const { cp } = world;
    try {
      process.stderr.write(`creating ${n} tainted Nodes...\n`);
      await createNodes(
        world.api,
        world.nodes.map(({ name }, i) =>
          scenario.kubeletAddresses
            ? {
                name,
                providedNodeIP: ip(i),
                addresses: [
                  { type: 'InternalIP', address: ip(i) },
                  { type: 'Hostname', address: name },
                ],
              }
            : { name, addresses: [] },
        ),
        64,
      );
      for (const pass of ['first', 'second']) {
        const before = (await cp.writes(CCM_USER)).length;
        const started = performance.now();
        const run = await ccm(world.args(['nodes', 'init', '--concurrency', concurrency, '--json']));
        const seconds = (performance.now() - started) / 1000;
        if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
        const report = JSON.parse(run.stdout);
        const writes = (await cp.writes(CCM_USER)).length - before;
        rows.push({
          scenario: scenario.name,
          nodes: n,
          pass,
          seconds,
          cpuSeconds: run.cpuSeconds,
          writes,
          cloudCalls: report.cloudCalls,
          initialized: report.summary.initialized,
          failed: report.summary.failed,
          maxRssMb: Math.round((report.maxRssBytes ?? 0) / 1e6),
        });
        process.stderr.write(
          `${scenario.name}, ${n} nodes, ${pass} pass: ${seconds.toFixed(1)}s (cpu ${run.cpuSeconds}s), ${writes} writes, ${Math.round((report.maxRssBytes ?? 0) / 1e6)} MB\n`,
        );
      }
    } finally {
      await world.cleanup();
    }
  }

console.log(
  `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, --concurrency ${concurrency}${process.env.BENCH_NODE_OPTIONS ? `, NODE_OPTIONS=${process.env.BENCH_NODE_OPTIONS}` : ''}\n`,
);
console.log(
  '| Nodes registered by | Nodes | pass | wall time | ccm CPU time | Kubernetes writes | cloud calls | initialised | failed | max RSS |',
);
console.log('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.scenario} | ${r.nodes.toLocaleString('en')} | ${r.pass} | ${r.seconds.toFixed(1)} s | ${r.cpuSeconds.toFixed(1)} s | ${r.writes.toLocaleString('en')} | ${r.cloudCalls} | ${r.initialized.toLocaleString('en')} | ${r.failed} | ${r.maxRssMb} MB |`,
  );
}
