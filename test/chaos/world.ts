/**
 * The chaos world: the real kube-apiserver + etcd (Lease writes audited with their bodies), one cloud
 * simulator behind the attributing proxy, three `ccm run` replicas with leader election, and the
 * harness playing what the cluster around ccm does: kubelets registering Nodes (tainted, no provider
 * ID) and going NotReady when their machine stops or goes, users creating and deleting LoadBalancer
 * Services. It remembers when each instance existed, for the invariants.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { fixtureApi, nodeObject } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { lbService } from '../helpers/services.js';
import { type CloudProxy, startCloudProxy } from './cloud-proxy.js';
import {
  type ChaosCloud,
  type ChaosCloudName,
  type Credentials,
  type ServiceView,
  startCloud,
} from './clouds.js';
import { type Replica, rssOf, startReplica } from './replicas.js';

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface Instance {
  id: string;
  node: string;
  createdAt: number;
  /** When the harness deleted it (Date.now()); undefined while it exists. */
  goneAt?: number;
  running: boolean;
  /** Its kubelet registered the Node (a registration the API server refused is tried again). */
  registered: boolean;
  /** The Ready status its kubelet last posted successfully. */
  ready?: boolean;
}

export interface ChaosService extends ServiceView {
  createdAt: number;
  deletedAt?: number;
}

export interface World {
  dir: string;
  cp: ControlPlane;
  api: CoreV1Api;
  cloud: ChaosCloud;
  proxy: CloudProxy;
  replicas: Replica[];
  instances: Map<string, Instance>;
  services: Map<string, ChaosService>;
  credentials: Credentials;
  apiserverDown: boolean;
  /** Starts one more replica (a Deployment replacing a dead Pod). */
  addReplica(): Promise<Replica>;
  /** A machine booted and its kubelet registered its Node. */
  addNode(): Promise<Instance>;
  /** The machine is deleted; its kubelet stops posting (NotReady). */
  removeInstance(instance: Instance): Promise<void>;
  setRunning(instance: Instance, running: boolean): Promise<void>;
  /**
   * What the kubelets post: a Node registered for each machine not yet registered, Ready as its
   * machine runs (stale, Unknown, once it stopped or went). Called after every change and on a
   * period, so that what the API server refused during an outage is posted once it is back.
   */
  kubelets(): Promise<void>;
  setReady(node: string, ready: boolean): Promise<void>;
  addService(): Promise<ChaosService>;
  deleteService(service: ChaosService): Promise<void>;
  annotate(service: ChaosService, key: string, value: string): Promise<void>;
  rotate(credentials: Credentials): Promise<void>;
  sampleMemory(): void;
  stop(): Promise<void>;
}

