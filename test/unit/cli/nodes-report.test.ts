/**
 * Every view of a mixed `nodes init` pass (initialised, updated, deleted, unchanged, failed,
 * skipped), as snapshot files under __snapshots__/nodes-init/, plus the rules each view must keep.
 */
import { describe, expect, it } from 'vitest';
import { nodesInitReport } from '../../../src/cli/nodes-report.js';
import type { View } from '../../../src/cli/output/flags.js';
import { render, type Terminal } from '../../../src/cli/output/render.js';
import { widthOf } from '../../../src/cli/output/text.js';
import { mixedPass } from './mixed-pass.js';
import { pipe } from './pipe.js';

const terminal: Terminal = { tty: true, width: 120, height: 40, colour: 0 };
const ESC = '\u001b[';

async function show(view: View, where: Terminal = terminal, dryRun = false) {
  return render(nodesInitReport(await mixedPass(dryRun)), view, where);
}

const snapshot = (name: string) => `./__snapshots__/nodes-init/${name}`;

describe('nodes init, mixed pass', () => {
  it('table: the summary line first, changed and failed Nodes in natural order, failures last', async () => {
    const text = await show('table');
    await expect(text).toMatchFileSnapshot(snapshot('table.txt'));
    const lines = text.split('\n');
    expect(lines[0]).toBe(
      '8 Nodes: 1 initialized, 1 updated, 1 deleted, 2 failed, 2 unchanged, 1 skipped; 9 Kubernetes writes, 2 cloud calls, 1.2s',
    );
    expect(lines[1]).toMatch(/^NODE +RESULT +PROVIDER ID +TYPE +ZONE +REASON$/);
    expect(lines.slice(2, 7).map((l) => l.split(' ')[0])).toEqual([
      'node-1',
      'node-2',
      'node-10',
      'node-4',
      'node-20',
    ]);
    // unchanged and skipped Nodes are counted, not listed
    expect(text).not.toMatch(/^(node-3|node-11|metal-1) /m);
    expect(lines[7]).toMatch(
      /^note: node-11: instance not listed, but the Node is inside its deletion grace period/,
    );
    expect(text).not.toContain(ESC);
  });

  it('table on a colour terminal: failed rows red, results of changed rows green, deletions yellow', async () => {
    const text = await show('table', { ...terminal, colour: 1 });
    await expect(text).toMatchFileSnapshot(snapshot('table.ansi.txt'));
    const row = (name: string) => text.split('\n').find((l) => l.startsWith(name) || l.includes(`m${name} `));
    expect(row('node-4')?.startsWith(`${ESC}31mnode-4 `)).toBe(true);
    expect(row('node-4')?.endsWith(`${ESC}39m`)).toBe(true);
    expect(row('node-1')).toContain(`${ESC}32minitialized${ESC}39m`);
    expect(row('node-10')).toContain(`${ESC}33mdeleted${ESC}39m`);
    // the summary is red when the pass failed
    expect(text.split('\n')[0]?.startsWith(`${ESC}31m8 Nodes`)).toBe(true);
  });

  it('table on a narrow terminal: long cells end in an ellipsis, no line is wider than the terminal', async () => {
    const narrow = { ...terminal, width: 72 };
    const text = await show('table', narrow);
    await expect(text).toMatchFileSnapshot(snapshot('table-72-columns.txt'));
    for (const line of text.split('\n')) expect(widthOf(line)).toBeLessThanOrEqual(72);
    expect(text).toContain('…');
    // names and results are never cut
    for (const name of ['node-1 ', 'node-2 ', 'node-10 ', 'node-4 ', 'node-20 '])
      expect(text).toContain(name);
  });

  it('wide: every Node, with the exact changes and the reason, one a line under it, every line within 120 columns', async () => {
    const text = await show('wide');
    await expect(text).toMatchFileSnapshot(snapshot('wide.txt'));
    // As `nodes list -o wide`: the reason is under its row, labelled, not a column to run past 120.
    expect(text.split('\n')[1]).toMatch(/ ZONE$/);
    expect(text).toContain(
      '\nnode-20   failed        -                           -                 -\n    reason: no cloud instance is named node-20;',
    );
    const changeLines = text.split('\n').filter((l) => l.startsWith('    '));
    expect(changeLines.length).toBeGreaterThan(4);
    for (const line of text.split('\n')) expect(widthOf(line), line).toBeLessThanOrEqual(120);
    // The rows themselves no longer carry the changes: node-1's row ends at its zone.
    expect(text).toMatch(/\nnode-1 +initialized +cloudlycke:\/\/node-1 +vbox\.vm\.1g\.2cpu +virtualbox-a\n/);
    const names = text
      .split('\n')
      .slice(2)
      .filter((l) => !l.startsWith(' '))
      .slice(0, 8)
      .map((l) => l.split(' ')[0]);
    expect(names).toEqual([
      'metal-1',
      'node-1',
      'node-2',
      'node-3',
      'node-10',
      'node-11',
      'node-4',
      'node-20',
    ]);
    expect(text).toContain(
      '\n    set providerID cloudlycke://node-1\n    label node.kubernetes.io/instance-type=',
    );
  });

  it('json: the report scripts and the CronJob read, fields unchanged, plus provider ID, type and zone', async () => {
    const text = await show('json');
    await expect(text).toMatchFileSnapshot(snapshot('report.json'));
    const report = JSON.parse(text);
    expect(Object.keys(report)).toEqual([
      'provider',
      'dryRun',
      'nodes',
      'summary',
      'cloudInstances',
      'kubeWrites',
      'cloudCalls',
      'durationMs',
      'maxRssBytes',
      'credentials',
    ]);
    expect(report.nodes[0]).toEqual({
      name: 'node-1',
      result: 'initialized',
      changes: expect.any(Array),
      providerID: 'cloudlycke://node-1',
      instanceType: 'vbox.vm.1g.2cpu',
      zone: 'virtualbox-a',
    });
  });

  it('yaml: the same object as json', async () => {
    const text = await show('yaml');
    await expect(text).toMatchFileSnapshot(snapshot('report.yaml'));
    const { parse } = await import('yaml');
    expect(parse(text)).toEqual(JSON.parse(await show('json')));
  });

  it('name: node/<name> of each changed or failed Node, for xargs', async () => {
    const text = await show('name');
    await expect(text).toMatchFileSnapshot(snapshot('name.txt'));
    expect(text.split('\n')).toEqual([
      'node/node-1',
      'node/node-2',
      'node/node-10',
      'node/node-4',
      'node/node-20',
    ]);
  });

  it('not a terminal: the summary line, one short logfmt line per changed or failed Node, no colour', async () => {
    const text = await show('lines', { ...pipe, colour: 0 });
    await expect(text).toMatchFileSnapshot(snapshot('lines.txt'));
    const lines = text.split('\n');
    expect(lines[0]).toMatch(/^8 Nodes: /);
    expect(lines[1]).toBe(
      'node=node-1 result=initialized providerID=cloudlycke://node-1 type=vbox.vm.1g.2cpu zone=virtualbox-a',
    );
    expect(lines[4]).toMatch(
      /^node=node-4 result=failed type=vbox.vm.1g.2cpu zone=virtualbox-a reason="provided node IP/,
    );
    expect(text).not.toContain(ESC);
  });

  it('--quiet: only the failures, on a terminal and off one', async () => {
    const onTerminal = await show('quiet');
    await expect(onTerminal).toMatchFileSnapshot(snapshot('quiet.txt'));
    expect(onTerminal.split('\n').map((l) => l.split(' ')[0])).toEqual(['NODE', 'node-4', 'node-20']);
    const offTerminal = await show('quiet', pipe);
    await expect(offTerminal).toMatchFileSnapshot(snapshot('quiet-lines.txt'));
    expect(offTerminal.split('\n').map((l) => l.split(' ')[0])).toEqual(['node=node-4', 'node=node-20']);
  });

  it('dry run: says so first, and what each Node would get', async () => {
    const text = await show('table', terminal, true);
    await expect(text).toMatchFileSnapshot(snapshot('table-dry-run.txt'));
    expect(text.split('\n')[0]).toMatch(
      /^Dry run, nothing written\. 8 Nodes: 1 would initialize, 1 would update, 1 would delete, 2 failed, /,
    );
    expect(await show('wide', terminal, true)).toContain('would set providerID cloudlycke://node-1');
  });
});

