/**
 * `cluster prepare --initialize-existing` taints the existing Nodes after it has restarted their
 * kubelets, which update their Node meanwhile. The real kubeadm cluster under `npm run test:stress`
 * met exactly that: `PATCH /api/v1/nodes/ccm-cp-1: Operation cannot be fulfilled on nodes
 * "ccm-cp-1": the object has been modified`, and prepare failed. The taint is now made on the Node
 * as read again, while it is the same Node and still needs it. Real kube-apiserver.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existingUninitialised } from '../../src/cli/cluster-prepare.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createNodeClient } from '../../src/kube/nodes.js';
import { TAINT_UNINITIALIZED } from '../../src/kube/well-known.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { MERGE_PATCH } from '../helpers/services.js';

let cp: ControlPlane;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
});

const taints = async (name: string) =>
  ((await fixtureApi(cp.kubeconfigPath).readNode({ name })).spec?.taints ?? []).map((t) => t.key);

describe('cluster prepare --initialize-existing, the Node changed since it was listed', () => {
  it('taints the Node as it is now, keeping what changed, when the kubelet updated it meanwhile', async () => {
    const api = fixtureApi(cp.kubeconfigPath);
    await createNodes(api, [{ name: 'cp-1', tainted: false }]);
    const nodes = createNodeClient(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
    const [candidate] = existingUninitialised(nodes, await nodes.listNodes());
    // The restarted kubelet writes its Node (here a label and a taint of its own): a newer version.
    await api.patchNode(
      {
        name: 'cp-1',
        body: {
          metadata: { labels: { restarted: 'yes' } },
          spec: { taints: [{ key: 'example.com/own', effect: 'NoSchedule' }] },
        },
      },
      MERGE_PATCH,
    );
    expect(await candidate?.taint()).toBe(true);
    expect(await taints('cp-1')).toEqual(['example.com/own', TAINT_UNINITIALIZED]);
    expect((await api.readNode({ name: 'cp-1' })).metadata?.labels?.restarted).toBe('yes');
  });

  it('leaves a Node alone that meanwhile got a provider ID, or is another Node of the same name', async () => {
    const api = fixtureApi(cp.kubeconfigPath);
    await createNodes(api, [
      { name: 'cp-2', tainted: false },
      { name: 'cp-3', tainted: false },
    ]);
    const nodes = createNodeClient(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
    const listed = (await nodes.listNodes()).filter((n) => ['cp-2', 'cp-3'].includes(n.metadata?.name ?? ''));
    const [two, three] = existingUninitialised(nodes, listed);
    await api.patchNode({ name: 'cp-2', body: { spec: { providerID: 'digitalocean://42' } } }, MERGE_PATCH);
    await api.deleteNode({ name: 'cp-3' });
    await createNodes(api, [{ name: 'cp-3', tainted: false }]);
    expect(await two?.taint()).toBe(false);
    expect(await three?.taint()).toBe(false);
    expect(await taints('cp-2')).not.toContain(TAINT_UNINITIALIZED);
    expect(await taints('cp-3')).not.toContain(TAINT_UNINITIALIZED);
  });
});
