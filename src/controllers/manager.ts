/**
 * The controller registry and what a controller gets to work with.
 *
 * A controller is `{ name, start(ctx), stop() }`, made by a factory registered under its upstream
 * name. `start` subscribes to informers, starts its queue workers and timers and returns; `stop`
 * stops intake and resolves once in-flight work is finished. Controllers run only while this replica
 * leads (or with --leader-elect=false), and never know which cloud they talk to.
 *
 *   registerController('service', () => serviceController());   // e.g. in src/controllers/service.ts
 *
 *   ctx.transport     the lean Kubernetes transport (writes pass the leader gate)
 *   ctx.kube          Node operations (patch, status, delete with preconditions, events)
 *   ctx.provider      the cloud, every call through the shared request budget and counted in metrics
 *   ctx.budget        that budget (the cloud's limits and/or a token bucket), for anything else that calls the cloud
 *   ctx.cloud         the shared cached instance listing (refreshIfOlderThan / requestRefresh / view)
 *   ctx.informers     started informers by resource: `nodes` always; `ctx.informer(...)` adds others,
 *                     e.g. ctx.informer({ path: '/api/v1/services', resource: 'services', slim })
 *   ctx.log, ctx.metrics, ctx.options (periods, concurrency, grace), ctx.signal (aborted at shutdown)
 *   ctx.onReload(fn)  fn is called after each credential or cloud config reload (once the cloud was
 *                     listed with the new ones): retry what failed, e.g. queue.retryBackoffNow()
 *   ctx.credentialsSecret  the Secret the credentials come from, when they do (its annotation
 *                     releases a held deletion); ctx.deletionHold the brake's hold, for /readyz
 *
 * A name registered as an empty slot (registerSlot) is skipped by `*` while no factory fills it, and
 * naming it explicitly says in one line that it is not available.
 */

import type { Logger } from 'pino';
import { closest } from '../closest.js';
import type { Informer, InformerOptions } from '../kube/informer.js';
import type { NodeClient } from '../kube/nodes.js';
import type { SlimNode } from '../kube/slim-node.js';
import type { KubeTransport } from '../kube/transport.js';
import { InvalidConfigError } from '../providers/errors.js';
import type { Provider } from '../providers/types.js';
import type { RequestBudget } from './cloud-budget.js';
import type { HoldStatus } from './deletion-guard.js';
import type { InstanceCache } from './instance-cache.js';
import type { Metrics } from './metrics.js';

export interface ControllerOptions {
  concurrency: number;
  deletionGracePeriodMs: number;
  nodeMonitorPeriodMs: number;
  nodeStatusUpdateFrequencyMs: number;
  /** --cloud-list-period; undefined: 1 m while some Node is NotReady, 5 m otherwise. */
  cloudListPeriodMs?: number;
  /** --concurrent-service-syncs: Services synced in parallel (DEFAULT_CONCURRENT_SERVICE_SYNCS). */
  concurrentServiceSyncs?: number;
  /** --load-balancer-class: the class owned besides Services without one. */
  loadBalancerClass?: string;
  /** --cluster-name: the identity in ownership tags (default: derived from the kube-system UID). */
  clusterName?: string;
  /** --configure-cloud-routes: undefined means true where the provider has routes. */
  configureCloudRoutes?: boolean;
  /** --cluster-cidr, comma-separated: the only routes the route controller may delete lie inside. */
  clusterCIDR?: string;
  /** --route-reconciliation-period (upstream default 10 s). */
  routeReconciliationPeriodMs?: number;
  /** --adopt-official: take over the official controller's load balancers, named for this cluster name. */
  adoptOfficial?: { clusterName: string };
  /** --max-deletion-ratio (deletion-brake.ts; default 0.55). */
  maxDeletionRatio?: number;
  /** --node-deletion-rate (deletion-brake.ts; default 0.1 a second). */
  nodeDeletionRate?: number;
}

