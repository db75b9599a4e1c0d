/**
 * Benchmark of the service controller: 500 LoadBalancer Services created at once against the real
 * kube-apiserver, `ccm run --controllers service` (the built CLI, Cloudlycke's address pool as the
 * cloud). Prints, for each --concurrent-service-syncs, the time until every Service has its ingress,
 * Kubernetes writes and load balancer calls per Service (ccm's own metrics). Not a test.
 *
 *   npm run bench:services
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { mapLimit } from '../../src/controllers/concurrency.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { spawnCcmRun, until } from '../helpers/run.js';

const SERVICES = 500;

async function lbCalls(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  return [...text.matchAll(/^ccm_cloud_requests_total\{[^}]*operation="lb_[a-z_]+"[^}]*\} (\d+)/gm)].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
}

async function run(cp: ControlPlane, api: CoreV1Api, inventory: string, syncs: number) {
  const names = Array.from({ length: SERVICES }, (_, i) => `bench-${syncs}-${i}`);
  const ccm = await spawnCcmRun([
    '--provider=cloudlycke',
    `--kubeconfig=${cp.kubeconfigPath}`,
    `--cloud-config=${inventory}`,
    '--controllers=service',
    `--concurrent-service-syncs=${syncs}`,
    '--log-level=warn',
    ...(process.env.BENCH_CCM_ARGS?.split(' ').filter(Boolean) ?? []),
  ]);
  const writesBefore = (await cp.writes(CCM_USER)).length;
  const started = performance.now();
  await mapLimit(names, 32, (name) =>
    api.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name },
        spec: { type: 'LoadBalancer', ports: [{ port: 80 }], selector: { app: name } },
      },
    }),
  );
  const created = performance.now() - started;
  await until(
    'every Service has its ingress',
    async () => {
      const list = await api.listNamespacedService({ namespace: 'default' });
      const ready = list.items.filter(
        (s) => s.metadata?.name?.startsWith(`bench-${syncs}-`) && s.status?.loadBalancer?.ingress?.length,
      );
      return ready.length === SERVICES;
    },
    600_000,
  );
  const seconds = (performance.now() - started) / 1000;
  const writes = (await cp.writes(CCM_USER)).length - writesBefore;
  const calls = await lbCalls(ccm.url);
  await ccm.stop();
  // Clean up for the next round without ccm: its finalizer is taken off by hand, then the Service goes.
  await mapLimit(names, 32, async (name) => {
    await api.patchNamespacedService(
      { name, namespace: 'default', body: { metadata: { finalizers: null } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await api.deleteNamespacedService({ name, namespace: 'default' });
  });
  return { seconds, created: created / 1000, writes, calls };
}

async function main() {
  const cp = await startControlPlane();
  const dir = mkdtempSync(join(tmpdir(), 'ccm-services-bench-'));
  const api = fixtureApi(cp.kubeconfigPath);
  try {
    const inventory = join(dir, 'inventory.yaml');
    const ids = Array.from({ length: 20 }, (_, i) => `n${i}`);
    writeFileSync(
      inventory,
      stringify({ loadBalancerPool: '10.100.0.0/21', instances: ids.map((id) => ({ id })) }),
    );
    await createNodes(
      api,
      ids.map((name) => ({ name, providerID: `cloudlycke://${name}`, tainted: false })),
    );
    console.log('| measurement | time | per Service |');
    console.log('|---|---|---|');
    // BENCH_SYNCS="1 8" (default) and BENCH_CCM_ARGS (e.g. "--cloud-qps=50 --cloud-burst=50") vary a run.
    for (const syncs of (process.env.BENCH_SYNCS ?? '1 8').split(' ').map(Number)) {
      const r = await run(cp, api, inventory, syncs);
      // Each round is printed as soon as it is measured.
      console.log(
        `| ${SERVICES} Services at once, --concurrent-service-syncs ${syncs} ${process.env.BENCH_CCM_ARGS ?? '(--cloud-qps 1, the default)'} | ${r.seconds.toFixed(1)} s until all have ingress (creating them took ${r.created.toFixed(1)} s) | ${(r.writes / SERVICES).toFixed(1)} Kubernetes writes and ${(r.calls / SERVICES).toFixed(1)} load balancer calls per Service |`,
      );
    }
  } finally {
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, 20 Nodes, ${loadavg()[0]?.toFixed(1)} load now`,
  );
}

await main();
