import { setTimeout as delay } from 'node:timers/promises';
import ipaddr from 'ipaddr.js';
import { clusterIdentity } from '../kube/cluster-identity.js';
import { nodeName, type SlimNode } from '../kube/slim-node.js';
import {
  EVENT_AMBIGUOUS_NODE_ADDRESS,
  EVENT_FAILED_TO_CREATE_ROUTE,
  EVENT_FAILED_TO_DELETE_ROUTE,
  SOURCE_ROUTE_CONTROLLER,
} from '../kube/well-known.js';
import type { Route, Routes } from '../providers/types.js';
import { mapLimit } from './concurrency.js';
import type { Controller, ControllerContext } from './manager.js';
import {
  type ClusterCIDRs,
  conditionChange,
  NETWORK_UNAVAILABLE,
  parseClusterCIDRs,
  planRoutes,
  type RoutePlan,
} from './routes.js';

const NAME = 'route';
/** Cloud route operations in flight at once (the issue's bound; upstream's maxConcurrentRouteOperations is 200). */
export const MAX_ROUTE_OPERATIONS = 10;
const DEFAULT_PERIOD_MS = 10_000;

export interface RoutePassResult {
  listed: number;
  created: number;
  deleted: number;
  failed: number;
  conditionsWritten: number;
}

/**
 * One pass: the cluster's routes listed once, whatever the number of Nodes; routes to delete, then
 * routes to create, at most MAX_ROUTE_OPERATIONS in flight; then each Node's NetworkUnavailable
 * condition, written only where it changes. A failed create leaves its Node NoRouteCreated and is
 * tried again by the next pass.
 */
