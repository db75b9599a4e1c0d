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
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { KeyFolder } from '../clouds/triton/keys.js';
import { TritonSim } from '../clouds/triton/server.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, startControlPlane } from '../controlplane/harness.js';

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const runs = sizes.length > 0 ? sizes : [5000];
const concurrency = process.env.BENCH_CONCURRENCY ?? '32';
const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

/** The built CLI, as test/helpers/cli.ts runs it, without its 2-minute limit (a loaded machine is slow). */
async function ccm(args: string[], env: Record<string, string | undefined>) {
  const r = await execa(process.execPath, [bin, ...args], {
    reject: false,
    env: { KUBECONFIG: undefined, CCM_PROVIDER: undefined, ...env },
    extendEnv: true,
    stdin: 'ignore',
    timeout: 30 * 60_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

function ip(i: number): string {
  return `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
}

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
const keys = new KeyFolder();
try {
  const key = keys.make({ type: 'rsa', bits: 2048 });
  for (const n of runs) {
    const [cp, sim] = await Promise.all([startControlPlane(), new TritonSim({ login: 'bench' }).start()]);
    try {
      sim.addKey(key.publicKey);
      const names = Array.from({ length: n }, (_, i) => `node-${String(i).padStart(5, '0')}`);
      names.forEach((name, i) => {
        sim.addMachine({ name, ips: [ip(i)], primaryIp: ip(i) });
      });
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
        const run = await ccm(
          [
            'nodes',
            'init',
            '--provider',
            'triton',
            '--kubeconfig',
            cp.kubeconfigPath,
            '--concurrency',
            concurrency,
            '--json',
          ],
          {
            TRITON_URL: sim.url,
            TRITON_ACCOUNT: 'bench',
            TRITON_KEY_MATERIAL: key.privateKey,
            SSH_AUTH_SOCK: undefined,
          },
        );
        const seconds = (performance.now() - started) / 1000;
        if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
        const report = JSON.parse(run.stdout);
        const byPath = new Map<string, number>();
        for (const r of sim.requests) byPath.set(r.path, (byPath.get(r.path) ?? 0) + 1);
        rows.push({
          nodes: n,
          pass,
          seconds,
          requests: [...byPath]
            .map(([path, count]) => `${count} × ${path.replace('/bench', '/:login')}`)
            .join(', '),
          writes: (await cp.writes(CCM_USER)).length - before,
          initialized: report.summary.initialized,
          failed: report.summary.failed,
          maxRssMb: Math.round((report.maxRssBytes ?? 0) / 1e6),
        });
        process.stderr.write(`${n} machines, ${pass} pass: ${seconds.toFixed(1)}s\n`);
      }
    } finally {
      await Promise.all([cp.stop(), sim.stop()]);
    }
  }
} finally {
  keys.remove();
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
