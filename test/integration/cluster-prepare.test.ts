/**
 * `ccm cluster prepare` end to end on fake node roots built by the real kubeadm (1.30 and 1.36),
 * with kubeadm-config uploaded by that same kubeadm into a real kube-apiserver.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { diffLines } from 'diff';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const fixtures = fileURLToPath(new URL('../fixtures/cluster/', import.meta.url));
const systemctl = join(fixtures, 'systemctl-standin');
const cache = join(
  process.env.CCM_CONTROLPLANE_CACHE ?? join(process.env.HOME ?? '', '.cache', 'ccm-controlplane'),
);

const FILES = [
  'etc/kubernetes/manifests/kube-apiserver.yaml',
  'etc/kubernetes/manifests/kube-controller-manager.yaml',
  'var/lib/kubelet/kubeadm-flags.env',
];

function copyRoot(name: string): string {
  const root = tempDir(`ccm-root-${name}-`);
  cpSync(join(fixtures, name), root, { recursive: true });
  return root;
}

function snapshot(root: string): Record<string, string> {
  return Object.fromEntries(FILES.map((f) => [f, readFileSync(join(root, f), 'utf8')]));
}

/** Lines removed and added between two texts. */
function changedLines(before: string, after: string) {
  const parts = diffLines(before, after);
  const lines = (added: boolean) =>
    parts
      .filter((p) => (added ? p.added : p.removed))
      .flatMap((p) => p.value.split('\n').filter((l) => l !== ''));
  return { removed: lines(false), added: lines(true) };
}

function kubeconfigWithContext(cp: ControlPlane, context: string): string {
  const path = join(cp.dir, `kubeconfig-${context}`);
  writeFileSync(
    path,
    readFileSync(cp.kubeconfigPath, 'utf8').replace('current-context: ccm', `current-context: ${context}`),
  );
  return path;
}

async function clusterConfiguration(cp: ControlPlane): Promise<Record<string, unknown>> {
  const kc = new KubeConfig();
  kc.loadFromFile(cp.kubeconfigPath);
  kc.setCurrentContext('fixtures');
  const cm = await kubeadmConfig(kc.makeApiClient(CoreV1Api));
  return parse(cm.data?.ClusterConfiguration ?? '') as Record<string, unknown>;
}

/** `ccm cluster prepare` of the node at `root`, against `cp`. */
function clusterPrepare(root: string, cp: ControlPlane, ...flags: string[]) {
  return ccm(['cluster', 'prepare', '--root', root, '--kubeconfig', cp.kubeconfigPath, ...flags]);
}

/** The same without restarting the node's kubelet (there is none here). */
function prepareRoot(root: string, cp: ControlPlane, ...extra: string[]) {
  return clusterPrepare(root, cp, '--no-restart', ...extra);
}

/** kubeadm's record of the cluster, the ConfigMap kube-system/kubeadm-config. */
function kubeadmConfig(api: CoreV1Api) {
  return api.readNamespacedConfigMap({ name: 'kubeadm-config', namespace: 'kube-system' });
}

