import ipaddr from 'ipaddr.js';
import { nodeName, type SlimNode } from '../kube/slim-node.js';
import { strictAddress, strictCIDR } from '../providers/next-hop.js';
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
  /**
   * InternalIPs two or more Nodes report (one of them may have it as its ExternalIP). A listed route
   * via one is neither counted for a Node nor deleted; no route is created for a Node whose InternalIP
   * it is, and that Node's condition is left as it is: a Node copying another's address changes
   * nothing of the other's.
   */
  ambiguous: { address: string; nodes: string[] }[];
}

export type ClusterCIDRs = readonly [ipaddr.IPv4 | ipaddr.IPv6, number][];

/**
 * Parses --cluster-cidr (comma list, dual stack); throws one line naming the bad value. As upstream's
 * startRouteController (k8s.io/cloud-provider app/core.go, processCIDRs): at most 2 CIDRs, and 2 only
 * when dual stack, one of each family. Beyond upstream, a /0 is refused: every address is no Pod range,
 * a Node could then claim any destination (1.0.0.0/8, the host's own traffic), and Cloudlycke's
 * `ip rule add to 0.0.0.0/0` is stored as `from all`, a rule taking all host traffic that ccm no longer
 * recognises as its own. Shorter prefixes than a Pod range wants are the operator's choice, as upstream.
 */
