import { setTimeout as delay } from 'node:timers/promises';
import { clusterIdentity } from '../kube/cluster-identity.js';
import { KubeApiError } from '../kube/errors.js';
import {
  createServiceClient,
  type ServiceClient,
  type SlimService,
  serviceKey,
  slimService,
} from '../kube/services.js';
import { nodeName, type SlimNode } from '../kube/slim-node.js';
import {
  EVENT_SYNC_LOAD_BALANCER_FAILED,
  EVENT_UPDATE_LOAD_BALANCER_FAILED,
  SOURCE_SERVICE_CONTROLLER,
} from '../kube/well-known.js';
import { ProvisioningError, RetryableError } from '../providers/errors.js';
import type { LoadBalancers } from '../providers/types.js';
import type { Controller, ControllerContext } from './manager.js';
import { WorkQueue } from './queue.js';
import {
  type BackendCandidate,
  backendNodes,
  backendSetKey,
  describeRequest,
  hasCleanupFinalizer,
  needsCleanup,
  needsSync,
  nodeChangeMatters,
  type ServiceRules,
  wantsLoadBalancer,
  whyNoBackends,
} from './service.js';
import { deleteOrphaned, syncBackends, syncService } from './service-sync.js';
import { DEFAULT_CONCURRENT_SERVICE_SYNCS } from './service-syncs.js';

/**
 * The service controller (`service` in --controllers): informer events in, one Service per queue key
 * out. The rules are in service.ts, their application in service-sync.ts; this file only decides
 * what to sync when, and how to retry.
 */

export interface ServiceQueue {
  add(key: string): void;
  /** Again after the per-key backoff (5 s doubling to 300 s for Services). */
  addRateLimited(key: string): void;
  addAfter(key: string, ms: number): void;
  /** The key succeeded: its backoff starts over. */
  forget(key: string): void;
}

export interface ServiceControllerDeps {
  services: { list(): Iterable<SlimService>; get(key: string): SlimService | undefined };
  nodes: { list(): Iterable<BackendCandidate> };
  queue: ServiceQueue;
  client: ServiceClient;
  balancers: LoadBalancers;
  rules: ServiceRules;
  log?: (level: 'debug' | 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
  onResult?: (result: string) => void;
}

/** Why a key is queued; the strongest reason wins when it is queued twice. */
type Reason = 'nodes' | 'resync' | 'spec';
const STRENGTH: Record<Reason, number> = { nodes: 0, resync: 1, spec: 2 };

export class ServiceController {
  private readonly reasons = new Map<string, Reason>();
  /** The backend set each Service's load balancer was last given. */
  private readonly lastBackends = new Map<string, string>();
  /** Annotation keys the provider keeps on each Service: their changes are our own writes. */
  private readonly managedAnnotations = new Map<string, string[]>();
  /** The last state of Services that vanished while they still wanted a load balancer. */
  private readonly tombstones = new Map<string, SlimService>();
  /** Each failing Service's last failure: logged as a warning only when it starts or its reason changes. */
  private readonly lastFailures = new Map<string, string>();
  /** Services whose last failure was only their load balancer being built. */
  private readonly building = new Set<string>();
  /** Services already told that no Node is a backend (one Event, one log line), until one is again. */
  private readonly toldNoBackends = new Set<string>();
  /** Until start(), informer events are the initial list; start() looks at the whole store instead. */
  private started = false;
  /** A provider-kept annotation changed since the provider last saw every Service. */
  private observeDue = false;

  constructor(private readonly deps: ServiceControllerDeps) {}

  /**
   * Once both informers have synced: the provider rebuilds its state from the Services, then every
   * Service of ours is checked once, quietly (a restart writes nothing to an unchanged cluster).
   */
  start(): void {
    this.started = true;
    for (const svc of this.observe()) this.enqueue(serviceKey(svc), 'resync');
  }

  /** Shows the provider every Service of ours, with what it recorded on them. */
  private observe(): SlimService[] {
    const ours = [...this.deps.services.list()].filter(
      (svc) => wantsLoadBalancer(svc, this.deps.rules) || hasCleanupFinalizer(svc),
    );
    this.deps.balancers.observe?.(ours.map((svc) => describeRequest(svc, [], this.deps.rules)));
    this.observeDue = false;
    return ours;
  }

  onServiceChange(old: SlimService | undefined, now: SlimService): void {
    if (!this.started) return;
    const key = serviceKey(now);
    const ignored = this.managedAnnotations.get(key) ?? [];
    if (old && ignored.some((k) => old.annotations[k] !== now.annotations[k])) this.observeDue = true;
    if (needsSync(old && withoutKeys(old, ignored), withoutKeys(now, ignored), this.deps.rules)) {
      this.enqueue(key, 'spec');
    }
  }

  onServiceDelete(last: SlimService): void {
    if (!this.started) return;
    if (!wantsLoadBalancer(last, this.deps.rules) && !hasCleanupFinalizer(last)) return;
    const key = serviceKey(last);
    this.tombstones.set(key, last);
    this.enqueue(key, 'spec');
  }