describe.each([
  { version: '1.30.14', apiserverGetsFlag: true },
  { version: '1.36.3', apiserverGetsFlag: false },
])('a kubeadm $version control-plane node', ({ version, apiserverGetsFlag }) => {
  let cp: ControlPlane;
  let root: string;
  let original: Record<string, string>;

  beforeAll(async () => {
    cp = await startControlPlane();
    root = copyRoot(`kubeadm-v${version}`);
    original = snapshot(root);
    // kubeadm's own record, uploaded by the real kubeadm of that version
    await execa(join(cache, `v${version}`, 'kubeadm'), [
      'init',
      'phase',
      'upload-config',
      'kubeadm',
      '--config',
      join(fixtures, `kubeadm-v${version}`, 'kubeadm-config.yaml'),
      '--kubeconfig',
      kubeconfigWithContext(cp, 'fixtures'),
    ]);
  });
  afterAll(async () => {
    await cp?.stop();
  });

  const prepare = (...extra: string[]) => prepareRoot(root, cp, ...extra);

  it('previews a diff with --dry-run and writes nothing', async () => {
    const run = await prepare('--dry-run');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('+    - --cloud-provider=external');
    expect(snapshot(root)).toEqual(original);
  });

  it('refuses to write without --yes when nobody can confirm: one line, exit 2', async () => {
    const run = await prepare();
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^ccm: .*--yes/);
    expect(snapshot(root)).toEqual(original);
  });

  it('sets exactly the expected flags and changes nothing else', async () => {
    const run = await prepare('--yes');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    const after = snapshot(root);

    const apiserver = changedLines(
      original[FILES[0] as string] as string,
      after[FILES[0] as string] as string,
    );
    expect(apiserver.removed).toEqual([]);
    expect(apiserver.added).toEqual(apiserverGetsFlag ? ['    - --cloud-provider=external'] : []);
    if (!apiserverGetsFlag) expect(run.stdout).toMatch(/kube-apiserver: .*1\.33/);

    const kcm = changedLines(original[FILES[1] as string] as string, after[FILES[1] as string] as string);
    expect(kcm.added).toEqual(['    - --cloud-provider=external']);
    expect(kcm.removed).toEqual(
      version === '1.30.14' ? ['    - --cloud-config=/etc/kubernetes/cloud.conf'] : [],
    );

    const kubelet = changedLines(original[FILES[2] as string] as string, after[FILES[2] as string] as string);
    expect(kubelet.removed).toHaveLength(1);
    expect(kubelet.added).toEqual([
      (kubelet.removed[0] as string).replace(/"$/, ' --cloud-provider=external"'),
    ]);

    // kubeadm-config keeps the change across `kubeadm upgrade`
    const config = await clusterConfiguration(cp);
    const args = (component: string) => {
      const extra = (config[component] as { extraArgs?: unknown } | undefined)?.extraArgs;
      if (Array.isArray(extra))
        return Object.fromEntries(extra.map((a: { name: string; value: string }) => [a.name, a.value]));
      return (extra ?? {}) as Record<string, string>;
    };
    expect(args('controllerManager')['cloud-provider']).toBe('external');
    expect(args('controllerManager')).not.toHaveProperty('cloud-config');
    // never recorded for kube-apiserver: a `kubeadm upgrade` to 1.33+ would carry it into a manifest it refuses
    expect(args('apiServer')).not.toHaveProperty('cloud-provider');

    // nothing but the real manifests in the folder the kubelet reads; backups live elsewhere
    expect(readdirSync(join(root, 'etc/kubernetes/manifests')).sort()).toEqual([
      'kube-apiserver.yaml',
      'kube-controller-manager.yaml',
    ]);
    expect(existsSync(join(root, 'var/lib/ccm/backups'))).toBe(true);
  });

  it('changes nothing on a second run', async () => {
    const before = snapshot(root);
    const run = await prepare('--yes', '--json');
    expect(run.exitCode).toBe(0);
    expect(snapshot(root)).toEqual(before);
    expect(JSON.parse(run.stdout).hosts[0].files).toEqual([]);
    // Named `name`, as every report's rows are; `host` stays for the scripts that read it (review 44).
    expect(JSON.parse(run.stdout).hosts[0]).toMatchObject({ name: 'local', host: 'local' });
  });

  it('previews a rollback with --dry-run and writes nothing (issue 6, item 1)', async () => {
    const before = snapshot(root);
    const configBefore = await clusterConfiguration(cp);
    const run = await prepare('--rollback', '--dry-run');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('-    - --cloud-provider=external');
    expect(run.stdout).toContain('Dry run: nothing written.');
    expect(snapshot(root)).toEqual(before);
    expect(await clusterConfiguration(cp)).toEqual(configBefore);
  });

  it('refuses a rollback without --yes when nobody can confirm: one line, exit 2 (issue 6, item 1)', async () => {
    const before = snapshot(root);
    const run = await prepare('--rollback');
    expect(run.exitCode).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^ccm: .*--yes/);
    expect(snapshot(root)).toEqual(before);
  });

  it('rolls back byte for byte, kubeadm-config included', async () => {
    const run = await prepare('--rollback', '--yes');
    expect(run.exitCode).toBe(0);
    expect(snapshot(root)).toEqual(original);
    expect(run.stdout).toMatch(/rolled back/);
    expect(run.stdout).toMatch(/API server ready \(\/readyz\) after/);
    const config = await clusterConfiguration(cp);
    expect(JSON.stringify(config)).not.toContain('"cloud-provider"');
  });
});