export async function routePass(
  ctx: ControllerContext,
  routes: Routes,
  clusterID: string,
  clusterCIDRs: ClusterCIDRs,
  ambiguitiesSaid: Set<string> = new Set(),
): Promise<RoutePassResult> {
  const listed = await routes.list(clusterID, ctx.signal);
  const nodes = ctx.informers.nodes.list();
  const plan = planRoutes(nodes, listed, clusterCIDRs);
  const byName = new Map(nodes.map((n) => [nodeName(n), n]));
  // The --cluster-cidr entry a created Pod CIDR lies in (the plan creates no other).
  const clusterCIDROf = (cidr: string) => {
    const [addr] = ipaddr.parseCIDR(cidr);
    const range = clusterCIDRs.find((r) => r[0].kind() === addr.kind() && addr.match(r));
    return range ? { clusterCIDR: `${range[0].toString()}/${range[1]}` } : {};
  };
  const result: RoutePassResult = {
    listed: listed.length,
    created: 0,
    deleted: 0,
    failed: 0,
    conditionsWritten: 0,
  };
  const event = (node: SlimNode | undefined, reason: string, message: string) => {
    if (node)
      void ctx.kube
        .createEvent({ node, type: 'Warning', reason, message, component: SOURCE_ROUTE_CONTROLLER })
        .catch(() => undefined);
  };

  sayAmbiguities(ctx, plan.ambiguous, ambiguitiesSaid, (name, message) =>
    event(byName.get(name), EVENT_AMBIGUOUS_NODE_ADDRESS, message),
  );

  // Deletes first: a CIDR that moved to another Node (or a Node whose address changed) loses its old
  // route before it gets the new one.
  await mapLimit(plan.delete, MAX_ROUTE_OPERATIONS, async (route: Route) => {
    try {
      await routes.delete(clusterID, route, ctx.signal);
      result.deleted++;
      ctx.metrics.routeOperations.inc({ operation: 'delete', result: 'success' });
      ctx.log.info(
        { controller: NAME, cidr: route.destinationCIDR, nextHop: route.nextHop },
        `deleted route ${route.destinationCIDR} via ${route.nextHop}`,
      );
    } catch (err) {
      if (ctx.signal.aborted) return;
      ctx.metrics.routeOperations.inc({ operation: 'delete', result: 'error' });
      const message = `Could not delete route ${route.destinationCIDR} via ${route.nextHop}: ${(err as Error).message}`;
      ctx.log.warn({ controller: NAME, cidr: route.destinationCIDR }, message);
      event(
        route.targetNode ? byName.get(route.targetNode) : undefined,
        EVENT_FAILED_TO_DELETE_ROUTE,
        message,
      );
    }
  });

  const failedNodes = new Set<string>();
  for (const r of plan.refused) {
    failedNodes.add(r.node);
    result.failed++;
    const message = `Could not create route ${r.destinationCIDR} for node ${r.node}: ${r.why}; ccm routes only Pod CIDRs inside --cluster-cidr that hold no address of their Node or an older one, each to one Node`;
    ctx.log.warn({ controller: NAME, node: r.node, cidr: r.destinationCIDR }, message);
    event(byName.get(r.node), EVENT_FAILED_TO_CREATE_ROUTE, message);
  }
  await mapLimit(plan.create, MAX_ROUTE_OPERATIONS, async (c) => {
    try {
      await routes.create(
        clusterID,
        c.nameHint,
        { targetNode: c.target, destinationCIDR: c.destinationCIDR, ...clusterCIDROf(c.destinationCIDR) },
        ctx.signal,
      );
      result.created++;
      ctx.metrics.routeOperations.inc({ operation: 'create', result: 'success' });
      ctx.log.info(
        { controller: NAME, node: c.node, cidr: c.destinationCIDR },
        `created route ${c.destinationCIDR} for node ${c.node}`,
      );
    } catch (err) {
      failedNodes.add(c.node);
      result.failed++;
      if (ctx.signal.aborted) return;
      ctx.metrics.routeOperations.inc({ operation: 'create', result: 'error' });
      const message = `Could not create route ${c.nameHint} ${c.destinationCIDR} for node ${c.node}: ${(err as Error).message}`;
      ctx.log.warn({ controller: NAME, node: c.node, cidr: c.destinationCIDR }, message);
      event(byName.get(c.node), EVENT_FAILED_TO_CREATE_ROUTE, message);
    }
  });
  ctx.metrics.routes.set({ state: 'ok' }, listed.length - plan.delete.length + result.created);
  ctx.metrics.routes.set({ state: 'missing' }, result.failed);
  if (ctx.signal.aborted) return result;

  // Each Node's verdict, the first that names it (a Map, so 5,000 Nodes cost no quadratic search).
  const created = new Map<string, boolean>();
  for (const name of plan.complete) created.set(name, true);
  for (const c of plan.create) if (!created.has(c.node)) created.set(c.node, !failedNodes.has(c.node));
  for (const r of plan.refused) if (!created.has(r.node)) created.set(r.node, false);
  for (const name of plan.withoutCIDRs) created.set(name, false);
  const changes = [...created].flatMap(([name, ok]) => {
    const node = byName.get(name) as SlimNode;
    const change = conditionChange(node, ok);
    return change ? [{ node, change }] : [];
  });
  await mapLimit(changes, ctx.options.concurrency, async ({ node, change }) => {
    try {
      await ctx.kube.setNodeCondition(nodeName(node), { type: NETWORK_UNAVAILABLE, ...change });
      result.conditionsWritten++;
    } catch (err) {
      if (!ctx.signal.aborted)
        ctx.log.warn(
          { controller: NAME, node: nodeName(node) },
          `could not set ${NETWORK_UNAVAILABLE}=${change.status} on Node ${nodeName(node)}: ${(err as Error).message}`,
        );
    }
  });
  return result;
}

/**
 * Says once, in the log and on each Node, that an address is claimed by several Nodes (the plan then
 * routes none of them on its account, every pass), and once that it no longer is. `said` holds what
 * was said, from one pass to the next.
 */
function sayAmbiguities(
  ctx: ControllerContext,
  ambiguous: RoutePlan['ambiguous'],
  said: Set<string>,
  event: (node: string, message: string) => void,
): void {
  const now = new Set<string>();
  for (const { address, nodes } of ambiguous) {
    const key = `${address} ${nodes.join(' ')}`;
    now.add(key);
    if (said.has(key)) continue;
    const message = `Nodes ${nodes.join(', ')} all report the address ${address}: ccm cannot tell which of them a route via it is for, so it creates no route via it and deletes none until one Node has it`;
    ctx.log.warn({ controller: NAME, address, nodes }, message);
    for (const node of nodes) event(node, message);
  }
  const stillAmbiguous = new Set(ambiguous.map((a) => a.address));
  for (const key of said) {
    const address = key.split(' ')[0] as string;
    if (!stillAmbiguous.has(address))
      ctx.log.info(
        { controller: NAME, address },
        `the address ${address} is no longer reported by several Nodes`,
      );
  }
  said.clear();
  for (const key of now) said.add(key);
}

