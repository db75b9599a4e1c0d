import ipaddr from 'ipaddr.js';
import { InvalidConfigError } from './errors.js';
import type { RouteTarget } from './types.js';

/**
 * The next hop of a Pod route: the Node's InternalIP of the CIDR's family (the official OpenStack
 * controller's getAddrByNodeName); a Node without one is a one-line error naming it.
 */
export function nextHopFor(target: RouteTarget, cidr: string): string {
  const family = ipaddr.parseCIDR(cidr)[0].kind();
  const hop = target.addresses.find(
    (a) => a.type === 'InternalIP' && ipaddr.isValid(a.address) && ipaddr.parse(a.address).kind() === family,
  );
  if (!hop) {
    throw new InvalidConfigError(
      `Node ${target.name} has no ${family === 'ipv4' ? 'IPv4' : 'IPv6'} InternalIP to route ${cidr} to; wait for the cloud-node controller to set its addresses`,
    );
  }
  return hop.address;
}
