/**
 * Benchmark of load balancers at DigitalOcean's own limits (issue 48): S LoadBalancer Services created
 * at once, then Nodes joining, then every Service deleted, against the real kube-apiserver and the
 * DigitalOcean simulator enforcing DigitalOcean's 250 requests a minute and 5,000 an hour per token
 * (test/clouds/digitalocean/server.ts rateLimit). Each controller runs with its default flags, from a
 * fresh control plane and simulator, alone on them. Not a test: it prints a table for
 * docs/benchmarks.md.
 *
 *   npm run bench:services                           # ccm, S = 100 and 300
 *   BENCH_DO_CCM=/path/to/digitalocean-cloud-controller-manager npm run bench:services
 *                                                     # and DigitalOcean's own controller beside it
 *   BENCH_SERVICES="100" BENCH_NODES=20 BENCH_JOIN=5  # other sizes
 *
 * BENCH_DO_CCM is a binary built by the reader from DigitalOcean's repository (its Go module is not
 * served by the Go module proxy here); nothing of it is in this repository. Both get the same
 * environment, the variables DigitalOcean's controller reads: DO_ACCESS_TOKEN, DO_OVERRIDE_URL, REGION.
 *
 * The floor of a phase is the earliest the cloud's limits let its last necessary request through,
 * given what was sent in the hour before: the necessary requests are one create per Service and one
 * listing page after them (the status), one change per load balancer, one delete per load balancer.
 */
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { CoreV1Api } from '@kubernetes/client-node';
import { mapLimit } from '../../src/controllers/concurrency.js';
import {
  type DigitalOceanSimulator,
  DigitalOceanSimulator as Simulator,
} from '../clouds/digitalocean/server.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { mostInAnyWindow } from '../helpers/rate-windows.js';
import { spawnCcmRun, terminate } from '../helpers/run.js';

const SIZES = (process.env.BENCH_SERVICES ?? '100 300').split(' ').filter(Boolean).map(Number);
/** Up to 240 Nodes in all (their addresses are one /24 each). */
const NODES = Number(process.env.BENCH_NODES ?? 20);
const JOIN = Number(process.env.BENCH_JOIN ?? 5);
const DO_CCM = process.env.BENCH_DO_CCM;
const REGION = 'fra1';
const NS = 'default';
/** DigitalOcean's published limits (the OpenAPI document's "Rate Limit"). */
const LIMITS = [
  { windowMs: 60_000, max: 250 },
  { windowMs: 3_600_000, max: 5000 },
];
const PHASE_TIMEOUT_MS = 1_500_000;

interface Controller {
  name: string;
  start(cp: ControlPlane, sim: DigitalOceanSimulator): Promise<{ stop(): Promise<void> }>;
}

const env = (sim: DigitalOceanSimulator) => ({
  ...process.env,
  DO_ACCESS_TOKEN: sim.token,
  DO_OVERRIDE_URL: sim.url,
  REGION,
});

const ccm: Controller = {
  name: 'ccm',
  start: (cp, sim) =>
    spawnCcmRun(
      ['--provider=digitalocean', `--kubeconfig=${cp.kubeconfigPath}`, '--log-level=warn'],
      env(sim),
    ),
};

const official = (bin: string): Controller => ({
  name: "DigitalOcean's controller v0.1.68",
  async start(cp, sim) {
    const child = spawn(
      bin,
      [`--kubeconfig=${cp.kubeconfigPath}`, '--leader-elect=false', '--secure-port=0', '--v=1'],
      { stdio: ['ignore', 'ignore', 'ignore'], env: env(sim) },
    );
    return { stop: () => terminate(child, 'digitalocean-cloud-controller-manager') };
  },
});

/**
 * Seconds after `from` at which the last of `n` more requests can arrive at the earliest, each
 * within every limit's window given the requests `before` (arrival times, ascending).
 */
