/**
 * The README's quick start, as written, on a machine whose own Node is 20 (/usr/bin/node first on
 * PATH): `npm run quickstart`'s script runs (its control plane, and the DigitalOcean simulator with
 * `--cloud digitalocean`), the commands it prints must be the README's, and every README line is run
 * with bash, copied as is, with only the placeholders filled from what the script printed.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { execa, type ResultPromise } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { fixtureApi } from '../controlplane/fixtures.js';
import { holdPort } from '../helpers/port-lock.js';
import { until } from '../helpers/run.js';
import { Terminal } from '../helpers/terminal.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const NODE20_DIR = '/usr/bin';
// tsx's loader in the script's own process: the tsx CLI would add a parent that, on Ctrl-C, waits
// 30 ms for the script to acknowledge the signal and otherwise kills it with status 130 (seen at
// load 9), which says nothing about the quick start.
const tsxLoader = fileURLToPath(new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url));
const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const quickstartScript = fileURLToPath(new URL('../controlplane/quickstart.ts', import.meta.url));

/**
 * Commands as bash reads them: a line ending in ` \` goes on with the next one (the README and the
 * quick start's screen break long commands so, where each chose: the command is the same).
 */
function logical(lines: readonly string[]): string[] {
  const whole: string[] = [];
  let open = false;
  for (const line of lines.map((l) => l.trim())) {
    if (open) whole[whole.length - 1] = `${whole.at(-1)} ${line.replace(/ \\$/, '')}`;
    else whole.push(line.replace(/ \\$/, ''));
    open = line.endsWith(' \\');
  }
  return whole;
}

/** The shell blocks of the README's "Quick start" section, in order, one command a line. */
function quickStartBlocks(): string[][] {
  const readme = readFileSync(`${root}/README.md`, 'utf8');
  const section = readme.split('\n## Quick start')[1]?.split('\n## ')[0] ?? '';
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) =>
    logical((m[1] as string).split('\n').filter((l) => l.trim() !== '')),
  );
}

interface Quickstart {
  kubeconfig: string;
  /** The command lines it printed, indented by two spaces in its output. */
  printed: string[];
  fill(line: string): string;
  stop(): Promise<void>;
}

const started: ResultPromise[] = [];
afterEach(async () => {
  for (const p of started.splice(0)) {
    try {
      if (p.pid) process.kill(-p.pid, 'SIGINT');
    } catch {
      // already ended
    }
    await p.catch(() => {});
  }
});

/** `npm run quickstart [-- --cloud X]`, less its build: the script itself, until it has printed. */
async function quickstart(...args: string[]): Promise<Quickstart> {
  const proc = execa(process.execPath, ['--import', tsxLoader, 'test/controlplane/quickstart.ts', ...args], {
    cwd: root,
    detached: true,
    reject: false,
    buffer: true,
  });
  started.push(proc);
  let out = '';
  proc.stdout?.on('data', (d) => {
    out += String(d);
  });
  await until('the quick start printed its commands', async () => out.includes('Press Ctrl-C'), 120_000);
  const printed = logical(out.split('\n').filter((l) => l.startsWith('  ')));
  const kubeconfig = /export KUBECONFIG=(\S+)/.exec(out)?.[1] as string;
  const url = /simulator answers at (\S+),/.exec(out)?.[1];
  const token = /the token (\S+?)\./.exec(out)?.[1];
  return {
    kubeconfig,
    printed,
    fill: (line) =>
      line
        .replace('<the path it printed>', kubeconfig)
        .replaceAll('<the URL it printed>', url ?? '')
        .replace('<the token it printed>', token ?? ''),
    stop: async () => {
      if (proc.pid) process.kill(-proc.pid, 'SIGINT');
      expect((await proc).exitCode).toBe(0);
    },
  };
}

/** One README line in bash, after the README's two exports, with Node 20 first on PATH. */
function shell(exports: string[], line: string, options: { detached?: boolean } = {}) {
  return execa('bash', ['-c', [...exports, line].join('\n')], {
    cwd: root,
    reject: false,
    env: { PATH: `${NODE20_DIR}:${process.env.PATH}`, HOME: process.env.HOME },
    extendEnv: false,
    stdin: 'ignore',
    timeout: 120_000,
    ...options,
  });
}

/**
 * Starts `ccm run` as the README's line, waits for `npm run quickstart:add -- node worker-3` to be
 * initialised, then Ctrl-C. The line serves on port 10258, as docs-commands.test.ts's lines do: the two
 * files take turns.
 */
async function runAndAddNode(exports: string[], runLine: string, kubeconfig: string, more: string[] = []) {
  const release = await holdPort(10258);
  try {
    return await runAndAddNodeOnPort(exports, runLine, kubeconfig, more);
  } finally {
    release();
  }
}

async function runAndAddNodeOnPort(exports: string[], runLine: string, kubeconfig: string, more: string[]) {
  const run = shell(exports, runLine, { detached: true });
  started.push(run);
  let logs = '';
  run.stderr?.on('data', (d) => {
    logs += String(d);
  });
  run.stdout?.on('data', (d) => {
    logs += String(d);
  });
  await until('ccm run started', async () => logs.includes('started'), 60_000);
  const outputs: string[] = [];
  for (const line of more) {
    const add = await shell(exports, line);
    expect(add.exitCode, `${line}\n${add.stderr}`).toBe(0);
    outputs.push(String(add.stdout));
  }
  const api = fixtureApi(kubeconfig);
  await until('worker-3 initialised by ccm run', async () => {
    const node = await api.readNode({ name: 'worker-3' });
    return !(node.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);
  });
  if (run.pid) process.kill(-run.pid, 'SIGINT'); // a terminal's Ctrl-C reaches the whole group
  const ended = await run;
  expect(ended.exitCode, logs).toBe(0);
  expect(logs).not.toMatch(/Cannot read properties|unsettled/);
  return { logs, outputs };
}

