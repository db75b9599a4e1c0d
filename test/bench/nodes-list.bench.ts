/**
 * Benchmark: `ccm nodes list` over 5,000 Nodes (default; other sizes as arguments) against the real
 * kube-apiserver, with a Cloudlycke inventory of as many instances, as the built CLI runs it (a
 * separate process, -o json). Half the Nodes are initialised, half still tainted. Prints the wall
 * time, the Kubernetes reads the CLI counted and the GETs the API server saw from it.
 *
 *   bash .ci/node tsx test/bench/nodes-list.bench.ts [nodes...]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { writeFleetInventory } from '../helpers/inventory.js';

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

const rows: string[] = [];
for (const n of sizes.length > 0 ? sizes : [5000]) {
  const cp = await startControlPlane();
  const dir = mkdtempSync(join(tmpdir(), 'ccm-bench-list-'));
  try {
    const names = Array.from({ length: n }, (_, i) => `node-${String(i).padStart(5, '0')}`);
    const inventory = writeFleetInventory(join(dir, 'inventory.yaml'), names, ip);
    process.stderr.write(`creating ${n} Nodes...\n`);
    await createNodes(
      fixtureApi(cp.kubeconfigPath),
      names.map((name, i) =>
        i % 2 === 0
          ? {
              name,
              providerID: `cloudlycke://${name}`,
              tainted: false,
              addresses: [{ type: 'InternalIP', address: ip(i) }],
            }
          : { name },
      ),
      64,
    );
    const args = ['nodes', 'list', '--provider', 'cloudlycke', '--kubeconfig', cp.kubeconfigPath];
    const times: number[] = [];
    let reads = 0;
    for (let run = 0; run < 3; run++) {
      const started = performance.now();
      const result = await ccm([...args, '--cloud-config', inventory, '-o', 'json']);
      times.push((performance.now() - started) / 1000);
      if (result.exitCode !== 0) throw new Error(result.stderr);
      const report = JSON.parse(result.stdout) as { nodes: unknown[]; kubeReads: number };
      if (report.nodes.length !== n) throw new Error(`listed ${report.nodes.length} of ${n} Nodes`);
      reads = report.kubeReads;
    }
    const best = Math.min(...times);
    rows.push(
      `| ${n.toLocaleString('en')} | ${best.toFixed(2)} s | ${times.map((t) => t.toFixed(2)).join(' / ')} s | ${reads} (pages of 500) |`,
    );
  } finally {
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
process.stdout.write(
  `\n${cpus().length} CPUs, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(
      ' ',
    )}\n\n| Nodes | wall (best of 3) | runs | Kubernetes reads |\n|---|---|---|---|\n${rows.join('\n')}\n`,
);
