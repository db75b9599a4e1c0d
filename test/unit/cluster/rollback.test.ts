/**
 * `cluster prepare --rollback` (issue 6, items 1 and 2): it previews, stops at --dry-run and asks like
 * prepare; it restores byte for byte only what is still as prepare left it, and in a file changed
 * since (a `kubeadm upgrade`) undoes only ccm's own flag edits.
 */
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { type ClusterPrepareInput, runClusterPrepare } from '../../../src/cli/cluster-prepare.js';
import { BACKUP_DIR, createBackup } from '../../../src/cluster/backup.js';
import { localHost } from '../../../src/cluster/host.js';
import { planClusterConfiguration } from '../../../src/cluster/plan.js';
import { applyHost, type ClusterPlan, planCluster } from '../../../src/cluster/prepare.js';
import { applyRollback, planRollback } from '../../../src/cluster/rollback.js';
import type { Detection } from '../../../src/cluster/types.js';
import { tempDir } from '../../helpers/tmp.js';
import { FIXTURES } from './support.js';

// A person at the prompt who answers no.
vi.mock('@inquirer/prompts', () => ({ confirm: vi.fn(async () => false) }));

const KCM = 'etc/kubernetes/manifests/kube-controller-manager.yaml';
const FLAGS = 'var/lib/kubelet/kubeadm-flags.env';
const FILES = [KCM, FLAGS, 'etc/kubernetes/manifests/kube-apiserver.yaml', 'etc/sysconfig/kubelet'];

function nodeRoot(): string {
  const root = tempDir('ccm-rollback-');
  cpSync(join(FIXTURES, 'kubeadm-v1.36.3'), root, { recursive: true });
  return root;
}

const snapshot = (root: string) =>
  Object.fromEntries(FILES.map((f) => [f, readFileSync(join(root, f), 'utf8')]));

async function prepared(): Promise<{ root: string; original: Record<string, string> }> {
  const root = nodeRoot();
  const original = snapshot(root);
  const host = localHost(root);
  const plan = await planCluster([host], { versions: { kubelet: '1.36.3' } });
  const report = await applyHost(plan, plan.hosts[0] as NonNullable<(typeof plan.hosts)[0]>, false);
  expect(report.result).toBe('prepared');
  return { root, original };
}

function input(root: string, extra: Partial<ClusterPrepareInput>): ClusterPrepareInput {
  return {
    root,
    ssh: [],
    sshFromNodes: false,
    sshUser: 'root',
    sshOption: [],
    remoteRoot: [],
    dryRun: false,
    yes: false,
    restart: false,
    rollback: true,
    initializeExisting: false,
    readyTimeoutMs: 1000,
    preview: true,
    progress: false,
    interactive: false,
    env: {},
    log: () => undefined,
    logToStderr: () => undefined,
    ...extra,
  };
}

describe('rollback asks first (issue 6, item 1)', () => {
  it('--rollback --dry-run shows the diff and writes nothing', async () => {
    const { root } = await prepared();
    const before = snapshot(root);
    const lines: string[] = [];
    const out = await runClusterPrepare(input(root, { dryRun: true, log: (l) => lines.push(l) }));
    expect(out.dryRun).toBe(true);
    expect(out.result).toBeUndefined();
    expect(snapshot(root)).toEqual(before);
    expect(lines.join('\n')).toContain('-    - --cloud-provider=external');
  });

  it('--rollback without --yes and without a terminal refuses, writing nothing', async () => {
    const { root } = await prepared();
    const before = snapshot(root);
    await expect(runClusterPrepare(input(root, {}))).rejects.toThrow(/need confirmation.*--yes/);
    expect(snapshot(root)).toEqual(before);
  });

  it('-o json/yaml/name: no preview on stdout; a person asked to confirm gets it on stderr', async () => {
    const { root } = await prepared();
    const before = snapshot(root);
    const stdout: string[] = [];
    const stderr: string[] = [];
    const quiet = {
      preview: false,
      log: (l: string) => stdout.push(l),
      logToStderr: (l: string) => stderr.push(l),
    };
    await runClusterPrepare(input(root, { ...quiet, dryRun: true }));
    expect([stdout, stderr]).toEqual([[], []]);
    await expect(runClusterPrepare(input(root, { ...quiet, interactive: true }))).rejects.toThrow(
      /not confirmed/,
    );
    expect(stdout).toEqual([]);
    expect(stderr.join('\n')).toContain('-    - --cloud-provider=external');
    expect(snapshot(root)).toEqual(before);
  });

  it('--rollback --yes restores byte for byte', async () => {
    const { root, original } = await prepared();
    const out = await runClusterPrepare(input(root, { yes: true }));
    expect(out.failed).toBe(false);
    expect(snapshot(root)).toEqual(original);
  });
});

