import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { detect } from '../../../src/cluster/detect.js';
import { readArgs as readEnv } from '../../../src/cluster/env-file.js';
import { edit as editClusterConfiguration, readExtraArgs } from '../../../src/cluster/kubeadm-config.js';
import {
  KUBEADM_CONFIG_APISERVER,
  planClusterConfiguration,
  planPrepare,
  UNKNOWN_APISERVER_VERSION,
} from '../../../src/cluster/plan.js';
import { readArgs as readPod } from '../../../src/cluster/static-pod.js';
import { readArgs as readUnit } from '../../../src/cluster/systemd-unit.js';
import type { Detection, FileEdit, Host } from '../../../src/cluster/types.js';
import { changed, FIXTURES, fixture, folderHost } from './support.js';

const PROVIDER_ID = 'digitalocean://123456';

async function contentsOf(host: Host, detection: Detection): Promise<Map<string, Buffer | undefined>> {
  const map = new Map<string, Buffer | undefined>();
  for (const f of detection.files) map.set(f.path, await host.read(f.path));
  return map;
}

/** Plans, "applies" into a copy of the contents, and plans again. */
async function prepareTwice(name: string, options: Parameters<typeof planPrepare>[2], versions = {}) {
  const host = folderHost(join(FIXTURES, name), versions);
  const detection = await detect(host);
  const contents = await contentsOf(host, detection);
  const first = planPrepare(detection, contents, options);
  const after = new Map(contents);
  for (const e of first.edits) after.set(e.file.path, e.after);
  const second = planPrepare(detection, after, options);
  return { detection, contents, first, after, second };
}

const byPath = (edits: FileEdit[], path: string) => edits.find((e) => e.file.path === path) as FileEdit;
const APISERVER = '/etc/kubernetes/manifests/kube-apiserver.yaml';
const KCM = '/etc/kubernetes/manifests/kube-controller-manager.yaml';
const FLAGS_ENV = '/var/lib/kubelet/kubeadm-flags.env';

describe('planPrepare over the real kubeadm 1.30.14 fixture', () => {
  it('kube-apiserver gets --cloud-provider=external; kcm gets it and loses --cloud-config; kubelet gets it and --provider-id', async () => {
    const { first, second } = await prepareTwice('kubeadm-v1.30.14', { providerID: PROVIDER_ID });
    expect(first.edits.map((e) => e.file.path)).toEqual([APISERVER, KCM, FLAGS_ENV]);
    expect(first.skips).toEqual([]);

    const api = byPath(first.edits, APISERVER);
    expect(changed(api.before, api.after)).toEqual({
      removed: [],
      added: ['    - --cloud-provider=external'],
    });
    expect(api.changes.map((c) => [c.flag, c.value])).toEqual([['cloud-provider', 'external']]);
    expect(readPod(api.after, 'kube-apiserver')).toEqual([
      ...readPod(api.before, 'kube-apiserver'),
      '--cloud-provider=external',
    ]);
    expect(api.changes[0]?.reason).toMatch(/v1\.30\.14 still has --cloud-provider/);

    const kcm = byPath(first.edits, KCM);
    expect(changed(kcm.before, kcm.after)).toEqual({
      removed: ['    - --cloud-config=/etc/kubernetes/cloud.conf'],
      added: ['    - --cloud-provider=external'],
    });

    const kubelet = byPath(first.edits, FLAGS_ENV);
    expect(readEnv(kubelet.after, 'KUBELET_KUBEADM_ARGS').slice(-2)).toEqual([
      '--cloud-provider=external',
      `--provider-id=${PROVIDER_ID}`,
    ]);
    expect(changed(kubelet.before, kubelet.after).removed).toHaveLength(1);
    expect(changed(kubelet.before, kubelet.after).added).toHaveLength(1);

    // Second run: nothing to do, and each component says so.
    expect(second.edits).toEqual([]);
    expect(second.skips.map((s) => s.component)).toEqual([
      'kube-apiserver',
      'kube-controller-manager',
      'kubelet',
    ]);
    expect(second.skips.every((s) => s.reason.startsWith('already prepared'))).toBe(true);
  });
});