/** The summary line's plurals (issue 6, item 11). */
function counted(
  total: number,
  kubeWrites: number,
  cloudCalls: number,
  credentials = 'flags and environment',
) {
  return nodesInitReport({
    report: {
      provider: 'cloudlycke',
      dryRun: false,
      nodes: [],
      summary: {
        total,
        initialized: total,
        updated: 0,
        deleted: 0,
        held: 0,
        waiting: 0,
        unchanged: 0,
        skipped: 0,
        unknown: 0,
        failed: 0,
      },
      cloudInstances: 1,
    },
    kubeWrites,
    cloudCalls,
    durationMs: 1200,
    maxRssBytes: 0,
    credentials,
  }).summary;
}

describe('nodes init, the summary line', () => {
  it('says "1 cloud call", "1 Kubernetes write", "1 Node" in the singular', () => {
    expect(counted(1, 1, 1)).toBe('1 Node: 1 initialized; 1 Kubernetes write, 1 cloud call, 1.2s');
  });

  it('and the plural otherwise', () => {
    expect(counted(2, 0, 3)).toBe('2 Nodes: 2 initialized; 0 Kubernetes writes, 3 cloud calls, 1.2s');
  });

  it('names the Secret the credentials came from', () => {
    expect(counted(1, 1, 1, 'Secret kube-system/digitalocean')).toBe(
      '1 Node: 1 initialized; 1 Kubernetes write, 1 cloud call, 1.2s; credentials from Secret kube-system/digitalocean',
    );
  });
});
