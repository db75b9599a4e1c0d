import ipaddr from 'ipaddr.js';
import { InvalidConfigError } from '../errors.js';

/**
 * A pool of load balancer addresses: CIDRs (`192.168.56.240/28`) and ranges
 * (`192.168.56.240-192.168.56.250`), IPv4 or IPv6. In an IPv4 CIDR of /30 or wider the network and
 * broadcast addresses are left out, as a LAN cannot use them.
 */
export class AddressPool {
  private constructor(
    readonly source: string,
    private readonly ranges: readonly { first: bigint; last: bigint; v6: boolean }[],
  ) {}

  /** `where` names the setting in error messages (e.g. `inventory x.yaml: loadBalancerPool`). */
  static parse(entries: readonly string[], where: string): AddressPool {
    if (entries.length === 0) throw new InvalidConfigError(`${where} is empty; give a CIDR or a range`);
    const ranges = entries.map((entry) => parseEntry(entry.trim(), where));
    return new AddressPool(entries.join(', '), ranges);
  }

  get size(): bigint {
    return this.ranges.reduce((sum, r) => sum + (r.last - r.first + 1n), 0n);
  }

  /** The address in canonical form when it is in the pool, else undefined. */
  normalise(address: string): string | undefined {
    if (!ipaddr.isValid(address)) return undefined;
    const parsed = ipaddr.process(address);
    const value = toBigInt(parsed);
    const v6 = parsed.kind() === 'ipv6';
    const inside = this.ranges.some((r) => r.v6 === v6 && value >= r.first && value <= r.last);
    return inside ? parsed.toString() : undefined;
  }

  /** The first address in pool order that `taken` does not hold. */
  firstFree(taken: (address: string) => boolean): string | undefined {
    for (const range of this.ranges) {
      for (let value = range.first; value <= range.last; value++) {
        const address = fromBigInt(value, range.v6);
        if (!taken(address)) return address;
      }
    }
    return undefined;
  }
}

function parseEntry(entry: string, where: string): { first: bigint; last: bigint; v6: boolean } {
  const bad = (why: string): never => {
    throw new InvalidConfigError(
      `${where}: ${JSON.stringify(entry)} ${why}; use a CIDR (192.168.56.240/28) or a range (192.168.56.240-192.168.56.250)`,
    );
  };
  if (entry.includes('/')) {
    if (!ipaddr.isValidCIDR(entry)) bad('is not a valid CIDR');
    const [address, prefix] = ipaddr.parseCIDR(entry);
    const v6 = address.kind() === 'ipv6';
    const bits = v6 ? 128 : 32;
    const hostBits = BigInt(bits - prefix);
    const base = (toBigInt(address) >> hostBits) << hostBits;
    let first = base;
    let last = base + (1n << hostBits) - 1n;
    if (!v6 && prefix <= 30) {
      first += 1n;
      last -= 1n;
    }
    return { first, last, v6 };
  }
  const parts = entry.split('-').map((p) => p.trim());
  if (parts.length !== 2) bad('is neither a CIDR nor a range');
  const [from = '', to = ''] = parts;
  if (!ipaddr.isValid(from) || !ipaddr.isValid(to)) bad('has an end that is not an IP address');
  const a = ipaddr.process(from);
  const b = ipaddr.process(to);
  if (a.kind() !== b.kind()) bad('mixes IPv4 and IPv6');
  const first = toBigInt(a);
  const last = toBigInt(b);
  if (last < first) bad('ends before it starts');
  return { first, last, v6: a.kind() === 'ipv6' };
}

function toBigInt(address: ipaddr.IPv4 | ipaddr.IPv6): bigint {
  return address.toByteArray().reduce((value, byte) => (value << 8n) | BigInt(byte), 0n);
}

function fromBigInt(value: bigint, v6: boolean): string {
  const length = v6 ? 16 : 4;
  const bytes = new Array<number>(length);
  for (let i = length - 1; i >= 0; i--) {
    bytes[i] = Number(value & 0xffn);
    value >>= 8n;
  }
  return ipaddr.fromByteArray(bytes).toString();
}
