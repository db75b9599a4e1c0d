import ipaddr from 'ipaddr.js';
import { InvalidConfigError } from './errors.js';
import type { RouteTarget } from './types.js';

/**
 * An address read one way only, or undefined. A Node's addresses and podCIDRs are free text to
 * kube-apiserver (at least in stored objects), and the readers disagree on the odd forms: ipaddr.js
 * reads "192.168.56" as 192.168.0.56 and "010" as octal, iproute2 reads "192.168.56" as 192.168.56.0
 * and "010" as octal too, Go reads "010" as decimal. Only four decimal parts without leading zeros, or
 * an IPv6 address without a zone (and any dotted tail in that form), mean the same to all of them.
 */
export function strictAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return ipaddr.IPv4.parse(text);
  if (text.includes('%') || !ipaddr.IPv6.isValid(text)) return undefined;
  const tail = text.slice(text.lastIndexOf(':') + 1);
  if (tail.includes('.') && !ipaddr.IPv4.isValidFourPartDecimal(tail)) return undefined;
  return ipaddr.IPv6.parse(text);
}

/** A CIDR read one way only (see strictAddress; the prefix length decimal without a leading zero). */
export function strictCIDR(text: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | undefined {
  const match = /^([^/]+)\/(0|[1-9]\d{0,2})$/.exec(text);
  const addr = match && strictAddress(match[1] as string);
  if (!addr) return undefined;
  const bits = Number(match[2]);
  return bits <= (addr.kind() === 'ipv4' ? 32 : 128) ? [addr, bits] : undefined;
}

/**
 * The next hop of a Pod route: the Node's InternalIP of the CIDR's family (the official OpenStack
 * controller's getAddrByNodeName), in its canonical text; a Node without one is a one-line error
 * naming it. An InternalIP in an odd form ("192.168.56") is no next hop: the cloud would route via
 * another address than the one ccm reads, and find no Node owning it on the next pass.
 */
export function nextHopFor(target: RouteTarget, cidr: string): string {
  const family = ipaddr.parseCIDR(cidr)[0].kind();
  for (const a of target.addresses) {
    if (a.type !== 'InternalIP') continue;
    const hop = strictAddress(a.address);
    if (hop?.kind() === family) return hop.toString();
  }
  throw new InvalidConfigError(
    `Node ${target.name} has no ${family === 'ipv4' ? 'IPv4' : 'IPv6'} InternalIP to route ${cidr} to (in four decimal parts, or IPv6); wait for the cloud-node controller to set its addresses`,
  );
}

/**
 * Refuses a route to an instance (server, machine) whose name is not the Node's. A Node's provider ID
 * is whatever its creator wrote, so it proves nothing by itself: a hostile Node could name any VM of
 * the project. The name does bind: the official OpenStack controller finds a Node's server by the
 * Node's name (cloud-provider-openstack pkg/openstack/instances.go getServerByName, `^name$`), and with
 * the NodeRestriction admission plugin a kubelet can create only the Node of its own name. Compared
 * case-insensitively, as ccm's InstanceIndex does: the kubelet lowercases its hostname, clouds keep case.
 */
export function refuseOtherName(
  target: RouteTarget,
  what: 'server' | 'machine',
  id: string,
  name: string | undefined,
): void {
  if (name !== undefined && name.toLowerCase() === target.name.toLowerCase()) return;
  throw new InvalidConfigError(
    `Node ${target.name}'s provider ID names ${what} ${id}, whose name is ${name ?? '(none)'}, not ${target.name}; ccm routes a Pod CIDR only to the ${what} of the Node's own name (a provider ID is the word of whoever created the Node): name the ${what} as the Node, or correct the Node's provider ID`,
  );
}
