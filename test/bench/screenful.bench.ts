/**
 * Proof, not a test: `ccm nodes init` over 5,000 tainted Nodes on the real kube-apiserver, run in
 * a real terminal (tmux, 120 × 40 by default), prints at most a screenful when nothing failed. Runs
 * a first pass (5,000 Nodes initialised) and a second (nothing changes), prints each screen as
 * captured and its line count, and exits 1 if either was taller than the terminal.
 *
 *   npm run bench:screen            # 5,000 Nodes, 120 × 40
 *   npm run bench:screen -- 2000 80 24
 */
import { rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { plural } from '../../src/cli/output/text.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { startControlPlane } from '../controlplane/harness.js';
import { writeInventory } from '../helpers/inventory.js';
import { runInTerminal } from '../helpers/terminal.js';

const [nodes = 5000, width = 120, height = 40] = process.argv.slice(2).map(Number);

function ip(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

const cp = await startControlPlane();
let tooTall = false;
try {
  const names = Array.from({ length: nodes }, (_, i) => `node-${i + 1}`);
  process.stderr.write(`creating ${nodes} tainted Nodes...\n`);
  const api = fixtureApi(cp.kubeconfigPath);
  // In chunks, a chunk again when the loaded API server drops a connection (a Node that made it is a 409).
  for (let i = 0; i < names.length; i += 500) {
    const chunk = names.slice(i, i + 500);
    for (let attempt = 1; ; attempt++) {
      const existing = new Set((await api.listNode()).items.map((n) => n.metadata?.name));
      try {
        await createNodes(
          api,
          chunk.filter((name) => !existing.has(name)).map((name) => ({ name, addresses: [] })),
          16,
        );
        break;
      } catch (err) {
        if (attempt === 5) throw err;
        process.stderr.write(`creating Nodes: ${(err as Error).message}; again\n`);
      }
    }
  }
  const inventory = writeInventory(
    names.map((id, i) => ({ id, addresses: [{ type: 'InternalIP', address: ip(i) }] })),
    { type: 'vbox.vm.1g.2cpu', region: 'virtualbox', zone: 'virtualbox' },
  );
  const args = ['nodes', 'init', '--provider', 'cloudlycke', '--kubeconfig', cp.kubeconfigPath];
  console.log(
    `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, terminal ${width} × ${height}\n`,
  );
  for (const pass of ['first', 'second']) {
    const run = await runInTerminal([...args, '--cloud-config', inventory], { width, height }, 600_000);
    const lines = run.screen.split('\n');
    const widest = Math.max(...lines.map((l) => [...l].length));
    tooTall ||= lines.length > height - 1 || widest > width;
    console.log(
      `${pass} pass: exit ${run.code}, ${plural(lines.length, 'line')} on a ${height}-line terminal, widest ${widest} of ${width} columns`,
    );
    console.log(`\`\`\`\n${run.screen}\n\`\`\`\n`);
  }
  rmSync(dirname(inventory), { recursive: true, force: true });
} finally {
  await cp.stop();
}
process.exit(tooTall ? 1 : 0);
