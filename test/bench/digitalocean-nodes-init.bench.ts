/**
 * Benchmark: `ccm nodes init --provider digitalocean` over N tainted Nodes (registered by kubelets
 * with --cloud-provider=external and no provider ID, so matched by droplet name) against the real
 * kube-apiserver and the DigitalOcean simulator. Not a test: it prints a table for the README.
 *
 *   bash .ci/node tsx test/bench/digitalocean-nodes-init.bench.ts          # 5,000 droplets
 *   bash .ci/node tsx test/bench/digitalocean-nodes-init.bench.ts 1000     # other sizes
 * It fails when a pass sends anything but the droplet listing (N / 200 pages), or when a request or
 * answer is off DigitalOcean's OpenAPI document (when it is found: test/clouds/digitalocean/openapi.ts).
 */
import { cpus } from 'node:os';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { specViolations } from '../clouds/digitalocean/openapi.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, startControlPlane } from '../controlplane/harness.js';

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const runs = sizes.length > 0 ? sizes : [5000];
const concurrency = process.env.BENCH_CONCURRENCY ?? '32';
const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

interface Row {
  nodes: number;
  pass: string;
  seconds: number;
  listingRequests: number;
  otherRequests: number;
  writes: number;
  initialized: number;
  failed: number;
  maxRssMb: number;
  simulatorSeconds: number;
}

const rows: Row[] = [];
for (const n of runs) {
  const [cp, sim] = await Promise.all([startControlPlane(), DigitalOceanSimulator.start()]);
  try {
    const names = Array.from({ length: n }, (_, i) => `node-${String(i).padStart(5, '0')}`);
    sim.addDroplets(
      ...names.map((name, i) => ({
        name,
        privateIP: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`,
        publicIP: `198.51.${(i >> 8) & 255}.${i & 255}`,
      })),
    );
    process.stderr.write(`creating ${n} tainted Nodes...\n`);
    await createNodes(
      fixtureApi(cp.kubeconfigPath),
      names.map((name) => ({ name, addresses: [] })),
      64,
    );
    for (const pass of ['first', 'second']) {
      sim.requests.length = 0;
      const before = (await cp.writes(CCM_USER)).length;
      const started = performance.now();
      // The CLI as a separate process, as a CronJob runs it (no 2-minute cap: a busy machine is slow).
      const run = await execa(
        process.execPath,
        [
          bin,
          'nodes',
          'init',
          '--provider',
          'digitalocean',
          '--kubeconfig',
          cp.kubeconfigPath,
          '--cloud-api-url',
          sim.url,
          '--concurrency',
          concurrency,
          '--json',
        ],
        {
          // BENCH_NODE_OPTIONS: Node flags for the CLI, to compare heap settings.
          env: {
            DO_ACCESS_TOKEN: sim.token,
            KUBECONFIG: undefined,
            NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS,
          },
          reject: false,
          stdin: 'ignore',
          timeout: 900_000,
        },
      );
      const seconds = (performance.now() - started) / 1000;
      if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
      const report = JSON.parse(String(run.stdout));
      const listing = sim.requestsTo('GET', '/v2/droplets').length;
      const other = sim.requests.length - listing;
      const simulatorMs = sim.requests.reduce((sum, r) => sum + ((r.answeredAt ?? r.at) - r.at), 0);
      const violations = [...sim.takeViolations(), ...specViolations.splice(0)];
      if (violations.length > 0) throw new Error(`violations:\n${violations.join('\n')}`);
      if (listing !== Math.ceil(n / 200) || other !== 0) {
        throw new Error(
          `expected ${Math.ceil(n / 200)} listing requests and nothing else, got ${listing} + ${other}`,
        );
      }
      rows.push({
        nodes: n,
        pass,
        seconds,
        listingRequests: listing,
        otherRequests: other,
        writes: (await cp.writes(CCM_USER)).length - before,
        initialized: report.summary.initialized,
        failed: report.summary.failed,
        maxRssMb: Math.round((report.maxRssBytes ?? 0) / 1e6),
        simulatorSeconds: simulatorMs / 1000,
      });
      process.stderr.write(`${n} droplets, ${pass} pass: ${seconds.toFixed(1)}s\n`);
    }
  } finally {
    await Promise.all([cp.stop(), sim.stop()]);
  }
}

console.log(
  `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, --concurrency ${concurrency}\n`,
);
console.log(
  '| Droplets = Nodes | pass | wall time | of which the simulator | DigitalOcean requests (listing + other) | Kubernetes writes | initialised | failed | max RSS |',
);
console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.nodes.toLocaleString('en')} | ${r.pass} | ${r.seconds.toFixed(1)} s | ${r.simulatorSeconds.toFixed(1)} s | ${r.listingRequests} + ${r.otherRequests} | ${r.writes.toLocaleString('en')} | ${r.initialized.toLocaleString('en')} | ${r.failed} | ${r.maxRssMb} MB |`,
  );
}
