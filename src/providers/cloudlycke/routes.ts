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
/** iproute2's answer to a table name none of its rt_tables files holds. */
const UNKNOWN_TABLE = /table id value is invalid/;
/** `ip rule add` of a rule the kernel already has, identical in every attribute (another process's). */
const RULE_EXISTS = /File exists/;

/**
 * The kernel's reserved table ids (linux/rtnetlink.h `rt_class_t`): iproute2 prints 254 as `main` and
 * 253 as `default`, so a number given for one of them is that table, looked up by the kernel's own rules.
 */
const KERNEL_LOOKS_UP = new Set(['main', 'default', '254', '253']);
const MAX_TABLE_ID = 0xffff_ffff;

/**
 * A rule that sends every packet to its table before main's rule (32766) does: `from all lookup T`
 * with no other selector (a `from 10.0.0.0/8`, `fwmark`, `iif` or `not` rule leaves other packets to
 * main), at ccm's priority or before. A rule after main's would see only what main has no route for.
 */
function forEveryPacketBeforeMain(rule: Record<string, unknown>): boolean {
  const selectorFree = Object.keys(rule).every((k) => ['priority', 'src', 'table', 'protocol'].includes(k));
  return selectorFree && rule.src === 'all' && Number(rule.priority) <= Number(RULE_PRIORITY);
}

export class HostRoutes implements Routes {
  /** The rule check in flight per family: concurrent creates share it, so one `ip rule add` at most. */
  private readonly ruleInFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly table: string,
    private readonly ip: IpRunner = runIp,
  ) {
    // No leading zero: iproute2 would read 0254 as octal, another table than the 254 it looks like.
    if (!/^(main|default|local|[1-9]\d*|[A-Za-z][\w.-]*)$/.test(table))
      throw new InvalidConfigError(
        `--cloudlycke-route-table: "${table}" is not a routing table name or number`,
      );
    if (table === 'local' || table === '255')
      throw new InvalidConfigError(
        "--cloudlycke-route-table: the local table (255) is the kernel's; use main or a table of ccm's",
      );
    if (/^\d+$/.test(table) && Number(table) > MAX_TABLE_ID)
      throw new InvalidConfigError(
        `--cloudlycke-route-table: ${table} is not a table number (1 to ${MAX_TABLE_ID})`,
      );
  }

  /** Runs `ip`; a table name iproute2 does not know is a configuration error, not a retry. */
  private async run(args: string[], signal?: AbortSignal): Promise<string> {
    try {
      return await this.ip(args, signal);
    } catch (err) {
      if (err instanceof Error && UNKNOWN_TABLE.test(err.message))
        throw new InvalidConfigError(
          `--cloudlycke-route-table: iproute2 knows no table named "${this.table}" (rt_tables); give its number, or name it in /etc/iproute2/rt_tables.d/<file>.conf`,
        );
      throw err;
    }
  }

  private async show(args: string[], signal?: AbortSignal): Promise<IpRoute[]> {
    const text = await this.run(args, signal).catch((err: unknown) => {
      if (err instanceof Error && NO_TABLE.test(err.message)) return '';
      throw err;
    });
    return (text.trim() ? JSON.parse(text) : []) as IpRoute[];
  }

  /**
   * Whether a packet can reach the table: main and default are looked up by the kernel's own rules;
   * any other table only through an `ip rule` (without one, its routes exist but nothing uses them).
   * `ip rule show table X` lets iproute2 resolve X, a name or a number, and the kernel compare ids:
   * the printed table is a name wherever rt_tables has one, so comparing text could not tell 100
   * from its name.
   */
  private async looksUp(flag: string, signal?: AbortSignal): Promise<boolean> {
    if (KERNEL_LOOKS_UP.has(this.table)) return true;
    const text = await this.run([flag, '-json', 'rule', 'show', 'table', this.table], signal);
    return (JSON.parse(text.trim() || '[]') as Record<string, unknown>[]).some(forEveryPacketBeforeMain);
  }

  /**
   * Adds the rule that looks up the table unless one does. Idempotent: a rule another process added
   * in between is "File exists", which is the rule wanted. The check is shared by the creates in
   * flight, so they do not each add it (all but one would fail with "File exists", and a kernel that
   * does not check rules for duplicates would keep them all).
   */
  private ensureLookedUp(flag: string, signal?: AbortSignal): Promise<void> {
    let pending = this.ruleInFlight.get(flag);
    if (!pending) {
      pending = (async () => {
        if (await this.looksUp(flag, signal)) return;
        await this.run([flag, 'rule', 'add', 'lookup', this.table, 'priority', RULE_PRIORITY], signal).catch(
          (err: unknown) => {
            if (!(err instanceof Error && RULE_EXISTS.test(err.message))) throw err;
          },
        );
      })().finally(() => this.ruleInFlight.delete(flag));
      this.ruleInFlight.set(flag, pending);
    }
    return pending;
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
    await this.ensureLookedUp(flag, signal);
    await this.run(
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
    await this.run(
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
