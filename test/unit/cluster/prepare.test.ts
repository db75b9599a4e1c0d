import { appendFileSync, cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { localHost } from '../../../src/cluster/host.js';
import { applyHost, planCluster } from '../../../src/cluster/prepare.js';
import type { Host } from '../../../src/cluster/types.js';
import { tempDir } from '../../helpers/tmp.js';

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
