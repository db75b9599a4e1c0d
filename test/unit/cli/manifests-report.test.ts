/**
 * `ccm manifests` through the shared output module: the YAML an operator pipes into `kubectl apply`
 * in every human view, a v1 List for -o json, kubectl's kind/name lines in apply order, and with
 * --out what was written where.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { renderManifests } from '../../../src/cli/manifests.js';
import { writeManifests } from '../../../src/cli/manifests-out.js';
import { manifestsReport, manifestsWrittenReport } from '../../../src/cli/manifests-report.js';
import type { View } from '../../../src/cli/output/flags.js';
import { render, type Terminal } from '../../../src/cli/output/render.js';
import { loadProvider } from '../../../src/providers/registry.js';
import { tempDir } from '../../helpers/tmp.js';
import { pipe } from './pipe.js';

const terminal: Terminal = { tty: true, width: 80, height: 24, colour: 0 };

async function objects() {
  return renderManifests(await loadProvider('cloudlycke'), {
    image: 'registry.example.com/ccm:test',
    namespace: 'kube-system',
    controllers: '*',
    cronjob: true,
    leaseName: 'cloud-controller-manager',
  });
}

describe('ccm manifests, printed', () => {
  it.each<[View, Terminal]>([
    ['table', terminal],
    ['wide', terminal],
    ['lines', pipe],
    ['yaml', pipe],
  ])('%s: the YAML documents of every object, in apply order, nothing else', async (view, where) => {
    const all = await objects();
    const text = await render(manifestsReport(all, 'cloudlycke'), view, where);
    const docs = parseAllDocuments(text).map((d) => d.toJS());
    expect(docs).toEqual(all);
    expect(text.startsWith('---\napiVersion: v1\nkind: ServiceAccount\n')).toBe(true);
    // Wide lines are never cut or wrapped: kubectl must read exactly the objects.
    expect(text).not.toContain('…');
  });

  it('json: a v1 List of the objects', async () => {
    const all = await objects();
    const json = JSON.parse(await render(manifestsReport(all, 'cloudlycke'), 'json', pipe));
    expect(json).toEqual({ apiVersion: 'v1', kind: 'List', items: all });
  });

  it('name: kubectl-style kind/name lines, in apply order', async () => {
    const text = await render(manifestsReport(await objects(), 'cloudlycke'), 'name', pipe);
    const lines = text.split('\n');
    expect(lines[0]).toBe('serviceaccount/ccm');
    expect(lines).toContain('clusterrole.rbac.authorization.k8s.io/system:ccm');
    expect(lines).toContain('daemonset.apps/ccm');
    expect(lines.at(-1)).toBe('cronjob.batch/ccm-nodes-init');
    expect(lines.indexOf('daemonset.apps/ccm')).toBeGreaterThan(lines.indexOf('serviceaccount/ccm'));
  });

  it('quiet: nothing, since nothing failed', async () => {
    expect(await render(manifestsReport(await objects(), 'cloudlycke'), 'quiet', pipe)).toBe('');
  });
});

describe('ccm manifests --out DIR', () => {
  it('reports each file written with its object, in every view', async () => {
    const dir = join(tempDir('ccm-manifests-out-'), 'out');
    const all = await objects();
    const written = await writeManifests(dir, all, 'yaml');
    const { files } = written;
    const report = manifestsWrittenReport(all, written, dir);
    // One file per object, and the index of what ccm wrote there.
    expect(readdirSync(dir)).toHaveLength(all.length + 1);

    const lines = (await render(report, 'lines', pipe)).split('\n');
    expect(lines[0]).toBe(`wrote ${all.length} files to ${dir}`);
    expect(lines[1]).toBe(
      `kind=ServiceAccount name=ccm namespace=kube-system file=${dir}/01-serviceaccount-ccm.yaml`,
    );
    expect(lines).toHaveLength(all.length + 1);

    const json = JSON.parse(await render(report, 'json', pipe));
    expect(json.directory).toBe(dir);
    expect(json.files.map((f: { file: string }) => f.file)).toEqual(files);
    for (const [i, f] of json.files.entries()) {
      expect(parseAllDocuments(readFileSync(f.file, 'utf8'))[0]?.toJS()).toEqual(all[i]);
    }
    expect((await render(report, 'name', pipe)).split('\n')[0]).toBe('serviceaccount/ccm');
  });
});