  onNodeChange(old: BackendCandidate | undefined, now: BackendCandidate | undefined): void {
    if (!this.started) return;
    if (!nodeChangeMatters(old, now)) return;
    for (const key of this.lastBackends.keys()) this.enqueue(key, 'nodes');
  }

  private enqueue(key: string, reason: Reason): void {
    const queued = this.reasons.get(key);
    if (!queued || STRENGTH[reason] > STRENGTH[queued]) this.reasons.set(key, reason);
    this.deps.queue.add(key);
  }

  /** The queue's handler for one key. Never throws: failures are recorded and retried. */
  async process(key: string, signal?: AbortSignal): Promise<void> {
    const reason = this.reasons.get(key) ?? 'spec';
    this.reasons.delete(key);
    if (this.observeDue && this.deps.balancers.observe) this.observe();
    const svc = this.deps.services.get(key);
    const sync = {
      client: this.deps.client,
      balancers: this.deps.balancers,
      rules: this.deps.rules,
      signal,
      services: () => this.deps.services.list(),
      nodes: () => this.deps.nodes.list(),
    };
    try {
      if (!svc) {
        const last = this.tombstones.get(key);
        if (last) await deleteOrphaned(last, backendNodes(this.deps.nodes.list()), sync);
        this.forgetService(key);
        this.deps.queue.forget(key);
        return;
      }
      this.tombstones.delete(key);
      const candidates = [...this.deps.nodes.list()];
      const backends = backendNodes(candidates);
      const noBackends = this.noBackendsNews(key, svc, candidates, backends.length);
      const setKey = backendSetKey(backends);
      const current = this.lastBackends.get(key);
      if (reason === 'nodes' && current !== undefined && !needsCleanup(svc, this.deps.rules)) {
        if (current !== setKey) {
          await syncBackends(svc, backends, sync, noBackends);
          this.lastBackends.set(key, setKey);
          this.deps.onResult?.('updated');
        }
      } else {
        const { result, managedAnnotations } = await syncService(svc, backends, sync, {
          announce: reason === 'spec',
          onManagedAnnotations: (keys) => this.managedAnnotations.set(key, keys),
          ...(noBackends ? { noBackends } : {}),
        });
        this.deps.onResult?.(result);
        if (result === 'deleted' || result === 'ignored') {
          this.forgetService(key);
        } else {
          this.lastBackends.set(key, setKey);
          this.managedAnnotations.set(key, managedAnnotations);
        }
      }
      this.deps.queue.forget(key);
      // A Node that joined or left while this sync waited for the cloud (for the budget, under load,
      // that can be minutes) found no backend set of a first sync to compare: look once more.
      if (this.lastBackends.has(key) && backendSetKey(backendNodes([...this.deps.nodes.list()])) !== setKey)
        this.enqueue(key, 'nodes');
      if (this.lastFailures.delete(key))
        this.deps.log?.(
          'info',
          `load balancer of Service ${key} ${this.building.delete(key) ? 'is ready' : 'synced again'}`,
          { service: key },
        );
    } catch (err) {
      if (signal?.aborted) return;
      this.reasons.set(key, reason === 'nodes' ? 'nodes' : 'spec');
      await this.failed(key, svc, reason, err);
    }
  }

  private forgetService(key: string): void {
    this.lastBackends.delete(key);
    this.managedAnnotations.delete(key);
    this.tombstones.delete(key);
    this.lastFailures.delete(key);
    this.building.delete(key);
    this.toldNoBackends.delete(key);
  }

  /**
   * Why no Node is a backend of a Service that wants a load balancer, the first time only (also
   * logged): retries and resyncs would otherwise repeat it. Told again after a backend came and went.
   */
  private noBackendsNews(
    key: string,
    svc: SlimService,
    candidates: readonly BackendCandidate[],
    backends: number,
  ): string | undefined {
    if (backends > 0 || !wantsLoadBalancer(svc, this.deps.rules) || needsCleanup(svc, this.deps.rules)) {
      if (backends > 0) this.toldNoBackends.delete(key);
      return undefined;
    }
    if (this.toldNoBackends.has(key)) return undefined;
    this.toldNoBackends.add(key);
    const why = whyNoBackends(candidates);
    this.deps.log?.('info', `Service ${key} has no backend Node: ${why}`, { service: key });
    return why;
  }

