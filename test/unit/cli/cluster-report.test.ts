/**
 * `cluster prepare`'s result in the shared output module: plans and applies made by the real
 * planner on copies of a kubeadm fixture, shown in each view (snapshot files under
 * __snapshots__/cluster-prepare/).
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterPrepareReport, printPreview } from '../../../src/cli/cluster-report.js';
import { render, type Terminal } from '../../../src/cli/output/render.js';
import { localHost } from '../../../src/cluster/host.js';
import { applyHost, planCluster } from '../../../src/cluster/prepare.js';
import { applyRollback, planRollback } from '../../../src/cluster/rollback.js';
import type { Host } from '../../../src/cluster/types.js';
import { pipe } from './pipe.js';

const fixture = fileURLToPath(new URL('../../fixtures/cluster/kubeadm-v1.36.3', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'ccm-cluster-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const terminal: Terminal = { tty: true, width: 120, height: 40, colour: 0 };
const snapshot = (name: string) => `./__snapshots__/cluster-prepare/${name}`;

/** Three ssh-like hosts: two kubeadm nodes, one machine where nothing is installed. */
function hosts(): Host[] {
  return ['root@10.0.0.11', 'root@10.0.0.2', 'root@10.0.0.3'].map((name, i) => {
    const root = join(dir, `${name}-${Math.random().toString(16).slice(2)}`);
    if (i < 2) cpSync(fixture, root, { recursive: true });
    else mkdirSync(root);
    return { ...localHost(root), name };
  });
}

const options = { versions: { kubelet: '1.36.3' } };

describe('cluster prepare, three hosts', () => {
  it('dry run: says so first; each host that would change, the failed one last', async () => {
    const plan = await planCluster(hosts(), options);
    const out = {
      plan,
      dryRun: true,
      failed: true,
      initializeExisting: [],
      uninitialisedExisting: ['old-1'],
    };
    const text = await render(clusterPrepareReport(out), 'table', terminal);
    await expect(text).toMatchFileSnapshot(snapshot('dry-run.txt'));
    const lines = text.split('\n');
    expect(lines[0]).toBe('Dry run: nothing written. 3 hosts: 2 would prepare, 1 failed');
    expect(lines.slice(2, 5).map((l) => l.split(' ')[0])).toEqual([
      'root@10.0.0.2',
      'root@10.0.0.11',
      'root@10.0.0.3',
    ]);
    expect(lines.slice(-2).join(' ')).toMatch(
      /^1 existing Node has no provider ID and the kubelet will not taint it again, .* re-run with --initialize-existing/,
    );
  });

  it('applied: the summary, the table, and the same in plain lines off a terminal', async () => {
    const plan = await planCluster(hosts(), options);
    const applied = { hosts: await Promise.all(plan.hosts.map((h) => applyHost(plan, h, false))) };
    const out = {
      plan,
      result: applied,
      dryRun: false,
      failed: true,
      initializeExisting: ['old-1', 'old-2'],
    };
    const report = clusterPrepareReport(out);
    const stable = (text: string) => text.replace(/\d{4}-\d\d-\d\dT[\d-]+\.\d+Z-[0-9a-f]+/g, '<id>');
    const table = stable(await render(report, 'table', terminal));
    await expect(table).toMatchFileSnapshot(snapshot('applied.txt'));
    expect(table.split('\n')[0]).toBe('3 hosts: 2 prepared, 1 failed');
    expect(table).toMatch(
      /^root@10\.0\.0\.2 +kubeadm +prepared +2 +- +kube-apiserver: --cloud-provider not added/m,
    );
    // -o wide on a 120-column terminal: what does not fit is under the row, nothing cut, nothing wider.
    const wide = stable(await render(report, 'wide', terminal));
    expect(wide).toMatch(
      /^root@10\.0\.0\.2 +kubeadm +prepared +2 +-\n {4}versions: kubelet 1\.36\.3, .*\n {4}backup: <id>\n {4}notes: kube-apiserver: --cloud-provider not added.*\n.*\n {4}paths: \/etc\/kubernetes\/manifests\/kube-controller-manager\.yaml, \/var\/lib\/kubelet\/kubeadm-flags\.env$/m,
    );
    expect(wide.split('\n').filter((l) => l.length > terminal.width)).toEqual([]);
    expect(table).toContain('2 existing Nodes tainted node.cloudprovider.kubernetes.io/uninitialized');
    const lines = stable(await render(report, 'lines', pipe));
    await expect(lines).toMatchFileSnapshot(snapshot('applied-lines.txt'));
    expect(lines.split('\n')[1]).toMatch(
      /^host=root@10\.0\.0\.2 layout=kubeadm result=prepared files=2 notes="kube-apiserver: --cloud-provider not added/,
    );
    const json = JSON.parse(await render(report, 'json', pipe));
    expect(Object.keys(json)).toEqual(['result', 'dryRun', 'failed', 'initializeExisting', 'hosts']);
    expect(json.hosts.map((h: { host: string }) => h.host)).toEqual([
      'root@10.0.0.11',
      'root@10.0.0.2',
      'root@10.0.0.3',
    ]);
    expect(await render(report, 'name', pipe)).toBe(
      'host/root@10.0.0.2\nhost/root@10.0.0.11\nhost/root@10.0.0.3',
    );
  });

  it('nothing to change: one line, no table', async () => {
    const root = join(dir, 'done');
    cpSync(fixture, root, { recursive: true });
    const first = await planCluster([localHost(root)], options);
    await applyHost(first, first.hosts[0] as (typeof first.hosts)[number], false);
    const plan = await planCluster([localHost(root)], options);
    const text = await render(
      clusterPrepareReport({ plan, dryRun: false, failed: false }),
      'table',
      terminal,
    );
    expect(text).toBe('1 host: 1 unchanged; nothing to change');
  });
});