describe('planPrepare over the real kubeadm 1.36.3 fixture', () => {
  const extra = { 'kube-apiserver': { 'kubelet-preferred-address-types': 'InternalIP,ExternalIP,Hostname' } };

  it('kube-apiserver is skipped with the reason; kcm and kubelet get the flag; the second run plans nothing', async () => {
    const { first, second } = await prepareTwice('kubeadm-v1.36.3', { extra });
    expect(first.edits.map((e) => e.file.path)).toEqual([KCM, FLAGS_ENV]);
    expect(first.skips).toEqual([
      {
        component: 'kube-apiserver',
        reason:
          '--cloud-provider not added: kube-apiserver v1.36.3 no longer has it (removed in 1.33; the server would refuse to start)',
      },
    ]);
    const kcm = byPath(first.edits, KCM);
    expect(changed(kcm.before, kcm.after)).toEqual({
      removed: [],
      added: ['    - --cloud-provider=external'],
    });
    const kubelet = byPath(first.edits, FLAGS_ENV);
    expect(kubelet.after.toString()).toBe(
      'KUBELET_KUBEADM_ARGS="--hostname-override=cp-1 --node-ip=10.0.0.10 --cloud-provider=external"\n',
    );
    expect(second.edits).toEqual([]);
    expect(second.skips.map((s) => s.component)).toEqual([
      'kube-apiserver',
      'kube-controller-manager',
      'kubelet',
    ]);
  });

  it('a leftover --cloud-provider / --cloud-config on a 1.33+ apiserver is removed, and the provider flag set', async () => {
    const host = folderHost(join(FIXTURES, 'kubeadm-v1.36.3'));
    const detection = await detect(host);
    const contents = await contentsOf(host, detection);
    const original = contents.get(APISERVER) as Buffer;
    const leftover = Buffer.from(
      original
        .toString()
        .replace(
          '    - --tls-private-key-file=/etc/kubernetes/pki/apiserver.key\n',
          '    - --tls-private-key-file=/etc/kubernetes/pki/apiserver.key\n    - --cloud-provider=external\n    - --cloud-config=/etc/kubernetes/cloud.conf\n',
        )
        .replace(
          '--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname',
          '--kubelet-preferred-address-types=Hostname',
        ),
    );
    contents.set(APISERVER, leftover);
    const plan = planPrepare(detection, contents, { extra });
    const api = byPath(plan.edits, APISERVER);
    expect(changed(leftover, api.after)).toEqual({
      removed: [
        '    - --kubelet-preferred-address-types=Hostname',
        '    - --cloud-provider=external',
        '    - --cloud-config=/etc/kubernetes/cloud.conf',
      ],
      added: ['    - --kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname'],
    });
    expect(api.after.equals(original)).toBe(true);
    expect(api.changes.map((c) => c.flag)).toEqual([
      'kubelet-preferred-address-types',
      'cloud-provider',
      'cloud-config',
    ]);
    expect(api.changes[1]?.reason).toMatch(/removed in 1\.33/);
  });

  it('an apiserver of unknown version is left alone with "pass --apiserver-version"', async () => {
    const host = folderHost(join(FIXTURES, 'kubeadm-v1.36.3'));
    const detection = await detect(host);
    delete detection.versions['kube-apiserver'];
    const plan = planPrepare(detection, await contentsOf(host, detection), {});
    expect(plan.edits.map((e) => e.file.component)).not.toContain('kube-apiserver');
    expect(plan.skips).toContainEqual({ component: 'kube-apiserver', reason: UNKNOWN_APISERVER_VERSION });
  });

  it('the KUBELET_EXTRA_ARGS file only gets corrections of flags it already sets (its values win)', async () => {
    const host = folderHost(join(FIXTURES, 'kubeadm-v1.36.3'));
    const detection = await detect(host);
    const contents = await contentsOf(host, detection);
    const plain = planPrepare(detection, contents, { providerID: PROVIDER_ID });
    expect(plain.edits.map((e) => e.file.path)).not.toContain('/etc/sysconfig/kubelet');

    contents.set(
      '/etc/sysconfig/kubelet',
      Buffer.from('KUBELET_EXTRA_ARGS="--cloud-provider=aws --cloud-config=/etc/aws.conf --v=2"\n'),
    );
    const plan = planPrepare(detection, contents, { providerID: PROVIDER_ID });
    const extraFile = byPath(plan.edits, '/etc/sysconfig/kubelet');
    expect(extraFile.after.toString()).toBe('KUBELET_EXTRA_ARGS="--cloud-provider=external --v=2"\n');
    expect(readEnv(byPath(plan.edits, FLAGS_ENV).after, 'KUBELET_KUBEADM_ARGS')).toContain(
      `--provider-id=${PROVIDER_ID}`,
    );
  });

  it('creates kubeadm-flags.env when it is missing', async () => {
    const host = folderHost(join(FIXTURES, 'kubeadm-v1.36.3'));
    const detection = await detect(host);
    const contents = await contentsOf(host, detection);
    contents.set(FLAGS_ENV, undefined);
    const edit = byPath(planPrepare(detection, contents).edits, FLAGS_ENV);
    expect(edit.before.length).toBe(0);
    expect(edit.after.toString()).toBe('KUBELET_KUBEADM_ARGS="--cloud-provider=external"\n');
  });
});

