import ipaddr from 'ipaddr.js';
import { InvalidConfigError, RetryableError } from '../errors.js';
import { refuseOtherName, strictAddress } from '../next-hop.js';
import { parseProviderID } from '../provider-id.js';
import type { Route, Routes, RouteTarget } from '../types.js';
import type { FabricNetwork, Machine, TritonClient } from './client.js';
import { SCHEME } from './instances.js';

/**
 * Pod routes as the static routes of the Nodes' fabric network: CloudAPI's UpdateFabricNetwork
 * (`PUT /:login/fabrics/default/vlans/:vlan_id/networks/:id`) replaces the network's `routes`
 * ("static routes for hosts on this network", destination → gateway; sdc-cloudapi docs/index.md), so
 * every machine on the network sends a Node's Pod CIDR to that Node.
 *
 * Ownership: a network's routes carry nothing but destination and gateway, so the Node's machine
 * carries it, as OpenStack's ports do: the tags `ccm-cluster` = the cluster and `ccm-route-<CIDR>` (the
 * "/" written "_") = the cluster. A route is this cluster's only when the machine holding its gateway
 * has that tag. AddMachineTags merges and DeleteMachineTag removes one tag, so no tag is ever
 * read-modified-written; the routes object is, one change at a time inside this process.
 *
 * A machine destroyed before its Node (the usual scale-down order) must not leak its route: the
 * listing asks for destroyed machines too (`tombstone`), whose record keeps its tags, and the instance
 * keeps, from one listing to the next, the routes it listed as its own. A route of this cluster whose
 * gateway no live machine of the cluster holds any more is a *blackhole*, listed so that the
 * controller deletes it as upstream deletes Blackhole routes (docs/routes.md).
 *
 * Calls: `list` is 2 (the network, the cluster's machines by tag, destroyed ones too); a missing route
 * 4 (the machine, the tags, the network read right before its update, the update); a deleted one 3.
 */

export const CLUSTER_TAG = 'ccm-cluster';

export function routeTagKey(cidr: string): string {
  return `ccm-route-${cidr.replace('/', '_')}`;
}

/** How many deleted routes are remembered (a few hundred bytes each). */
const REMOVED_KEPT = 4096;

function routeKey(destination: string, gateway: string): string {
  return `${destination} ${gateway}`;
}

/** Destroyed (kept as state `deleted` with `tombstone`) or failed: its addresses reach nothing. */
function gone(machine: Machine): boolean {
  return machine.state === 'deleted' || machine.state === 'failed';
}