describe("the quick start's own screen", () => {
  it.each([120, 80])(
    'in a %i-column terminal: no command, token or URL is cut at its edge; long commands go on with \\',
    async (width) => {
      const terminal = await Terminal.open(['--cloud', 'digitalocean'], {
        width,
        height: 40,
        program: [process.execPath, '--import', tsxLoader, quickstartScript],
      });
      try {
        await terminal.waitFor('Press Ctrl-C');
        const shown = (await terminal.screen()).split('\n');
        const joined = (await terminal.screen({ joined: true })).split('\n');
        // tmux joins (-J) only the lines the terminal wrapped: none.
        expect(joined.filter((l) => l.length > width)).toEqual([]);
        expect(shown.length).toBe(joined.length);
        const token = /the token (\S+?)\./.exec(joined.join('\n'))?.[1] as string;
        expect(joined.some((l) => l.includes(`'${token}'`))).toBe(true);
        expect(joined.filter((l) => l.endsWith(' \\')).length).toBeGreaterThan(0);
        await terminal.type('C-c');
        expect(await terminal.exit()).toBe(0);
      } finally {
        await terminal.close();
      }
    },
    240_000,
  );
});

describe('the README quick start under Node 20', () => {
  it('cloudlycke: nodes init, nodes list, then ccm run initialising a Node added later', async () => {
    const node20 = await execa(`${NODE20_DIR}/node`, ['--version']);
    expect(node20.stdout).toMatch(/^v20\./);
    const [setup, commands = [], controller = []] = quickStartBlocks();
    expect(setup).toEqual(['npm ci', 'npm run quickstart']);

    const qs = await quickstart();
    const readmeLines = [...commands, ...controller].map(qs.fill);
    expect(qs.printed).toEqual(readmeLines);

    const exports = commands.slice(0, 2).map(qs.fill);
    expect(exports[1]).toBe('export PATH="$PWD/bin:$PATH"');
    const ccmLines = commands.slice(2);
    expect(ccmLines).toHaveLength(4);
    const outputs: string[] = [];
    for (const line of ccmLines) {
      const run = await shell(exports, line);
      expect(run.stderr, line).not.toMatch(/Warning|Cannot read properties|Error/);
      expect(run.exitCode, `${line}\n${run.stderr}`).toBe(0);
      outputs.push(String(run.stdout));
    }
    const [dryRun, init, again, listed] = outputs;
    expect(dryRun).toContain('Dry run, nothing written. 3 Nodes: 3 would initialize;');
    expect(init).toContain('3 Nodes: 3 initialized;');
    expect(JSON.parse(again as string)).toMatchObject({ kubeWrites: 0, summary: { total: 3, unchanged: 3 } });
    expect(listed).toContain('node=worker-2 instance=worker-2 state=running initialised=yes status=ok');

    const [runLine, addNode] = controller;
    expect(runLine).toMatch(/^ccm run /);
    await runAndAddNode(exports, runLine as string, qs.kubeconfig, [addNode as string]);
    await qs.stop();
  }, 300_000);

  it('digitalocean: secret create, doctor, then ccm run with the Secret, a Node and a LoadBalancer Service', async () => {
    const [, commands = [], , digitalocean = []] = quickStartBlocks();
    const qs = await quickstart('--cloud', 'digitalocean');
    const exports = commands.slice(0, 2).map(qs.fill);
    expect(qs.printed).toEqual([...exports, ...digitalocean.map(qs.fill)]);
    const [secretLine, doctorLine, runLine, addNode, addService] = digitalocean.map(qs.fill) as string[];

    const secret = await shell(exports, secretLine as string);
    expect(secret.exitCode, secret.stderr).toBe(0);
    expect(`${secret.stdout}${secret.stderr}`).not.toContain('dop_v1_');
    // What the README says doctor shows on the bare quick start, check by check (off a terminal:
    // `status=fail check=rbac result="…"`).
    const doctor = await shell(exports, doctorLine as string);
    expect(doctor.stdout).toContain('the cloud accepts the credentials');
    const checks = (status: string) =>
      [...doctor.stdout.matchAll(new RegExp(`^status=${status} check=(\\S+) `, 'gm'))]
        .map((m) => m[1])
        .sort();
    expect(checks('fail'), doctor.stdout).toEqual([
      'controller-lease',
      'controller-pods',
      'provider-id',
      'rbac',
    ]);
    expect(checks('warn'), doctor.stdout).toEqual(['kube-controller-manager', 'routes', 'uninitialized']);
    expect(checks('pass'), doctor.stdout).toEqual(
      expect.arrayContaining(['cloud-credentials', 'cloud-listing', 'credentials-secret']),
    );
    expect(doctor.exitCode).toBe(1);
    const readme = readFileSync(`${root}/README.md`, 'utf8');
    for (const check of [...checks('fail'), ...checks('warn'), 'cloud-credentials', 'cloud-listing']) {
      expect(readme.split('### With DigitalOcean')[1]).toContain(`\`${check}\``);
    }

    const { outputs } = await runAndAddNode(exports, runLine as string, qs.kubeconfig, [
      addNode as string,
      addService as string,
    ]);
    expect(outputs[1]).toMatch(/Service default\/web: external address \d+\.\d+\.\d+\.\d+/);
    await qs.stop();
  }, 300_000);
});