export function floorSeconds(before: readonly number[], n: number, from: number): number {
  const sent = [...before];
  let t = from;
  for (let i = 0; i < n; i++) {
    for (;;) {
      const wait = Math.max(
        0,
        ...LIMITS.map((l) => {
          const inWindow = sent.filter((x) => x > t - l.windowMs);
          return inWindow.length < l.max ? 0 : (inWindow[inWindow.length - l.max] as number) + l.windowMs - t;
        }),
      );
      if (wait <= 0) break;
      t += wait;
    }
    sent.push(t);
  }
  return (t - from) / 1000;
}

function operationOf(method: string, url: string): string {
  const path = (url.split('?')[0] ?? '').replace(/\/[0-9a-f-]{36}|\/\d+/g, '/{id}');
  return `${method} ${path}`;
}

interface Phase {
  seconds: number;
  /** It did not end within PHASE_TIMEOUT_MS. */
  gaveUp?: boolean;
  floor: number;
  requests: number;
  rateLimited: number;
  byOperation: Record<string, number>;
}

function phaseOf(
  sim: DigitalOceanSimulator,
  from: number,
  ended: number,
  necessary: number,
  done: unknown = true,
): Phase {
  const all = sim.requests.filter((r) => r.at >= from && r.at <= ended);
  const byOperation: Record<string, number> = {};
  for (const r of all) {
    const op = operationOf(r.method, r.url);
    byOperation[op] = (byOperation[op] ?? 0) + 1;
  }
  const before = sim.requests.filter((r) => r.at < from).map((r) => r.at);
  return {
    seconds: (ended - from) / 1000,
    ...(done ? {} : { gaveUp: true }),
    floor: floorSeconds(before, necessary, from),
    requests: all.length,
    rateLimited: all.filter((r) => r.status === 429).length,
    byOperation,
  };
}

/** `fn`'s first truthy answer, asked every `everyMs` (a listing of 300 Services is not asked 20 times a second). */
async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs: number,
  everyMs = 200,
): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) {
      if (what === 'the controller reaches the cloud') throw new Error(`timed out waiting for ${what}`);
      console.error(`gave up waiting for ${what} after ${timeoutMs / 1000} s`);
      return undefined;
    }
    await delay(everyMs);
  }
}

const balancers = (sim: DigitalOceanSimulator) => [...sim.loadBalancers.values()];

