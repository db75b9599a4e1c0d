import { InvalidConfigError } from '../errors.js';
import { nextHopFor } from '../next-hop.js';
import { parseProviderID } from '../provider-id.js';
import type { Route, Routes, RouteTarget } from '../types.js';
import type { Machine, TritonClient } from './client.js';
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
 * Calls: `list` is 2 (the network, the cluster's machines by tag); a missing route 3 (the tags, the
 * network read, its update); a deleted one 3.
 */

export const CLUSTER_TAG = 'ccm-cluster';

export function routeTagKey(cidr: string): string {
  return `ccm-route-${cidr.replace('/', '_')}`;
}

export class FabricRoutes implements Routes {
  /** The last listing's machines of this cluster, by address. */
  private machines = new Map<string, Machine>();
  private lock: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly client: TritonClient,
    private readonly vlan: number,
    private readonly networkID: string,
  ) {}

  async list(clusterID: string, signal?: AbortSignal): Promise<Route[]> {
    const network = await this.client.getFabricNetwork(this.vlan, this.networkID, signal);
    const machines = await this.client.listMachines(signal, { tags: { [CLUSTER_TAG]: clusterID } });
    this.machines = new Map();
    for (const m of machines) for (const ip of m.ips ?? []) this.machines.set(ip, m);
    const routes: Route[] = [];
    for (const [destination, gateway] of Object.entries(network.routes ?? {})) {
      if (this.machines.get(gateway)?.tags?.[routeTagKey(destination)] !== clusterID) continue;
      routes.push({ name: destination, destinationCIDR: destination, nextHop: gateway });
    }
    return routes;
  }

  async create(
    clusterID: string,
    _nameHint: string,
    route: { targetNode: RouteTarget; destinationCIDR: string },
    signal?: AbortSignal,
  ): Promise<void> {
    const cidr = route.destinationCIDR;
    const gateway = nextHopFor(route.targetNode, cidr);
    const machineID = machineOf(route.targetNode);
    await this.serial(async () => {
      const routes = {
        ...((await this.client.getFabricNetwork(this.vlan, this.networkID, signal)).routes ?? {}),
      };
      const present = routes[cidr];
      // Present via this very Node: a route of ccm's whose tag CloudAPI (asynchronous) does not show yet.
      if (present !== undefined && present !== gateway) {
        throw new InvalidConfigError(
          `fabric network ${this.networkID} already routes ${cidr} via ${present}; ccm takes over no route: remove it, or give the Node another Pod CIDR`,
        );
      }
      // The claim first: a route ccm adds is always one it can recognise afterwards.
      await this.client.addMachineTags(
        machineID,
        { [CLUSTER_TAG]: clusterID, [routeTagKey(cidr)]: clusterID },
        signal,
      );
      if (present === undefined) {
        routes[cidr] = gateway;
        await this.client.setFabricNetworkRoutes(this.vlan, this.networkID, routes, signal);
      }
    });
  }

  async delete(clusterID: string, route: Route, signal?: AbortSignal): Promise<void> {
    const cidr = route.destinationCIDR;
    const machine = this.machines.get(route.nextHop);
    if (machine?.tags?.[routeTagKey(cidr)] !== clusterID) {
      throw new InvalidConfigError(
        `the route ${cidr} via ${route.nextHop} is not this cluster's (no machine with that address has the tag ${routeTagKey(cidr)}); ccm leaves it`,
      );
    }
    await this.serial(async () => {
      const routes = {
        ...((await this.client.getFabricNetwork(this.vlan, this.networkID, signal)).routes ?? {}),
      };
      if (routes[cidr] === route.nextHop) {
        delete routes[cidr];
        await this.client.setFabricNetworkRoutes(this.vlan, this.networkID, routes, signal);
      }
      await this.client.deleteMachineTag(machine.id, routeTagKey(cidr), signal);
    });
  }

  /** Changes of the network's routes, one at a time (each replaces the whole object). */
  private serial(fn: () => Promise<void>): Promise<void> {
    const run = this.lock.then(fn);
    this.lock = run.catch(() => undefined);
    return run;
  }
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
