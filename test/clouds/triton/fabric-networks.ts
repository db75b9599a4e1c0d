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
  /** NAPI's `allowLinklocal` (sapi_manifests/napi/template NAPI_ALLOW_LINKLOCAL; off unless set). */
  allowLinklocal = false;
  /**
   * Test hook, run on each UpdateFabricNetwork before it is applied: it may change the network
   * (another writer's update landing first) and answer with a failure, before or after the update is
   * applied (an answer lost after the change was made).
   */
  beforeUpdate?: (
    network: SimFabricNetwork,
  ) => { status: number; code: string; message: string; applied?: boolean } | undefined;

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
    const failure = this.beforeUpdate?.(network);
    if (failure && !failure.applied) throw fail(failure.status, failure.code, failure.message);
    if (input.routes !== undefined) {
      const kind = ipaddr.parseCIDR(network.subnet)[0].kind();
      network.routes = validRoutes(input.routes, kind, this.allowLinklocal, fail);
    }
    if (failure) throw fail(failure.status, failure.code, failure.message);
    return { status: 200, payload: structuredClone(network) };
  }
}

/** An address as sdc-napi lib/util/ip.js toIPAddr reads it (all digits: an address as a number). */
function toIPAddr(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  try {
    if (/^[0-9]+$/.test(text)) return ipaddr.fromByteArray(numberBytes(Number(text)));
    return ipaddr.parse(text);
  } catch {
    return null;
  }
}

function numberBytes(n: number): number[] {
  if (!Number.isSafeInteger(n) || n < 0 || n > 0xffffffff) throw new Error('not an IPv4 number');
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
}

/**
 * sdc-napi lib/util/ip.js toSubnet: "address/bits" with bits from SUBNET_MIN_IPV4/6 (8,
 * lib/util/constants.js) to 32 for either family (an IPv6 /64 is no subnet to it), and the host
 * bits masked (ip6addr.createCIDR): the key NAPI stores is the network address.
 */
function toSubnet(text: string): { kind: string; key: string } | null {
  const parts = text.split('/');
  if (parts.length !== 2) return null;
  const start = toIPAddr(parts[0] as string);
  const bits = Number(parts[1]);
  if (start === null || Number.isNaN(bits) || bits < 8 || bits > 32) return null;
  const network =
    start.kind() === 'ipv4'
      ? ipaddr.IPv4.networkAddressFromCIDR(`${start.toString()}/${bits}`)
      : ipaddr.IPv6.networkAddressFromCIDR(`${start.toString()}/${bits}`);
  return { kind: start.kind(), key: `${network.toString()}/${bits}` };
}

/**
 * A routes object as NAPI validates it on UpdateNetwork (sdc-napi lib/models/network.js
 * validateRoutes, then validateAddressFamily): each destination a subnet (toSubnet) or an address,
 * each gateway an address or, where NAPI's allowLinklocal is set, "linklocal"; a gateway of another
 * family than its destination is SUBNET_ROUTE_DST_NEXTHOP_MISMATCH, a destination of another family
 * than the network's subnet SUBNET_ROUTE_DST_MISMATCH. The stored key is the masked subnet.
 */
function validRoutes(
  value: unknown,
  subnetKind: string,
  allowLinklocal: boolean,
  fail: Fail,
): Record<string, string> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw fail(409, 'InvalidArgument', 'property "routes": must be an object');
  const routes: Record<string, string> = {};
  const invalid: string[] = [];
  const wrongFamily: string[] = [];
  for (const [destination, gateway] of Object.entries(value)) {
    const subnet = toSubnet(destination);
    const address = subnet ? null : toIPAddr(destination);
    const dst = subnet ?? (address ? { kind: address.kind(), key: address.toString() } : null);
    const linklocal = allowLinklocal && gateway === 'linklocal';
    const hop = linklocal || typeof gateway !== 'string' ? null : toIPAddr(gateway);
    const bad = [...(dst ? [] : [destination]), ...(linklocal || hop ? [] : [String(gateway)])];
    if (bad.length || !dst) {
      invalid.push(...bad);
      continue;
    }
    if (hop && hop.kind() !== dst.kind)
      throw fail(409, 'InvalidArgument', 'address family of route and next-hop address should match');
    if (dst.kind !== subnetKind) wrongFamily.push(destination);
    routes[dst.key] = linklocal ? 'linklocal' : (hop as ipaddr.IPv4 | ipaddr.IPv6).toString();
  }
  if (invalid.length)
    throw fail(
      409,
      'InvalidArgument',
      `invalid route${invalid.length === 1 ? '' : 's'}: ${invalid.join(', ')}`,
    );
  if (wrongFamily.length)
    throw fail(
      409,
      'InvalidArgument',
      `addresses used for routing should match subnet type (${subnetKind}): ${wrongFamily.join(', ')}`,
    );
  return routes;
}
