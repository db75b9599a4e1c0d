import { KubeApiError } from '../kube/errors.js';
import { type ServiceClient, type SlimService, serviceKey } from '../kube/services.js';
import {
  EVENT_SYNC_LOAD_BALANCER_FAILED,
  EVENT_UPDATE_LOAD_BALANCER_FAILED,
  SOURCE_SERVICE_CONTROLLER,
} from '../kube/well-known.js';
import { RetryableError } from '../providers/errors.js';
import type { LoadBalancers } from '../providers/types.js';
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
} from './service.js';
import { deleteOrphaned, syncBackends, syncService } from './service-sync.js';

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
  log?: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void;
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

  constructor(private readonly deps: ServiceControllerDeps) {}

  /**
   * Once both informers have synced: the provider rebuilds its state from the Services, then every
   * Service of ours is checked once, quietly (a restart writes nothing to an unchanged cluster).
   */
  start(): void {
    const ours = [...this.deps.services.list()].filter(
      (svc) => wantsLoadBalancer(svc, this.deps.rules) || hasCleanupFinalizer(svc),
    );
    this.deps.balancers.observe?.(ours.map((svc) => describeRequest(svc, [], this.deps.rules)));
    for (const svc of ours) this.enqueue(serviceKey(svc), 'resync');
  }

  onServiceChange(old: SlimService | undefined, now: SlimService): void {
    const key = serviceKey(now);
    const ignored = this.managedAnnotations.get(key) ?? [];
    if (needsSync(old && withoutKeys(old, ignored), withoutKeys(now, ignored), this.deps.rules)) {
      this.enqueue(key, 'spec');
    }
  }

  onServiceDelete(last: SlimService): void {
    if (!wantsLoadBalancer(last, this.deps.rules) && !hasCleanupFinalizer(last)) return;
    const key = serviceKey(last);
    this.tombstones.set(key, last);
    this.enqueue(key, 'spec');
  }

  onNodeChange(old: BackendCandidate | undefined, now: BackendCandidate | undefined): void {
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
    const svc = this.deps.services.get(key);
    const sync = { client: this.deps.client, balancers: this.deps.balancers, rules: this.deps.rules, signal };
    try {
      if (!svc) {
        const last = this.tombstones.get(key);
        if (last) await deleteOrphaned(last, sync);
        this.forgetService(key);
        this.deps.queue.forget(key);
        return;
      }
      this.tombstones.delete(key);
      const backends = backendNodes(this.deps.nodes.list());
      const setKey = backendSetKey(backends);
      const current = this.lastBackends.get(key);
      if (reason === 'nodes' && current !== undefined && !needsCleanup(svc, this.deps.rules)) {
        if (current !== setKey) {
          await syncBackends(svc, backends, sync);
          this.lastBackends.set(key, setKey);
          this.deps.onResult?.('updated');
        }
      } else {
        const { result, managedAnnotations } = await syncService(svc, backends, sync, {
          announce: reason === 'spec',
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
    this.deps.log?.('warn', `load balancer of Service ${key} not synced: ${message}`, { service: key });
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
