/**
 * A paginated list whose continue token expires between two pages (the real kube-apiserver, etcd
 * compacted every second, no watch cache: the server answers 410 Expired). client-go's reflector lists
 * through tools/pager with FullListIfExpired (client-go tools/pager/pager.go): a 410 on a later page is
 * answered by one full list (no limit) at once, no error, no backoff.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createInformer, type RestartReason } from '../../src/kube/informer.js';
import { slimNode } from '../../src/kube/slim-node.js';
import { KubeTransport, type ListMeta } from '../../src/kube/transport.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { until } from '../helpers/run.js';

let cp: ControlPlane;
beforeAll(async () => {
  cp = await startControlPlane({ extraArgs: ['--watch-cache=false', '--etcd-compaction-interval=1s'] });
});
afterAll(async () => {
  await cp?.stop();
});

class SlowSecondPage extends KubeTransport {
  paths: string[] = [];
  errors: string[] = [];
  delayFirst = true;
  bump?: () => Promise<void>;
  override async listPage(...args: Parameters<KubeTransport['listPage']>): Promise<ListMeta> {
    const [path] = args;
    this.paths.push(path);
    if (path.includes('continue=') && this.delayFirst) {
      this.delayFirst = false;
      // The cluster moves on and etcd compacts past the list's resourceVersion before page 2 is asked for.
      await this.bump?.();
      await new Promise((r) => setTimeout(r, 4000));
    }
    try {
      return await super.listPage(...args);
    } catch (err) {
      this.errors.push(`${(err as { status?: number }).status} ${(err as Error).message.slice(0, 80)}`);
      throw err;
    }
  }
}

it('a continue token that expires mid-list: one full list at once (client-go pager), not an error and a backoff', async () => {
  const api = fixtureApi(cp.kubeconfigPath);
  await createNodes(api, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
  const transport = new SlowSecondPage(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
  transport.bump = async () => {
    for (let i = 0; i < 3; i++) await createNodes(api, [{ name: `bump-${i}` }]);
  };
  const restarts: RestartReason[] = [];
  const sleeps: number[] = [];
  const nodes = createInformer({
    transport,
    path: '/api/v1/nodes',
    resource: 'nodes',
    slim: slimNode,
    pageSize: 2,
    onRestart: (r) => restarts.push(r),
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
  nodes.start();
  await until('synced', async () => nodes.hasSynced(), 30_000);
  await nodes.stop();
  await transport.close();
  // It did expire (the reproduction holds) ...
  expect(transport.errors[0]).toMatch(/^410 /);
  // ... and it listed in full at once, as client-go does: no error restart, no backoff wait.
  expect(restarts).toEqual([]);
  expect(sleeps).toEqual([]);
  expect(transport.paths.filter((p) => !p.includes('continue=')).at(-1)).not.toContain('limit=');
  // Every Node is in the store, none twice (the first pages' items were dropped before the full list).
  expect(
    nodes
      .list()
      .map((n) => n.metadata?.name)
      .sort(),
  ).toEqual(['a', 'b', 'bump-0', 'bump-1', 'bump-2', 'c']);
}, 90_000);
