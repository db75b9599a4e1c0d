import ipaddr from 'ipaddr.js';
import { InvalidConfigError, RetryableError } from '../errors.js';
import { nextHopFor, strictAddress, strictCIDR } from '../next-hop.js';
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
/**
 * `ip rule add` of a rule the kernel counts as existing. The kernel compares only the selectors the
 * new rule sets (fib4_rule_compare): a rule at the same priority with one more (a `from`) is "File
 * exists" too, so ccm looks again for its own.
 */
const RULE_EXISTS = /File exists/;

const MAX_TABLE_ID = 0xffff_ffff;
/**
 * Tables no Pod route may go to (linux/rtnetlink.h `rt_class_t`): 0 (`unspec`, which `ip route show`
 * reads as every table, and where a route added lands in main), 253 (`default`, looked up by rule 32767
 * after main, whose own default route takes every Pod packet first) and 255 (`local`, the kernel's).
 */
const RESERVED_TABLES: Record<string, string> = {
  '0': '0 (unspec) is no table: a route there lands in main, and listing it lists every table',
  unspec: '0 (unspec) is no table: a route there lands in main, and listing it lists every table',
  all: 'all is no table but every table',
  '253': 'the default table (253) is looked up after main, whose default route takes every Pod packet first',
  default:
    'the default table (253) is looked up after main, whose default route takes every Pod packet first',
  '255': "the local table (255) is the kernel's",
  local: "the local table (255) is the kernel's",
};

/** `main` is looked up by the kernel's own rule (32766); any other table only through an `ip rule`. */
const isMain = (table: string) => table === 'main' || table === '254';

/**
 * ccm's rule for one cluster CIDR, as `ip -json rule show` prints it: `to <cidr> lookup <table>` at
 * ccm's priority and no other selector, or undefined. Only Pod traffic reaches the table: a table
 * another program also uses (a VPN's default route, reached by its own fwmark rule) is not put in
 * front of the host's own traffic.
 */
function ruleDestination(rule: Record<string, unknown>): string | undefined {
  const only = Object.keys(rule).every((k) => ['priority', 'src', 'dst', 'dstlen', 'table'].includes(k));
  if (!only || rule.src !== 'all' || String(rule.priority) !== RULE_PRIORITY) return undefined;
  const dst = typeof rule.dst === 'string' ? strictAddress(rule.dst) : undefined;
  return dst && typeof rule.dstlen === 'number' ? `${dst.toString()}/${rule.dstlen}` : undefined;
}

/** A CIDR as the kernel keeps a rule's destination: its host bits cleared. */
function networkOf([addr, bits]: [ipaddr.IPv4 | ipaddr.IPv6, number]): string {
  const bytes = addr
    .toByteArray()
    .map((b, i) => b & (0xff << (8 - Math.max(0, Math.min(8, bits - i * 8)))) & 0xff);
  return `${ipaddr.fromByteArray(bytes).toString()}/${bits}`;
}

/** Whether `cidr` lies inside `range` (both canonical CIDRs of one family). */
function within(cidr: string, range: string): boolean {
  const inner = strictCIDR(cidr);
  const outer = strictCIDR(range);
  return (
    !!inner && !!outer && inner[0].kind() === outer[0].kind() && inner[1] >= outer[1] && inner[0].match(outer)
  );
}

