/**
 * What `ccm nodes init` prints, from the built CLI against a real kube-apiserver: a mixed pass
 * (initialised, updated, deleted, unchanged, failed, skipped) in each view off a terminal, and in a
 * real terminal (tmux): a screenful at most when nothing failed, failures last and in colour.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createNodes } from '../controlplane/fixtures.js';
import { ccm } from '../helpers/cli.js';
import { CLOUDLYCKE_DEFAULTS as DEFAULTS, useCloudWorld } from '../helpers/cloud-world.js';
import { writeInventory } from '../helpers/inventory.js';
import { runInTerminal } from '../helpers/terminal.js';

const ESC = '\u001b[';

// Every Node deleted before each test.
const world = useCloudWorld('cloudlycke');
const made: string[] = [];

afterAll(() => {
  for (const path of made) rmSync(path, { recursive: true, force: true });
});

function inventory(...args: Parameters<typeof writeInventory>): string {
  const path = writeInventory(...args);
  made.push(dirname(path));
  return path;
}

/** One Node of each result; names whose text order differs from their natural order. */
async function mixedCluster(): Promise<string> {
  const ip = (n: number) => `192.168.56.${n}`;
  await createNodes(world.api, [
    { name: 'node-1' },
    {
      name: 'node-2',
      providerID: 'cloudlycke://node-2',
      tainted: false,
      addresses: [{ type: 'InternalIP', address: '10.9.9.2' }],
    },
    {
      name: 'node-3',
      providerID: 'cloudlycke://node-3',
      tainted: false,
      addresses: [
        { type: 'InternalIP', address: ip(3) },
        { type: 'Hostname', address: 'node-3' },
      ],
    },
    { name: 'node-4', providedNodeIP: '10.9.9.4' },
    { name: 'node-10', providerID: 'cloudlycke://node-10', tainted: false, ready: false },
    { name: 'node-20' },
    { name: 'metal-1', providerID: 'baremetal-7', tainted: false },
  ]);
  return inventory(
    [1, 2, 3, 4].map((n) => ({ id: `node-${n}`, addresses: [{ type: 'InternalIP', address: ip(n) }] })),
    DEFAULTS,
  );
}

function args(inv: string, ...extra: string[]): string[] {
  return world.args(['nodes', 'init', '--deletion-grace-period', '0s', ...extra], ['--cloud-config', inv]);
}

const withoutTime = (text: string) => text.replace(/, \d+\.\ds$/m, ', <time>');

describe('a mixed pass, off a terminal', () => {
  it('prints the summary line and one logfmt line per changed or failed Node, no colour, exit 1', async () => {
    const inv = await mixedCluster();
    const run = await ccm(args(inv));
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(1);
    await expect(withoutTime(run.stdout)).toMatchFileSnapshot('./__snapshots__/nodes-init-output/lines.txt');
    const lines = run.stdout.trimEnd().split('\n');
    // 7 writes: the deletion is recorded in the brake's record before its DELETE (docs/nodes.md).
    expect(lines[0]).toMatch(
      /^7 Nodes: 1 initialized, 1 updated, 1 deleted, 2 failed, 1 unchanged, 1 skipped; 7 Kubernetes writes, 2 cloud calls, \d+\.\ds$/,
    );
    expect(lines.slice(1).map((l) => l.split(' ')[0])).toEqual([
      'node=node-1',
      'node=node-2',
      'node=node-10',
      'node=node-4',
      'node=node-20',
    ]);
    expect(run.stdout).not.toContain(ESC);
    expect(run.stdout).not.toMatch(/[✔✖⠋]/);
  });

  it('-o name, -o yaml, --json and --quiet', async () => {
    const inv = await mixedCluster();
    const dry = (...extra: string[]) => ccm(args(inv, '--dry-run', ...extra));
    const name = await dry('-o', 'name');
    expect(name.stdout.trimEnd().split('\n')).toEqual([
      'node/node-1',
      'node/node-2',
      'node/node-10',
      'node/node-4',
      'node/node-20',
    ]);
    const json = JSON.parse((await dry('--json')).stdout);
    const yaml = parse((await dry('-o', 'yaml')).stdout);
    expect(json.summary).toEqual({
      total: 7,
      initialized: 1,
      updated: 1,
      deleted: 1,
      held: 0,
      waiting: 0,
      unchanged: 1,
      skipped: 1,
      unknown: 0,
      failed: 2,
    });
    expect(json.nodes.find((n: { name: string }) => n.name === 'node-1')).toMatchObject({
      providerID: 'cloudlycke://node-1',
      instanceType: 'vbox.vm.1g.2cpu',
      zone: 'virtualbox',
    });
    const timeless = (r: Record<string, unknown>) => ({ ...r, durationMs: 0, maxRssBytes: 0 });
    expect(timeless(yaml)).toEqual(timeless(json));
    expect(JSON.parse((await dry('-o', 'json')).stdout).nodes).toEqual(json.nodes);
    const quiet = await dry('--quiet');
    expect(quiet.exitCode).toBe(1);
    expect(
      quiet.stdout
        .trimEnd()
        .split('\n')
        .map((l) => l.split(' ')[0]),
    ).toEqual(['node=node-4', 'node=node-20']);
    const wide = await dry('-o', 'wide');
    expect(wide.stdout).toContain('would set providerID cloudlycke://node-1');
    expect(wide.stdout).toMatch(/^metal-1 +skipped /m);
  });

  it('refuses contradicting output flags: one line, exit 2, nothing read', async () => {
    for (const [flags, message] of [
      [['--json', '-o', 'yaml'], /--json is -o json; it cannot be combined with -o yaml/],
      [['-q', '-o', 'wide'], /--quiet prints only failures; it cannot be combined with -o wide/],
      [
        ['-o', 'xml'],
        /--output: expected one of table, wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=HEADER:\.path,…, got "xml"/,
      ],
    ] as const) {
      const run = await ccm(args('/nonexistent', ...flags));
      expect(run.exitCode).toBe(2);
      expect(run.stdout).toBe('');
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(message);
    }
  });
});