describe('applying on the local machine', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane();
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it('restarts the kubelet through systemctl, checks its new flags are live, and waits for /readyz', async () => {
    const root = copyRoot('kubeadm-v1.36.3');
    const log = join(root, 'systemctl.log');
    const run = await ccm(
      ['cluster', 'prepare', '--root', root, '--kubeconfig', cp.kubeconfigPath, '--yes', '-o', 'table'],
      { PATH: `${systemctl}:${process.env.PATH}`, STANDIN_ROOT: root, STANDIN_LOG: log },
    );
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe(
      'daemon-reload\nrestart kubelet\nshow -p MainPID --value kubelet\n',
    );
    expect(readFileSync(join(root, 'proc/103/cmdline'), 'utf8')).toContain('\0--cloud-provider=external\0');
    expect(run.stdout).toMatch(/API server ready \(\/readyz\) after \d+\.\ds/);
    expect(run.stdout).toMatch(/prepared +\d+ +kubelet/);
  });

  it('--initialize-existing taints existing Nodes without a provider ID, and explains it', async () => {
    const api = fixtureApi(cp.kubeconfigPath);
    await createNodes(api, [
      { name: 'old-1', tainted: false },
      { name: 'old-2', tainted: false, providerID: 'cloudlycke://old-2' },
    ]);
    const root = copyRoot('kubeadm-v1.36.3');
    const hint = await clusterPrepare(root, cp, '--dry-run');
    expect(hint.stdout).toContain('--initialize-existing');
    const run = await prepareRoot(root, cp, '--yes', '--initialize-existing');
    expect(run.exitCode).toBe(0);
    const taints = async (name: string) =>
      ((await api.readNode({ name })).spec?.taints ?? []).map((t) => t.key);
    expect(await taints('old-1')).toContain('node.cloudprovider.kubernetes.io/uninitialized');
    expect(await taints('old-2')).not.toContain('node.cloudprovider.kubernetes.io/uninitialized');
    expect(run.stdout).toContain(
      '1 existing Node tainted node.cloudprovider.kubernetes.io/uninitialized: run `ccm nodes init` to initialise it.',
    );
  });
});

