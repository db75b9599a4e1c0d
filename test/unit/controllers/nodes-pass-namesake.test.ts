/**
 * `ccm nodes init` (runNodesPass → readState) plans every tainted Node from one cloud listing: that
 * listing must start after the Nodes were listed, or a Node registered meanwhile may get a deleted
 * namesake's identity. R9-N1 is an outside review's reproduction (it failed on 4a6b18f).
 */
import { describe, expect, it } from 'vitest';
import { runNodesPass } from '../../../src/controllers/nodes-pass.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';
import type { Instance } from '../../../src/providers/types.js';
import { FakeNodeClient, makeInstance, makeNode, makeProvider, uninitializedTaint } from './fixtures.js';

const OLD = makeInstance({
  providerID: 'cloudlycke://old-A',
  name: 'w1',
  addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
});
const NEW = makeInstance({
  providerID: 'cloudlycke://new-B',
  name: 'w1',
  addresses: [{ type: 'InternalIP', address: '10.0.0.2' }],
});

describe('nodes init and a namesake', () => {
  it('R9-N1: a Node registered while the Nodes are listed is initialised from a listing started after, not the deleted namesake', async () => {
    let cloud: Instance[] = [OLD];
    const kube = new FakeNodeClient();
    // The cloud listing is a snapshot at its start (a page holding w1 is read first).
    const provider = makeProvider();
    provider.instances.list = async () => {
      const snapshot = cloud.map((i) => ({ ...i }));
      await new Promise((r) => setTimeout(r, 50));
      return snapshot;
    };
    // The Node list answers later (a slow API server, APF throttling ccm's flow, pages of 500
    // served one after another); meanwhile the machine is replaced under its name and its new
    // Node registers, tainted.
    const listNodes = kube.listNodes.bind(kube);
    kube.listNodes = async (): Promise<SlimNode[]> => {
      await new Promise((r) => setTimeout(r, 10));
      cloud = [NEW];
      kube.nodes.set(
        'w1',
        makeNode({
          name: 'w1',
          uid: 'uid-2',
          resourceVersion: '7',
          taints: [uninitializedTaint],
          created: new Date(),
        }),
      );
      return listNodes();
    };
    const report = await runNodesPass(kube, provider, {
      dryRun: false,
      concurrency: 4,
      deletionGracePeriodMs: 300_000,
    });
    const w1 = kube.nodes.get('w1');
    expect(w1?.metadata?.uid).toBe('uid-2');
    expect(w1?.spec?.providerID, JSON.stringify(report.nodes)).not.toBe('cloudlycke://old-A');
  });
});