export async function startWorld(cloudName: ChaosCloudName, runDir?: string): Promise<World> {
  const dir = runDir ?? mkdtempSync(join(tmpdir(), `ccm-chaos-${cloudName}-`));
  const [cp, cloud] = await Promise.all([
    startControlPlane({ auditLeaseBodies: true }),
    startCloud(cloudName),
  ]);
  const proxy = await startCloudProxy({
    upstream: cloud.upstream,
    errorBody: cloud.errorBody,
    keepBody: cloud.isCreate,
  });
  const api = fixtureApi(cp.kubeconfigPath);
  await cloud.writeSecret(api, proxy.url, 'good');
  let nodeCount = 0;
  let serviceCount = 0;
  let kubeletPass: Promise<unknown> = Promise.resolve();
  const postStatus = async () => {
    for (const i of world.instances.values()) {
      if (!i.registered && !i.goneAt) {
        await api.createNode({ body: nodeObject({ name: i.node }) }).catch((err) => {
          if ((err as { code?: number }).code !== 409) throw err;
        });
        i.registered = true;
        i.ready = true;
      }
      if (i.registered && i.ready !== i.running) {
        await world.setReady(i.node, i.running).catch((err) => {
          // The Node is gone (ccm deleted it): nobody posts for it any more.
          if ((err as { code?: number }).code === 404) i.registered = false;
          else throw err;
        });
        i.ready = i.running;
      }
    }
  };
  const world: World = {
    dir,
    cp,
    api,
    cloud,
    proxy,
    replicas: [],
    instances: new Map(),
    services: new Map(),
    credentials: 'good',
    apiserverDown: false,
    async addReplica() {
      const replica = await startReplica(
        `r${world.replicas.length + 1}`,
        dir,
        cp.kubeconfigPath,
        cloud.runArgs(proxy.url),
      );
      proxy.register(replica.name, replica.pid);
      world.replicas.push(replica);
      return replica;
    },
    async addNode() {
      const n = ++nodeCount;
      const name = `chaos-${String(n).padStart(4, '0')}`;
      const id = cloud.addInstance(name, n);
      const instance: Instance = { id, node: name, createdAt: Date.now(), running: true, registered: false };
      world.instances.set(name, instance);
      await world.kubelets().catch(() => undefined);
      return instance;
    },
    async removeInstance(instance) {
      cloud.removeInstance(instance.id);
      instance.goneAt = Date.now();
      instance.running = false;
      await world.kubelets();
    },
    async setRunning(instance, running) {
      if (instance.goneAt) return;
      cloud.setRunning(instance.id, running);
      instance.running = running;
      await world.kubelets();
    },
    kubelets() {
      // One pass at a time: two would register the same Node twice.
      const pass = kubeletPass.then(postStatus, postStatus);
      kubeletPass = pass.catch(() => undefined);
      return pass;
    },
    async setReady(node, ready) {
      const now = new Date();
      await api.patchNodeStatus(
        {
          name: node,
          body: {
            status: {
              conditions: [
                {
                  type: 'Ready',
                  status: ready ? 'True' : 'Unknown',
                  reason: ready ? 'KubeletReady' : 'NodeStatusUnknown',
                  message: ready ? 'kubelet is posting ready status' : 'Kubelet stopped posting node status.',
                  lastHeartbeatTime: now,
                  lastTransitionTime: now,
                },
              ],
            },
          },
        },
        MERGE_PATCH,
      );
    },
    async addService() {
      const name = `svc-${String(++serviceCount).padStart(4, '0')}`;
      const created = await api.createNamespacedService({ namespace: 'default', body: lbService(name) });
      const service: ChaosService = {
        name,
        uid: created.metadata?.uid ?? '',
        annotations: {},
        givenNames: new Set(),
        createdAt: Date.now(),
      };
      world.services.set(name, service);
      return service;
    },
    async deleteService(service) {
      await api.deleteNamespacedService({ name: service.name, namespace: 'default' });
      service.deletedAt = Date.now();
    },
    async annotate(service, key, value) {
      // A load balancer name unique to this Service and this change.
      const v = value === 'name' ? `chaos-${service.name}-${service.givenNames.size + 1}` : value;
      if (value === 'name') service.givenNames.add(v);
      await api.patchNamespacedService(
        { name: service.name, namespace: 'default', body: { metadata: { annotations: { [key]: v } } } },
        MERGE_PATCH,
      );
      service.annotations[key] = v;
    },
    async rotate(credentials) {
      await cloud.writeSecret(api, proxy.url, credentials);
      world.credentials = credentials;
    },
    sampleMemory() {
      const now = Date.now();
      for (const r of world.replicas) {
        if (r.exit) continue;
        const rss = rssOf(r.pid);
        if (rss !== undefined) r.rss.push([now, rss]);
      }
    },
    async stop() {
      for (const r of world.replicas) {
        if (r.paused) r.child.kill('SIGCONT');
        if (!r.exit) r.child.kill('SIGKILL');
      }
      await proxy.close();
      await Promise.allSettled([cp.stop(), cloud.stop()]);
    },
  };
  try {
    for (let i = 0; i < 3; i++) await world.addReplica();
  } catch (err) {
    await world.stop();
    throw err;
  }
  return world;
}