describe('--rollback after --initialize-existing', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane();
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it('takes back the taints prepare added, and only those, even from a later run that wrote no file', async () => {
    const api = fixtureApi(cp.kubeconfigPath);
    const TAINT = 'node.cloudprovider.kubernetes.io/uninitialized';
    // The taints of interest here (the control plane's own controllers may add node.kubernetes.io ones).
    const taints = async (name: string) =>
      ((await api.readNode({ name })).spec?.taints ?? [])
        .map((t) => t.key)
        .filter((key) => key === TAINT || key === 'dedicated');
    // old-1 and old-2 registered before the switch; new-1's kubelet tainted it itself.
    await createNodes(api, [
      { name: 'old-1', tainted: false },
      { name: 'old-2', tainted: false, taints: [{ key: 'dedicated', value: 'db', effect: 'NoSchedule' }] },
      { name: 'new-1' },
    ]);
    const root = copyRoot('kubeadm-v1.36.3');
    const original = snapshot(root);
    expect((await prepareRoot(root, cp, '--yes')).exitCode).toBe(0);
    // A second run writes no file here: its backup set records only the taints.
    const tainting = await prepareRoot(root, cp, '--yes', '--initialize-existing');
    expect(tainting.exitCode).toBe(0);
    expect(await taints('old-1')).toEqual([TAINT]);
    expect(await taints('old-2')).toEqual(['dedicated', TAINT]);

    const preview = await prepareRoot(root, cp, '--rollback', '--dry-run');
    expect(preview.stdout).toContain(`the ${TAINT} taint prepare added comes off 2 Nodes: old-1, old-2`);
    expect(await taints('old-1')).toEqual([TAINT]);

    const run = await prepareRoot(root, cp, '--rollback', '--yes', '-o', 'table');
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toMatch(/^1 host: 1 rolled back; taint removed from 2 Nodes/m);
    expect(await taints('old-1')).toEqual([]);
    expect(await taints('old-2')).toEqual(['dedicated']);
    expect(await taints('new-1')).toEqual([TAINT]);
    expect(snapshot(root)).toEqual(original);
  });

  it("takes off no other taint, whatever a host's record says (root on a node can rewrite it)", async () => {
    const api = fixtureApi(cp.kubeconfigPath);
    const controlPlane = { key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' };
    await createNodes(api, [
      { name: 'forged-1', tainted: false },
      { name: 'cp-9', tainted: false, providerID: 'cloudlycke://cp-9', taints: [controlPlane] },
    ]);
    const root = copyRoot('kubeadm-v1.36.3');
    expect((await prepareRoot(root, cp, '--yes', '--initialize-existing')).exitCode).toBe(0);
    const backups = join(root, 'var/lib/ccm/backups');
    const set = join(backups, readdirSync(backups).sort().at(-1) as string, 'manifest.json');
    const manifest = JSON.parse(readFileSync(set, 'utf8'));
    expect(manifest.taints.map((t: { node: string }) => t.node)).toContain('forged-1');
    const uid = (await api.readNode({ name: 'cp-9' })).metadata?.uid;
    manifest.taints.push({ node: 'cp-9', uid, ...controlPlane });
    writeFileSync(set, JSON.stringify(manifest));

    const run = await prepareRoot(root, cp, '--rollback', '--yes');
    expect(run.exitCode).toBe(0);
    const keys = async (name: string) =>
      ((await api.readNode({ name })).spec?.taints ?? []).map((t) => t.key);
    expect(await keys('cp-9')).toContain(controlPlane.key);
    expect(await keys('forged-1')).not.toContain('node.cloudprovider.kubernetes.io/uninitialized');
  });

  it('leaves the taint of a Node registered again under the same name', async () => {
    const api = fixtureApi(cp.kubeconfigPath);
    await createNodes(api, [{ name: 'again-1', tainted: false }]);
    const root = copyRoot('kubeadm-v1.36.3');
    expect((await prepareRoot(root, cp, '--yes', '--initialize-existing')).exitCode).toBe(0);
    await api.deleteNode({ name: 'again-1' });
    await createNodes(api, [{ name: 'again-1' }]);
    const run = await prepareRoot(root, cp, '--rollback', '--yes');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain('Node again-1 was registered again since prepare tainted it');
    expect(((await api.readNode({ name: 'again-1' })).spec?.taints ?? []).map((t) => t.key)).toContain(
      'node.cloudprovider.kubernetes.io/uninitialized',
    );
  });
});

describe('a hard-way control-plane node (issue 6, item 3)', () => {
  it('restarts kube-apiserver, kube-controller-manager, then the kubelet, and checks each new flag is live', async () => {
    const root = copyRoot('hard-way');
    const log = join(root, 'systemctl.log');
    const run = await ccm(
      [
        'cluster',
        'prepare',
        '--root',
        root,
        '--kubelet-version',
        'v1.32.4',
        '--apiserver-version',
        'v1.32.4',
        '--controller-manager-version',
        'v1.32.4',
        '--yes',
        '-o',
        'table',
      ],
      { PATH: `${systemctl}:${process.env.PATH}`, STANDIN_ROOT: root, STANDIN_LOG: log },
    );
    expect(run.stderr).toBe('');
    expect(run.exitCode).toBe(0);
    expect(readFileSync(log, 'utf8').trim().split('\n')).toEqual([
      'daemon-reload',
      'restart kube-apiserver',
      'show -p MainPID --value kube-apiserver',
      'restart kube-controller-manager',
      'show -p MainPID --value kube-controller-manager',
      'restart kubelet',
      'show -p MainPID --value kubelet',
    ]);
    for (const pid of ['101', '102', '103']) {
      expect(readFileSync(join(root, 'proc', pid, 'cmdline'), 'utf8')).toContain(
        '\0--cloud-provider=external',
      );
    }
    expect(run.stdout).toMatch(/prepared +3 +kube-apiserver,kube-controller-manager,kubelet/);
  });
});