export class FabricRoutes implements Routes {
  /** The last listing's live machines of this cluster, by address. */
  private machines = new Map<string, Machine>();
  /**
   * Routes listed as this cluster's (`destination gateway`), kept from one listing to the next: what
   * still proves a route is ccm's once its machine lost the address or its tombstone expired.
   */
  private owned = new Set<string>();
  /**
   * Routes this instance deleted (`destination gateway`, the latest REMOVED_KEPT): one back afterwards
   * is another writer's stale routes object put back over ccm's delete (CloudAPI has no
   * compare-and-set), so it is ccm's still, and deleted again instead of blocking its CIDR for good.
   */
  private removed = new Set<string>();
  /** Routes of this cluster whose gateway no live machine of it holds: deleted without a tag change. */
  private blackholes = new Set<string>();
  /** The last listing's network (its subnet; its routes only as a first look). */
  private network: FabricNetwork | undefined;
  private lock: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly client: TritonClient,
    private readonly vlan: number,
    private readonly networkID: string,
  ) {}

  async list(clusterID: string, signal?: AbortSignal): Promise<Route[]> {
    const network = await this.client.getFabricNetwork(this.vlan, this.networkID, signal);
    this.network = network;
    const machines = await this.client.listMachines(signal, {
      tags: { [CLUSTER_TAG]: clusterID },
      tombstone: true,
    });
    const live = new Map<string, Machine>();
    const dead = new Map<string, Machine>();
    for (const m of machines) for (const ip of m.ips ?? []) (gone(m) ? dead : live).set(ip, m);
    this.machines = live;
    const routes: Route[] = [];
    const owned = new Set<string>();
    this.blackholes = new Set();
    for (const [destination, gateway] of Object.entries(network.routes ?? {})) {
      const key = routeKey(destination, gateway);
      const tag = routeTagKey(destination);
      const holder = live.get(gateway);
      if (this.removed.has(key) && holder?.tags?.[tag] === undefined) {
        // Deleted by ccm, then brought back by a stale write of someone else's: remove it again.
        this.blackholes.add(key);
      } else if (holder) {
        // A live machine of this cluster holds the gateway: its tag alone decides.
        if (holder.tags?.[tag] !== clusterID) continue;
      } else {
        // Upstream's route controller deletes a route whose next hop is no Node's (k8s.io/cloud-provider
        // controllers/route/route_controller.go reconcile: `route.Blackhole`, deleted with the routes
        // of Nodes it no longer knows). ccm does so only for a route proven its own: the destroyed
        // machine that held the gateway carries the route's tag, or this instance listed it before.
        if (dead.get(gateway)?.tags?.[tag] !== clusterID && !this.owned.has(key)) continue;
        this.blackholes.add(key);
      }
      owned.add(key);
      routes.push({ name: destination, destinationCIDR: destination, nextHop: gateway });
    }
    this.owned = owned;
    return routes;
  }

  async create(
    clusterID: string,
    _nameHint: string,
    route: { targetNode: RouteTarget; destinationCIDR: string },
    signal?: AbortSignal,
  ): Promise<void> {
    const cidr = route.destinationCIDR;
    const machineID = machineOf(route.targetNode);
    await this.serial(async () => {
      // The last listing's network gives the subnet; the routes are read again right before the write.
      const network = this.network ?? (await this.client.getFabricNetwork(this.vlan, this.networkID, signal));
      refuseFamily(network, cidr);
      const gateway = gatewayOn(network, route.targetNode);
      // The tag goes on the machine the provider ID names; a gateway that is another machine's address
      // would make a route no listing ever proves ccm's (re-tagged every pass, left behind for good).
      const machine = await this.client.getMachine(machineID, signal);
      // Another cluster's machine (its ccm-cluster tag another cluster's id) on a shared fabric network:
      // AddMachineTags merges, so tagging it would overwrite that tag and take the machine out of the
      // other cluster's listing for good. A provider ID is the Node's creator's word: never written over.
      const owner = machine.tags?.[CLUSTER_TAG];
      if (owner !== undefined && String(owner) !== clusterID) {
        throw new InvalidConfigError(
          `Node ${route.targetNode.name}'s machine ${machineID} carries the tag ${CLUSTER_TAG}=${String(owner)}: it is another cluster's (this one is ${clusterID}); ccm neither tags nor routes to it: correct the Node's provider ID, or remove the tag if the machine left that cluster`,
        );
      }
      refuseOtherName(route.targetNode, 'machine', machineID, machine.name);
      if (!(machine.ips ?? []).includes(gateway)) {
        throw new InvalidConfigError(
          `Node ${route.targetNode.name}'s InternalIP ${gateway} is not an address of its machine ${machineID} (${(machine.ips ?? []).join(', ') || 'none'}); ccm routes a Pod CIDR only to the Node's own machine: correct the Node's addresses`,
        );
      }
      this.refuseForeign(cidr, network.routes?.[cidr], gateway);
      // The claim first: a route ccm adds is always one it can recognise afterwards.
      await this.client.addMachineTags(
        machineID,
        { [CLUSTER_TAG]: clusterID, [routeTagKey(cidr)]: clusterID },
        signal,
      );
      await this.writeRoute(cidr, gateway, signal);
      this.owned.add(routeKey(cidr, gateway));
      this.removed.delete(routeKey(cidr, gateway));
    });
  }

  async delete(clusterID: string, route: Route, signal?: AbortSignal): Promise<void> {
    const cidr = route.destinationCIDR;
    const key = routeKey(cidr, route.nextHop);
    if (this.blackholes.has(key)) {
      // No live machine to untag: as upstream's DeleteRoute for a Blackhole route, only the route goes.
      await this.serial(async () => {
        await this.writeRoute(cidr, undefined, signal, route.nextHop);
        this.owned.delete(key);
        this.blackholes.delete(key);
        this.remember(key);
      });
      return;
    }
    const machine = this.machines.get(route.nextHop);
    if (machine?.tags?.[routeTagKey(cidr)] !== clusterID) {
      throw new InvalidConfigError(
        `the route ${cidr} via ${route.nextHop} is not this cluster's (no machine with that address has the tag ${routeTagKey(cidr)}); ccm leaves it`,
      );
    }
    await this.serial(async () => {
      await this.writeRoute(cidr, undefined, signal, route.nextHop);
      this.owned.delete(key);
      this.remember(key);
      await this.client.deleteMachineTag(machine.id, routeTagKey(cidr), signal);
    });
  }

  private remember(key: string): void {
    this.removed.delete(key);
    this.removed.add(key);
    if (this.removed.size > REMOVED_KEPT) this.removed.delete(this.removed.values().next().value as string);
  }

  private refuseForeign(cidr: string, present: string | undefined, gateway: string): void {
    // Present via this very Node's gateway: a route of ccm's whose tag CloudAPI (asynchronous) does not
    // show yet, or one exactly as ccm would make it (hand-made, or another controller's), which is
    // adopted as on OpenStack: it already sends the CIDR where ccm would, and the tags make it ccm's.
    if (present !== undefined && present !== gateway) {
      throw new InvalidConfigError(
        `fabric network ${this.networkID} already routes ${cidr} via ${present}; ccm takes over no route: remove it, or give the Node another Pod CIDR`,
      );
    }
  }

  /**
   * Adds `cidr` via `gateway`, or removes it (only while it still goes via `removing`), changing no
   * other key. CloudAPI has no compare-and-set for the routes object (NAPI's updateNetwork is a Moray
   * put without etag, sdc-napi lib/models/network.js), so the window in which another writer's change
   * is lost is kept to one GET and one PUT back to back; a failed PUT is never resent as it was (its
   * body is stale by then, and it may have been applied): the network is read again and the change
   * made again only if it is still missing. Two attempts; then the pass fails and the next one retries.
   */
  private async writeRoute(
    cidr: string,
    gateway: string | undefined,
    signal?: AbortSignal,
    removing?: string,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const network = await this.client.getFabricNetwork(this.vlan, this.networkID, signal);
      const routes = { ...(network.routes ?? {}) };
      if (gateway === undefined) {
        if (routes[cidr] !== removing) return;
        delete routes[cidr];
      } else {
        this.refuseForeign(cidr, routes[cidr], gateway);
        if (routes[cidr] === gateway) return;
        routes[cidr] = gateway;
      }
      try {
        await this.client.setFabricNetworkRoutes(this.vlan, this.networkID, routes, signal);
        return;
      } catch (err) {
        if (!(err instanceof RetryableError) || attempt >= 2 || signal?.aborted) throw err;
      }
    }
  }

  /** Changes of the network's routes, one at a time (each replaces the whole object). */
  private serial(fn: () => Promise<void>): Promise<void> {
    const run = this.lock.then(fn);
    this.lock = run.catch(() => undefined);
    return run;
  }
}

