/**
 * Benchmark of `ccm migrate --provider digitalocean` (the built CLI) on a cluster with SERVICES
 * LoadBalancer Services, each with the load balancer DigitalOcean's own controller built for it
 * (seeded as test/integration/migrate-digitalocean.test.ts does, from do/loadbalancers.go). Prints, for
 * the dry run, --yes and --rollback: the time, the Kubernetes writes (the API server's audit log) and
 * the DigitalOcean requests (the simulator's log). Not a test.
 *
 *   npm run bench:migrate
 *
 * DigitalOcean's rate limits (250 a minute, 5,000 an hour per token) are enforced as on the real API;
 * BENCH_RATE_LIMITS=off lifts them (the figures in docs/benchmarks.md before issue 48 were without).
 */

import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { mapLimit } from '../../src/controllers/concurrency.js';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { fixtureApi } from '../controlplane/fixtures.js';
import { CCM_USER, startControlPlane } from '../controlplane/harness.js';
import { lbService, MERGE_PATCH } from '../helpers/services.js';

const SERVICES = Number(process.env.BENCH_SERVICES ?? 300);
const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));

const [cp, sim] = await Promise.all([
  startControlPlane(),
  DigitalOceanSimulator.start(
    process.env.BENCH_RATE_LIMITS === 'off' ? { burstLimitPerMinute: 100_000, limitPerHour: 1_000_000 } : {},
  ),
]);
try {
  const api = fixtureApi(cp.kubeconfigPath);
  await api.createNamespacedSecret({
    namespace: 'kube-system',
    body: { metadata: { name: 'digitalocean' }, stringData: { 'access-token': sim.token } },
  });
  const [droplet] = sim.addDroplets({ name: 'worker-1', region: 'fra1', privateIP: '10.114.0.2' });
  await mapLimit(
    Array.from({ length: SERVICES }, (_, i) => `svc-${i}`),
    16,
    async (name) => {
      const svc = await api.createNamespacedService({ namespace: 'default', body: lbService(name) });
      const uid = svc.metadata?.uid as string;
      const lb = sim.addLoadBalancer({
        name: `a${uid.replace(/-/g, '')}`.slice(0, 32),
        region: 'fra1',
        droplet_ids: [droplet?.id],
        forwarding_rules: [
          {
            entry_protocol: 'tcp',
            entry_port: 80,
            target_protocol: 'tcp',
            target_port: svc.spec?.ports?.[0]?.nodePort,
          },
        ],
        tags: [],
      });
      await api.patchNamespacedService(
        {
          name,
          namespace: 'default',
          body: {
            metadata: {
              finalizers: ['service.kubernetes.io/load-balancer-cleanup'],
              annotations: { 'kubernetes.digitalocean.com/load-balancer-id': lb.id as string },
            },
          },
        },
        MERGE_PATCH,
      );
      await api.patchNamespacedServiceStatus(
        {
          name,
          namespace: 'default',
          body: { status: { loadBalancer: { ingress: [{ ip: lb.ip as string }] } } },
        },
        MERGE_PATCH,
      );
    },
  );
  console.log(
    `ccm migrate --provider digitalocean, ${SERVICES} Services with an official load balancer each`,
  );
  for (const args of [[], ['--yes'], ['--rollback', '--yes']]) {
    const writes0 = (await cp.writes(CCM_USER)).length;
    const calls0 = sim.requests.length;
    const t0 = performance.now();
    const run = await execa(
      process.execPath,
      [
        bin,
        'migrate',
        '--provider',
        'digitalocean',
        '--kubeconfig',
        cp.kubeconfigPath,
        '-o',
        'json',
        ...args,
      ],
      { env: { DO_OVERRIDE_URL: sim.url }, reject: false },
    );
    const ms = performance.now() - t0;
    if (run.exitCode !== 0) throw new Error(`migrate ${args.join(' ')} failed: ${run.stderr}`);
    const result = JSON.parse(run.stdout) as { services: unknown[] };
    const calls = sim.requests.slice(calls0);
    console.log(
      `${(args[0] ?? 'dry run').padEnd(11)} ${(ms / 1000).toFixed(2)} s, ${result.services.length} Services, ` +
        `${(await cp.writes(CCM_USER)).length - writes0} Kubernetes writes, ` +
        `${calls.length} DigitalOcean requests (${calls.filter((r) => r.method !== 'GET').length} writes, ` +
        `${calls.filter((r) => r.status === 429).length} answered 429)`,
    );
  }
} finally {
  await Promise.all([cp.stop(), sim.stop()]);
}
