// Where the memory of one `nodes init` pass goes, step by step, in the process that does the work.
// Run by memory.bench.ts as `node --expose-gc memory-steps.mjs <root> <kubeconfig> <inventory>`,
// where <root> is a built checkout (its dist/ and node_modules/), so two builds can be compared.
// After each step: the heap still in use after a full GC (what the step keeps), RSS, and the peak
// RSS so far (VmHWM: what the step needed while it ran). Prints one JSON line.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';

const [root, kubeconfig, inventory] = process.argv.slice(2);
// As the build does (when it has it, in bin/run.js before or in the pass itself now): keep V8's
// young generation at its initial size.
if (
  existsSync(join(root, 'dist', 'cli', 'young-generation.js')) ||
  readFileSync(join(root, 'bin', 'run.js'), 'utf8').includes('--semi-space-growth-factor=1')
) {
  setFlagsFromString('--semi-space-growth-factor=1');
}
const dist = (path) => pathToFileURL(join(root, 'dist', path)).href;
const fromRoot = createRequire(join(root, 'package.json'));
const load = (pkg) => import(pathToFileURL(fromRoot.resolve(pkg)).href);

function proc() {
  const s = readFileSync('/proc/self/status', 'utf8');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(s)?.[1] ?? 0) * 1024;
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

const steps = [];
function mark(step) {
  globalThis.gc();
  globalThis.gc();
  steps.push({ step, heapUsed: process.memoryUsage().heapUsed, ...proc() });
}

mark('node');
await load('@oclif/core');
await import(dist('commands/nodes/init.js'));
mark('oclif + command');
await import(dist('cli/nodes-init.js'));
mark('nodes-init modules');
const { loadKubeConfig } = await import(dist('kube/config.js'));
const { createNodeClient } = await import(dist('kube/nodes.js'));
const pass = await import(dist('controllers/nodes-pass.js'));
const { providerFromFlags } = await import(dist('cli/provider-config.js'));
const kube = createNodeClient(loadKubeConfig({ kubeconfig, env: process.env }));
const provider = await providerFromFlags({ provider: 'cloudlycke', 'cloud-config': inventory }, process.env);
mark('kubeconfig + provider');
const options = { dryRun: false, concurrency: 32, deletionGracePeriodMs: 300_000 };
const state = await pass.readState(kube, provider);
mark('read (Nodes + instance index)');
let plans = pass.planPass(state, provider, options);
mark('plan');
plans = await pass.applyPlans(plans, state, kube, provider, options);
mark('apply');
const json = JSON.stringify(pass.buildReport(provider, plans, state, false), null, 2);
mark('report (JSON text)');
process.stdout.write(`${JSON.stringify({ nodes: state.nodes.length, reportBytes: json.length, steps })}\n`);
process.exit(0);