export interface ControllerContext {
  transport: KubeTransport;
  kube: NodeClient;
  provider: Provider;
  budget: RequestBudget;
  cloud: InstanceCache;
  informers: { nodes: Informer<SlimNode> } & Record<string, Informer<unknown>>;
  /** Creates, starts and registers an informer (readiness then waits for it too). */
  informer<T>(options: Omit<InformerOptions<T>, 'transport'>): Informer<T>;
  log: Logger;
  metrics: Metrics;
  options: ControllerOptions;
  signal: AbortSignal;
  /** The Secret the credentials are read from (and re-read): its annotation releases a held deletion. */
  credentialsSecret?: { namespace: string; name: string };
  /** The deletion brake's hold, for /readyz (set by the lifecycle controller while it leads). */
  deletionHold?: HoldStatus;
  /**
   * Calls `listener` after each reload of the credentials or the cloud config, once the cloud was
   * listed with the new ones; returns what unsubscribes it (the term's end does too).
   */
  onReload?(listener: () => void): () => void;
}

export interface Controller {
  readonly name: string;
  start(ctx: ControllerContext): void | Promise<void>;
  stop(): Promise<void>;
}

export type ControllerFactory = () => Controller;
/**
 * Imports a controller's module when the controller starts: `manifests` and `doctor` only need the
 * names, and their start does not load every controller (docs/benchmarks.md, Start-up).
 */
export type ControllerLoader = () => Promise<ControllerFactory>;

const registry = new Map<string, ControllerLoader | undefined>();

/** Fills (or defines) the controller of this name. */
export function registerController(name: string, load: ControllerLoader): void {
  registry.set(name, load);
}

/** Declares a name whose factory a later module provides. */
export function registerSlot(name: string): void {
  if (!registry.has(name)) registry.set(name, undefined);
}

export function controllerNames(): string[] {
  return [...registry.keys()];
}

export function controllerLoader(name: string): ControllerLoader | undefined {
  return registry.get(name);
}

export interface Selection {
  /** Names to run, each with a factory. */
  enabled: string[];
  /** Named explicitly but without a factory in this build. */
  unavailable: string[];
}

/**
 * `--controllers`, as upstream reads it: a comma list where `*` means every controller, `name`
 * enables one and `-name` disables one. Throws a configuration error (exit 2) on an unknown name.
 */
export function selectControllers(spec: string): Selection {
  const names = controllerNames();
  const items = spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const wanted = new Set<string>();
  const explicit = new Set<string>();
  for (const item of items) {
    const name = item.startsWith('-') ? item.slice(1) : item;
    if (name !== '*' && !names.includes(name)) {
      const near = closest(name, names);
      throw new InvalidConfigError(
        `--controllers: expected a list of ${names.join(', ')} (* for all, -name for all but one), got ${JSON.stringify(name)}${near ? `; did you mean ${near}?` : ''}`,
      );
    }
  }
  // A list of only "-name" items reads "all but these", as the flag's help says (kube-controller-manager
  // would start nothing for `--controllers=-route`: an operator who typed it meant every other one).
  const onlyDisables = items.length > 0 && items.every((item) => item.startsWith('-'));
  for (const item of items) if (item === '*' || onlyDisables) for (const n of names) wanted.add(n);
  for (const item of items)
    if (item !== '*' && !item.startsWith('-')) {
      wanted.add(item);
      explicit.add(item);
    }
  for (const item of items) if (item.startsWith('-')) wanted.delete(item.slice(1));
  const enabled = [...wanted].filter((n) => registry.get(n));
  const unavailable = [...wanted].filter((n) => !registry.get(n) && explicit.has(n));
  return { enabled, unavailable };
}

// The controllers of this build. A later one fills its slot with registerController(name, loader).
registerController('cloud-node', async () => (await import('./cloud-node.js')).cloudNodeController);
registerController(
  'cloud-node-lifecycle',
  async () => (await import('./node-lifecycle.js')).nodeLifecycleController,
);
registerController('service', async () => (await import('./service-controller.js')).serviceController);
registerController('route', async () => (await import('./route-controller.js')).routeController);
