/**
 * Benchmark: `ccm nodes init --provider openstack` over N tainted Nodes and N Nova servers of the
 * OpenStack simulator, against the real kube-apiserver, as the built CLI runs it. It prints the
 * requests the pass sent to the cloud (Keystone tokens, Nova pages) and the CLI's peak RSS.
 *
 *   npm run build && bash .ci/node tsx test/bench/openstack-nodes-init.bench.ts          # 5,000
 *   npm run build && bash .ci/node tsx test/bench/openstack-nodes-init.bench.ts 1000 5000
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, startControlPlane } from '../controlplane/harness.js';

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const runs = sizes.length > 0 ? sizes : [5000];
const concurrency = process.env.BENCH_CONCURRENCY ?? '32';
const example = readFileSync(
  fileURLToPath(new URL('../fixtures/openstack/occm-cloud-config', import.meta.url)),
  'utf8',
);

function ip(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

const rows: string[] = [];
for (const n of runs) {
  const cp = await startControlPlane();
  const sim = await new OpenStackSimulator().start();
  const dir = mkdtempSync(join(tmpdir(), 'ccm-bench-openstack-'));
  try {
    const names = Array.from({ length: n }, (_, i) => `node-${String(i).padStart(5, '0')}`);
    names.forEach((name, i) => {
      sim.addServer({ name, addresses: { private: [{ addr: ip(i) }] } });
    });
    process.stderr.write(`creating ${n} tainted Nodes...\n`);
    await createNodes(
      fixtureApi(cp.kubeconfigPath),
      names.map((name) => ({ name, addresses: [] })),
      64,
    );
    const config = join(dir, 'cloud.conf');
    writeFileSync(config, example.replace('http://192.128.1.15:5000/v3', sim.authUrl), { mode: 0o600 });
    for (const pass of ['first', 'second']) {
      const before = (await cp.writes(CCM_USER)).length;
      const requestsBefore = sim.requests.length;
      const started = performance.now();
      // The test helper's 2-minute limit is too short for 5,000 Nodes on a loaded machine.
      const run = await execa(
        process.execPath,
        [
          fileURLToPath(new URL('../../bin/run.js', import.meta.url)),
          'nodes',
          'init',
          '--provider',
          'openstack',
          '--kubeconfig',
          cp.kubeconfigPath,
          '--cloud-config',
          config,
          '--concurrency',
          concurrency,
          '--json',
        ],
        {
          reject: false,
          stdin: 'ignore',
          timeout: 30 * 60_000,
          env: { KUBECONFIG: undefined, OS_CLOUD: undefined },
        },
      );
      const seconds = (performance.now() - started) / 1000;
      if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
      const report = JSON.parse(run.stdout);
      const writes = (await cp.writes(CCM_USER)).length - before;
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
    await sim.stop();
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
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
