/**
 * The kube-apiserver argument list `cluster prepare` leaves in a kubeadm 1.36 manifest is one the real
 * kube-apiserver 1.36 accepts: the patched list gets past flag parsing (the binary then stops at the
 * fixture's missing certificate files), the same list plus --cloud-provider=external does not, and the
 * flags prepare manages start the test control plane.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { getFlag } from '../../src/cluster/flags.js';
import { desiredChanges, planPrepare } from '../../src/cluster/plan.js';
import { readArgs } from '../../src/cluster/static-pod.js';
import type { Detection } from '../../src/cluster/types.js';
import { parseVersion } from '../../src/cluster/versions.js';
import { binDir, K8S_VERSION, startControlPlane } from '../controlplane/harness.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/cluster/kubeadm-v1.36.3/', import.meta.url));
const MANIFEST = '/etc/kubernetes/manifests/kube-apiserver.yaml';
const PROVIDER_FLAGS = { 'kubelet-preferred-address-types': 'InternalIP,ExternalIP,Hostname' };
const version = parseVersion(K8S_VERSION);

const detection: Detection = {
  layout: 'kubeadm',
  files: [{ component: 'kube-apiserver', kind: 'static-pod', path: MANIFEST }],
  versions: version ? { 'kube-apiserver': version } : {},
  versionSources: { 'kube-apiserver': 'image tag' },
};

/** The kube-apiserver command after `planPrepare` (the manifest itself when nothing changes). */
function patchedCommand(manifest: Buffer): string[] {
  const { edits } = planPrepare(detection, new Map([[MANIFEST, manifest]]), {
    extra: { 'kube-apiserver': PROVIDER_FLAGS },
  });
  const edit = edits.find((e) => e.file.path === MANIFEST);
  return readArgs(edit ? edit.after : manifest, 'kube-apiserver');
}

const original = readFileSync(join(FIXTURE, 'etc/kubernetes/manifests/kube-apiserver.yaml'));
// The same manifest as a 1.32 cluster prepared before `kubeadm upgrade` would carry it.
const withLeftovers = Buffer.from(
  original
    .toString()
    .replace(
      '    - --tls-private-key-file=/etc/kubernetes/pki/apiserver.key\n',
      '    - --tls-private-key-file=/etc/kubernetes/pki/apiserver.key\n    - --cloud-provider=external\n    - --cloud-config=/etc/kubernetes/cloud.conf\n',
    ),
);

/**
 * Runs the real binary with the manifest's arguments, its file paths moved under a folder that does
 * not exist, so it always stops at the first file it opens (even on a machine with a real PKI).
 */
const MISSING = `/nonexistent-ccm-${process.pid}`;
async function runApiserver(args: string[]) {
  const moved = args.map((a) => a.replaceAll('/etc/kubernetes/', `${MISSING}/etc/kubernetes/`));
  return execa(join(binDir(), 'kube-apiserver'), moved, { reject: false, timeout: 30_000, stdin: 'ignore' });
}

const PARSE_ERROR = /unknown flag|flag provided but not defined/;

describe(`the patched kube-apiserver ${K8S_VERSION} argument list`, () => {
  it('the fixture is the version this test is about', () => {
    expect(K8S_VERSION).toBe('1.36.3');
    expect(original.toString()).toContain(`image: registry.k8s.io/kube-apiserver:v${K8S_VERSION}`);
  });

  it('gets past flag parsing in the real binary; adding --cloud-provider=external makes it fail', async () => {
    for (const manifest of [original, withLeftovers]) {
      const command = patchedCommand(manifest);
      expect(command[0]).toBe('kube-apiserver');
      expect(getFlag(command, 'cloud-provider')).toBeUndefined();
      expect(getFlag(command, 'cloud-config')).toBeUndefined();
      expect(getFlag(command, 'kubelet-preferred-address-types')).toBe(
        PROVIDER_FLAGS['kubelet-preferred-address-types'],
      );

      const run = await runApiserver(command.slice(1));
      expect(run.timedOut).toBe(false);
      expect(run.exitCode).not.toBe(0);
      expect(run.stderr).not.toMatch(PARSE_ERROR);
      // Parsing done, it stopped at the first file the fixture's flags name.
      expect(run.stderr).toContain(`open ${MISSING}/etc/kubernetes/pki/`);
      expect(run.stderr).toMatch(/no such file or directory/);

      const refused = await runApiserver([...command.slice(1), '--cloud-provider=external']);
      expect(refused.exitCode).not.toBe(0);
      expect(refused.stderr).toMatch(/unknown flag: --cloud-provider/);
    }
    // The unpatched leftovers are what would keep an upgraded server from starting.
    const unpatched = await runApiserver(readArgs(withLeftovers, 'kube-apiserver').slice(1));
    expect(unpatched.stderr).toMatch(/unknown flag: --cloud-(provider|config)/);
  });

  it('the flags prepare manages start the real control plane, which becomes ready', async () => {
    const command = patchedCommand(withLeftovers);
    const managed = desiredChanges('kube-apiserver', version, { extra: { 'kube-apiserver': PROVIDER_FLAGS } })
      .changes.filter((c) => c.value !== undefined)
      .map((c) => `--${c.flag}=${getFlag(command, c.flag)}`);
    expect(managed).toEqual([
      `--kubelet-preferred-address-types=${PROVIDER_FLAGS['kubelet-preferred-address-types']}`,
    ]);

    const cp = await startControlPlane({ extraArgs: managed });
    try {
      expect(cp.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await cp.stop();
    }
    // Negative control: the flag prepare refuses to add keeps the same control plane from starting.
    await expect(startControlPlane({ extraArgs: ['--cloud-provider=external'] })).rejects.toThrow(
      /unknown flag: --cloud-provider/,
    );
  });
});