describe('planPrepare over the hard-way fixture (1.32)', () => {
  const versions = {
    '/usr/local/bin/kube-apiserver': 'v1.32.4',
    '/usr/local/bin/kube-controller-manager': 'v1.32.4',
    '/usr/local/bin/kubelet': 'v1.32.4',
  };

  it('each unit gets --cloud-provider=external on a new last line, and nothing else changes', async () => {
    const { first, second } = await prepareTwice('hard-way', { providerID: PROVIDER_ID }, versions);
    expect(first.edits.map((e) => e.file.path)).toEqual([
      '/etc/systemd/system/kube-apiserver.service',
      '/etc/systemd/system/kube-controller-manager.service',
      '/etc/systemd/system/kubelet.service',
    ]);
    for (const e of first.edits) {
      const kubelet = e.file.component === 'kubelet';
      const added = kubelet
        ? ['--cloud-provider=external', `--provider-id=${PROVIDER_ID}`]
        : ['--cloud-provider=external'];
      expect(readUnit(e.after)).toEqual([...readUnit(e.before), ...added]);
      expect(changed(e.before, e.after)).toEqual({
        removed: ['  --v=2'],
        added: ['  --v=2 \\', ...added.map((a, i) => (i < added.length - 1 ? `  ${a} \\` : `  ${a}`))],
      });
    }
    expect(readUnit(byPath(first.edits, '/etc/systemd/system/kubelet.service').after).slice(-2)).toEqual([
      '--cloud-provider=external',
      `--provider-id=${PROVIDER_ID}`,
    ]);
    expect(second.edits).toEqual([]);
  });

  it('without versions the apiserver is left alone, the others still prepared', async () => {
    const { first } = await prepareTwice('hard-way', {});
    expect(first.edits.map((e) => e.file.component)).toEqual(['kube-controller-manager', 'kubelet']);
    expect(first.skips).toEqual([{ component: 'kube-apiserver', reason: UNKNOWN_APISERVER_VERSION }]);
  });
});

describe('planClusterConfiguration', () => {
  const v = (minor: number, patch = 0) => ({ major: 1, minor, patch });

  it('v1beta3 (1.30): controllerManager gets cloud-provider and loses cloud-config; apiServer is not recorded, with the reason', () => {
    const text = fixture('kubeadm-v1.30.14', 'cluster-configuration.yaml').toString();
    const plan = planClusterConfiguration(text, { versions: { 'kube-apiserver': v(30, 14) } });
    expect(plan.changes.map((c) => [c.component, c.flag, c.value])).toEqual([
      ['kube-controller-manager', 'cloud-provider', 'external'],
      ['kube-controller-manager', 'cloud-config', undefined],
    ]);
    expect(readExtraArgs(plan.after, 'apiServer')).toEqual([]);
    expect(readExtraArgs(plan.after, 'controllerManager')).toEqual([
      ['bind-address', '0.0.0.0'],
      ['cloud-provider', 'external'],
    ]);
    expect(plan.skips).toEqual([{ component: 'kube-apiserver', reason: KUBEADM_CONFIG_APISERVER }]);
    const again = planClusterConfiguration(plan.after, { versions: { 'kube-apiserver': v(30, 14) } });
    expect(again.after).toBe(plan.after);
    expect(again.changes).toEqual([]);
  });

  it('v1beta4 (1.36): no apiServer cloud-provider (with the reason), provider flags recorded, idempotent', () => {
    const text = fixture('kubeadm-v1.36.3', 'cluster-configuration.yaml').toString();
    const extra = {
      'kube-apiserver': { 'kubelet-preferred-address-types': 'InternalIP,ExternalIP,Hostname' },
    };
    // No detected version: the record's own kubernetesVersion (v1.36.3) decides.
    const plan = planClusterConfiguration(text, { versions: {} }, { extra });
    expect(plan.skips.map((s) => s.component)).toEqual(['kube-apiserver']);
    expect(readExtraArgs(plan.after, 'apiServer')).toEqual([
      ['kubelet-preferred-address-types', 'InternalIP,ExternalIP,Hostname'],
    ]);
    expect(readExtraArgs(plan.after, 'controllerManager')).toEqual([
      ['bind-address', '0.0.0.0'],
      ['cloud-provider', 'external'],
    ]);
    expect(planClusterConfiguration(plan.after, { versions: {} }, { extra }).after).toBe(plan.after);
  });

  it('a recorded apiServer cloud-provider (set by hand) is taken out, whatever the version', () => {
    const text = fixture('kubeadm-v1.30.14', 'cluster-configuration.yaml').toString();
    const prepared = editClusterConfiguration(text, {
      apiServer: [{ flag: 'cloud-provider', value: 'external', reason: 'set by an operator' }],
    });
    expect(readExtraArgs(prepared, 'apiServer')).toEqual([['cloud-provider', 'external']]);
    const apiserverChanges = (versions: Parameters<typeof planClusterConfiguration>[1]) =>
      planClusterConfiguration(prepared, versions)
        .changes.filter((c) => c.component === 'kube-apiserver')
        .map((c) => [c.component, c.flag, c.value]);
    expect(apiserverChanges({ versions: { 'kube-apiserver': v(32, 4) } })).toEqual([
      ['kube-apiserver', 'cloud-provider', undefined],
    ]);
    const upgraded = planClusterConfiguration(prepared, { versions: { 'kube-apiserver': v(33, 1) } });
    expect(readExtraArgs(upgraded.after, 'apiServer')).toEqual([]);
    expect(apiserverChanges({ versions: { 'kube-apiserver': v(33, 1) } })).toEqual([
      ['kube-apiserver', 'cloud-provider', undefined],
    ]);
  });
});
