/**
 * Benchmark: `ccm nodes init --provider openstack` over N tainted Nodes and N Nova servers of the
 * OpenStack simulator, against the real kube-apiserver, as the built CLI runs it. It prints the
 * requests the pass sent to the cloud (Keystone tokens, Nova pages) and the CLI's peak RSS.
 *
 *   npm run build && bash .ci/node tsx test/bench/openstack-nodes-init.bench.ts          # 5,000
 *   npm run build && bash .ci/node tsx test/bench/openstack-nodes-init.bench.ts 1000 5000
 */
import { cpus, loadavg } from 'node:os';
import { createNodes } from '../controlplane/fixtures.js';
import { cloudWorld } from '../helpers/cloud-world.js';

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const runs = sizes.length > 0 ? sizes : [5000];
const concurrency = process.env.BENCH_CONCURRENCY ?? '32';
const rows: string[] = [];
for (const n of runs) {
  const world = await cloudWorld('openstack', { instances: n });
  const { sim } = world;
  try {
    process.stderr.write(`creating ${n} tainted Nodes...\n`);
    await createNodes(world.api, world.nodes, 64);
    for (const pass of ['first', 'second']) {
      const requestsBefore = sim.requests.length;
      // The test helper's 2-minute limit is too short for 5,000 Nodes on a loaded machine.
      const run = await world.ccm(['nodes', 'init', '--concurrency', concurrency, '--json'], {
        env: { OS_CLOUD: undefined },
        timeoutMs: 30 * 60_000,
      });
      const { seconds } = run;
      if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
      const report = JSON.parse(run.stdout);
      const writes = run.writes.length;
      const requests = sim.requests.slice(requestsBefore);
      const tokens = requests.filter((r) => r.path.includes('/auth/tokens')).length;
      const pages = requests.filter((r) => r.path.includes('/servers/detail')).length;
      rows.push(
        `| ${n.toLocaleString('en')} | ${pass} | ${seconds.toFixed(1)} s | ${writes.toLocaleString('en')} | ${tokens} token + ${pages} pages = ${requests.length} | ${report.summary.initialized.toLocaleString('en')} | ${report.summary.failed} | ${Math.round((report.maxRssBytes ?? 0) / 1e6)} MB |`,
      );
      process.stderr.write(
        `${n} servers, ${pass} pass: ${seconds.toFixed(1)}s, ${requests.length} cloud requests\n`,
      );
    }
  } finally {
    await world.cleanup();
  }
}

console.log(
  `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, --concurrency ${concurrency}, load average ${loadavg()[0]?.toFixed(1)}\n`,
);
console.log(
  '| Servers = Nodes | pass | wall time | Kubernetes writes | cloud requests | initialised | failed | max RSS |',
);
console.log('|---:|---|---:|---:|---|---:|---:|---:|');
for (const row of rows) console.log(row);
