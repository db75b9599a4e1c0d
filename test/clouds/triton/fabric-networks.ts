/**
 * CloudAPI's fabric networks, for the route controller: GetFabricNetwork and UpdateFabricNetwork
 * (`/:login/fabrics/default/vlans/:vlan_id/networks/:id`), from sdc-cloudapi docs/index.md (their
 * inputs and the network object, whose `routes` maps a destination IP or CIDR to a gateway IP) and
 * lib/endpoints/networks.js (the route names, `id` refused in the body, the answer: the network).
 */
import { randomUUID } from 'node:crypto';
import ipaddr from 'ipaddr.js';

export interface SimFabricNetwork {
  id: string;
  name: string;
  vlan_id: number;
  subnet: string;
  provision_start_ip: string;
  provision_end_ip: string;
  gateway: string;
  resolvers: string[];
  routes: Record<string, string>;
  internet_nat: boolean;
}

type Fail = (status: number, code: string, message: string) => Error;

/** The UpdateFabricNetwork inputs docs/index.md lists; anything else is refused. */
const UPDATABLE = ['name', 'description', 'provision_start_ip', 'provision_end_ip', 'resolvers', 'routes'];

export class FabricNetworks {
  readonly networks = new Map<string, SimFabricNetwork>();

  add(spec: { vlan: number; subnet: string; routes?: Record<string, string> }): SimFabricNetwork {
    const [base] = ipaddr.parseCIDR(spec.subnet);
    const network: SimFabricNetwork = {
      id: randomUUID(),
      name: 'k8s-nodes',
      vlan_id: spec.vlan,
      subnet: spec.subnet,
      provision_start_ip: base.toString(),
      provision_end_ip: base.toString(),
      gateway: base.toString(),
      resolvers: [],
      routes: { ...(spec.routes ?? {}) },
      internet_nat: true,
    };
    this.networks.set(network.id, network);
    return network;
  }

  handle(
    method: string,
    vlan: number,
    id: string,
    body: string,
    authorize: (action: string) => void,
    fail: Fail,
  ): { status: number; payload?: unknown } {
    const network = this.networks.get(id);
    if (method === 'GET') authorize('getfabricnetwork');
    else if (method === 'PUT') authorize('updatefabricnetwork');
    else throw fail(405, 'BadMethod', `${method} is not allowed`);
    if (!network || network.vlan_id !== vlan) throw fail(404, 'ResourceNotFound', 'network not found');
    if (method === 'GET') return { status: 200, payload: structuredClone(network) };
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(body || '{}') as Record<string, unknown>;
    } catch {
      throw fail(400, 'InvalidContent', 'Invalid JSON');
    }
    // lib/endpoints/networks.js updateFabricNetwork: 'property "id": cannot be set'
    if (input.id !== undefined) throw fail(409, 'InvalidArgument', 'property "id": cannot be set');
    for (const key of Object.keys(input)) {
      if (!UPDATABLE.includes(key)) throw fail(409, 'InvalidArgument', `property "${key}": unknown property`);
    }
    if (input.routes !== undefined) network.routes = validRoutes(input.routes, fail);
    return { status: 200, payload: structuredClone(network) };
  }
}

/** A routes object: destination (IP or CIDR) → gateway IP, as docs/index.md's examples show. */
function validRoutes(value: unknown, fail: Fail): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw fail(409, 'InvalidArgument', 'property "routes": must be an object');
  const routes: Record<string, string> = {};
  for (const [destination, gateway] of Object.entries(value)) {
    const isCIDR = (() => {
      try {
        ipaddr.parseCIDR(destination);
        return true;
      } catch {
        return false;
      }
    })();
    if (!(isCIDR || ipaddr.isValid(destination)) || typeof gateway !== 'string' || !ipaddr.isValid(gateway))
      throw fail(
        409,
        'InvalidArgument',
        `property "routes": invalid route ${destination} → ${String(gateway)}`,
      );
    routes[destination] = gateway;
  }
  return routes;
}