describe('in a real terminal', () => {
  it('300 Nodes initialised: a screenful at most, the rest counted, no spinner left behind', async () => {
    const names = Array.from({ length: 300 }, (_, i) => `node-${i + 1}`);
    await createNodes(
      world.api,
      names.map((name) => ({ name, addresses: [] })),
      64,
    );
    const inv = inventory(
      names.map((id, i) => ({
        id,
        addresses: [{ type: 'InternalIP', address: `10.0.${i >> 8}.${i & 255}` }],
      })),
      DEFAULTS,
    );
    const { code, screen } = await runInTerminal(args(inv), { width: 100, height: 30 });
    expect(code).toBe(0);
    const lines = screen.split('\n');
    // the screen keeps its last line for the shell prompt
    expect(lines.length).toBeLessThanOrEqual(29);
    expect(lines[0]).toMatch(/^300 Nodes: 300 initialized; 900 Kubernetes writes, 1 cloud call, \d+\.\ds$/);
    expect(lines[1]).toMatch(/^NODE +RESULT +PROVIDER ID +TYPE +ZONE +REASON$/);
    // natural order
    expect(lines.slice(2, 5).map((l) => l.split(' ')[0])).toEqual(['node-1', 'node-2', 'node-3']);
    expect(lines.at(-1)).toMatch(/^… and 27\d more Nodes \(-o wide or -o name lists them all\)$/);
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(100);
    expect(screen).not.toMatch(/[✔✖⠋]|Plan|Apply/);
  });

  it('a mixed pass on a narrow terminal: failures last and red, long reasons cut, nothing wrapped', async () => {
    const inv = await mixedCluster();
    const { code, screen, coloured } = await runInTerminal(args(inv), { width: 80, height: 30 });
    expect(code).toBe(1);
    const lines = screen.split('\n');
    expect(lines[0]).toMatch(/^7 Nodes: 1 initialized, /);
    const table = lines.slice(lines.findIndex((l) => l.startsWith('NODE ')));
    expect(table.map((l) => l.split(' ')[0])).toEqual([
      'NODE',
      'node-1',
      'node-2',
      'node-10',
      'node-4',
      'node-20',
    ]);
    for (const line of lines) expect([...line].length).toBeLessThanOrEqual(80);
    expect(table[4]).toMatch(/…$/);
    // tmux repeats no escape the line before set: red from node-4 to the end, reset nowhere between
    const red = coloured.slice(coloured.indexOf(`${ESC}31mnode-4 `));
    expect(red).toMatch(/\nnode-20 +failed /);
    for (const reset of [`${ESC}m`, `${ESC}0m`, `${ESC}39m`]) expect(red).not.toContain(reset);
    expect(coloured).toContain(`node-1    ${ESC}32minitialized${ESC}39m`);
  });
});
