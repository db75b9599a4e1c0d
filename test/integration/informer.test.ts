/**
 * The generic informer against the real kube-apiserver: list + watch into a store of slim objects,
 * handlers, the server's watch timeout (re-watch from the last resourceVersion, no relist), and the
 * stall watchdog. Works for any collection: Nodes and Services here. Faults are the real server's own
 * answers to a request rewritten on its way (a watch from a resourceVersion it compacted, or one it
 * does not have yet), or a request held until the test lets it through.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/kube/config.js';
import { createInformer, type InformerOptions, type RestartReason } from '../../src/kube/informer.js';
import { slimNode } from '../../src/kube/slim-node.js';
import { type KubeRequest, KubeTransport } from '../../src/kube/transport.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { until } from '../helpers/run.js';

// One cluster for the file; each test makes and removes what it watches.
const world = useCloudWorld('cloudlycke', { keep: true });

it('lists, then follows adds, updates and deletes; re-watches when the server ends a watch', async () => {
  await createNodes(world.api, [{ name: 'a' }, { name: 'b' }]);
  const seen: string[] = [];
  const restarts: RestartReason[] = [];
  const nodes = nodesInformer({
    transport: world.transport(),
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
  await world.api.replaceNode({
    name: 'a',
    body: {
      ...(await world.api.readNode({ name: 'a' })),
      metadata: { ...(await world.api.readNode({ name: 'a' })).metadata, labels: { color: 'red' } },
    },
  });
  await createNodes(world.api, [{ name: 'c' }]);
  await world.api.deleteNode({ name: 'b' });
  await until(
    'events',
    async () => seen.includes('delete b') && seen.includes('add c') && seen.includes('update a red'),
  );
  expect(nodes.get('a')?.metadata?.labels).toEqual({ color: 'red' });
  expect(nodes.get('b')).toBeUndefined();
  expect(nodes.size).toBe(2);
  expect(restarts).toEqual([]);
  await nodes.stop();
  await world.api.deleteCollectionNode({});
});

it('restarts a watch that goes silent (stall watchdog), and serves any resource path', async () => {
  const restarts: RestartReason[] = [];
  const services = createInformer({
    transport: world.transport(),
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
  await world.api.createNamespacedService({
    namespace: 'default',
    body: { metadata: { name: 'web' }, spec: { ports: [{ port: 80 }] } },
  });
  await until('web seen after the restart', async () => services.get('default/web'));
  await services.stop();
});

/** Holds each call until the test opens it; `arrived` resolves when one is waiting. */
function gate() {
  let open = false;
  const held: (() => void)[] = [];
  let onArrival: (() => void) | undefined;
  return {
    open() {
      open = true;
      for (const release of held.splice(0)) release();
    },
    close() {
      open = false;
    },
    arrived: () =>
      held.length > 0 ? Promise.resolve() : new Promise<void>((resolve) => (onArrival = resolve)),
    pass(signal?: AbortSignal): Promise<void> {
      if (open || signal?.aborted) return Promise.resolve();
      return new Promise((resolve) => {
        held.push(resolve);
        signal?.addEventListener('abort', () => resolve(), { once: true });
        onArrival?.();
        onArrival = undefined;
      });
    },
  };
}

/** The real world.transport(), with the requests the informer makes passed through the test's hooks first. */
/** The Nodes' informer (slim Nodes) on `options.transport`, with the rest of `options`. */
function nodesInformer(
  options: Omit<InformerOptions<ReturnType<typeof slimNode>>, 'path' | 'resource' | 'slim'>,
) {
  return createInformer({ path: '/api/v1/nodes', resource: 'nodes', slim: slimNode, ...options });
}

/** A list hook that records 'list' in `calls` for each first page (a listing, not its next pages). */
const recordFirstPages = (calls: string[]) => async (req: KubeRequest) => {
  if (!req.path.includes('continue=')) calls.push('list');
};

