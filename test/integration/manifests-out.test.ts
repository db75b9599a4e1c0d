/**
 * `ccm manifests --out DIR`, then `kubectl apply -f DIR`, as an operator's GitOps folder is used: the
 * built CLI writes the folder twice (the new-operator trial's sequence: --cronjob, then without it and
 * a new image), and kubectl of the control plane's version, against the real kube-apiserver, reads
 * one DaemonSet of the new image and no CronJob. Bad --out values end in one line, exit 2, quickly.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { binDir, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const MANIFESTS = ['manifests', '--provider', 'cloudlycke'];

let cp: ControlPlane;
let kubeCache: string;

beforeAll(async () => {
  if (!existsSync(join(binDir(), 'kubectl'))) {
    throw new Error(`no kubectl in ${binDir()}: run bash test/setup.sh (npm test runs it)`);
  }
  kubeCache = tempDir('ccm-kubectl-cache-');
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
});

/** `kubectl apply --dry-run=client -f DIR`: each object kubectl would apply, in its order, as kind/name image. */
async function dryRunApply(dir: string): Promise<string[]> {
  const run = await execa(
    join(binDir(), 'kubectl'),
    [
      'apply',
      '--dry-run=client',
      '-f',
      dir,
      '-o',
      'jsonpath={range .items[*]}{.kind}/{.metadata.name} {.spec.template.spec.containers[0].image}{"\\n"}{end}',
    ],
    {
      reject: false,
      env: { KUBECONFIG: cp.kubeconfigPath, KUBECACHEDIR: kubeCache, HOME: process.env.HOME },
      extendEnv: false,
    },
  );
  expect(run.exitCode, run.stderr).toBe(0);
  return run.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
}

describe('ccm manifests --out DIR | kubectl apply -f DIR', () => {
  it('after --cronjob, then without it and a new image: one DaemonSet of the new image, no CronJob', async () => {
    const dir = join(tempDir('ccm-out-'), 'mf3');
    const first = await ccm([...MANIFESTS, '--image', 'r.example/ccm:0.1.0', '--cronjob', '--out', dir]);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^wrote 16 files to /);
    expect(await dryRunApply(dir)).toContain('CronJob/ccm-nodes-init');

    const second = await ccm([...MANIFESTS, '--image', 'r.example/ccm:0.2.0', '--out', dir]);
    expect(second.exitCode, second.stderr).toBe(0);
    expect(second.stdout.split('\n')[0]).toBe(
      `wrote 10 files to ${dir}; removed 6 files an earlier run wrote`,
    );
    const objects = await dryRunApply(dir);
    expect(objects.filter((o) => o.startsWith('DaemonSet/'))).toEqual(['DaemonSet/ccm r.example/ccm:0.2.0']);
    expect(objects.filter((o) => o.startsWith('CronJob/'))).toEqual([]);
    expect(objects).toHaveLength(10);

    // -o json into the same folder: JSON files only, the same objects.
    const json = await ccm([...MANIFESTS, '--image', 'r.example/ccm:0.2.0', '-o', 'json', '--out', dir]);
    expect(json.exitCode, json.stderr).toBe(0);
    expect(readdirSync(dir).filter((n) => !n.startsWith('.') && !n.endsWith('.json'))).toEqual([]);
    expect(await dryRunApply(dir)).toEqual(objects);
  }, 120_000);

  it.each([
    [
      'a file',
      (parent: string) => join(parent, 'existing.yaml'),
      /^ccm: --out \S+existing\.yaml is a file; --out takes a folder/,
    ],
    [
      'a folder whose parent is missing',
      (parent: string) => join(parent, 'no', 'dir'),
      /^ccm: --out \S+\/no\/dir: the folder \S+\/no does not exist/,
    ],
    [
      'a folder under /proc',
      () => '/proc/ccm-nope',
      /^ccm: --out \/proc\/ccm-nope: cannot make a folder in \/proc \(ENOENT/,
    ],
    [
      'a folder holding YAML ccm did not write',
      (parent: string) => join(parent, 'theirs'),
      /^ccm: --out \S+theirs holds files ccm did not write \(mine\.yaml\)/,
    ],
  ])('--out naming %s: one line, exit 2, nothing written', async (_what, path, message) => {
    const parent = tempDir('ccm-out-');
    writeFileSync(join(parent, 'existing.yaml'), 'x');
    mkdirSync(join(parent, 'theirs'));
    writeFileSync(join(parent, 'theirs', 'mine.yaml'), 'kind: ConfigMap\n');
    const started = Date.now();
    const run = await ccm([...MANIFESTS, '--image', 'r.example/ccm:1', '--out', path(parent)], {}, 30_000);
    expect(run).toMatchObject({ exitCode: 2, stdout: '' });
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(message);
    // Node's recursive mkdir never returns under /proc: the parent is checked first, no mkdir -p.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(readdirSync(parent).sort()).toEqual(['existing.yaml', 'theirs']);
    expect(readdirSync(join(parent, 'theirs'))).toEqual(['mine.yaml']);
  });
});