/**
 * A fabric network routes only its own family: NAPI refuses a destination of another family than the
 * network's subnet (sdc-napi lib/models/network.js validateAddressFamily, SUBNET_ROUTE_DST_MISMATCH),
 * and any prefix longer than /32 (lib/util/ip.js toSubnet), so an IPv6 Pod CIDR can never be routed
 * on an IPv4 fabric network. Said before any tag is written, so a dual-stack Node's IPv6 CIDR costs
 * no cloud write, only the one line of its event.
 */
function refuseFamily(network: FabricNetwork, cidr: string): void {
  const kind = ipaddr.parseCIDR(cidr)[0].kind();
  const subnet = network.subnet && ipaddr.isValidCIDR(network.subnet) ? network.subnet : undefined;
  const networkKind = subnet ? ipaddr.parseCIDR(subnet)[0].kind() : 'ipv4';
  if (kind !== networkKind) {
    throw new InvalidConfigError(
      `Triton fabric network routes are ${networkKind === 'ipv4' ? 'IPv4' : 'IPv6'} only (NAPI refuses a route of another family than the network's subnet ${network.subnet ?? ''}): ${cidr} is not routed in the cloud; route it with the CNI (an overlay) instead`,
    );
  }
}

/**
 * The Node's InternalIP inside the fabric network's subnet: the route's gateway must be reachable on
 * that network, and NAPI does not check it (lib/models/network.js validateRoutes checks only the
 * family). Triton lists a machine's primary IP first, which may be on another network, so the first
 * InternalIP is not enough. A Node with none there is refused in one line (NoRouteCreated).
 */
function gatewayOn(network: FabricNetwork, target: RouteTarget): string {
  const subnet =
    network.subnet && ipaddr.isValidCIDR(network.subnet) ? ipaddr.parseCIDR(network.subnet) : undefined;
  const inside = target.addresses.find((a) => {
    const ip = a.type === 'InternalIP' ? strictAddress(a.address) : undefined;
    return !!ip && !!subnet && ip.kind() === subnet[0].kind() && ip.match(subnet);
  });
  if (!inside) {
    throw new InvalidConfigError(
      `Node ${target.name} has no InternalIP inside fabric network ${network.id}'s subnet ${network.subnet ?? '(none listed)'} (it has ${target.addresses.map((a) => a.address).join(', ') || 'none'}); a route's gateway must be on that network: attach the Node's machine to it`,
    );
  }
  return inside.address;
}

function machineOf(target: RouteTarget): string {
  const parsed = target.providerID ? parseProviderID(target.providerID) : undefined;
  if (parsed?.scheme !== SCHEME) {
    throw new InvalidConfigError(
      `Node ${target.name} has no Triton provider ID (${target.providerID || 'none'}); the cloud-node controller sets it`,
    );
  }
  return parsed.id;
}
