import ipaddr from 'ipaddr.js';
import { InvalidConfigError, RetryableError } from '../errors.js';
import { nextHopFor } from '../next-hop.js';
import type { Route, Routes, RouteTarget } from '../types.js';

/**
 * Pod routes in the host's own routing table: a Vagrant lab's Pod network is routed by the host the
 * VMs run on. A route is `ip route replace <podCIDR> via <Node InternalIP> table <table> proto static
 * realm <realm>`, the realm (1–65535) derived from the cluster identity: the routes of this cluster are
 * the static routes of ccm's table with this realm (IPv6: this metric, see isOurs), and no other route
 * of the table, the host's own or another cluster's, is listed, changed or deleted.
 *
 * iproute2's `ip -json` through execa: the one npm netlink binding (`netlink` 0.3.0, native) is not
 * maintained, and `ip` is on every Linux host. Root (CAP_NET_ADMIN) is needed to change routes.
 */

export type IpRunner = (args: string[], signal?: AbortSignal) => Promise<string>;

interface IpRoute {
  dst: string;
  gateway?: string;
  dev?: string;
  flow?: { to?: string };
  metric?: number;
}

/**
 * Linux keeps a realm on IPv4 routes only (`RTA_FLOW`, the realm, is an IPv4 FIB attribute; the IPv6
 * FIB has none, so `ip -6 route replace … realm N` stores no realm, as the dual-stack test shows). An IPv6 route of ccm's carries the realm as its metric instead: IPv6 routes to one
 * destination with different metrics are distinct routes, so `replace` and `del` with that metric touch
 * only ccm's.
 */
function isOurs(r: IpRoute, family: 'ipv4' | 'ipv6', realm: number): boolean {
  return family === 'ipv4' ? r.flow?.to === String(realm) : r.metric === realm;
}

function marker(family: 'ipv4' | 'ipv6', realm: number): string[] {
  return family === 'ipv4' ? ['realm', String(realm)] : ['metric', String(realm)];
}

/** The realm of a cluster: FNV-1a of its identity, folded into 1…65535 (0 is "no realm"). */
export function realmOf(clusterID: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(clusterID)) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return 1 + (h % 65535);
}

/** Runs `ip` (iproute2) with execa; a failure is one line with ip's own message. */
export const runIp: IpRunner = async (args, signal) => {
  const { execa } = await import('execa');
  const result = await execa('ip', args, {
    stdin: 'ignore',
    reject: false,
    timeout: 10_000,
    ...(signal ? { cancelSignal: signal } : {}),
  });
  if (result.exitCode === 0) return String(result.stdout);
  if (result.exitCode === undefined && (result as { code?: string }).code === 'ENOENT')
    throw new InvalidConfigError(
      'the ip command (iproute2) is not installed; install iproute2 for Cloudlycke routes',
    );
  const why = String(result.stderr).trim().split('\n')[0] || `exit ${result.exitCode}`;
  if (/Operation not permitted/.test(why))
    throw new InvalidConfigError(`ip ${args.join(' ')}: ${why}; Cloudlycke routes need root (CAP_NET_ADMIN)`);
  throw new RetryableError(`ip ${args.join(' ')}: ${why}`);
};

/**
 * The priority of the rule that makes the kernel look up a table of ccm's: just before main's (32766),
 * so ccm's table is consulted first and a destination it has no route for falls through to main.
 */
const RULE_PRIORITY = '32765';

/** A table that holds no route yet does not exist for the kernel: listing it is listing nothing. */
const NO_TABLE = /FIB table does not exist/;

export class HostRoutes implements Routes {
  constructor(
    private readonly table: string,
    private readonly ip: IpRunner = runIp,
  ) {
    if (!/^(main|default|local|\d+|[A-Za-z][\w.-]*)$/.test(table))
      throw new InvalidConfigError(
        `--cloudlycke-route-table: "${table}" is not a routing table name or number`,
      );
    if (table === 'local')
      throw new InvalidConfigError(
        "--cloudlycke-route-table: the local table is the kernel's; use main or a table of ccm's",
      );
  }