/** What makes a Node change worth a pass: its Pod CIDRs or its addresses (upstream handleNodeUpdate). */
function routeChangeMatters(old: SlimNode, now: SlimNode): boolean {
  return (
    JSON.stringify(old.spec?.podCIDRs ?? []) !== JSON.stringify(now.spec?.podCIDRs ?? []) ||
    JSON.stringify(old.status?.addresses ?? []) !== JSON.stringify(now.status?.addresses ?? [])
  );
}

/**
 * The `route` entry of --controllers: a pass every --route-reconciliation-period and soon after a Node
 * is added, deleted, or changes its Pod CIDRs or addresses (passes never overlap; changes during a
 * pass give one more).
 */
export function routeController(): Controller {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const unsubscribe: (() => void)[] = [];
  return {
    name: NAME,
    async start(ctx: ControllerContext) {
      const routes = ctx.provider.routes;
      if (!routes) {
        ctx.log.info(
          { controller: NAME },
          `the ${ctx.provider.name} provider has no routes${ctx.provider.noRoutesReason ? ` (${ctx.provider.noRoutesReason})` : ''}; the route controller does nothing`,
        );
        return;
      }
      if (ctx.options.configureCloudRoutes === false) {
        ctx.log.info({ controller: NAME }, 'routes are not configured (--configure-cloud-routes=false)');
        return;
      }
      // As upstream (route_controller.go New: "Must specify clusterCIDR"): without the cluster's Pod
      // range the controller neither knows what it may delete nor that Pod routes are wanted at all.
      const clusterCIDRs = parseClusterCIDRs(ctx.options.clusterCIDR ?? '');
      if (clusterCIDRs.length === 0) {
        ctx.log.info(
          { controller: NAME },
          'no --cluster-cidr: the route controller does nothing (give the cluster Pod CIDR to have Pod routes in the cloud)',
        );
        return;
      }
      const clusterID = await clusterIdentity(ctx.transport, ctx.options.clusterName);
      let lastFailure: string | undefined;
      const ambiguitiesSaid = new Set<string>();
      const pass = async () => {
        const end = ctx.metrics.reconcileSeconds.startTimer({ controller: NAME });
        try {
          const r = await routePass(ctx, routes, clusterID, clusterCIDRs, ambiguitiesSaid);
          ctx.metrics.reconciles.inc({ controller: NAME, result: r.failed ? 'error' : 'success' });
          if (lastFailure) ctx.log.info({ controller: NAME }, 'routes can be listed again');
          lastFailure = undefined;
        } catch (err) {
          if (ctx.signal.aborted) return;
          ctx.metrics.reconciles.inc({ controller: NAME, result: 'error' });
          const message = `could not list routes: ${(err as Error).message}`;
          ctx.log[message === lastFailure ? 'debug' : 'warn']({ controller: NAME }, message);
          lastFailure = message;
        } finally {
          end();
        }
      };
      const trigger = () => {
        if (stopped || ctx.signal.aborted) return;
        if (running) {
          again = true;
          return;
        }
        running = (async () => {
          do {
            again = false;
            await pass();
          } while (again && !stopped && !ctx.signal.aborted);
        })().finally(() => {
          running = undefined;
        });
      };
      const nodes = ctx.informers.nodes;
      while (!nodes.hasSynced()) {
        if (ctx.signal.aborted) return;
        await delay(50);
      }
      unsubscribe.push(
        nodes.on('add', () => trigger()),
        nodes.on('delete', () => trigger()),
        nodes.on('update', (old, now) => {
          if (routeChangeMatters(old, now)) trigger();
        }),
      );
      trigger();
      timer = setInterval(trigger, ctx.options.routeReconciliationPeriodMs ?? DEFAULT_PERIOD_MS);
      timer.unref?.();
    },
    async stop() {
      stopped = true;
      for (const off of unsubscribe) off();
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