export function parseClusterCIDRs(value: string): ClusterCIDRs {
  const cidrs = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((cidr) => {
      const parsed = strictCIDR(cidr);
      if (!parsed)
        throw new Error(`--cluster-cidr: expected CIDRs such as 10.244.0.0/16, got ${JSON.stringify(cidr)}`);
      if (parsed[1] === 0)
        throw new Error(
          `--cluster-cidr: "${cidr}" is every ${parsed[0].kind() === 'ipv4' ? 'IPv4' : 'IPv6'} address, not a Pod range; give the cluster's Pod CIDR such as 10.244.0.0/16`,
        );
      return parsed;
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

/**
 * A Pod CIDR's canonical text (a Node's spec.podCIDRs and a cloud's listing may spell it apart); one
 * that can be read more than one way (10.244.010.0/24: 10.244.10.0 to Go, 10.244.8.0 to ipaddr.js) is
 * left as it is, and refused as no CIDR.
 */
export function canonicalCIDR(cidr: string): string {
  const parsed = strictCIDR(cidr);
  return parsed ? `${parsed[0].toString()}/${parsed[1]}` : cidr;
}

export function routeTarget(node: SlimNode): RouteTarget {
  return {
    name: nodeName(node),
    providerID: node.spec?.providerID ?? '',
    addresses: (node.status?.addresses ?? []) as RouteTarget['addresses'],
  };
}

/**
 * An address as one text whatever its spelling (fd00:56:0::12 and fd00:56::12 are one address): a
 * Node must not escape being ambiguous with another spelling of the same address. A form readers
 * disagree on (192.168.56, 192.168.56.014) is no address: no route goes via it (nextHopFor).
 */
function canonicalAddress(address: string): string | undefined {
  return strictAddress(address)?.toString();
}

/** The Node a route points at: the name the cloud recorded, else the Node holding its next hop. */
function targetOf(route: Route, byName: Map<string, SlimNode>, byAddress: Map<string, string>) {
  if (route.targetNode) return byName.has(route.targetNode) ? route.targetNode : undefined;
  const hop = canonicalAddress(route.nextHop);
  return hop === undefined ? undefined : byAddress.get(hop);
}

/** Whether `cidr` lies wholly inside one of the cluster CIDRs (same family, as long a prefix or longer). */
function insideClusterCIDR(cidr: string, clusterCIDRs: ClusterCIDRs): boolean {
  const parsed = strictCIDR(cidr);
  if (!parsed) return false;
  const [addr, bits] = parsed;
  return clusterCIDRs.some(
    (range) => range[0].kind() === addr.kind() && bits >= range[1] && addr.match(range),
  );
}

/** An address or CIDR as its family and leading bits (10.244.1.0/24: "ipv4:" and 24 bits). */
function bitsOf(addr: ipaddr.IPv4 | ipaddr.IPv6, length: number): string {
  const bits = addr
    .toByteArray()
    .map((b) => b.toString(2).padStart(8, '0'))
    .join('');
  return `${addr.kind()}:${bits.slice(0, length)}`;
}

function prefixBits(cidr: string): string | undefined {
  const parsed = strictCIDR(cidr);
  return parsed && bitsOf(parsed[0], parsed[1]);
}

/** An address for AddressIndex: with the rank of the oldest Node reporting it (0 is the oldest). */
export interface RankedAddress {
  address: string;
  rank: number;
  node?: string;
}

/**
 * The Nodes' addresses sorted by their bits, so the addresses inside a CIDR, which all begin with its
 * bits, sit together: two binary searches find them, and a sparse table the one of the oldest Node
 * among them. Checking each address against each Pod CIDR took 23 s of CPU a pass with 5,000 Nodes.
 */
export class AddressIndex {
  private readonly sorted: { bits: string; address: string; rank: number; node: string | undefined }[];
  /** least[k][i]: the index of the entry of least rank among sorted[i … i + 2^k - 1]. */
  private readonly least: number[][];

  constructor(addresses: Iterable<string | RankedAddress>) {
    this.sorted = [];
    for (const entry of addresses) {
      const { address, rank, node } = typeof entry === 'string' ? { address: entry, rank: 0 } : entry;
      const ip = strictAddress(address);
      // Not an address read one way only: nothing a route could hold.
      if (!ip) continue;
      this.sorted.push({ bits: bitsOf(ip, ip.kind() === 'ipv4' ? 32 : 128), address, rank, node });
    }
    this.sorted.sort((a, b) => (a.bits < b.bits ? -1 : a.bits > b.bits ? 1 : 0));
    this.least = [this.sorted.map((_, i) => i)];
    for (let width = 2; width <= this.sorted.length; width *= 2) {
      const below = this.least[this.least.length - 1] as number[];
      const level: number[] = [];
      for (let i = 0; i + width <= this.sorted.length; i++)
        level.push(this.older(below[i] as number, below[i + width / 2] as number));
      this.least.push(level);
    }
  }

  private older(i: number, j: number): number {
    return (this.sorted[j]?.rank ?? Infinity) < (this.sorted[i]?.rank ?? Infinity) ? j : i;
  }

  private firstAtOrAfter(bits: string): number {
    let low = 0;
    let high = this.sorted.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if ((this.sorted[mid] as { bits: string }).bits < bits) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  /**
   * The address inside the CIDR whose bits are given of the oldest Node (least rank), if any; with
   * `before`, only one whose rank is less.
   */
  inside(cidrBits: string, before = Infinity): { address: string; node: string | undefined } | undefined {
    // Bits are 0s and 1s: everything beginning with cidrBits sorts before cidrBits + '2'.
    const low = this.firstAtOrAfter(cidrBits);
    const high = this.firstAtOrAfter(`${cidrBits}2`);
    if (low >= high) return undefined;
    const k = Math.floor(Math.log2(high - low));
    const level = this.least[k] as number[];
    const found = this.sorted[this.older(level[low] as number, level[high - 2 ** k] as number)];
    return found && found.rank < before ? { address: found.address, node: found.node } : undefined;
  }
}

/**
 * Why a Node's Pod CIDR is not routed, or undefined when it may be. Upstream routes any podCIDR and
 * bounds only deletes (route_controller.go isResponsibleForRoute); ccm bounds creates too, since anyone
 * who can create a Node object would otherwise choose what the cloud routes to it: a default route
 * (0.0.0.0/0), or the Nodes' own network (the host's traffic to other Nodes taken over). With
 * `before`, only addresses of rank below it count (planRoutes: those of the claimant and older Nodes).
 */
export function refusal(
  cidr: string,
  clusterCIDRs: ClusterCIDRs,
  nodeAddresses: readonly (string | RankedAddress)[] | AddressIndex,
  before?: number,
): string | undefined {
  const parsed = strictCIDR(cidr);
  if (!parsed)
    return `${cidr} is not a CIDR read one way only (four decimal parts without leading zeros, or IPv6)`;
  if (parsed[1] === 0) return `${cidr} is a default route, never a Pod CIDR`;
  if (!insideClusterCIDR(cidr, clusterCIDRs)) return `${cidr} lies outside --cluster-cidr`;
  const index = nodeAddresses instanceof AddressIndex ? nodeAddresses : new AddressIndex(nodeAddresses);
  const found = index.inside(bitsOf(parsed[0], parsed[1]), before);
  if (found)
    return `${cidr} holds the Node address ${found.address}${found.node ? ` (Node ${found.node})` : ''}`;
  return undefined;
}

interface Claim {
  node: string;
  cidr: string;
  bits: string;
  routed: boolean;
  /** Refused for a Node address: it is not routed, but it keeps its place in the overlap contest. */
  refused?: boolean;
}

/**
 * The claims that may be routed: each Pod CIDR that overlaps no claim before it in `ordered`, the
 * winners so far. Two CIDRs overlap when one's leading bits begin the other's (equal, or one inside the
 * other), and either way the longer prefix would take traffic meant for the other Node. Returns the
 * losers, each with the winner it overlaps. Per claim, one lookup per prefix length: no pairwise
 * comparison of thousands of Nodes.
 */
function overlapContest(ordered: readonly Claim[]): Map<Claim, Claim> {
  const winners = new Map<string, Claim>();
  /** Every leading part of a winner's bits, shorter than the whole: a claim equal to one holds a winner. */
  const holdsWinner = new Map<string, Claim>();
  const losers = new Map<Claim, Claim>();
  for (const claim of ordered) {
    const familyEnd = claim.bits.indexOf(':') + 1;
    let winner: Claim | undefined;
    for (let end = familyEnd; end <= claim.bits.length && !winner; end++)
      winner = winners.get(claim.bits.slice(0, end));
    winner ??= holdsWinner.get(claim.bits);
    if (winner && winner.node !== claim.node) {
      losers.set(claim, winner);
      continue;
    }
    winners.set(claim.bits, claim);
    for (let end = familyEnd; end < claim.bits.length; end++) {
      const part = claim.bits.slice(0, end);
      if (!holdsWinner.has(part)) holdsWinner.set(part, claim);
    }
  }
  return losers;
}

export function planRoutes(
  nodes: readonly SlimNode[],
  routes: readonly Route[],
  clusterCIDRs: ClusterCIDRs,
): RoutePlan {
  const byName = new Map(nodes.map((n) => [nodeName(n), n]));
  // An address two Nodes report (a hand-made or hostile Node copying another's) says nothing about
  // which Node a route via it is for: only an address of one Node names it.
  const claimantsOf = new Map<string, { nodes: string[]; internal: boolean }>();
  for (const n of nodes)
    for (const a of n.status?.addresses ?? [])
      if (a.type === 'InternalIP' || a.type === 'ExternalIP') {
        // Not an IP address: no route goes via it.
        const address = canonicalAddress(a.address);
        if (address === undefined) continue;
        const claim = claimantsOf.get(address) ?? { nodes: [], internal: false };
        if (!claim.nodes.includes(nodeName(n))) claim.nodes.push(nodeName(n));
        claim.internal ||= a.type === 'InternalIP';
        claimantsOf.set(address, claim);
      }
  const byAddress = new Map<string, string>();
  const shared = new Set<string>();
  const ambiguous: RoutePlan['ambiguous'] = [];
  for (const [address, { nodes: names, internal }] of claimantsOf) {
    if (names.length === 1) byAddress.set(address, names[0] as string);
    else {
      shared.add(address);
      // Only an InternalIP is ever a next hop: an ExternalIP Nodes share (one NAT address) is no
      // question of which Node to route to.
      if (internal) ambiguous.push({ address, nodes: [...names].sort() });
    }
  }
  const hopAmbiguous = new Set(
    nodes
      .filter((n) =>
        (n.status?.addresses ?? []).some(
          (a) => a.type === 'InternalIP' && shared.has(canonicalAddress(a.address) ?? ''),
        ),
      )
      .map(nodeName),
  );

  // What each Node has now: node name → its routed CIDRs.
  const existing = new Map<string, Set<string>>();
  const targets = new Map<Route, string | undefined>();
  // Routes via a shared address, "node cidr" for each Node reporting it: which of them the route is
  // for cannot be told, but the route is there, and it keeps its place against overlapping claims
  // (a copycat must not turn a routed claim into one an older overlapping claim beats).
  const routedViaShared = new Set<string>();
  for (const route of routes) {
    const target = targetOf(route, byName, byAddress);
    targets.set(route, target);
    const hop = canonicalAddress(route.nextHop);
    if (!route.targetNode && !route.incomplete && hop !== undefined && shared.has(hop))
      for (const name of claimantsOf.get(hop)?.nodes ?? [])
        routedViaShared.add(`${name} ${canonicalCIDR(route.destinationCIDR)}`);
    if (!target || route.incomplete) continue;
    const set = existing.get(target) ?? new Set<string>();
    set.add(canonicalCIDR(route.destinationCIDR));
    existing.set(target, set);
  }

  const plan: RoutePlan = {
    delete: [],
    create: [],
    complete: [],
    withoutCIDRs: [],
    refused: [],
    ambiguous,
  };
  // Pod CIDRs that overlap, two Nodes claiming one (node IPAM gives none twice; a hand-set podCIDR can)
  // or one inside another's (which takes part of that Node's Pod traffic by longest-prefix match), are
  // routed for one Node only: the Node a route already goes to, else the oldest. Routing each in turn
  // would replace the route every pass (Cloudlycke's `ip route replace`) and flap the next hop.
  const oldestFirst = [...nodes].sort(
    (a, b) =>
      String(a.metadata?.creationTimestamp ?? '').localeCompare(
        String(b.metadata?.creationTimestamp ?? ''),
      ) || nodeName(a).localeCompare(nodeName(b)),
  );
  const rank = new Map(oldestFirst.map((n, i) => [nodeName(n), i]));
  const rankOf = (name: string) => rank.get(name) ?? Infinity;
  const nodeAddresses = new AddressIndex(
    [...claimantsOf].map(([address, { nodes: names }]) => {
      const oldest = names.reduce((a, b) => (rankOf(b) < rankOf(a) ? b : a));
      return { address, rank: rankOf(oldest), node: oldest };
    }),
  );
  const ownAddresses = (node: SlimNode): RankedAddress[] =>
    (node.status?.addresses ?? []).map((a) => ({ address: a.address, rank: 0, node: nodeName(node) }));

  // Why each claim ("node cidr") is not routed. Without cluster CIDRs nothing is created anyway (the
  // controller does not start); `ccm doctor`, which only reads, plans that way to find the missing routes.
  const refusedFor = new Map<string, string>();
  const claims: Claim[] = [];
  for (const node of oldestFirst) {
    const name = nodeName(node);
    for (const cidr of new Set((node.spec?.podCIDRs ?? []).map(canonicalCIDR))) {
      const key = `${name} ${cidr}`;
      const routed = !!(existing.get(name)?.has(cidr) || routedViaShared.has(key));
      const bits = prefixBits(cidr);
      let why: string | undefined;
      if (clusterCIDRs.length) {
        // No CIDR, a default route, one outside --cluster-cidr: never routed while the flag stands, so
        // it takes no part in the overlap contest (an old Node's 0.0.0.0/0 would block every Node).
        why = refusal(cidr, clusterCIDRs, []);
        if (why) {
          refusedFor.set(key, why);
          continue;
        }
        // A Node address inside a Pod CIDR: the address is the suspect part when its Node came after
        // the claim. So the claimant's own addresses and older Nodes' count, and none of another
        // Node's against a routed claim: a Node reporting addresses inside others' Pod CIDRs would
        // otherwise turn them all NoRouteCreated, or free their place for its own nested claim.
        why = routed
          ? refusal(cidr, clusterCIDRs, ownAddresses(node))
          : refusal(cidr, clusterCIDRs, nodeAddresses, rankOf(name) + 1);
        if (why) refusedFor.set(key, why);
      }
      if (bits === undefined) continue;
      // A claim refused for a Node address still holds its place against younger overlapping claims:
      // it is routed once the address goes, and a nested claim must not have taken its traffic by then.
      claims.push({ node: name, cidr, bits, routed, ...(why ? { refused: true } : {}) });
    }
  }
  // A stable sort: routed claims first, each group oldest first.
  const losers = overlapContest([...claims.filter((c) => c.routed), ...claims.filter((c) => !c.routed)]);
  const lostBy = new Map<string, string>();
  for (const [claim, winner] of losers) {
    const keeps = winner.refused
      ? 'which keeps its place though it is not routed now'
      : winner.cidr === claim.cidr
        ? 'which it is routed to'
        : 'which is routed to it';
    lostBy.set(
      `${claim.node} ${claim.cidr}`,
      winner.cidr === claim.cidr
        ? `${claim.cidr} is also the Pod CIDR of Node ${winner.node}, ${keeps}`
        : `${claim.cidr} overlaps ${winner.cidr}, the Pod CIDR of Node ${winner.node}, ${keeps}`,
    );
  }

  const wanted = new Map<string, Set<string>>();
  for (const node of nodes) {
    const name = nodeName(node);
    const cidrs = (node.spec?.podCIDRs ?? []).map(canonicalCIDR);
    if (cidrs.length === 0) {
      if (existing.has(name)) plan.withoutCIDRs.push(name);
      continue;
    }
    const want = new Set(cidrs);
    wanted.set(name, want);
    const have = existing.get(name);
    let complete = true;
    for (const cidr of cidrs) {
      const why = refusedFor.get(`${name} ${cidr}`) ?? lostBy.get(`${name} ${cidr}`);
      if (why) {
        complete = false;
        plan.refused.push({ node: name, destinationCIDR: cidr, why });
        // A route it already has (one made before the other claim, or by a ccm before this check)
        // goes: the winner's Pods would otherwise lose traffic to it.
        if (lostBy.has(`${name} ${cidr}`)) want.delete(cidr);
        continue;
      }
      if (have?.has(cidr)) continue;
      complete = false;
      // Which Node is real cannot be told: nothing is created for either (see ambiguous).
      if (hopAmbiguous.has(name)) continue;
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
    if (!route.targetNode && shared.has(canonicalAddress(route.nextHop) ?? '')) continue;
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
