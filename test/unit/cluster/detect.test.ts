import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { describeVersion, detect, NotDetectedError } from '../../../src/cluster/detect.js';
import { FIXTURES, fixture, folderHost, memoryHost } from './support.js';

const root = (name: string) => join(FIXTURES, name);
const staticPod = (component: string) => ({
  component,
  kind: 'static-pod',
  path: `/etc/kubernetes/manifests/${component}.yaml`,
});
const systemdUnit = (component: string) => ({
  component,
  kind: 'systemd-unit',
  path: `/etc/systemd/system/${component}.service`,
});
const envFile = (path: string, variable: string) => ({
  component: 'kubelet',
  kind: 'env-file',
  path,
  variable,
});
const KUBEADM_FLAGS = envFile('/var/lib/kubelet/kubeadm-flags.env', 'KUBELET_KUBEADM_ARGS');

describe('detect', () => {
  it('kubeadm 1.30 control plane (Debian packages): manifests, flags file, /etc/default/kubelet, versions', async () => {
    const host = folderHost(root('kubeadm-v1.30.14'), { '/usr/bin/kubelet': 'v1.30.14' });
    const d = await detect(host);
    expect(d.layout).toBe('kubeadm');
    expect(d.files).toEqual([
      staticPod('kube-apiserver'),
      staticPod('kube-controller-manager'),
      KUBEADM_FLAGS,
      envFile('/etc/default/kubelet', 'KUBELET_EXTRA_ARGS'),
    ]);
    expect(d.versions).toEqual({
      'kube-apiserver': { major: 1, minor: 30, patch: 14 },
      'kube-controller-manager': { major: 1, minor: 30, patch: 14 },
      kubelet: { major: 1, minor: 30, patch: 14 },
    });
    expect(d.versionSources).toEqual({
      'kube-apiserver': 'image tag',
      'kube-controller-manager': 'image tag',
      kubelet: '/usr/bin/kubelet --version',
    });
    // The kubelet binary is the one the kubeadm drop-in starts.
    expect(host.runs).toEqual([['/usr/bin/kubelet', '--version']]);
    expect(describeVersion(d, 'kube-apiserver')).toBe('kube-apiserver v1.30.14 (image tag)');
  });

  it('kubeadm 1.36 (RPM packages): the drop-in names /etc/sysconfig/kubelet', async () => {
    const d = await detect(folderHost(root('kubeadm-v1.36.3'), { '/usr/bin/kubelet': 'v1.36.3' }));
    expect(d.files.map((f) => f.path)).toEqual([
      '/etc/kubernetes/manifests/kube-apiserver.yaml',
      '/etc/kubernetes/manifests/kube-controller-manager.yaml',
      '/var/lib/kubelet/kubeadm-flags.env',
      '/etc/sysconfig/kubelet',
    ]);
    expect(d.versions['kube-apiserver']).toEqual({ major: 1, minor: 36, patch: 3 });
  });

  it('a kubeadm worker has only the flags file; an unknown kubelet version stays unknown', async () => {
    const host = memoryHost({
      '/var/lib/kubelet/kubeadm-flags.env': fixture('kubeadm-v1.36.3', 'var/lib/kubelet/kubeadm-flags.env'),
    });
    const d = await detect(host);
    expect(d.layout).toBe('kubeadm');
    expect(d.files).toEqual([KUBEADM_FLAGS]);
    expect(d.versions).toEqual({});
    expect(describeVersion(d, 'kubelet')).toBe('kubelet version unknown');
  });

  it('finds /etc/default/kubelet without a drop-in, and an /etc drop-in before the packaged one', async () => {
    const noDropIn = await detect(
      memoryHost({
        '/var/lib/kubelet/kubeadm-flags.env': 'KUBELET_KUBEADM_ARGS=""\n',
        '/etc/default/kubelet': 'KUBELET_EXTRA_ARGS=\n',
      }),
    );
    expect(noDropIn.files.map((f) => f.path)).toEqual([
      '/var/lib/kubelet/kubeadm-flags.env',
      '/etc/default/kubelet',
    ]);
    const custom = await detect(
      memoryHost(
        {
          '/var/lib/kubelet/kubeadm-flags.env': 'KUBELET_KUBEADM_ARGS=""\n',
          '/etc/systemd/system/kubelet.service.d/10-kubeadm.conf':
            '[Service]\nEnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\nEnvironmentFile=-/etc/kubelet.env\nExecStart=\nExecStart=/opt/bin/kubelet $KUBELET_KUBEADM_ARGS\n',
          '/etc/kubelet.env': 'KUBELET_EXTRA_ARGS=--v=2\n',
        },
        { '/opt/bin/kubelet': 'v1.31.1' },
      ),
    );
    expect(custom.files.map((f) => f.path)).toEqual([
      '/var/lib/kubelet/kubeadm-flags.env',
      '/etc/kubelet.env',
    ]);
    expect(custom.versions.kubelet).toEqual({ major: 1, minor: 31, patch: 1 });
  });

  it('hard way: the three units, versions from each ExecStart binary', async () => {
    const host = folderHost(root('hard-way'), {
      '/usr/local/bin/kube-apiserver': 'v1.32.4',
      '/usr/local/bin/kube-controller-manager': 'v1.32.4',
      '/usr/local/bin/kubelet': 'v1.32.4',
    });
    const d = await detect(host);
    expect(d.layout).toBe('hard-way');
    expect(d.files).toEqual([
      systemdUnit('kube-apiserver'),
      systemdUnit('kube-controller-manager'),
      systemdUnit('kubelet'),
    ]);
    expect(d.versions['kube-apiserver']).toEqual({ major: 1, minor: 32, patch: 4 });
    expect(d.versionSources['kube-apiserver']).toBe('/usr/local/bin/kube-apiserver --version');
  });

  it('hard way without working binaries: versions unknown, not guessed; options fill them in', async () => {
    const unknown = await detect(folderHost(root('hard-way')));
    expect(unknown.versions).toEqual({});
    const given = await detect(folderHost(root('hard-way')), {
      apiserverVersion: 'v1.32.4',
      kubeletVersion: '1.32.4',
    });
    expect(given.versions['kube-apiserver']).toEqual({ major: 1, minor: 32, patch: 4 });
    expect(given.versionSources).toEqual({
      'kube-apiserver': '--apiserver-version',
      kubelet: '--kubelet-version',
    });
  });

  it('an option overrides the image tag; a bad option is an error naming the flag', async () => {
    const host = folderHost(root('kubeadm-v1.36.3'));
    const d = await detect(host, { apiserverVersion: 'v1.32.0' });
    expect(d.versions['kube-apiserver']).toEqual({ major: 1, minor: 32, patch: 0 });
    await expect(detect(host, { apiserverVersion: 'latest' })).rejects.toThrow(
      /--apiserver-version latest is not a Kubernetes version/,
    );
  });

  it('a machine with neither layout', async () => {
    await expect(detect(memoryHost({}))).rejects.toThrow(NotDetectedError);
  });
});
