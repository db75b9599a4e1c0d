/**
 * Benchmark of the route controller: `ccm run --controllers route` (the built CLI, a separate process)
 * against the real kube-apiserver of the tests and the OpenStack simulator's Neutron. Not a test: it
 * prints a table for docs/routes.md.
 *
 *   npm run bench:routes
 *
 * 1,000 Nodes with podCIDRs (and their Neutron ports) exist before ccm starts; measured: the time
 * from start until every Node shows NetworkUnavailable=False, the HTTP calls to Neutron of that first
 * pass, then the calls of idle passes (nothing missing: the listings alone) and of a pass after 10
 * Nodes are deleted. The cloud budget is raised (--cloud-qps 1000) so that the figure is the
 * controller's, not the default budget's (1 request a second: see docs/routes.md).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OpenStackSimulator } from '../clouds/openstack/simulator.js';
import { fixtureApi, nodeObject } from '../controlplane/fixtures.js';
import { startControlPlane } from '../controlplane/harness.js';
import { freePort, until } from '../helpers/run.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const N = Number(process.env.BENCH_NODES ?? 1000);
const PERIOD = '2s';
const nodeIP = (i: number) => `172.16.${(i + 2) >> 8}.${(i + 2) & 255}`;
const podCIDR = (i: number) => `10.${64 + (i >> 8)}.${i & 255}.0/24`;

const out: string[] = [];
const say = (line: string) => {
  out.push(line);
  process.stderr.write(`${line}\n`);
};

async function mapLimit<T>(items: T[], limit: number, fn: (item: T, i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i] as T, i);
      }
    }),
  );
}

const [cp, sim] = await Promise.all([startControlPlane(), new OpenStackSimulator().start()]);
const api = fixtureApi(cp.kubeconfigPath);
const conf = join(tmpdir(), `ccm-routes-bench-${process.pid}.conf`);
let child: ChildProcess | undefined;
process.on('exit', () => {
  child?.kill('SIGKILL');
  rmSync(conf, { force: true });
});

try {
  sim.routing.maxRoutes = N + 100;
  const router = sim.routing.addRouter({ subnets: ['172.16.0.0/16'], ips: ['172.16.0.1'] });
  writeFileSync(
    conf,
    `[Global]\nauth-url=${sim.authUrl}\nusername=admin\npassword=passw0rd\nregion=RegionOne\n[Route]\nrouter-id=${router.id}\n`,
  );
  const indexes = Array.from({ length: N }, (_, i) => i);
  const ports = indexes.map((i) => sim.routing.addPort({ ip: nodeIP(i) }));
  // Each port's server, named as its Node: ccm routes only to the server of the Node's name.
  for (const i of indexes)
    sim.addServer({ id: ports[i]?.device_id, name: `node-${String(i).padStart(5, '0')}` });
  await mapLimit(indexes, 32, async (i) => {
    const node = nodeObject({
      name: `node-${String(i).padStart(5, '0')}`,
      tainted: false,
      addresses: [{ type: 'InternalIP', address: nodeIP(i) }],
      providerID: `openstack:///${ports[i]?.device_id}`,
    });
    await api.createNode({
      body: { ...node, spec: { ...node.spec, podCIDR: podCIDR(i), podCIDRs: [podCIDR(i)] } },
    });
  });

  const neutron = () => sim.requests.filter((r) => r.path.startsWith('/network/'));
  const byKind = (list: ReturnType<typeof neutron>) => {
    const counts = new Map<string, number>();
    for (const r of list) {
      const kind = `${r.method} ${r.path
        .replace(/\?.*/, '')
        .replace(/[0-9a-f-]{36}/g, '{id}')
        .replace(/tags\/.*/, 'tags')}`;
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
    }
    return [...counts].map(([k, v]) => `${v} × ${k}`).join(', ');
  };
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  sim.requests.length = 0;
  const t0 = performance.now();
  child = spawn(
    process.execPath,
    [
      bin,
      'run',
      '--provider',
      'openstack',
      '--kubeconfig',
      cp.kubeconfigPath,
      '--cloud-config',
      conf,
      '--controllers',
      'route',
      '--cluster-cidr',
      '10.64.0.0/10',
      '--cluster-name',
      'bench',
      `--route-reconciliation-period=${PERIOD}`,
      '--cloud-qps',
      '1000',
      '--cloud-burst',
      '100',
      '--leader-elect=false',
      '--plain-http',
      `--secure-port=${port}`,
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const created = async () =>
    (await api.listNode()).items.filter((n) =>
      n.status?.conditions?.some((c) => c.type === 'NetworkUnavailable' && c.reason === 'RouteCreated'),
    ).length;
  await until('every Node NetworkUnavailable=False', async () => (await created()) === N, 900_000);
  const allMs = performance.now() - t0;
  const first = neutron();
  const metric = async (name: string, labels: string) => {
    const text = await (await fetch(`${url}/metrics`)).text();
    return [...text.matchAll(new RegExp(`^${name}\\{${labels}\\} (\\S+)`, 'gm'))].reduce(
      (n, m) => n + Number(m[1]),
      0,
    );
  };
  const passes = () => metric('ccm_reconcile_total', '[^}]*controller="route"[^}]*');

  // Idle passes: nothing missing, nothing to delete.
  const idleFrom = sim.requests.length;
  const p0 = await passes();
  await until('5 idle passes', async () => (await passes()) >= p0 + 5, 60_000);
  const idlePasses = (await passes()) - p0;
  const idleCalls = sim.requests.slice(idleFrom).filter((r) => r.path.startsWith('/network/'));

  // 10 Nodes deleted: one pass deletes their routes.
  const delFrom = sim.requests.length;
  await mapLimit(indexes.slice(0, 10), 10, async (i) => {
    await api.deleteNode({ name: `node-${String(i).padStart(5, '0')}` });
  });
  await until(
    '10 routes deleted, with their address pairs and tags',
    async () =>
      router.routes.length === N - 10 &&
      ports.slice(0, 10).every((p) => p.tags.length === 0 && p.allowed_address_pairs.length === 0),
    60_000,
  );
  const delCalls = sim.requests.slice(delFrom).filter((r) => r.path.startsWith('/network/'));

  say(`\nRoute controller, ${N} Nodes with podCIDRs, OpenStack simulator (Neutron), --cloud-qps 1000`);
  say(`machine: ${cpus().length} cores, load ${loadavg()[0]?.toFixed(1)}`);
  say('| measure | value |');
  say('|---|---|');
  say(`| ccm start → all ${N} Nodes NetworkUnavailable=False | ${(allMs / 1000).toFixed(1)} s |`);
  say(`| Neutron calls until then | ${first.length}: ${byKind(first)} |`);
  say(
    `| Neutron calls per idle pass (${idlePasses} passes) | ${(idleCalls.length / idlePasses).toFixed(1)}: ${byKind(idleCalls)} |`,
  );
  say(`| Neutron calls to delete 10 routes of 10 deleted Nodes | ${delCalls.length}: ${byKind(delCalls)} |`);
  process.stdout.write(`${out.join('\n')}\n`);
} finally {
  child?.kill('SIGTERM');
  await Promise.all([cp.stop(), sim.stop()]);
}
