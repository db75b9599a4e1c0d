/**
 * Memory breakdown of one `nodes init` pass over N tainted Nodes (registered with --node-ip) on the
 * real kube-apiserver, step by step (memory-steps.mjs). Not a test: it prints a table for the README.
 *
 *   bash .ci/node tsx test/bench/memory.bench.ts 5000                      # this checkout
 *   bash .ci/node tsx test/bench/memory.bench.ts 5000 /path/to/other/build # compare another build
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { startControlPlane } from '../controlplane/harness.js';
import { writeFleetInventory } from '../helpers/inventory.js';

const n = Number(process.argv[2] ?? 5000);
const roots = process.argv.slice(3).map((r) => resolve(r));
if (roots.length === 0) roots.push(fileURLToPath(new URL('../..', import.meta.url)));
const steps = fileURLToPath(new URL('./memory-steps.mjs', import.meta.url));

function ip(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const tmp = mkdtempSync(join(tmpdir(), 'ccm-memory-bench-'));
try {
  const names = Array.from({ length: n }, (_, i) => `node-${String(i).padStart(5, '0')}`);
  const inventory = writeFleetInventory(join(tmp, 'inventory.yaml'), names, ip);
  for (const root of roots) {
    const cp = await startControlPlane();
    try {
      await createNodes(
        fixtureApi(cp.kubeconfigPath),
        names.map((name, i) => ({
          name,
          providedNodeIP: ip(i),
          addresses: [
            { type: 'InternalIP', address: ip(i) },
            { type: 'Hostname', address: name },
          ],
        })),
        64,
      );
      const out = execFileSync(process.execPath, ['--expose-gc', steps, root, cp.kubeconfigPath, inventory], {
        encoding: 'utf8',
        maxBuffer: 1 << 24,
      });
      const result = JSON.parse(out) as {
        nodes: number;
        reportBytes: number;
        steps: { step: string; heapUsed: number; rss: number; peak: number }[];
      };
      console.log(
        `\n${root}: ${result.nodes} Nodes, Node ${process.version}, report ${mb(result.reportBytes)} MB\n`,
      );
      console.log('| step | heap kept (after GC) | Δ heap | RSS | peak RSS so far | Δ peak |');
      console.log('|---|---:|---:|---:|---:|---:|');
      let previous: (typeof result.steps)[number] | undefined;
      for (const s of result.steps) {
        const dHeap = previous
          ? `${s.heapUsed >= previous.heapUsed ? '+' : ''}${mb(s.heapUsed - previous.heapUsed)}`
          : '';
        const dPeak = previous ? `+${mb(s.peak - previous.peak)}` : '';
        console.log(
          `| ${s.step} | ${mb(s.heapUsed)} MB | ${dHeap} | ${mb(s.rss)} MB | ${mb(s.peak)} MB | ${dPeak} |`,
        );
        previous = s;
      }
    } finally {
      await cp.stop();
    }
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