  private async failed(
    key: string,
    svc: SlimService | undefined,
    reason: Reason,
    err: unknown,
  ): Promise<void> {
    const message = err instanceof Error ? err.message : String(err);
    this.deps.onResult?.('failed');
    const conflict = err instanceof KubeApiError && err.status === 409;
    if (svc && !conflict) {
      const nodesOnly = reason === 'nodes';
      try {
        await this.deps.client.recordEvent(svc, {
          type: 'Warning',
          reason: nodesOnly ? EVENT_UPDATE_LOAD_BALANCER_FAILED : EVENT_SYNC_LOAD_BALANCER_FAILED,
          message: nodesOnly
            ? `Error updating load balancer with new hosts: ${message}`
            : `Error syncing load balancer: ${message}`,
          component: SOURCE_SERVICE_CONTROLLER,
        });
      } catch {
        // Events are best effort; the retry below is what matters.
      }
    }
    // A load balancer the cloud is still building is the normal course of a create: said once, at info.
    const building = err instanceof ProvisioningError && err.retryAfterMs > 0;
    const level = this.lastFailures.get(key) === message ? 'debug' : building ? 'info' : 'warn';
    this.lastFailures.set(key, message);
    this.deps.log?.(
      level,
      building
        ? `load balancer of Service ${key}: ${message}`
        : `load balancer of Service ${key} not synced: ${message}`,
      { service: key },
    );
    if (building) this.building.add(key);
    else this.building.delete(key);
    if (err instanceof RetryableError && err.retryAfterMs > 0) {
      this.deps.queue.addAfter(key, err.retryAfterMs);
    } else {
      this.deps.queue.addRateLimited(key);
    }
  }
}

function withoutKeys(svc: SlimService, keys: readonly string[]): SlimService {
  if (keys.length === 0) return svc;
  const annotations = { ...svc.annotations };
  for (const key of keys) delete annotations[key];
  return { ...svc, annotations };
}

const NAME = 'service';

/** How a slim Node looks to the backend rules. */
function asBackendCandidate(node: SlimNode): BackendCandidate {
  return {
    name: nodeName(node),
    providerID: node.spec?.providerID ?? '',
    labels: node.metadata?.labels ?? {},
    taintKeys: (node.spec?.taints ?? []).map((t) => t.key),
    deleting: Boolean(node.metadata?.deletionTimestamp),
    addresses: (node.status?.addresses ?? []) as BackendCandidate['addresses'],
  };
}

/**
 * The `service` entry of --controllers. The cluster identity is read once at start (it names every
 * ownership tag, so it must never change while ccm runs).
 */
export function serviceController(): Controller {
  let queue: WorkQueue<string> | undefined;
  let workers: Promise<void> | undefined;
  return {
    name: NAME,
    async start(ctx: ControllerContext) {
      const balancers = ctx.provider.loadBalancers;
      if (!balancers) {
        ctx.log.warn(
          { controller: NAME },
          `the ${ctx.provider.name} provider has no load balancers; LoadBalancer Services are left alone (disable this message with --controllers=*,-service)`,
        );
        return;
      }
      const rules: ServiceRules = {
        clusterID: await clusterIdentity(ctx.transport, ctx.options.clusterName),
        ...(ctx.options.loadBalancerClass ? { loadBalancerClass: ctx.options.loadBalancerClass } : {}),
        ...(ctx.options.adoptOfficial ? { adoptOfficial: ctx.options.adoptOfficial } : {}),
      };
      const q = new WorkQueue<string>({
        baseDelayMs: 5000,
        maxDelayMs: 300_000,
        onDepth: (depth) => ctx.metrics.queueDepth.set({ controller: NAME }, depth),
      });
      queue = q;
      // New credentials may be what a failing Service waited for (a 401): each one in backoff is
      // tried once now, its backoff started over.
      ctx.onReload?.(() => {
        const retried = q.retryBackoffNow();
        if (retried > 0)
          ctx.log.info(
            { controller: NAME },
            `credentials or cloud config reloaded: retrying ${retried} Service(s) waiting out their backoff now`,
          );
      });
      const services = ctx.informer({ path: '/api/v1/services', resource: 'services', slim: slimService });
      const nodes = ctx.informers.nodes;
      const controller = new ServiceController({
        services,
        nodes: { list: () => nodes.list().map(asBackendCandidate) },
        queue: q,
        client: createServiceClient(ctx.transport),
        balancers,
        rules,
        log: (level, message, fields) => ctx.log[level]({ controller: NAME, ...fields }, message),
        onResult: (result) =>
          ctx.metrics.reconciles.inc({ controller: NAME, result: result === 'failed' ? 'error' : 'success' }),
      });
      services.on('add', (svc) => controller.onServiceChange(undefined, svc));
      services.on('update', (old, svc) => controller.onServiceChange(old, svc));
      services.on('delete', (svc) => controller.onServiceDelete(svc));
      nodes.on('add', (n) => controller.onNodeChange(undefined, asBackendCandidate(n)));
      nodes.on('update', (old, n) => controller.onNodeChange(asBackendCandidate(old), asBackendCandidate(n)));
      nodes.on('delete', (n) => controller.onNodeChange(asBackendCandidate(n), undefined));

      // Informer events before the first sync are the initial list: start() covers them instead.
      while (!services.hasSynced() || !nodes.hasSynced()) {
        if (ctx.signal.aborted) return;
        await delay(50);
      }
      controller.start();
      workers = q.run(ctx.options.concurrentServiceSyncs ?? DEFAULT_CONCURRENT_SERVICE_SYNCS, (key) =>
        controller.process(key, ctx.signal),
      );
    },
    async stop() {
      queue?.shutDown();
      await workers;
    },
  };
}
