/**
 * Benchmark: `ccm nodes init --provider triton` over N tainted Nodes and N machines of the CloudAPI
 * simulator (every request's signature verified), as the built CLI runs it. Not a test: it prints
 * a table for the README.
 *
 *   npm run build && bash .ci/node tsx test/bench/triton-nodes-init.bench.ts [sizes…]   # default 5000
 *
 * Cloud requests are counted by the simulator (ListMachines pages, ListDatacenters); Kubernetes
 * writes by the API server's audit log; max RSS is the CLI's own peak.
 */
import { cpus } from 'node:os';
import { createNodes } from '../controlplane/fixtures.js';
import { cloudWorld } from '../helpers/cloud-world.js';

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const runs = sizes.length > 0 ? sizes : [5000];
const concurrency = process.env.BENCH_CONCURRENCY ?? '32';
interface Row {
  nodes: number;
  pass: string;
  seconds: number;
  requests: string;
  writes: number;
  initialized: number;
  failed: number;
  maxRssMb: number;
}

const rows: Row[] = [];
for (const n of runs) {
  const world = await cloudWorld('triton', { instances: n, key: { type: 'rsa', bits: 2048 } });
  const { sim } = world;
  try {
    process.stderr.write(`creating ${n} tainted Nodes...\n`);
    await createNodes(world.api, world.nodes, 64);
    for (const pass of ['first', 'second']) {
      sim.requests.length = 0;
      // No 2-minute cap: a loaded machine is slow.
      const run = await world.ccm(['nodes', 'init', '--concurrency', concurrency, '--json'], {
        timeoutMs: 30 * 60_000,
      });
      const { seconds } = run;
      if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
      const report = JSON.parse(run.stdout);
      const byPath = new Map<string, number>();
      for (const r of sim.requests) byPath.set(r.path, (byPath.get(r.path) ?? 0) + 1);
      rows.push({
        nodes: n,
        pass,
        seconds,
        requests: [...byPath]
          .map(([path, count]) => `${count} × ${path.replace('/demo', '/:login')}`)
          .join(', '),
        writes: run.writes.length,
        initialized: report.summary.initialized,
        failed: report.summary.failed,
        maxRssMb: Math.round((report.maxRssBytes ?? 0) / 1e6),
      });
      process.stderr.write(`${n} machines, ${pass} pass: ${seconds.toFixed(1)}s\n`);
    }
  } finally {
    await world.cleanup();
  }
}

console.log(
  `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, --concurrency ${concurrency}\n`,
);
console.log(
  '| Nodes = machines | pass | wall time | CloudAPI requests | Kubernetes writes | initialised | failed | max RSS |',
);
console.log('|---:|---|---:|---|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.nodes.toLocaleString('en')} | ${r.pass} | ${r.seconds.toFixed(1)} s | ${r.requests} | ${r.writes.toLocaleString('en')} | ${r.initialized.toLocaleString('en')} | ${r.failed} | ${r.maxRssMb} MB |`,
  );
}
