/**
 * The generic informer against the real kube-apiserver: list + watch into a store of slim objects,
 * handlers, the server's watch timeout (re-watch from the last resourceVersion, no relist), and the
 * stall watchdog. Works for any collection: Nodes and Services here.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createInformer, type RestartReason } from '../../src/kube/informer.js';
import { slimNode } from '../../src/kube/slim-node.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { until } from '../helpers/run.js';

let cp: ControlPlane;
let api: CoreV1Api;
let transport: KubeTransport;

beforeAll(async () => {
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
  transport = new KubeTransport(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
});
afterAll(async () => {
  await transport?.close();
  await cp?.stop();
});

it('lists, then follows adds, updates and deletes; re-watches when the server ends a watch', async () => {
  await createNodes(api, [{ name: 'a' }, { name: 'b' }]);
  const seen: string[] = [];
  const restarts: RestartReason[] = [];
  const nodes = createInformer({
    transport,
    path: '/api/v1/nodes',
    resource: 'nodes',
    slim: slimNode,
    pageSize: 1, // pagination too
    watchTimeoutSeconds: () => 1,
    onRestart: (r) => restarts.push(r),
  });
  nodes.on('add', (n) => seen.push(`add ${n.metadata?.name}`));
  nodes.on('update', (_o, n) => seen.push(`update ${n.metadata?.name} ${n.metadata?.labels?.color ?? ''}`));
  nodes.on('delete', (n) => seen.push(`delete ${n.metadata?.name}`));
  expect(nodes.hasSynced()).toBe(false);
  nodes.start();
  await until('synced', async () => nodes.hasSynced());
  expect(
    nodes
      .list()
      .map((n) => n.metadata?.name)
      .sort(),
  ).toEqual(['a', 'b']);
  // the server ends each watch after 1 s; events after that still arrive
  await new Promise((r) => setTimeout(r, 2500));
  await api.replaceNode({
    name: 'a',
    body: {
      ...(await api.readNode({ name: 'a' })),
      metadata: { ...(await api.readNode({ name: 'a' })).metadata, labels: { color: 'red' } },
    },
  });
  await createNodes(api, [{ name: 'c' }]);
  await api.deleteNode({ name: 'b' });
  await until(
    'events',
    async () => seen.includes('delete b') && seen.includes('add c') && seen.includes('update a red'),
  );
  expect(nodes.get('a')?.metadata?.labels).toEqual({ color: 'red' });
  expect(nodes.get('b')).toBeUndefined();
  expect(nodes.size).toBe(2);
  expect(restarts).toEqual([]);
  await nodes.stop();
  await api.deleteCollectionNode({});
});

it('restarts a watch that goes silent (stall watchdog), and serves any resource path', async () => {
  const restarts: RestartReason[] = [];
  const services = createInformer({
    transport,
    path: '/api/v1/services',
    resource: 'services',
    slim: (raw) => (raw as { metadata: { name: string; namespace: string } }).metadata,
    stallMs: 700,
    watchTimeoutSeconds: () => 300,
    onRestart: (r) => restarts.push(r),
  });
  services.start();
  await until('synced', async () => services.hasSynced());
  expect(services.get('default/kubernetes')?.name).toBe('kubernetes');
  await until('a stall restart', async () => restarts.includes('stall'), 5000);
  await api.createNamespacedService({
    namespace: 'default',
    body: { metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } },
  });
  await until('web seen after the restart', async () => services.get('default/web'));
  await services.stop();
});
