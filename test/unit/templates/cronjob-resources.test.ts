/**
 * The memory of what `ccm manifests` generates follows the measured figures of docs/benchmarks.md:
 * - the `nodes init` CronJob (issue 6, item 11): the limit holds the largest max RSS of the benchmark
 *   table with 20% to spare, and the request holds the 1,000-Node peak;
 * - the `ccm run` DaemonSet: the request holds the RSS with 5,000 Nodes cached, and the limit is at
 *   least twice that (a relist parses a new listing while the old cache is still held).
 * A new benchmark that outgrows the generated resources fails here.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { renderManifests } from '../../../src/cli/manifests.js';
import { loadProvider } from '../../../src/providers/registry.js';

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const benchmarks = readFileSync(root('docs/benchmarks.md'), 'utf8');

interface Resources {
  requests: { memory: string };
  limits: { memory: string };
}

function bytes(quantity: string): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!m) throw new Error(`unexpected quantity ${quantity}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 ** 3 : 1024 ** 2);
}

function section(start: string, stop: string): string {
  const from = benchmarks.indexOf(start);
  const to = benchmarks.indexOf(stop);
  if (from < 0 || to < from) throw new Error(`docs/benchmarks.md has no ${start} … ${stop} section`);
  return benchmarks.slice(from, to);
}

/** Max RSS (bytes) per row of the `nodes init` benchmark table, by Node count. */
function nodesInitPeaks(): Array<{ nodes: number; rss: number }> {
  return section('<!-- bench -->', '<!-- benchstop -->')
    .split('\n')
    .map((line) => /^\| [^|]+ \| ([\d,]+) \|.*\| (\d+) MB \|$/.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({ nodes: Number(m[1]?.replaceAll(',', '')), rss: Number(m[2]) * 1e6 }));
}

/**
 * RSS (bytes) of `ccm run` with 5,000 Nodes cached, idle, and the Deployment's environment it was
 * measured with, as `BENCH_CCM_AS_DEPLOYED=1 npm run bench:run` prints it. The bench divides VmRSS
 * (kB) by 1024, so its "MB" are MiB.
 */
function runCachedRss(): { rss: number; env: Record<string, string> } {
  const m =
    /^\| RSS of `ccm run` with 5,000 Nodes cached, idle \d+ s, the Deployment's ((?:`[A-Z_]+="[^"]*"` ?)+) \| (\d+) MB/m.exec(
      section('<!-- bench-run -->', '<!-- bench-run-stop -->'),
    );
  if (!m)
    throw new Error("docs/benchmarks.md has no `ccm run` RSS row measured with the Deployment's environment");
  const env = Object.fromEntries(
    [...(m[1] as string).matchAll(/`([A-Z_]+)="([^"]*)"`/g)].map((e) => [e[1], e[2]]),
  );
  return { env, rss: Number(m[2]) * 1024 ** 2 };
}

type Obj = { kind: string; metadata: { name: string }; spec: Record<string, unknown> };
let objects: Obj[];

function find(kind: string, name: string): Obj {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`ccm manifests generated no ${kind} ${name}`);
  return found;
}

beforeAll(async () => {
  objects = renderManifests(await loadProvider('cloudlycke'), {
    image: 'registry.example.com/ccm:test',
    namespace: 'kube-system',
    controllers: '*',
    cronjob: true,
    leaseName: 'cloud-controller-manager',
  }) as unknown as Obj[];
});

describe('the generated nodes-init CronJob memory', () => {
  const resources = (): Resources =>
    (find('CronJob', 'ccm-nodes-init').spec as { jobTemplate: { spec: { template: { spec: PodSpec } } } })
      .jobTemplate.spec.template.spec.containers[0].resources;
  const peaks = nodesInitPeaks();

  it('has a limit above the largest measured peak, with 20% headroom', () => {
    expect(peaks.length).toBeGreaterThan(0);
    const largest = Math.max(...peaks.map((p) => p.rss));
    expect(bytes(resources().limits.memory)).toBeGreaterThanOrEqual(largest * 1.2);
  });

  it('requests at least the 1,000-Node peak', () => {
    const thousand = Math.max(...peaks.filter((p) => p.nodes === 1000).map((p) => p.rss));
    expect(bytes(resources().requests.memory)).toBeGreaterThanOrEqual(thousand);
  });
});

describe('the generated `ccm run` DaemonSet memory', () => {
  const resources = (): Resources =>
    (find('DaemonSet', 'ccm').spec as { template: { spec: PodSpec } }).template.spec.containers[0].resources;

  const env = () =>
    (
      find('DaemonSet', 'ccm').spec as {
        template: { spec: { containers: [{ env: { name: string; value: string }[] }] } };
      }
    ).template.spec.containers[0].env;

  it('runs with the environment the RSS was measured with', () => {
    const measured = Object.fromEntries(
      env()
        .filter((e) => e.name !== 'HOME')
        .map((e) => [e.name, e.value]),
    );
    expect(measured).toEqual(runCachedRss().env);
  });

  it('requests at least the RSS with 5,000 Nodes cached', () => {
    expect(bytes(resources().requests.memory)).toBeGreaterThanOrEqual(runCachedRss().rss);
  });

  it('has a limit of at least twice that RSS', () => {
    expect(bytes(resources().limits.memory)).toBeGreaterThanOrEqual(runCachedRss().rss * 2);
  });
});

type PodSpec = { containers: [{ resources: Resources }] };
