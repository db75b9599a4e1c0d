import ipaddr from 'ipaddr.js';
import { nodeName, type SlimNode } from '../kube/slim-node.js';
import type { Route, RouteTarget } from '../providers/types.js';

/**
 * The route controller's rules (upstream k8s.io/cloud-provider controllers/route/route_controller.go
 * `reconcile`), pure: from the Nodes and the cluster's routes in the cloud, which routes to delete,
 * which to create, and what each Node's NetworkUnavailable condition should say.
 */

export const NETWORK_UNAVAILABLE = 'NetworkUnavailable';
export const REASON_ROUTE_CREATED = 'RouteCreated';
export const REASON_NO_ROUTE_CREATED = 'NoRouteCreated';

export interface RouteCreate {
  node: string;
  /** The Node's UID: the provider's name hint, as upstream passes it. */
  nameHint: string;
  target: RouteTarget;
  destinationCIDR: string;
}

export interface RoutePlan {
  /** Routes of this cluster inside --cluster-cidr whose Node is gone, or whose CIDR no Node holds. */
  delete: Route[];
  create: RouteCreate[];
  /** Nodes whose every Pod CIDR already has its route. */
  complete: string[];
  /** Nodes a route points at that hold no Pod CIDR (upstream sets NetworkUnavailable=True on them). */
  withoutCIDRs: string[];
  /** Pod CIDRs never routed (see refusal): their Node is NoRouteCreated, with an event saying why. */
  refused: { node: string; destinationCIDR: string; why: string }[];
}

export type ClusterCIDRs = readonly [ipaddr.IPv4 | ipaddr.IPv6, number][];

/**
 * Parses --cluster-cidr (comma list, dual stack); throws one line naming the bad value. As upstream's
 * startRouteController (k8s.io/cloud-provider app/core.go, processCIDRs): at most 2 CIDRs, and 2 only
 * when dual stack, one of each family.
 */
export function parseClusterCIDRs(value: string): ClusterCIDRs {
  const cidrs = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((cidr) => {
      try {
        return ipaddr.parseCIDR(cidr);
      } catch {
        throw new Error(`--cluster-cidr: "${cidr}" is not a CIDR such as 10.244.0.0/16`);
      }
    });
  if (cidrs.length > 2)
    throw new Error(
      `--cluster-cidr: ${cidrs.length} CIDRs given, at most 2 (one IPv4 and one IPv6, for dual stack)`,
    );
  if (cidrs.length === 2 && cidrs[0]?.[0].kind() === cidrs[1]?.[0].kind())
    throw new Error(
      `--cluster-cidr: two ${cidrs[0]?.[0].kind() === 'ipv4' ? 'IPv4' : 'IPv6'} CIDRs given; two are for dual stack only, one IPv4 and one IPv6`,
    );
  return cidrs;
}

/**
 * Whether the controller may delete a route to `cidr`: its first or last address lies inside one of
 * the cluster CIDRs (upstream isResponsibleForRoute).
 */
export function isResponsibleFor(cidr: string, clusterCIDRs: ClusterCIDRs): boolean {
  let first: ipaddr.IPv4 | ipaddr.IPv6;
  let last: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    const v4 = ipaddr.parseCIDR(cidr)[0].kind() === 'ipv4';
    first = v4 ? ipaddr.IPv4.networkAddressFromCIDR(cidr) : ipaddr.IPv6.networkAddressFromCIDR(cidr);
    last = v4 ? ipaddr.IPv4.broadcastAddressFromCIDR(cidr) : ipaddr.IPv6.broadcastAddressFromCIDR(cidr);
  } catch {
    return false;
  }
  return clusterCIDRs.some(
    (range) => range[0].kind() === first.kind() && (first.match(range) || last.match(range)),
  );
}

/** A Pod CIDR's canonical text (a Node's spec.podCIDRs and a cloud's listing may spell it apart). */
export function canonicalCIDR(cidr: string): string {
  try {
    const [addr, bits] = ipaddr.parseCIDR(cidr);
    return `${addr.toString()}/${bits}`;
  } catch {
    return cidr;
  }
}

export function routeTarget(node: SlimNode): RouteTarget {
  return {
    name: nodeName(node),
    providerID: node.spec?.providerID ?? '',
    addresses: (node.status?.addresses ?? []) as RouteTarget['addresses'],
  };
}

/** The Node a route points at: the name the cloud recorded, else the Node holding its next hop. */
function targetOf(route: Route, byName: Map<string, SlimNode>, byAddress: Map<string, string>) {
  if (route.targetNode) return byName.has(route.targetNode) ? route.targetNode : undefined;
  return byAddress.get(route.nextHop);
}

/** Whether `cidr` lies wholly inside one of the cluster CIDRs (same family, as long a prefix or longer). */
function insideClusterCIDR(cidr: string, clusterCIDRs: ClusterCIDRs): boolean {
  try {
    const [addr, bits] = ipaddr.parseCIDR(cidr);
    return clusterCIDRs.some(
      (range) => range[0].kind() === addr.kind() && bits >= range[1] && addr.match(range),
    );
  } catch {
    return false;
  }
}

/**
 * Why a Node's Pod CIDR is not routed, or undefined when it may be. Upstream routes any podCIDR and
 * bounds only deletes (route_controller.go isResponsibleForRoute); ccm bounds creates too, since anyone
 * who can create a Node object would otherwise choose what the cloud routes to it: a default route
 * (0.0.0.0/0), or the Nodes' own network (the host's traffic to other Nodes taken over).
 */