describe('cluster prepare --rollback, one host', () => {
  it('dry run and apply: the same report, the rollback plan in --json, notes under the table', async () => {
    const root = join(dir, 'rollback');
    cpSync(fixture, root, { recursive: true });
    const first = await planCluster([localHost(root)], options);
    await applyHost(first, first.hosts[0] as (typeof first.hosts)[number], false);
    const plan = await planRollback([localHost(root)]);
    const stable = (text: string) => text.replace(/\d{4}-\d\d-\d\dT[\d-]+\.\d+Z-[0-9a-f]+/g, '<id>');

    const preview = clusterPrepareReport({ rollbackPlan: plan, dryRun: true, failed: false });
    const table = stable(await render(preview, 'table', terminal)).split('\n');
    expect(table[0]).toBe('Dry run: nothing written. 1 host: 1 would roll back');
    expect(table[2]).toMatch(/^local +- +would roll back +2 +- +backup <id>$/);
    const json = JSON.parse(await render(preview, 'json', pipe));
    expect(Object.keys(json)).toEqual(['dryRun', 'failed', 'rollback']);
    expect(json.rollback[0].files.map((f: { how: string }) => f.how)).toEqual(['restore', 'restore']);
    expect(await render(preview, 'name', pipe)).toBe('host/local');

    const result = await applyRollback(plan, { restart: false, readyTimeoutMs: 1000 });
    const applied = clusterPrepareReport({ rollbackPlan: plan, result, dryRun: false, failed: false });
    const lines = stable(await render(applied, 'lines', pipe)).split('\n');
    expect(lines[0]).toBe('1 host: 1 rolled back');
    expect(lines[1]).toMatch(/^host=local result="rolled back" files=2 notes="backup <id>"$/);
    expect(lines[2]).toBe('note: local: not restarted (--no-restart): kubelet');
  });
});

describe('counts in the words around them', () => {
  it('the --initialize-existing preview: "1 Node gets the taint", "3 Nodes get the taint"', async () => {
    const plan = await planCluster(hosts().slice(0, 1), options);
    const preview = (names: string[]) => {
      const lines: string[] = [];
      printPreview(plan, names, (l) => lines.push(l));
      return lines.at(-1) as string;
    };
    expect(preview(['old-1'])).toMatch(
      /^--initialize-existing: 1 Node without a provider ID gets the \S+ taint, so `ccm nodes init` initialises it \(/,
    );
    expect(preview(['old-1', 'old-2', 'old-3'])).toMatch(
      /^--initialize-existing: 3 Nodes without a provider ID get the \S+ taint, so `ccm nodes init` initialises them \(/,
    );
  });

  it('the note after tainting: "1 existing Node tainted …: … initialise it"', async () => {
    const note = async (names: string[]) => {
      const report = clusterPrepareReport({
        result: { hosts: [] },
        dryRun: false,
        failed: false,
        initializeExisting: names,
      });
      return (await render(report, 'lines', pipe)).split('\n').at(-1);
    };
    expect(await note(['old-1'])).toMatch(
      /^1 existing Node tainted \S+: run `ccm nodes init` to initialise it\.$/,
    );
    expect(await note(['old-1', 'old-2'])).toMatch(
      /^2 existing Nodes tainted \S+: run `ccm nodes init` to initialise them\.$/,
    );
  });
});
