/**
 * Benchmark: `ccm nodes init --provider brightbox` over N tainted Nodes against the real
 * kube-apiserver, with the Brightbox API simulator holding N servers. Prints a table for the README.
 *
 *   bash .ci/node tsx test/bench/brightbox-nodes-init.bench.ts          # 5,000 Nodes
 *   bash .ci/node tsx test/bench/brightbox-nodes-init.bench.ts 1000     # other sizes
 * Cloud requests are counted by the simulator (token + listing); memory is the CLI's own peak RSS.
 */
import { cpus, loadavg } from 'node:os';
import { SIM_CLIENT } from '../clouds/brightbox/simulator.js';
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
  writes: number;
  requests: string;
  listingBytes: number;
  initialized: number;
  failed: number;
  maxRssMb: number;
}

const rows: Row[] = [];
for (const n of runs) {
  const world = await cloudWorld('brightbox', { instances: n });
  const { sim } = world;
  try {
    const listingBytes = Buffer.byteLength(
      await (async () => {
        const token = await fetch(`${sim.url}/token/`, {
          method: 'POST',
          headers: {
            authorization: `Basic ${Buffer.from(`${SIM_CLIENT.id}:${SIM_CLIENT.secret}`).toString('base64')}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: 'grant_type=client_credentials',
        }).then((r) => r.json() as Promise<{ access_token: string }>);
        return fetch(`${sim.url}/1.0/servers`, {
          headers: { authorization: `Bearer ${token.access_token}` },
        }).then((r) => r.text());
      })(),
    );
    process.stderr.write(`creating ${n} tainted Nodes...\n`);
    await createNodes(world.api, world.nodes, 64);
    for (const pass of ['first', 'second']) {
      const seen = sim.requests.length;
      // No 2-minute cap: a busy machine is slow (15 minutes).
      const run = await world.ccm(['nodes', 'init', '--concurrency', concurrency, '--json'], {
        timeoutMs: 900_000,
      });
      const { seconds } = run;
      if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
      const report = JSON.parse(run.stdout);
      const requests = sim.requests.slice(seen).map((r) => `${r.method} ${r.path}`);
      rows.push({
        nodes: n,
        pass,
        seconds,
        writes: run.writes.length,
        requests: requests.join(', '),
        listingBytes,
        initialized: report.summary.initialized,
        failed: report.summary.failed,
        maxRssMb: Math.round((report.maxRssBytes ?? 0) / 1e6),
      });
      process.stderr.write(`${n} servers, ${pass} pass: ${seconds.toFixed(1)}s\n`);
    }
  } finally {
    await world.cleanup();
  }
}

console.log(
  `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, --concurrency ${concurrency}, load average ${loadavg()[0]?.toFixed(1)} at the end\n`,
);
console.log(
  '| Servers / Nodes | pass | wall time | Kubernetes writes | cloud requests | listing size | initialised | failed | max RSS |',
);
console.log('|---:|---|---:|---:|---|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.nodes.toLocaleString('en')} | ${r.pass} | ${r.seconds.toFixed(1)} s | ${r.writes.toLocaleString('en')} | ${r.requests} | ${(r.listingBytes / 1e6).toFixed(1)} MB | ${r.initialized.toLocaleString('en')} | ${r.failed} | ${r.maxRssMb} MB |`,
  );
}
