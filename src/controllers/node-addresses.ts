import { isIP } from 'node:net';
import type { SlimNode } from '../kube/slim-node.js';
import { ANNOTATION_PROVIDED_NODE_IP } from '../kube/well-known.js';
import type { NodeAddress } from '../providers/types.js';

/**
 * Canonical text of an IP, so `2001:db8::1` and `2001:0db8:0::1` compare equal, and an IPv4-mapped
 * IPv6 address equals its IPv4 form (as Go's net.IP.Equal has it). Zoned addresses are not node IPs.
 */
export function canonicalIP(ip: string): string | undefined {
  const text = ip.trim();
  const family = isIP(text);
  if (family === 4) return text;
  if (family !== 6 || text.includes('%')) return undefined;
  const canonical = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (!mapped) return canonical;
  const [hi, lo] = [Number.parseInt(mapped[1] as string, 16), Number.parseInt(mapped[2] as string, 16)];
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** The kubelet's `--node-ip` as recorded on the Node: undefined when absent, an error text when malformed. */
export function providedNodeIPs(node: SlimNode): string[] | undefined | { error: string } {
  const raw = node.metadata?.annotations?.[ANNOTATION_PROVIDED_NODE_IP];
  if (raw === undefined || raw.trim() === '') return undefined;
  const parts = raw.split(',').map((p) => p.trim());
  const ips = parts.map(canonicalIP);
  const dualStack = parts.length === 2 && isIP(ips[0] ?? '') !== isIP(ips[1] ?? '');
  if (parts.length > 2 || ips.some((ip) => ip === undefined) || (parts.length === 2 && !dualStack)) {
    return { error: `annotation ${ANNOTATION_PROVIDED_NODE_IP}="${raw}" is not one IP or a dual-stack pair` };
  }
  return ips as string[];
}

export class AddressMismatchError extends Error {}

/**
 * The addresses a Node should carry, per the reference cloud node controller:
 * - the cloud's addresses, plus the kubelet's Hostname address when the cloud has none;
 * - with a provided node IP, every cloud address equal to it goes first and all other addresses of
 *   the same type(s) are dropped; a provided IP the cloud does not have is an error.
 * Returns undefined when the cloud reported no addresses (the Node is left as it is).
 */
export function desiredAddresses(node: SlimNode, cloud: readonly NodeAddress[]): NodeAddress[] | undefined {
  if (cloud.length === 0) return undefined;
  let addresses: NodeAddress[] = cloud.map((a) => ({ type: a.type, address: a.address }));
  if (!addresses.some((a) => a.type === 'Hostname')) {
    for (const existing of node.status?.addresses ?? []) {
      if (existing.type === 'Hostname') addresses.push({ type: 'Hostname', address: existing.address });
    }
  }
  const provided = providedNodeIPs(node);
  if (provided && 'error' in provided) throw new AddressMismatchError(provided.error);
  if (provided) addresses = enforceProvidedIPs(provided, addresses);
  return addresses;
}

function enforceProvidedIPs(ips: string[], addresses: NodeAddress[]): NodeAddress[] {
  const first: NodeAddress[] = [];
  const enforcedTypes = new Set<string>();
  for (const ip of ips) {
    const matching = addresses.filter((a) => canonicalIP(a.address) === ip);
    if (matching.length === 0) {
      const known = addresses.filter((a) => a.type !== 'Hostname').map((a) => a.address);
      throw new AddressMismatchError(
        `provided node IP ${ip} (kubelet --node-ip) is not an address of the instance (${known.join(', ') || 'none'}); fix --node-ip on the kubelet`,
      );
    }
    for (const a of matching) {
      first.push(a);
      enforcedTypes.add(a.type);
    }
  }
  return [...first, ...addresses.filter((a) => !enforcedTypes.has(a.type))];
}

export function sameAddresses(
  a: readonly { type: string; address: string }[],
  b: readonly NodeAddress[],
): boolean {
  return a.length === b.length && a.every((x, i) => x.type === b[i]?.type && x.address === b[i]?.address);
}
