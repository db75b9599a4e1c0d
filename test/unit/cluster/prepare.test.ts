import { appendFileSync, cpSync, existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BACKUP_DIR } from '../../../src/cluster/backup.js';
import { localHost } from '../../../src/cluster/host.js';
import { planClusterConfiguration } from '../../../src/cluster/plan.js';
import {
  applyHost,
  type ClusterPlan,
  planCluster,
  updateKubeadmConfig,
} from '../../../src/cluster/prepare.js';
import type { Detection, Host } from '../../../src/cluster/types.js';
import type { KubeTransport } from '../../../src/kube/transport.js';
import { tempDir } from '../../helpers/tmp.js';
import { systemdHost } from './support.js';

const fixture = fileURLToPath(new URL('../../fixtures/cluster/kubeadm-v1.36.3', import.meta.url));
const KCM = 'etc/kubernetes/manifests/kube-controller-manager.yaml';

function nodeRoot(): string {
  const root = tempDir('ccm-prepare-');
  cpSync(fixture, root, { recursive: true });
  return root;
}

describe('planning a host', () => {
  it('reads each file at most once', async () => {
    const host = localHost(nodeRoot());
    const reads: string[] = [];
    const counting: Host = {
      ...host,
      name: host.name,
      read: (path) => {
        reads.push(path);
        return host.read(path);
      },
    };
    const plan = await planCluster([counting], { versions: { kubelet: '1.36.3' } });
    expect(plan.hosts[0]?.edits.length).toBeGreaterThan(0);
    expect(reads.length).toBeGreaterThan(0);
    expect(new Set(reads).size).toBe(reads.length);
  });
});

describe('applying a host', () => {
  it('writes nothing when a file changed after it was planned', async () => {
    const root = nodeRoot();
    const host = localHost(root);
    const plan = await planCluster([host], { versions: { kubelet: '1.36.3' } });
    const planned = plan.hosts[0];
    if (!planned) throw new Error('no plan');
    appendFileSync(join(root, KCM), '# edited by an operator meanwhile\n');
    const changed = readFileSync(join(root, KCM));
    const env = readFileSync(join(root, 'var/lib/kubelet/kubeadm-flags.env'));

    const report = await applyHost(plan, planned, false);
    expect(report.result).toBe('failed');
    expect(report.error).toContain('kube-controller-manager.yaml changed since it was read');
    expect(readFileSync(join(root, KCM))).toEqual(changed);
    expect(readFileSync(join(root, 'var/lib/kubelet/kubeadm-flags.env'))).toEqual(env);
  });
});

/** The plan's kubeadm-config edit, as planCluster makes it from kubeadm's own record of the fixture. */
function withKubeadmConfig(plan: ClusterPlan): ClusterPlan {
  const before = readFileSync(join(fixture, 'cluster-configuration.yaml'), 'utf8');
  const edit = planClusterConfiguration(before, plan.hosts[0]?.detection as Detection);
  return {
    ...plan,
    kubeadmConfig: {
      before,
      after: edit.after,
      resourceVersion: '1',
      changes: edit.changes,
      skips: edit.skips,
    },
  };
}

describe('a kubelet restart that fails after the files were written', () => {
  it('kubeadm-config names the failed restart, its error line and what to do, not a backup failure', async () => {
    const root = nodeRoot();
    const host = systemdHost(localHost(root), root, { fail: ['kubelet'] });
    const plan = withKubeadmConfig(await planCluster([host], { versions: { kubelet: '1.36.3' } }));
    const report = await applyHost(plan, plan.hosts[0] as ClusterPlan['hosts'][number], true);
    expect(report.result).toBe('failed');
    expect(report.backup).toBeDefined();
    expect(existsSync(join(root, BACKUP_DIR, report.backup as string, 'manifest.json'))).toBe(true);

    // The keeper failed, so kubeadm-config is left alone without asking the API server.
    const message = await updateKubeadmConfig(plan, [report], undefined as unknown as KubeTransport);
    expect(message).not.toContain('backup could not be written');
    expect(message).toBe(
      `not updated: systemctl restart kubelet failed on local: Job for kubelet.service failed because the control process exited with error code (the files on local are written, backup ${report.backup}); fix that and run \`ccm cluster prepare\` again: it restarts what still runs without the new flags and updates kubeadm-config`,
    );
  });
});