describe('rollback reverts only what ccm wrote (issue 6, item 2)', () => {
  it('keeps a kubeadm upgrade made since prepare and undoes only the ccm flags in that manifest', async () => {
    const { root, original } = await prepared();
    // `kubeadm upgrade` rewrote the controller manager with a new image, keeping ccm's flag
    const upgraded = readFileSync(join(root, KCM), 'utf8').replace(':v1.36.3', ':v1.36.4');
    writeFileSync(join(root, KCM), upgraded);

    const host = localHost(root);
    const plan = await planRollback([host]);
    const files = plan.hosts[0]?.files.map((f) => [f.file.path, f.how]);
    expect(files).toEqual([
      [`/${KCM}`, 'revert'],
      [`/${FLAGS}`, 'restore'],
    ]);
    expect(plan.hosts[0]?.notes).toEqual([`/${KCM} changed since prepare: only ccm's flag edits are undone`]);
    const result = await applyRollback(plan, { restart: false, readyTimeoutMs: 1000 });
    expect(result.hosts[0]?.result).toBe('rolled back');

    const kcm = readFileSync(join(root, KCM), 'utf8');
    expect(kcm).toBe((original[KCM] as string).replace(':v1.36.3', ':v1.36.4'));
    expect(readFileSync(join(root, FLAGS), 'utf8')).toBe(original[FLAGS]);
  });

  it('through the command: a rollback after a kubeadm upgrade does not downgrade the image', async () => {
    const { root, original } = await prepared();
    writeFileSync(join(root, KCM), readFileSync(join(root, KCM), 'utf8').replace(':v1.36.3', ':v1.36.4'));
    const out = await runClusterPrepare(input(root, { yes: true }));
    expect(out.failed).toBe(false);
    expect(readFileSync(join(root, KCM), 'utf8')).toBe(
      (original[KCM] as string).replace(':v1.36.3', ':v1.36.4'),
    );
  });

  it('leaves a ccm flag that was changed since as it is now, and says so', async () => {
    const { root, original } = await prepared();
    const env = readFileSync(join(root, FLAGS), 'utf8').replace(
      '--cloud-provider=external',
      '--cloud-provider=external --v=4',
    );
    writeFileSync(join(root, FLAGS), env.replace('--cloud-provider=external', '--cloud-provider=aws'));
    const plan = await planRollback([localHost(root)]);
    expect(plan.hosts[0]?.notes).toContain(
      `/${FLAGS}: --cloud-provider=external was changed since prepare; left as it is now`,
    );
    expect(plan.hosts[0]?.files.map((f) => f.file.path)).toEqual([`/${KCM}`]);
    await applyRollback(plan, { restart: false, readyTimeoutMs: 1000 });
    expect(readFileSync(join(root, KCM), 'utf8')).toBe(original[KCM]);
    expect(readFileSync(join(root, FLAGS), 'utf8')).toContain('--cloud-provider=aws --v=4');
  });

  it('refuses a backup of the first format, which records nothing of what it wrote, naming it', async () => {
    const root = nodeRoot();
    const host = localHost(root);
    const set = await createBackup(host, [`/${KCM}`]);
    const manifest = join(root, BACKUP_DIR, set.id, 'manifest.json');
    writeFileSync(
      manifest,
      readFileSync(manifest, 'utf8').replace(
        'ccm.cluster-prepare.backup/v2',
        'ccm.cluster-prepare.backup/v1',
      ),
    );
    writeFileSync(join(root, KCM), 'edited by someone\n');
    const plan = await planRollback([host]);
    expect(plan.hosts[0]?.error).toMatch(new RegExp(`^backup ${set.id} was made by an older ccm`));
    const result = await applyRollback(plan, { restart: false, readyTimeoutMs: 1000 });
    expect(result.hosts[0]?.result).toBe('failed');
    expect(readFileSync(join(root, KCM), 'utf8')).toBe('edited by someone\n');
  });
});

describe('rollback picks the backup set that holds the files', () => {
  it('a later run that wrote no file, only the kubeadm-config record, does not hide the set with the files', async () => {
    const { root, original } = await prepared();
    // A re-run: the files are prepared already, kubeadm-config is still to record (the first run's
    // restart failed, say). Its set on the host holds no file.
    const host = localHost(root);
    const plan = await planCluster([host], { versions: { kubelet: '1.36.3' } });
    const again = plan.hosts[0] as ClusterPlan['hosts'][number];
    expect(again.edits).toEqual([]);
    const before = readFileSync(join(FIXTURES, 'kubeadm-v1.36.3', 'cluster-configuration.yaml'), 'utf8');
    const edit = planClusterConfiguration(before, again.detection as Detection);
    plan.kubeadmConfig = {
      before,
      after: edit.after,
      resourceVersion: '1',
      changes: edit.changes,
      skips: [],
    };
    const report = await applyHost(plan, again, false);
    expect(report.backup).toBeDefined();

    const rollback = await planRollback([host]);
    expect(rollback.hosts[0]?.files.map((f) => [f.file.path, f.how])).toEqual([
      [`/${KCM}`, 'restore'],
      [`/${FLAGS}`, 'restore'],
    ]);
    // what the newer set recorded is not lost: kubeadm-config is to roll back too
    expect(rollback.kubeadmConfigNote).toBe(
      'no kubeconfig: kubeadm-config not rolled back; pass --kubeconfig',
    );
    const result = await applyRollback(rollback, { restart: false, readyTimeoutMs: 1000 });
    expect(result.hosts[0]?.result).toBe('rolled back');
    expect(snapshot(root)).toEqual(original);
  });
});
