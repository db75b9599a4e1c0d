/**
 * What every cloud's `nodes init` benchmark shares: for each size (the command line's numbers,
 * default 5,000) a cloud world of N instances (test/helpers/cloud-world.ts) and N tainted Nodes,
 * two passes of the built CLI (a separate process, as a CronJob runs it, without the tests'
 * 2-minute cap: a busy machine is slow), then one Markdown table for the README. A cloud's
 * benchmark adds only its own columns, read from its simulator after each pass.
 */
import { cpus, loadavg } from 'node:os';
import { createNodes } from '../controlplane/fixtures.js';
import {
  type CliRun,
  type CloudName,
  type CloudWorld,
  cloudWorld,
  type WorldOptions,
} from '../helpers/cloud-world.js';

export interface Pass {
  nodes: number;
  pass: 'first' | 'second';
  run: CliRun;
  /** The CLI's --json report. */
  report: { summary: { initialized: number; failed: number }; maxRssBytes?: number };
}

export interface NodesInitBenchmark<C extends CloudName> {
  /** The first column's title, e.g. "Droplets = Nodes". */
  what: string;
  world?: WorldOptions;
  /** Titles of the cloud's own columns, after the wall time. */
  columns: string[];
  /** Once the Nodes exist, before the first pass. */
  prepare?(world: CloudWorld<C>): Promise<void>;
  /** Before each pass (e.g. the simulator's request log emptied). */
  beforePass?(world: CloudWorld<C>): void;
  /** The cloud's cells for a pass; throws when the pass did what it must not. */
  cells(world: CloudWorld<C>, pass: Pass): string[];
}

export async function benchmarkNodesInit<C extends CloudName>(
  cloud: C,
  bench: NodesInitBenchmark<C>,
): Promise<void> {
  const sizes = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => n > 0);
  const concurrency = process.env.BENCH_CONCURRENCY ?? '32';
  const rows: string[] = [];
  for (const n of sizes.length > 0 ? sizes : [5000]) {
    const world = await cloudWorld(cloud, { ...bench.world, instances: n });
    try {
      process.stderr.write(`creating ${n} tainted Nodes...\n`);
      await createNodes(world.api, world.nodes, 64);
      await bench.prepare?.(world);
      for (const pass of ['first', 'second'] as const) {
        bench.beforePass?.(world);
        const run = await world.ccm(['nodes', 'init', '--concurrency', concurrency, '--json'], {
          timeoutMs: 30 * 60_000,
          // BENCH_NODE_OPTIONS: Node flags for the CLI, to compare heap settings.
          env: { NODE_OPTIONS: process.env.BENCH_NODE_OPTIONS },
        });
        if (run.exitCode !== 0) throw new Error(`nodes init exited ${run.exitCode}: ${run.stderr}`);
        const report = JSON.parse(run.stdout) as Pass['report'];
        const cells = bench.cells(world, { nodes: n, pass, run, report });
        rows.push(
          `| ${[
            n.toLocaleString('en'),
            pass,
            `${run.seconds.toFixed(1)} s`,
            ...cells,
            run.writes.length.toLocaleString('en'),
            report.summary.initialized.toLocaleString('en'),
            report.summary.failed,
            `${Math.round((report.maxRssBytes ?? 0) / 1e6)} MB`,
          ].join(' | ')} |`,
        );
        process.stderr.write(`${n} Nodes, ${pass} pass: ${run.seconds.toFixed(1)}s\n`);
      }
    } finally {
      await world.cleanup();
    }
  }
  console.log(
    `\n${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, --concurrency ${concurrency}, load average ${loadavg()[0]?.toFixed(1)} at the end\n`,
  );
  const columns = [
    bench.what,
    'pass',
    'wall time',
    ...bench.columns,
    'Kubernetes writes',
    'initialised',
    'failed',
    'max RSS',
  ];
  console.log(`| ${columns.join(' | ')} |`);
  console.log(`|${columns.map((c) => (c === 'pass' ? '---' : '---:')).join('|')}|`);
  for (const row of rows) console.log(row);
}