export class HostRoutes implements Routes {
  /** The rule check in flight per family and CIDR: concurrent creates share it, so one `ip rule add` at most. */
  private readonly ruleInFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly table: string,
    private readonly ip: IpRunner = runIp,
  ) {
    const reserved = RESERVED_TABLES[table];
    if (reserved)
      throw new InvalidConfigError(`--cloudlycke-route-table: ${reserved}; use main or a table of ccm's`);
    // No leading zero: iproute2 would read 0254 as octal, another table than the 254 it looks like.
    if (!/^(main|[1-9]\d*|[A-Za-z][\w.-]*)$/.test(table))
      throw new InvalidConfigError(
        `--cloudlycke-route-table: expected a routing table name or number (1 to ${MAX_TABLE_ID}), got ${JSON.stringify(table)}`,
      );
    if (/^\d+$/.test(table) && Number(table) > MAX_TABLE_ID)
      throw new InvalidConfigError(
        `--cloudlycke-route-table: expected a routing table name or number (1 to ${MAX_TABLE_ID}), got ${JSON.stringify(table)}`,
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
   * The cluster CIDRs whose Pod traffic reaches the table: main is looked up by the kernel's own rule
   * (undefined: every destination); any other table only through ccm's `ip rule` (without one, its
   * routes exist but nothing uses them). `ip -N rule show table X` lets iproute2 resolve X, a name or
   * a number, the kernel compare ids, and prints ids: a name iproute2 resolves to a reserved table
   * shows that table's rules (and unspec, 0, every rule), and is refused.
   */
  private async ruleDestinations(flag: string, signal?: AbortSignal): Promise<string[] | undefined> {
    if (isMain(this.table)) return undefined;
    const text = await this.run([flag, '-N', '-json', 'rule', 'show', 'table', this.table], signal);
    const rules = JSON.parse(text.trim() || '[]') as Record<string, unknown>[];
    const reserved = rules.find((r) => RESERVED_TABLES[String(r.table)]);
    if (reserved)
      throw new InvalidConfigError(
        `--cloudlycke-route-table: iproute2 reads "${this.table}" as table ${String(reserved.table)}: ${RESERVED_TABLES[String(reserved.table)]}; use main or a table of ccm's`,
      );
    return rules.flatMap((r) => ruleDestination(r) ?? []);
  }

  /**
   * Adds ccm's rule for `cidr` (a cluster CIDR) unless it is there. Idempotent: the rule another
   * process added in between is "File exists", which is the rule wanted once seen. The check is shared
   * by the creates in flight, so they do not each add it (all but one would fail with "File exists",
   * and a kernel that does not check rules for duplicates would keep them all).
   */
  private ensureLookedUp(flag: string, cidr: string, signal?: AbortSignal): Promise<void> {
    const key = `${flag} ${cidr}`;
    let pending = this.ruleInFlight.get(key);
    if (!pending) {
      pending = (async () => {
        const have = await this.ruleDestinations(flag, signal);
        if (!have || have.includes(cidr)) return;
        const add = [flag, 'rule', 'add', 'to', cidr, 'lookup', this.table, 'priority', RULE_PRIORITY];
        const exists = await this.run(add, signal).then(
          () => false,
          (err: unknown) => {
            if (err instanceof Error && RULE_EXISTS.test(err.message)) return true;
            throw err;
          },
        );
        if (exists && !(await this.ruleDestinations(flag, signal))?.includes(cidr))
          throw new InvalidConfigError(
            `ip ${add.join(' ')}: File exists, yet no rule "to ${cidr} lookup ${this.table}" without other selectors is there: a rule of priority ${RULE_PRIORITY} for table ${this.table} with more selectors stands in for it; remove that rule`,
          );
      })().finally(() => this.ruleInFlight.delete(key));
      this.ruleInFlight.set(key, pending);
    }
    return pending;
  }

  async list(clusterID: string, signal?: AbortSignal): Promise<Route[]> {
    const realm = realmOf(clusterID);
    const routes: Route[] = [];
    for (const family of ['-4', '-6']) {
      // Routes no rule of ccm's sends Pod traffic to are made again (create adds the rule), not
      // counted as done.
      const ruled = await this.ruleDestinations(family, signal);
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
          ...(ruled && !ruled.some((range) => within(cidr, range)) ? { incomplete: true } : {}),
        });
      }
    }
    return routes;
  }

  async create(
    clusterID: string,
    _nameHint: string,
    route: { targetNode: RouteTarget; destinationCIDR: string; clusterCIDR?: string },
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
    // The rule covers the cluster CIDR (one rule, not one per Pod CIDR); without one given, the route.
    await this.ensureLookedUp(
      flag,
      networkOf(strictCIDR(route.clusterCIDR ?? cidr) ?? ipaddr.parseCIDR(cidr)),
      signal,
    );
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
