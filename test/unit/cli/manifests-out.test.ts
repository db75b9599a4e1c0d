/**
 * `ccm manifests --out DIR` leaves exactly the objects of its last run in the folder, since
 * `kubectl apply -f DIR` applies every YAML and JSON file there: each object keeps its file whatever
 * else the set holds, files an earlier run wrote and this one does not are removed, a folder with
 * YAML or JSON files ccm did not write is refused, and a run cut short leaves only whole files.
 */
import { promises as fsPromises, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { type K8sObject, renderManifests } from '../../../src/cli/manifests.js';
import { fileName, OUT_INDEX, writeManifests } from '../../../src/cli/manifests-out.js';
import { loadProvider } from '../../../src/providers/registry.js';
import { tempDir } from '../../helpers/tmp.js';

async function objects(image: string, extra: { cronjob?: boolean; namespace?: string } = {}) {
  return renderManifests(await loadProvider('cloudlycke'), {
    image,
    namespace: extra.namespace ?? 'kube-system',
    controllers: '*',
    cronjob: extra.cronjob ?? false,
    leaseName: 'cloud-controller-manager',
  });
}

/** The objects in the folder as `kubectl apply -f DIR` reads them: every .yaml/.yml/.json file, in name order. */
function applied(dir: string): K8sObject[] {
  return readdirSync(dir)
    .filter((n) => /\.(ya?ml|json)$/.test(n))
    .sort()
    .flatMap((n) => parseAllDocuments(readFileSync(join(dir, n), 'utf8')).map((d) => d.toJS() as K8sObject));
}

const images = (all: K8sObject[]) =>
  all
    .filter((o) => o.kind === 'DaemonSet')
    .map(
      (o) =>
        (o as unknown as { spec: { template: { spec: { containers: { image: string }[] } } } }).spec.template
          .spec.containers[0]?.image,
    );

afterEach(() => {
  vi.restoreAllMocks();
});

describe('ccm manifests --out DIR', () => {
  it('names each file by its object alone: the DaemonSet keeps its file with or without --cronjob', async () => {
    const withCron = await objects('r.example/ccm:1', { cronjob: true });
    const without = await objects('r.example/ccm:1');
    const daemonSet = (all: K8sObject[]) => fileName(all.find((o) => o.kind === 'DaemonSet') as K8sObject);
    expect(daemonSet(withCron)).toBe(daemonSet(without));
    expect(daemonSet(without)).toBe('06-daemonset-ccm.yaml');
    // In kubectl's (name) order a Namespace comes before what lives in it, a Role before its binding.
    const order = (await objects('r.example/ccm:1', { cronjob: true, namespace: 'ccm-system' }))
      .map((o) => fileName(o, 'json'))
      .sort();
    expect(order[0]).toBe('00-namespace-ccm-system.json');
    expect(order.at(-1)).toBe('09-cronjob-ccm-nodes-init.json');
  });

  it("the reviewer's sequence: --cronjob, then without it and a new image, leaves one DaemonSet of the new image and no CronJob", async () => {
    const dir = join(tempDir('ccm-out-'), 'mf3');
    await writeManifests(dir, await objects('r.example/ccm:0.1.0', { cronjob: true }), 'yaml');
    const second = await objects('r.example/ccm:0.2.0');
    const written = await writeManifests(dir, second, 'yaml');
    expect(written.removed).toEqual([
      '01-serviceaccount-ccm-nodes-init.yaml',
      '02-clusterrole-system-ccm-nodes-init.yaml',
      '03-clusterrolebinding-system-ccm-nodes-init.yaml',
      '04-role-ccm-nodes-init-node-deletions.yaml',
      '05-rolebinding-ccm-nodes-init-node-deletions.yaml',
      '09-cronjob-ccm-nodes-init.yaml',
    ]);
    const now = applied(dir);
    expect(images(now)).toEqual(['r.example/ccm:0.2.0']);
    expect(now.map((o) => o.kind)).not.toContain('CronJob');
    expect(now).toHaveLength(second.length);

    // -o json into the same folder: the YAML files go.
    await writeManifests(dir, second, 'json');
    expect(readdirSync(dir).filter((n) => n.endsWith('.yaml'))).toEqual([]);
    expect(images(applied(dir))).toEqual(['r.example/ccm:0.2.0']);
  });

  it('refuses a folder holding YAML or JSON files it did not write, and changes nothing there', async () => {
    const dir = tempDir('ccm-out-');
    writeFileSync(join(dir, 'mine.yaml'), 'kind: ConfigMap\n');
    await expect(writeManifests(dir, await objects('r.example/ccm:1'), 'yaml')).rejects.toThrow(
      /^--out .* holds files ccm did not write \(mine\.yaml\), which `kubectl apply -f .*` would apply too; name a new or empty folder, or move them out$/,
    );
    expect(readdirSync(dir)).toEqual(['mine.yaml']);
  });

  it('takes an empty folder, and one with files kubectl does not apply (README.md, .gitkeep, a subfolder)', async () => {
    const dir = tempDir('ccm-out-');
    writeFileSync(join(dir, 'README.md'), 'ccm');
    writeFileSync(join(dir, '.gitkeep'), '');
    mkdirSync(join(dir, 'old'));
    const all = await objects('r.example/ccm:1');
    await writeManifests(dir, all, 'yaml');
    expect(applied(dir)).toHaveLength(all.length);
    expect(readFileSync(join(dir, 'README.md'), 'utf8')).toBe('ccm');
  });

  it('a file named by --out, or a missing parent folder: refused, nothing made', async () => {
    const parent = tempDir('ccm-out-');
    const file = join(parent, 'ccm.yaml');
    writeFileSync(file, 'x');
    const all = await objects('r.example/ccm:1');
    await expect(writeManifests(file, all, 'yaml')).rejects.toThrow(
      /^--out .*ccm\.yaml is a file; --out takes a folder/,
    );
    await expect(writeManifests(join(parent, 'no', 'such'), all, 'yaml')).rejects.toThrow(
      /^--out .*\/no\/such: the folder .*\/no does not exist; create it first, or name another$/,
    );
    expect(readdirSync(parent)).toEqual(['ccm.yaml']);
    expect(readFileSync(file, 'utf8')).toBe('x');
  });

  it('a new folder cut short is never there at all; an existing one keeps whole files, and the next run finishes it', async () => {
    const parent = tempDir('ccm-out-');
    const dir = join(parent, 'out');
    const first = await objects('r.example/ccm:0.1.0', { cronjob: true });
    const rename = vi
      .spyOn(fsPromises, 'rename')
      .mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
    await expect(writeManifests(dir, first, 'yaml')).rejects.toThrow(/EIO/);
    expect(readdirSync(parent)).toEqual([]);
    rename.mockRestore();

    await writeManifests(dir, first, 'yaml');
    const second = await objects('r.example/ccm:0.2.0');
    // The third file's rename fails: two files new, the rest as they were, no temp file kept.
    const real = fsPromises.rename.bind(fsPromises);
    let calls = 0;
    vi.spyOn(fsPromises, 'rename').mockImplementation(async (from, to) => {
      if (++calls === 4) throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
      return real(from, to);
    });
    await expect(writeManifests(dir, second, 'yaml')).rejects.toThrow(/EIO/);
    vi.restoreAllMocks();
    for (const name of readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
      expect(parseAllDocuments(readFileSync(join(dir, name), 'utf8'))[0]?.toJS()).toHaveProperty('kind');
    }
    expect(readdirSync(dir).filter((n) => n.startsWith('.') && n !== OUT_INDEX)).toEqual([]);

    await writeManifests(dir, second, 'yaml');
    const now = applied(dir);
    expect(now).toHaveLength(second.length);
    expect(now).toEqual(expect.arrayContaining(second));
  });
});