export function refusal(
  cidr: string,
  clusterCIDRs: ClusterCIDRs,
  nodeAddresses: readonly string[],
): string | undefined {
  let parsed: [ipaddr.IPv4 | ipaddr.IPv6, number];
  try {
    parsed = ipaddr.parseCIDR(cidr);
  } catch {
    return `${cidr} is not a CIDR`;
  }
  if (parsed[1] === 0) return `${cidr} is a default route, never a Pod CIDR`;
  if (!insideClusterCIDR(cidr, clusterCIDRs)) return `${cidr} lies outside --cluster-cidr`;
  const node = nodeAddresses.find((a) => {
    try {
      const ip = ipaddr.parse(a);
      return ip.kind() === parsed[0].kind() && ip.match(parsed);
    } catch {
      return false;
    }
  });
  if (node) return `${cidr} holds the Node address ${node}`;
  return undefined;
}

export function planRoutes(
  nodes: readonly SlimNode[],
  routes: readonly Route[],
  clusterCIDRs: ClusterCIDRs,
): RoutePlan {
  const byName = new Map(nodes.map((n) => [nodeName(n), n]));
  const byAddress = new Map<string, string>();
  for (const n of nodes)
    for (const a of n.status?.addresses ?? [])
      if (a.type === 'InternalIP' || a.type === 'ExternalIP') byAddress.set(a.address, nodeName(n));

  // What each Node has now: node name → its routed CIDRs.
  const existing = new Map<string, Set<string>>();
  const targets = new Map<Route, string | undefined>();
  for (const route of routes) {
    const target = targetOf(route, byName, byAddress);
    targets.set(route, target);
    if (!target || route.incomplete) continue;
    const set = existing.get(target) ?? new Set<string>();
    set.add(canonicalCIDR(route.destinationCIDR));
    existing.set(target, set);
  }

  const plan: RoutePlan = { delete: [], create: [], complete: [], withoutCIDRs: [], refused: [] };
  const nodeAddresses = [...byAddress.keys()];
  // A Pod CIDR two Nodes claim (node IPAM gives none twice; a hand-set podCIDR can) is routed to one
  // of them only: the Node its route already goes to, else the oldest. Routing it to each in turn
  // would replace the route every pass (Cloudlycke's `ip route replace`) and flap the next hop.
  const claims = new Map<string, string[]>();
  const oldestFirst = [...nodes].sort(
    (a, b) =>
      String(a.metadata?.creationTimestamp ?? '').localeCompare(
        String(b.metadata?.creationTimestamp ?? ''),
      ) || nodeName(a).localeCompare(nodeName(b)),
  );
  for (const node of oldestFirst)
    for (const cidr of new Set((node.spec?.podCIDRs ?? []).map(canonicalCIDR)))
      claims.set(cidr, [...(claims.get(cidr) ?? []), nodeName(node)]);
  const routedTo = (cidr: string, names: string[]) => names.find((n) => existing.get(n)?.has(cidr));
  const wanted = new Map<string, Set<string>>();
  for (const node of nodes) {
    const name = nodeName(node);
    const cidrs = (node.spec?.podCIDRs ?? []).map(canonicalCIDR);
    if (cidrs.length === 0) {
      if (existing.has(name)) plan.withoutCIDRs.push(name);
      continue;
    }
    wanted.set(name, new Set(cidrs));
    const have = existing.get(name);
    let complete = true;
    for (const cidr of cidrs) {
      // Without cluster CIDRs nothing is created anyway (the controller does not start); `ccm doctor`,
      // which only reads, plans that way to find the missing routes.
      const why = clusterCIDRs.length ? refusal(cidr, clusterCIDRs, nodeAddresses) : undefined;
      if (why) {
        complete = false;
        plan.refused.push({ node: name, destinationCIDR: cidr, why });
        continue;
      }
      if (have?.has(cidr)) continue;
      const claimants = claims.get(cidr) ?? [];
      if (claimants.length > 1) {
        const owner = routedTo(cidr, claimants) ?? claimants[0];
        if (owner !== name) {
          complete = false;
          plan.refused.push({
            node: name,
            destinationCIDR: cidr,
            why: `${cidr} is also the Pod CIDR of Node ${owner}, which it is routed to`,
          });
          continue;
        }
      }
      complete = false;
      plan.create.push({
        node: name,
        nameHint: node.metadata?.uid ?? name,
        target: routeTarget(node),
        destinationCIDR: cidr,
      });
    }
    if (complete) plan.complete.push(name);
  }

  for (const route of routes) {
    if (!isResponsibleFor(route.destinationCIDR, clusterCIDRs)) continue;
    const target = targets.get(route);
    if (!target || !wanted.get(target)?.has(canonicalCIDR(route.destinationCIDR))) plan.delete.push(route);
  }
  return plan;
}

/** The condition a Node should carry, or undefined when it already does (written only on change). */
export function conditionChange(
  node: SlimNode,
  routesCreated: boolean,
): { status: 'True' | 'False'; reason: string; message: string } | undefined {
  const current = node.status?.conditions?.find((c) => c.type === NETWORK_UNAVAILABLE);
  const want = routesCreated
    ? { status: 'False' as const, reason: REASON_ROUTE_CREATED, message: 'RouteController created a route' }
    : {
        status: 'True' as const,
        reason: REASON_NO_ROUTE_CREATED,
        message: 'RouteController failed to create a route',
      };
  if (current && current.status === want.status && current.reason === want.reason) return undefined;
  return want;
}