function intercepted(
  base: KubeTransport,
  hooks: {
    list?: (req: KubeRequest) => Promise<void>;
    watch?: (path: string, signal: AbortSignal) => Promise<string>;
  },
): KubeTransport {
  return {
    request: async <T>(req: KubeRequest): Promise<T> => {
      await hooks.list?.(req);
      return base.request<T>(req);
    },
    listPage: async (...[path, onItem, options]: Parameters<KubeTransport['listPage']>) => {
      await hooks.list?.({ method: 'GET', path, ...(options?.signal ? { signal: options.signal } : {}) });
      return base.listPage(path, onItem, options);
    },
    stream: async (path: string, signal: AbortSignal, onLine: (line: string) => void) =>
      base.stream((await hooks.watch?.(path, signal)) ?? path, signal, onLine),
  } as unknown as KubeTransport;
}

// A resourceVersion the server has compacted away (it answers 410), and one it does not have yet.
const compacted = (path: string) => path.replace(/resourceVersion=[^&]*/, 'resourceVersion=1');
const fromTheFuture = (path: string) =>
  `${path.replace(/resourceVersion=[^&]*/, 'resourceVersion=999999999')}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan`;

it('watches again after "too large resource version", and lists afresh after three in a row', async () => {
  const calls: string[] = [];
  const restarts: RestartReason[] = [];
  const nodes = nodesInformer({
    transport: intercepted(world.transport(), {
      list: recordFirstPages(calls),
      watch: async (path) => {
        calls.push('watch');
        return fromTheFuture(path);
      },
    }),
    onRestart: (r) => restarts.push(r),
    sleep: async () => {},
  });
  nodes.start();
  // The server waits 3 s for a resourceVersion before it answers that it is too large.
  await until('a second list', async () => calls.filter((c) => c === 'list').length >= 2, 45_000);
  await nodes.stop();
  expect(calls.slice(0, 5)).toEqual(['list', 'watch', 'watch', 'watch', 'list']);
  expect(restarts.slice(0, 3)).toEqual(['error', 'error', 'error']);
});

