/**
 * Start-up of the built CLI against a bare Node start, on the Node that runs this file (the Node 24
 * of .ci/node). Not a test: it prints a table for the README (Start-up).
 *
 *   npm run bench:startup            (or, built: bash .ci/node tsx test/bench/startup.bench.ts [rounds])
 *
 * "--help" is each command's help; "start" runs the command up to its first configuration error
 * (a kubeconfig that does not exist), which loads everything the command imports before it reads;
 * `manifests` runs whole. Every round runs every case once, in a new random order, so that a machine
 * that slows down or speeds up during the run moves all cases alike (a shared 2-core machine drifts
 * by ±20% within minutes; hyperfine, one case after the other, turned that drift into the ratios).
 * Three rounds warm the disk cache and Node's compile cache first and are not counted.
 */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { percentile } from '../helpers/stats.js';

const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
const rounds = Number(process.argv[2] ?? 40);
const bad = ['--kubeconfig', '/nonexistent/kubeconfig'];
const cases: [name: string, args: string[]][] = [
  ['node -e 0', ['-e', '0']],
  ['ccm --help', [bin, '--help']],
  ['ccm nodes init --help', [bin, 'nodes', 'init', '--help']],
  ['ccm nodes list --help', [bin, 'nodes', 'list', '--help']],
  ['ccm doctor --help', [bin, 'doctor', '--help']],
  ['ccm run --help', [bin, 'run', '--help']],
  ['ccm secret create --help', [bin, 'secret', 'create', '--help']],
  ['ccm cluster prepare --help', [bin, 'cluster', 'prepare', '--help']],
  ['ccm manifests --help', [bin, 'manifests', '--help']],
  ['start: nodes init', [bin, 'nodes', 'init', '--provider', 'cloudlycke', ...bad]],
  ['start: nodes list', [bin, 'nodes', 'list', '--provider', 'cloudlycke', ...bad]],
  ['start: doctor', [bin, 'doctor', ...bad]],
  ['start: run', [bin, 'run', '--provider', 'cloudlycke', ...bad]],
  ['start: cluster prepare', [bin, 'cluster', 'prepare', '--provider', 'cloudlycke', ...bad]],
  ['start: secret create', [bin, 'secret', 'create', '--provider', 'digitalocean', '--dry-run', ...bad]],
  [
    'start: manifests',
    [bin, 'manifests', '--provider', 'digitalocean', '--image', 'registry.example.com/ccm:0.1.0'],
  ],
];

function once(args: string[]): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(process.execPath, args, { stdio: 'ignore' });
  if (result.error) throw result.error;
  return Number(process.hrtime.bigint() - started) / 1e6;
}

function shuffled<T>(items: readonly T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

const median = (xs: number[]): number => percentile(xs, 50);

const times = new Map<string, number[]>(cases.map(([name]) => [name, []]));
for (let round = -3; round < rounds; round++) {
  for (const [name, args] of shuffled(cases)) {
    const ms = once(args);
    if (round >= 0) times.get(name)?.push(ms);
  }
}

const base = median(times.get('node -e 0') ?? []);
console.log(
  `Node ${process.versions.node}, ${rounds} rounds, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}, ${cpus().length} CPUs\n`,
);
console.log('| command | median | × bare node |\n|---|---:|---:|');
let worst = 0;
for (const [name] of cases) {
  const m = median(times.get(name) ?? []);
  worst = Math.max(worst, m / base);
  console.log(`| \`${name}\` | ${m.toFixed(0)} ms | ${(m / base).toFixed(1)}× |`);
}
console.log(`\nslowest: ${worst.toFixed(2)}× a bare Node start (target ≤ 3×)`);