async function round(controller: Controller, services: number) {
  const cp = await startControlPlane();
  const sim = await Simulator.start();
  const api: CoreV1Api = fixtureApi(cp.kubeconfigPath);
  let running: { stop(): Promise<void> } | undefined;
  try {
    const droplets = sim.addDroplets(
      ...Array.from({ length: NODES + JOIN }, (_, i) => ({
        name: `node-${i}`,
        region: REGION,
        privateIP: `10.114.0.${i + 10}`,
        publicIP: `198.51.100.${i + 10}`,
      })),
    );
    // As a kubelet and a cloud controller leave them: DigitalOcean's own takes only Nodes with an
    // ExternalIP as backends of its default (REGIONAL_NETWORK) load balancers (do/loadbalancers.go).
    const node = (i: number) => ({
      name: `node-${i}`,
      providerID: `digitalocean://${droplets[i]?.id}`,
      tainted: false,
      addresses: [
        { type: 'InternalIP', address: `10.114.0.${i + 10}` },
        { type: 'ExternalIP', address: `198.51.100.${i + 10}` },
      ],
    });
    await createNodes(
      api,
      Array.from({ length: NODES }, (_, i) => node(i)),
    );
    running = await controller.start(cp, sim);
    const firstRequest = await until(
      'the controller reaches the cloud',
      async () => sim.requests[0]?.at,
      120_000,
      50,
    );
    // The start's own requests leave the minute's window first, so each controller meets the same limits.
    await delay(Math.max(0, (firstRequest ?? 0) + 61_000 - Date.now()));

    // 1. S Services at once.
    const names = Array.from({ length: services }, (_, i) => `svc-${i}`);
    const created = Date.now();
    await mapLimit(names, 32, (name) =>
      api.createNamespacedService({
        namespace: NS,
        body: {
          metadata: { name },
          spec: { type: 'LoadBalancer', ports: [{ port: 80, targetPort: 8080 }], selector: { app: name } },
        },
      }),
    );
    const allIPs = await until(
      `all ${services} Services have an IP`,
      async () =>
        (await api.listNamespacedService({ namespace: NS })).items.filter(
          (s) => s.status?.loadBalancer?.ingress?.[0]?.ip,
        ).length === services,
      PHASE_TIMEOUT_MS,
      1000,
    );
    const create = phaseOf(sim, created, Date.now(), services + Math.ceil(services / 200), allIPs);

    // 2. Nodes join: every load balancer gets their droplets.
    const joining = Array.from({ length: JOIN }, (_, i) => node(NODES + i));
    const joined = Date.now();
    await createNodes(api, joining);
    const joinIds = joining.map((n) => Number(n.providerID.split('//')[1]));
    const allJoined = await until(
      `every load balancer has the ${JOIN} new Nodes`,
      async () =>
        balancers(sim).length === services &&
        balancers(sim).every((lb) => joinIds.every((id) => (lb.droplet_ids as number[]).includes(id))),
      PHASE_TIMEOUT_MS,
      500,
    );
    const join = phaseOf(sim, joined, Date.now(), services, allJoined);

    // 3. Every Service deleted: every load balancer goes, and so does every Service (its finalizer).
    const deleting = Date.now();
    await mapLimit(names, 32, (name) => api.deleteNamespacedService({ name, namespace: NS }));
    const allGone = await until(
      'every load balancer and Service is gone',
      async () =>
        balancers(sim).length === 0 && (await api.listNamespacedService({ namespace: NS })).items.length <= 1,
      PHASE_TIMEOUT_MS,
      500,
    );
    const remove = phaseOf(sim, deleting, Date.now(), services, allGone);
    const times = sim.requests.map((r) => r.at).sort((a, b) => a - b);
    return {
      create,
      join,
      remove,
      mostInMinute: mostInAnyWindow(times, 60_000),
      rateLimited: sim.requests.filter((r) => r.status === 429).length,
    };
  } finally {
    await running?.stop();
    await sim.stop();
    await cp.stop();
  }
}

/** A phase's time and its floor; one given up on says so. */
const time = (p: Phase) => `${p.gaveUp ? 'over ' : ''}${p.seconds.toFixed(1)} s (${p.floor.toFixed(1)} s)`;

const ops = (p: Phase) =>
  Object.entries(p.byOperation)
    .sort((a, b) => b[1] - a[1])
    .map(([op, n]) => `${op} ${n}`)
    .join(', ');

async function main() {
  const controllers = [ccm, ...(DO_CCM ? [official(DO_CCM)] : [])];
  console.log(
    '| Services | controller | every IP (floor) | requests | 429s | Nodes join (floor) | delete all (floor) | 429s in all | most in a minute |',
  );
  console.log('|---:|---|---:|---:|---:|---:|---:|---:|---:|');
  const details: string[] = [];
  for (const services of SIZES) {
    for (const controller of controllers) {
      const r = await round(controller, services);
      console.log(
        `| ${services} | ${controller.name} | ${time(r.create)} | ${r.create.requests} | ${r.create.rateLimited} | ${time(r.join)} | ${time(r.remove)} | ${r.rateLimited} | ${r.mostInMinute} |`,
      );
      details.push(
        `${services}, ${controller.name}: create: ${ops(r.create)}; join: ${ops(r.join)}; delete: ${ops(r.remove)}`,
      );
      if (process.env.BENCH_VERBOSE) console.error(details.at(-1));
    }
  }
  console.log(`\n${details.join('\n')}`);
  console.log(
    `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, ${NODES} Nodes + ${JOIN} joining, ${loadavg()[0]?.toFixed(1)} load now`,
  );
}

await main();