/** A control plane holding kubeadm's uploaded config (`kubeadm init phase upload-config`), for one describe. */
async function controlPlaneWithKubeadmConfig(): Promise<ControlPlane> {
  const cp = await startControlPlane();
  await execa(join(cache, 'v1.36.3', 'kubeadm'), [
    'init',
    'phase',
    'upload-config',
    'kubeadm',
    '--config',
    join(fixtures, 'kubeadm-v1.36.3', 'kubeadm-config.yaml'),
    '--kubeconfig',
    kubeconfigWithContext(cp, 'fixtures'),
  ]);
  return cp;
}

describe('rolling back after a `kubeadm upgrade` (issue 6, item 2)', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await controlPlaneWithKubeadmConfig();
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it("keeps the upgrade (image, kubernetesVersion) and undoes only ccm's flags", async () => {
    const root = copyRoot('kubeadm-v1.36.3');
    const original = snapshot(root);
    const prepare = (...extra: string[]) => prepareRoot(root, cp, ...extra);
    expect((await prepare('--yes')).exitCode).toBe(0);

    // what `kubeadm upgrade apply v1.36.4` changes: the manifests' images and kubeadm's record
    const kcm = join(root, FILES[1] as string);
    writeFileSync(kcm, readFileSync(kcm, 'utf8').replace(':v1.36.3', ':v1.36.4'));
    const api = fixtureApi(cp.kubeconfigPath);
    const cm = await kubeadmConfig(api);
    const upgraded = (cm.data?.ClusterConfiguration ?? '').replace(
      /kubernetesVersion: v1\.36\.3/,
      'kubernetesVersion: v1.36.4',
    );
    expect(upgraded).toContain('kubernetesVersion: v1.36.4');
    await api.replaceNamespacedConfigMap({
      name: 'kubeadm-config',
      namespace: 'kube-system',
      body: { ...cm, data: { ...cm.data, ClusterConfiguration: upgraded } },
    });

    const run = await prepare('--rollback', '--yes');
    expect(run.exitCode).toBe(0);
    expect(run.stdout).toContain("changed since prepare: only ccm's flag edits are undone");
    expect(readFileSync(kcm, 'utf8')).toBe(
      (original[FILES[1] as string] as string).replace(':v1.36.3', ':v1.36.4'),
    );
    expect(readFileSync(join(root, FILES[2] as string), 'utf8')).toBe(original[FILES[2] as string]);
    const config = await clusterConfiguration(cp);
    expect(config.kubernetesVersion).toBe('v1.36.4');
    expect(JSON.stringify(config)).not.toContain('"cloud-provider"');
  });

  it("undoes kubeadm-config from the cluster's own record, not from a host's, which anyone with root there can forge", async () => {
    const root = copyRoot('kubeadm-v1.36.3');
    const prepare = (...extra: string[]) => prepareRoot(root, cp, ...extra);
    expect((await prepare('--yes')).exitCode).toBe(0);
    const api = fixtureApi(cp.kubeconfigPath);
    const cm = await kubeadmConfig(api);
    expect(
      JSON.parse(cm.metadata?.annotations?.['ccm.io/prepare-record'] ?? '{}').changes.length,
    ).toBeGreaterThan(0);

    // A worker's root (or anyone who can write the backup) rewrites the host's record: the text to
    // "restore" gains authorization-mode=AlwaysAllow, with the digest to match, and a revert sets it.
    const backups = join(root, 'var/lib/ccm/backups');
    const set = join(backups, readdirSync(backups).sort().at(-1) as string, 'manifest.json');
    const manifest = JSON.parse(readFileSync(set, 'utf8'));
    const forged = `${manifest.kubeadmConfig.before}`.replace(
      'apiServer:',
      'apiServer:\n  extraArgs:\n  - name: authorization-mode\n    value: AlwaysAllow',
    );
    manifest.kubeadmConfig.before = forged;
    manifest.kubeadmConfig.sha256 = createHash('sha256')
      .update(cm.data?.ClusterConfiguration ?? '')
      .digest('hex');
    manifest.kubeadmConfig.revert.push({
      flag: 'authorization-mode',
      value: 'AlwaysAllow',
      reason: 'x',
      component: 'kube-apiserver',
    });
    manifest.kubeadmConfig.changes.push({
      flag: 'authorization-mode',
      reason: 'x',
      component: 'kube-apiserver',
    });
    writeFileSync(set, JSON.stringify(manifest));

    expect((await prepare('--rollback', '--yes')).exitCode).toBe(0);
    const after = await kubeadmConfig(api);
    expect(after.data?.ClusterConfiguration).not.toContain('AlwaysAllow');
    expect(after.data?.ClusterConfiguration).not.toContain('cloud-provider');
    expect(after.metadata?.annotations?.['ccm.io/prepare-record']).toBeUndefined();
  });
});

