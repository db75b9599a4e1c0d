/**
 * A harness for the cloud-node controller's namesake rules: the real cloudNodeController and
 * InstanceCache, an informer the test drives by hand, the fixtures' FakeNodeClient (resourceVersion
 * preconditions, 409s) and a cloud whose listing is a snapshot taken when the listing starts and
 * answered when the test releases it. Written by an outside review (cloud-node-namesake.test.ts).
 */
import pino from 'pino';
import { InstanceCache } from '../../../src/controllers/instance-cache.js';
import type { ControllerContext } from '../../../src/controllers/manager.js';
import { createMetrics } from '../../../src/controllers/metrics.js';
import type { Informer } from '../../../src/kube/informer.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';
import type { Instance } from '../../../src/providers/types.js';
import { FakeNodeClient, makeInstance, makeNode, makeProvider, uninitializedTaint } from './fixtures.js';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An informer the test drives by hand (what the watch delivers, when). */
export class HandInformer {
  store = new Map<string, SlimNode>();
  handlers = {
    add: [] as ((o: SlimNode) => void)[],
    update: [] as ((a: SlimNode, b: SlimNode) => void)[],
    delete: [] as ((o: SlimNode) => void)[],
  };
  put(n: SlimNode) {
    const key = n.metadata?.name ?? '';
    const old = this.store.get(key);
    this.store.set(key, n);
    if (old) for (const h of this.handlers.update) h(old, n);
    else for (const h of this.handlers.add) h(n);
  }
  remove(name: string) {
    const old = this.store.get(name);
    if (!old) return;
    this.store.delete(name);
    for (const h of this.handlers.delete) h(old);
  }
  asInformer(): Informer<SlimNode> {
    const self = this;
    return {
      start() {},
      async stop() {},
      hasSynced: () => true,
      list: () => [...self.store.values()],
      get: (k: string) => self.store.get(k),
      get size() {
        return self.store.size;
      },
      on(event: 'add' | 'update' | 'delete', h: never) {
        (self.handlers[event] as unknown[]).push(h);
        return () => {
          const l = self.handlers[event] as unknown[];
          l.splice(l.indexOf(h), 1);
        };
      },
      wake() {},
    } as unknown as Informer<SlimNode>;
  }
}

/** A cloud whose listing is the snapshot at its start, answered when released (or after autoMs). */
export class SlowCloud {
  instances: Instance[] = [];
  listings: { startedAt: number; names: string[]; release: () => void }[] = [];
  autoMs: number | undefined;
  list = async (): Promise<Instance[]> => {
    const snapshot = this.instances.map((i) => ({ ...i }));
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    this.listings.push({ startedAt: performance.now(), names: snapshot.map((i) => i.providerID), release });
    if (this.autoMs !== undefined) setTimeout(release, this.autoMs);
    await released;
    return snapshot;
  };
  releaseAll() {
    for (const l of this.listings) l.release();
  }
}

export const tainted = (name: string, uid: string, rv = '100') =>
  makeNode({ name, uid, resourceVersion: rv, taints: [uninitializedTaint], created: new Date() });

export function harness(opts: { minIntervalMs?: number } = {}) {
  const cloud = new SlowCloud();
  const informer = new HandInformer();
  const kube = new FakeNodeClient();
  const cache = new InstanceCache({
    list: cloud.list,
    nodes: () => informer.asInformer().list(),
    minIntervalMs: opts.minIntervalMs ?? 2000,
  });
  const ctx = {
    transport: { isReachable: true },
    kube,
    provider: makeProvider(),
    cloud: cache,
    informers: { nodes: informer.asInformer() },
    log: pino({ level: 'silent' }),
    metrics: createMetrics(),
    options: {
      concurrency: 4,
      deletionGracePeriodMs: 300_000,
      nodeMonitorPeriodMs: 5000,
      nodeStatusUpdateFrequencyMs: 300_000,
    },
    signal: new AbortController().signal,
  } as unknown as ControllerContext;
  /** A Node in the API server and, unless `watchCut`, in the informer. */
  const createNode = (n: SlimNode, watchCut = false) => {
    kube.nodes.set(n.metadata?.name ?? '', structuredClone(n));
    if (!watchCut) informer.put(structuredClone(n));
  };
  const deleteNode = (name: string, watchCut = false) => {
    kube.nodes.delete(name);
    if (!watchCut) informer.remove(name);
  };
  return { cloud, informer, kube, cache, ctx, createNode, deleteNode };
}

export const OLD = makeInstance({
  providerID: 'cloudlycke://old-A',
  name: 'w1',
  addresses: [{ type: 'InternalIP', address: '10.0.0.1' }],
});
export const NEW = makeInstance({
  providerID: 'cloudlycke://new-B',
  name: 'w1',
  addresses: [{ type: 'InternalIP', address: '10.0.0.2' }],
});