// A server that has compacted what the informer last saw: watches go to etcd (no watch cache to
// serve old versions) and etcd is compacted every second, so a watch from resourceVersion 1 is
// answered 410 Expired by the server itself.
describe('a watch the server answers with 410 Gone', () => {
  let compacting: ControlPlane;
  let compactingApi: CoreV1Api;
  let base: KubeTransport;
  beforeAll(async () => {
    compacting = await startControlPlane({
      extraArgs: ['--watch-cache=false', '--etcd-compaction-interval=1s'],
    });
    compactingApi = fixtureApi(compacting.kubeconfigPath);
    base = new KubeTransport(loadKubeConfig({ kubeconfig: compacting.kubeconfigPath, env: {} }));
    await until(
      'resourceVersion 1 compacted away',
      async () => {
        let gone = false;
        await base.stream(
          '/api/v1/nodes?watch=1&resourceVersion=1&timeoutSeconds=1',
          new AbortController().signal,
          (line) => {
            gone ||= (JSON.parse(line) as { object?: { code?: number } }).object?.code === 410;
          },
        );
        return gone;
      },
      30_000,
    );
  });
  afterAll(async () => {
    await base?.close();
    await compacting?.stop();
  });

  it('after a 410 lists again only after the backoff: a server that answers 410 to every watch makes no hot loop', async () => {
    const calls: string[] = [];
    const nodes = nodesInformer({
      transport: intercepted(base, {
        list: recordFirstPages(calls),
        watch: async (path) => {
          calls.push('watch');
          return compacted(path);
        },
      }),
      // The waits are recorded, not waited: what matters is that there is one before each list.
      sleep: async (ms) => {
        calls.push(`sleep ${ms}`);
      },
    });
    nodes.start();
    await until('four lists', async () => calls.filter((c) => c === 'list').length >= 4, 30_000);
    await nodes.stop();
    const lists = calls.flatMap((c, i) => (c === 'list' ? [i] : []));
    expect(calls.slice(0, 2)).toEqual(['list', 'watch']);
    // Each list after the first follows a wait of client-go's at least 800 ms, doubling.
    expect(lists.slice(1, 4).map((i) => calls[i - 1])).toEqual(['sleep 800', 'sleep 1600', 'sleep 3200']);
  });

  it('woken while a watch is open, lists again at once after its 410, not at the end of the backoff the outage grew', async () => {
    const calls: string[] = [];
    const watches = gate();
    let watch = 0;
    const nodes = nodesInformer({
      transport: intercepted(base, {
        list: recordFirstPages(calls),
        watch: async (path, signal) => {
          watch++;
          calls.push('watch');
          // The outage: three watches the server refuses (a path it does not serve) grow the backoff.
          if (watch <= 3) return path.replace('/api/v1/nodes?', '/api/v1/nodez?');
          // The API server is back while this watch waits: the test wakes the informer.
          if (watch === 4) await watches.pass(signal);
          // The server restarted: what the informer last saw is compacted away.
          return compacted(path);
        },
      }),
      // Recorded, not waited; a wait whose signal has already ended it is no wait.
      sleep: async (ms, signal) => {
        calls.push(signal.aborted ? 'no wait' : `sleep ${ms}`);
      },
    });
    nodes.start();
    await watches.arrived();
    nodes.wake();
    await until('a second list', async () => calls.filter((c) => c === 'list').length >= 2, 30_000);
    await nodes.stop();
    expect(calls.slice(0, 10)).toEqual([
      'list',
      'watch',
      'sleep 800',
      'watch',
      'sleep 1600',
      'watch',
      'sleep 3200',
      'watch', // woken while open: watched again from its resourceVersion
      'watch', // 410
      'no wait',
    ]);
    expect(calls[10]).toBe('list');
  });

  it('a relist changes the store and tells the handlers only once the whole listing is in', async () => {
    await createNodes(compactingApi, [{ name: 'a' }, { name: 'b' }, { name: 'c' }]);
    const watches = gate();
    const pages = gate();
    pages.open();
    let gone = false;
    const seen: string[] = [];
    const nodes = nodesInformer({
      transport: intercepted(base, {
        list: (req) => (req.path.includes('continue=') ? pages.pass(req.signal) : Promise.resolve()),
        watch: async (path, signal) => {
          await watches.pass(signal);
          return gone ? compacted(path) : path;
        },
      }),
      pageSize: 1,
      sleep: async () => {},
    });
    nodes.on('add', (n) => seen.push(`add ${n.metadata?.name}`));
    nodes.on('update', (_o, n) => seen.push(`update ${n.metadata?.name} ${n.metadata?.labels?.color ?? ''}`));
    nodes.on('delete', (n) => seen.push(`delete ${n.metadata?.name}`));
    nodes.start();
    await watches.arrived();
    expect(seen.sort()).toEqual(['add a', 'add b', 'add c']);
    seen.length = 0;

    // While the informer's watch waits, the cluster changes; its watch then answers 410.
    const a = await compactingApi.readNode({ name: 'a' });
    await compactingApi.replaceNode({
      name: 'a',
      body: { ...a, metadata: { ...a.metadata, labels: { color: 'red' } } },
    });
    await compactingApi.deleteNode({ name: 'b' });
    await createNodes(compactingApi, [{ name: 'd' }]);
    gone = true;
    pages.close();
    watches.open();
    // The relist has read its first page ('a', now red) and waits for its second.
    await pages.arrived();
    watches.close();
    expect(seen).toEqual([]);
    expect(nodes.get('a')?.metadata?.labels?.color).toBeUndefined();
    expect(nodes.get('b')).toBeDefined();

    pages.open();
    await until('the new listing', async () => seen.length === 3);
    expect(seen.sort()).toEqual(['add d', 'delete b', 'update a red']);
    expect(
      nodes
        .list()
        .map((n) => n.metadata?.name)
        .sort(),
    ).toEqual(['a', 'c', 'd']);
    await nodes.stop();
    await compactingApi.deleteCollectionNode({});
  });
});