describe('a kubelet restart that fails after the files were written, then a re-run', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await controlPlaneWithKubeadmConfig();
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it('names the failed restart; the re-run restarts the kubelet that still lacks the flag, though no file changes; the rollback restores every file', async () => {
    const root = copyRoot('kubeadm-v1.36.3');
    const original = snapshot(root);
    const log = join(root, 'systemctl.log');
    const env = (extra: Record<string, string> = {}) => ({
      PATH: `${systemctl}:${process.env.PATH}`,
      STANDIN_ROOT: root,
      STANDIN_LOG: log,
      ...extra,
    });
    const run = (env: Record<string, string>, ...flags: string[]) =>
      ccm(['cluster', 'prepare', '--root', root, '--kubeconfig', cp.kubeconfigPath, ...flags], env);
    // The node's kubelet runs, started from kubeadm's flags as they are before prepare.
    await execa(join(systemctl, 'systemctl'), ['restart', 'kubelet'], { env: env() });
    const kubelet = () => readFileSync(join(root, 'proc/103/cmdline'), 'utf8');
    expect(kubelet()).not.toContain('--cloud-provider=external');

    const api = fixtureApi(cp.kubeconfigPath);
    await createNodes(api, [{ name: 'old-1', tainted: false }]);
    const tainted = async () =>
      ((await api.readNode({ name: 'old-1' })).spec?.taints ?? []).some(
        (t) => t.key === 'node.cloudprovider.kubernetes.io/uninitialized',
      );

    const failed = await run(
      env({ STANDIN_FAIL: 'kubelet' }),
      '--yes',
      '--initialize-existing',
      '-o',
      'table',
    );
    expect(failed.stderr).toBe('');
    expect(failed.exitCode).toBe(1);
    expect(failed.stdout).not.toContain('backup could not be written');
    expect(failed.stdout).toMatch(
      /kubeadm-config: not updated: systemctl restart kubelet failed on local: Job for kubelet\.service failed because the control process exited with error code \(the files on local are written, backup \S+\); fix that and run `ccm cluster prepare` again/,
    );
    expect(failed.stdout).toMatch(/existing Nodes not tainted: systemctl restart kubelet failed on local/);
    expect(kubelet()).not.toContain('--cloud-provider=external');
    expect(await tainted()).toBe(false);

    const dryRun = await run(env(), '--dry-run', '-o', 'table');
    expect(dryRun.exitCode).toBe(0);
    expect(dryRun.stdout).toContain(
      'restart kubelet: its running process (pid 103) lacks --cloud-provider=external, which its files have',
    );
    expect(dryRun.stdout).toMatch(/^Dry run: nothing written\. 1 host: 1 would prepare/m);

    const again = await run(env(), '--yes', '--initialize-existing', '-o', 'table');
    expect(again.stderr).toBe('');
    expect(again.exitCode).toBe(0);
    expect(await tainted()).toBe(true);
    expect(kubelet()).toContain('\0--cloud-provider=external');
    expect(again.stdout).toMatch(/prepared +0 +kubelet/);
    expect(again.stdout).toContain('kubeadm-config updated');
    expect(JSON.stringify((await clusterConfiguration(cp)).controllerManager)).toContain('cloud-provider');

    // The re-run's backup set holds no file (it only recorded kubeadm-config): it must not hide the first.
    const rollback = await run(env(), '--rollback', '--yes', '-o', 'table');
    expect(rollback.stderr).toBe('');
    expect(rollback.exitCode).toBe(0);
    expect(rollback.stdout).not.toContain('nothing to roll back');
    expect(rollback.stdout).toMatch(
      /1 host: 1 rolled back; kubeadm-config rolled back; taint removed from 1 Node/,
    );
    expect(await tainted()).toBe(false);
    expect(snapshot(root)).toEqual(original);
    expect(JSON.stringify(await clusterConfiguration(cp))).not.toContain('"cloud-provider"');
    expect(kubelet()).not.toContain('--cloud-provider=external');
  });
});