  private async show(args: string[], signal?: AbortSignal): Promise<IpRoute[]> {
    const text = await this.ip(args, signal).catch((err: unknown) => {
      if (err instanceof Error && NO_TABLE.test(err.message)) return '';
      throw err;
    });
    return (text.trim() ? JSON.parse(text) : []) as IpRoute[];
  }

  /**
   * Whether a packet can reach the table: main and default are looked up by the kernel's own rules;
   * any other table only through an `ip rule` (without one, its routes exist but nothing uses them).
   */
  private async looksUp(flag: string, signal?: AbortSignal): Promise<boolean> {
    if (this.table === 'main' || this.table === 'default') return true;
    const rules = JSON.parse((await this.ip([flag, '-json', 'rule', 'show'], signal)).trim() || '[]') as {
      table?: string | number;
    }[];
    return rules.some((r) => String(r.table) === this.table);
  }

  async list(clusterID: string, signal?: AbortSignal): Promise<Route[]> {
    const realm = realmOf(clusterID);
    const routes: Route[] = [];
    for (const family of ['-4', '-6']) {
      // Routes of a table no rule looks up are made again (create adds the rule), not counted as done.
      const unused = !(await this.looksUp(family, signal));
      const listed = await this.show(
        [family, '-json', 'route', 'show', 'table', this.table, 'proto', 'static'],
        signal,
      );
      for (const r of listed) {
        if (!isOurs(r, family === '-4' ? 'ipv4' : 'ipv6', realm) || !r.gateway) continue;
        const cidr = r.dst.includes('/') ? r.dst : `${r.dst}/${family === '-4' ? 32 : 128}`;
        routes.push({
          name: cidr,
          destinationCIDR: cidr,
          nextHop: r.gateway,
          ...(unused ? { incomplete: true } : {}),
        });
      }
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
    const family = ipaddr.parseCIDR(cidr)[0].kind();
    const hop = { address: nextHopFor(route.targetNode, cidr) };
    // `replace` would take over a route to the same destination that is not ours: refuse it instead.
    const flag = family === 'ipv4' ? '-4' : '-6';
    const existing = await this.show(
      [flag, '-json', 'route', 'show', 'table', this.table, 'exact', cidr],
      signal,
    );
    const realm = realmOf(clusterID);
    const foreign = existing.find((r) => !isOurs(r, family, realm));
    if (foreign)
      throw new InvalidConfigError(
        `table ${this.table} already has a route to ${cidr}${foreign.gateway ? ` via ${foreign.gateway}` : ''} that is not this cluster's; remove it or give the Node another Pod CIDR`,
      );
    if (!(await this.looksUp(flag, signal)))
      await this.ip([flag, 'rule', 'add', 'lookup', this.table, 'priority', RULE_PRIORITY], signal);
    await this.ip(
      [
        flag,
        'route',
        'replace',
        cidr,
        'via',
        hop.address,
        'table',
        this.table,
        'proto',
        'static',
        ...marker(family, realm),
      ],
      signal,
    );
  }

  async delete(clusterID: string, route: Route, signal?: AbortSignal): Promise<void> {
    const family = ipaddr.parseCIDR(route.destinationCIDR)[0].kind();
    const flag = family === 'ipv4' ? '-4' : '-6';
    // Deleting by destination, gateway, protocol and realm: the kernel removes only that route.
    await this.ip(
      [
        flag,
        'route',
        'del',
        route.destinationCIDR,
        'via',
        route.nextHop,
        'table',
        this.table,
        'proto',
        'static',
        ...marker(family, realmOf(clusterID)),
      ],
      signal,
    ).catch((err: unknown) => {
      // Already gone: "RTNETLINK answers: No such process".
      if (err instanceof RetryableError && /No such process/.test(err.message)) return;
      throw err;
    });
  }
}
