/**
 * The README's quick start, as written, on a machine whose own Node is 20 (/usr/bin/node first on
 * PATH). `npm run quickstart` builds and starts the control plane; here the same control plane comes
 * from the harness with the same Nodes (quickstart-nodes.ts), and every `./bin/run.js` line of the
 * README's second block is run with bash, copied as is, with KUBECONFIG exported as the README says.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { QUICKSTART_NODES } from '../controlplane/quickstart-nodes.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const NODE20_DIR = '/usr/bin';

/** The shell blocks of the README's "Quick start" section, in order. */
function quickStartBlocks(): string[][] {
  const readme = readFileSync(`${root}/README.md`, 'utf8');
  const section = readme.split('\n## Quick start')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    (m[1] as string).split('\n').filter((l) => l.trim() !== ''),
  );
}

let cp: ControlPlane;

beforeAll(async () => {
  cp = await startControlPlane();
  await createNodes(fixtureApi(cp.kubeconfigPath), QUICKSTART_NODES);
});
afterAll(async () => {
  await cp?.stop();
});

describe('the README quick start under Node 20', () => {
  it('is the two blocks this test covers, and the quick start script prints the same commands', () => {
    const [setup, commands] = quickStartBlocks();
    expect(setup).toEqual(['npm ci', 'npm run quickstart']);
    expect(commands?.[0]).toBe('export KUBECONFIG=<the path it printed>');
    const script = readFileSync(`${root}/test/controlplane/quickstart.ts`, 'utf8');
    for (const line of (commands ?? []).slice(1).filter((l) => !l.endsWith('-o json'))) {
      expect(script).toContain(`  ${line}\n`);
    }
  });

  it('runs every ./bin/run.js line as written: exit 0, no warning, no crash', async () => {
    const node20 = await execa(`${NODE20_DIR}/node`, ['--version']);
    expect(node20.stdout).toMatch(/^v20\./);
    const [, commands = []] = quickStartBlocks();
    const runLines = commands.filter((l) => l.startsWith('./bin/run.js '));
    expect(runLines.length).toBe(4);
    const outputs: string[] = [];
    for (const line of runLines) {
      const script = `export KUBECONFIG=${cp.kubeconfigPath}\n${line}`;
      const run = await execa('bash', ['-c', script], {
        cwd: root,
        reject: false,
        env: { PATH: `${NODE20_DIR}:${process.env.PATH}`, HOME: process.env.HOME },
        extendEnv: false,
        stdin: 'ignore',
        timeout: 120_000,
      });
      expect(run.stderr, line).not.toMatch(/Warning|Cannot read properties|Error/);
      expect(run.exitCode, `${line}\n${run.stderr}`).toBe(0);
      outputs.push(String(run.stdout));
    }
    const [dryRun, init, again, listed] = outputs;
    expect(dryRun).toContain('Dry run, nothing written. 3 Nodes: 3 would initialize;');
    expect(init).toContain('3 Nodes: 3 initialized;');
    expect(JSON.parse(again as string)).toMatchObject({ kubeWrites: 0, summary: { total: 3, unchanged: 3 } });
    expect(listed).toContain('node=worker-2 instance=worker-2 state=running initialised=yes status=ok');
  });
});