describe('a rollback whose kubelet restart fails, then a re-run', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await controlPlaneWithKubeadmConfig();
  });
  afterAll(async () => {
    await cp?.stop();
  });

  it('fails naming the restart and leaves kubeadm-config; the re-run (dry run included) starts the stopped kubelet, then rolls kubeadm-config back', async () => {
    const root = copyRoot('kubeadm-v1.36.3');
    const original = snapshot(root);
    const env = (extra: Record<string, string> = {}) => ({
      PATH: `${systemctl}:${process.env.PATH}`,
      STANDIN_ROOT: root,
      STANDIN_LOG: join(root, 'systemctl.log'),
      ...extra,
    });
    const run = (env: Record<string, string>, ...flags: string[]) =>
      ccm(['cluster', 'prepare', '--root', root, '--kubeconfig', cp.kubeconfigPath, ...flags], env);
    await execa(join(systemctl, 'systemctl'), ['restart', 'kubelet'], { env: env() });
    const kubelet = () => join(root, 'proc/103/cmdline');
    const prepared = await run(env(), '--yes', '-o', 'table');
    expect(prepared.exitCode).toBe(0);
    expect(readFileSync(kubelet(), 'utf8')).toContain('\0--cloud-provider=external');

    // systemd: the kubelet does not come back up after the files were restored.
    const failed = await run(env({ STANDIN_STOP: 'kubelet' }), '--rollback', '--yes', '-o', 'table');
    expect(failed.stderr).toBe('');
    expect(failed.exitCode).toBe(1);
    expect(failed.stdout).not.toContain('kubeadm-config rolled back');
    expect(failed.stdout).toMatch(
      /kubeadm-config: not rolled back: systemctl restart kubelet failed on local: Job for kubelet\.service failed/,
    );
    expect(existsSync(kubelet())).toBe(false);
    expect(snapshot(root)).toEqual(original);
    expect(JSON.stringify(await clusterConfiguration(cp))).toContain('cloud-provider');

    const dryRun = await run(env(), '--rollback', '--dry-run', '-o', 'table');
    expect(dryRun.exitCode).toBe(0);
    expect(dryRun.stdout).toContain('restart kubelet: it is not running');
    expect(dryRun.stdout).toMatch(/^Dry run: nothing written\. 1 host: 1 would roll back/m);
    expect(existsSync(kubelet())).toBe(false);

    const again = await run(env(), '--rollback', '--yes', '-o', 'table');
    expect(again.stderr).toBe('');
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toMatch(/1 host: 1 rolled back; kubeadm-config rolled back/);
    expect(again.stdout).toMatch(/rolled back +0 +kubelet/);
    expect(readFileSync(kubelet(), 'utf8')).not.toContain('--cloud-provider');
    expect(JSON.stringify(await clusterConfiguration(cp))).not.toContain('"cloud-provider"');

    const done = await run(env(), '--rollback', '--yes', '-o', 'table');
    expect(done.exitCode).toBe(0);
    expect(done.stdout).toMatch(/1 host: 1 nothing to roll back; nothing written/);
  });
});

describe('a machine with no cluster at all', () => {
  it('--dry-run says what it looked for in one line, naming the host once, exit 2', async () => {
    const run = await ccm(['cluster', 'prepare', '--root', tempDir('ccm-root-empty-'), '--dry-run']);
    expect(run).toMatchObject({ exitCode: 2, stdout: '' });
    expect(run.stderr).toMatch(
      /^ccm: local: no kubeadm files \(\/etc\/kubernetes\/manifests\/kube-apiserver\.yaml, [^)]*\) and no hard-way units \([^)]*\)$/,
    );
    expect(run.stderr.split('local').length - 1).toBe(1);
  });
});
