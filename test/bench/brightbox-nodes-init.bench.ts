/**
 * Benchmark: `ccm nodes init --provider brightbox` over N tainted Nodes against the real
 * kube-apiserver, with the Brightbox API simulator holding N servers. Prints a table for the README.
 *
 *   bash .ci/node tsx test/bench/brightbox-nodes-init.bench.ts          # 5,000 Nodes
 *   bash .ci/node tsx test/bench/brightbox-nodes-init.bench.ts 1000     # other sizes
 * Cloud requests are counted by the simulator (token + listing); memory is the CLI's own peak RSS.
 */
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { SIM_CLIENT, startBrightboxSimulator } from '../clouds/brightbox/simulator.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, startControlPlane } from '../controlplane/harness.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

/** The built CLI as test/helpers/cli.ts runs it, with room for a loaded machine (15 minutes). */
async function ccm(args: string[], env: Record<string, string>) {
  const r = await execa(process.execPath, [bin, ...args], {
    reject: false,
    env: { KUBECONFIG: undefined, CCM_PROVIDER: undefined, ...env },
    stdin: 'ignore',
    timeout: 900_000,
  });
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

const sizes = process.argv
  .slice(2)
  .map(Number)
  .filter((n) => n > 0);
const runs = sizes.length > 0 ? sizes : [5000];
const concurrency = process.env.BENCH_CONCURRENCY ?? '32';

function ip(i: number): string {
  return `10.${240 + ((i >> 16) & 7)}.${(i >> 8) & 255}.${i & 255}`;
}

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
  const cp = await startControlPlane();
  const sim = await startBrightboxSimulator();
  try {
    const ids = Array.from({ length: n }, (_, i) => `srv-${i.toString(36).padStart(5, '0')}`);
    ids.forEach((id, i) => {
      sim.addServer({ id, name: `worker-${i}`, zone: i % 2 ? 'gb1-b' : 'gb1-a', ipv4: ip(i) });
    });
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
    await createNodes(
      fixtureApi(cp.kubeconfigPath),
      ids.map((name, i) => ({
        name,
        providedNodeIP: ip(i),
        addresses: [
          { type: 'ExternalIP', address: ip(i) },
          { type: 'Hostname', address: name },
        ],
      })),
      64,
    );
    for (const pass of ['first', 'second']) {
      const before = (await cp.writes(CCM_USER)).length;
      const seen = sim.requests.length;
      const started = performance.now();
      const run = await ccm(
        [
          'nodes',
          'init',
          '--provider',
          'brightbox',
          '--kubeconfig',
          cp.kubeconfigPath,
          '--cloud-api-url',
          sim.url,
          '--concurrency',
          concurrency,
          '--json',
        ],
        { BRIGHTBOX_CLIENT: SIM_CLIENT.id, BRIGHTBOX_CLIENT_SECRET: SIM_CLIENT.secret },
      );
      const seconds = (performance.now() - started) / 1000;
      if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
      const report = JSON.parse(run.stdout);
      const requests = sim.requests.slice(seen).map((r) => `${r.method} ${r.path}`);
      rows.push({
        nodes: n,
        pass,
        seconds,
        writes: (await cp.writes(CCM_USER)).length - before,
        requests: requests.join(', '),
        listingBytes,
        initialized: report.summary.initialized,
        failed: report.summary.failed,
        maxRssMb: Math.round((report.maxRssBytes ?? 0) / 1e6),
      });
      process.stderr.write(`${n} servers, ${pass} pass: ${seconds.toFixed(1)}s\n`);
    }
  } finally {
    await sim.close();
    await cp.stop();
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
