import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { clusterScript, ensureCluster, kubectlJson, NODE_NAME, runningArgs, STATE } from './harness.js';

interface NodeObject {
  spec: { taints?: Array<{ key: string }> };
  status: { conditions: Array<{ type: string; status: string }> };
}

describe('the real test cluster (test/cluster/cluster.sh)', () => {
  it('comes up with a kubelet, keeps a healthy cluster, and leaves the machine as it found it', async () => {
    await clusterScript(['down']);
    const before = await clusterScript(['fingerprint']);

    await ensureCluster();
    const node = await kubectlJson<NodeObject>(['get', 'node', NODE_NAME]);
    expect(node.status.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
    // Started without an external cloud provider: that is `ccm cluster prepare`'s job.
    const [kubelet] = runningArgs('kubelet');
    expect(kubelet).toBeDefined();
    expect(kubelet?.join(' ')).not.toContain('--cloud-provider=external');
    expect(node.spec.taints ?? []).toEqual([]);
    const up = await clusterScript(['fingerprint']);
    expect(up).not.toEqual(before);
    expect(up).toMatch(/FORWARD -j CCM-CLUSTER-FORWARD/);

    const kubeletPid = readFileSync(`${STATE}/kubelet.pid`, 'utf8');
    await clusterScript(['up']);
    expect(readFileSync(`${STATE}/kubelet.pid`, 'utf8')).toBe(kubeletPid);

    await clusterScript(['down']);
    expect(await clusterScript(['fingerprint'])).toEqual(before);
    await clusterScript(['down']);
  });
});
