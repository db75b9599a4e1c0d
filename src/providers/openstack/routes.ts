import { InvalidConfigError } from '../errors.js';
import { httpStatus } from '../http.js';
import { nextHopFor, refuseOtherName } from '../next-hop.js';
import { parseProviderID } from '../provider-id.js';
import type { Route, Routes, RouteTarget } from '../types.js';
import type { Session } from './client.js';
import { SCHEME } from './instances.js';

/**
 * Pod routes as Neutron extra routes on the router named by cloud.conf's `[Route] router-id`, as the
 * official controller does (cloud-provider-openstack pkg/openstack/routes.go): a route is added with
 * `PUT /v2.0/routers/{id}/add_extraroutes` where Neutron lists the `extraroute-atomic` extension,
 * else by a read-modify-write of the router's `routes`; the Pod CIDR is added to the
 * `allowed_address_pairs` of the Node's port, or Neutron's port security drops the Pods' traffic.
 *
 * Ownership. A Neutron route is only {destination, nexthop}, and a router holds at most 50 tags
 * (neutron/extensions/tagging.py MAX_TAGS_COUNT), too few for one tag per route. So the Node's own
 * port carries it: the tag `ccm-cluster:<cluster>` and one tag `ccm-route:<CIDR>` (the "/" written
 * "_", since a tag is a URL path segment) per route ccm made through it. A router route is this
 * cluster's only when the port holding its next hop has both tags; any other route, on the same
 * router, is never changed or deleted. A route listed as ccm's stays ccm's when its port is deleted
 * (its server removed before its Node): the instance keeps that record, and once no port holds the next
 * hop the route is a blackhole that is deleted like upstream's (docs/routes.md).
 *
 * Calls: `list` is 2 (the router, the cluster's ports); a missing route costs 6 on a port without
 * ccm's tags (the port by its address, the server's name from Nova, 2 single tags, the route, its
 * address pairs), 5 with the cluster tag there; a delete 3 or 4 (pairs, route, tags: in that order, so a delete cut short is listed again).
 */

interface NeutronRoute {
  destination: string;
  nexthop: string;
}

interface NeutronRouter {
  id: string;
  routes?: NeutronRoute[];
  revision_number?: number;
}

interface NeutronPort {
  id: string;
  device_id?: string;
  fixed_ips?: { ip_address: string; subnet_id?: string }[];
  allowed_address_pairs?: { ip_address: string; mac_address?: string }[];
  port_security_enabled?: boolean;
  tags?: string[];
  revision_number?: number;
}

const ATOMIC = 'extraroute-atomic';
/** neutron/extensions/revisionifmatch.py: updates constrained with `If-Match: revision_number=N`. */
const IF_MATCH = 'revision-if-match';
/** Tries of a read-modify-write whose resource changed under it (HTTP 412) before giving up. */
const CONFLICT_TRIES = 5;

export function clusterTag(clusterID: string): string {
  return `ccm-cluster:${clusterID}`;
}

export function routeTag(cidr: string): string {
  return `ccm-route:${cidr.replace('/', '_')}`;
}

function tagCIDR(tag: string): string | undefined {
  return tag.startsWith('ccm-route:') ? tag.slice('ccm-route:'.length).replace('_', '/') : undefined;
}

function routeKey(r: NeutronRoute): string {
  return `${r.destination} ${r.nexthop}`;
}

/** Port security on (Neutron's default) and no allowed address pair for the Pod CIDR. */
function missingPair(port: NeutronPort, cidr: string): boolean {
  if (port.port_security_enabled === false) return false;
  return !(port.allowed_address_pairs ?? []).some((p) => p.ip_address === cidr);
}

export class NeutronRoutes implements Routes {
  private extensions: Promise<Set<string>> | undefined;
  /** The last listing's view: ports of this cluster by address, and every route of the router. */
  private ports = new Map<string, NeutronPort>();
  private routerRoutes: NeutronRoute[] = [];
  /**
   * Routes listed as this cluster's (`destination nexthop`), kept from one listing to the next: when
   * the Node's port is deleted (its server removed before its Node, the usual order) its tags go with
   * it, and this record is what still proves the route is ccm's (docs/routes.md, "port gone").
   */
  private owned = new Set<string>();
  /** Routes of the record whose next hop no port holds any more: removed without any port change. */
  private blackholes = new Set<string>();
  /**
   * `ccm-route:` tags of this cluster's ports with no router route via the port: a delete or create
   * cut short. Listed as incomplete routes, so a Node that still wants the CIDR has it made whole, and
   * otherwise the delete takes the pair and tags off (no router call: there is no route).
   */
  private orphans = new Set<string>();
  /** Changes of one port run one at a time (withPort); writes counted to know a read is stale. */
  private readonly portLocks = new Map<string, Promise<unknown>>();
  private readonly portWrites = new Map<string, number>();
  /** Read-modify-writes of the router's routes run one at a time (no extraroute-atomic). */
  private routerLock: Promise<unknown> = Promise.resolve();
  /** The subnets the router has a port on, read once per listing, when a route is to be made. */
  private routerSubnets?: Promise<Set<string>>;

  constructor(
    private readonly session: Session,
    private readonly routerID: string,
  ) {}

  private get routerPath(): string {
    return `v2.0/routers/${encodeURIComponent(this.routerID)}`;
  }

  private async router(signal?: AbortSignal): Promise<NeutronRouter> {
    const res = await this.session.request<{ router: NeutronRouter }>('network', 'GET', this.routerPath, {
      signal,
    });
    return res.body.router;
  }

  async list(clusterID: string, signal?: AbortSignal): Promise<Route[]> {
    const router = await this.router(signal).catch((err: unknown) => {
      if ((err as { kind?: string }).kind === 'NotFound') {
        throw new InvalidConfigError(
          `cloud.conf: [Route] router-id: Neutron has no router ${this.routerID}; give the id of the router of the Nodes' network`,
        );
      }
      throw err;
    });
    const res = await this.session.request<{ ports: NeutronPort[] }>('network', 'GET', 'v2.0/ports', {
      query: { tags: clusterTag(clusterID) },
      signal,
    });
    this.routerRoutes = router.routes ?? [];
    this.routerSubnets = undefined;
    this.ports = new Map();
    for (const port of res.body.ports)
      for (const ip of port.fixed_ips ?? []) this.ports.set(ip.ip_address, port);
    const routes: Route[] = [];
    const owned = new Set<string>();
    this.blackholes = new Set();
    for (const r of this.routerRoutes) {
      const port = this.ports.get(r.nexthop);
      const key = routeKey(r);
      if (!port?.tags?.some((t) => tagCIDR(t) === r.destination)) {
        // Upstream's ListRoutes marks a route whose next hop is no Node's a Blackhole, and the route
        // controller deletes it (k8s.io/cloud-provider controllers/route/route_controller.go reconcile,
        // `route.Blackhole`; cloud-provider-openstack routes.go DeleteRoute). ccm does so only for a
        // route it recorded as its own, and only once no Neutron port holds the next hop (one lookup,
        // for such a route only): a port there now is someone's, tagged or not, and decides.
        if (this.owned.has(key) && !port && (await this.portsWith(r.nexthop, signal)).length === 0) {
          owned.add(key);
          this.blackholes.add(key);
          routes.push({
            name: `${r.destination} via ${r.nexthop}`,
            destinationCIDR: r.destination,
            nextHop: r.nexthop,
          });
        }
        continue;
      }
      owned.add(key);
      routes.push({
        name: `${r.destination} via ${r.nexthop}`,
        destinationCIDR: r.destination,
        nextHop: r.nexthop,
        // A route whose address pair is missing (a create cut short between the two calls) drops the
        // Pods' traffic at the port: it is made again, not counted as done.
        ...(missingPair(port, r.destination) ? { incomplete: true } : {}),
      });
    }
    this.owned = owned;
    // A port's route tag with no router route via the port (a delete cut short after the route went,
    // a create cut short before the route came): listed too, or nothing would ever take its tags and
    // pair off. Only the listing reads; the controller's delete (or create) does the rest.
    this.orphans = new Set();
    for (const port of new Set(res.body.ports)) {
      const ips = (port.fixed_ips ?? []).map((ip) => ip.ip_address);
      for (const cidr of (port.tags ?? []).flatMap((t) => tagCIDR(t) ?? [])) {
        if (this.routerRoutes.some((r) => r.destination === cidr && ips.includes(r.nexthop))) continue;
        const v6 = cidr.includes(':');
        const nextHop = ips.find((ip) => ip.includes(':') === v6) ?? ips[0];
        if (nextHop === undefined) continue;
        this.orphans.add(routeKey({ destination: cidr, nexthop: nextHop }));
        routes.push({ name: `${cidr} via ${nextHop}`, destinationCIDR: cidr, nextHop, incomplete: true });
      }
    }
    return routes;
  }

  /** The listing's view and the record, once a route is gone from the router. */
  private forget(route: NeutronRoute): void {
    const key = routeKey(route);
    this.owned.delete(key);
    this.blackholes.delete(key);
    this.routerRoutes = this.routerRoutes.filter((r) => routeKey(r) !== key);
  }

  async create(
    clusterID: string,
    _nameHint: string,
    route: { targetNode: RouteTarget; destinationCIDR: string },
    signal?: AbortSignal,
  ): Promise<void> {
    const cidr = route.destinationCIDR;
    const nexthop = nextHopFor(route.targetNode, cidr);
    // A route exactly as ccm would make it (this CIDR to this Node's address: the official
    // controller's, after a switch from it, or one whose port was replaced) is adopted, not refused:
    // it already sends the CIDR where ccm would, and the steps below tag the port and add the pair.
    const foreign = this.routerRoutes.find(
      (r) =>
        r.destination === cidr &&
        r.nexthop !== nexthop &&
        !this.ports.get(r.nexthop)?.tags?.includes(routeTag(cidr)),
    );
    if (foreign) {
      throw new InvalidConfigError(
        `router ${this.routerID} already routes ${cidr} via ${foreign.nexthop} and the route is not ccm's; remove it, or give the Node another Pod CIDR`,
      );
    }
    const server = await this.serverPort(route.targetNode, nexthop, signal);
    refuseOtherName(
      route.targetNode,
      'server',
      server.device_id ?? '',
      await this.serverName(server, signal),
    );
    await this.withPort(server, signal, async (port) => {
      // The claim first: a route ccm adds is always one ccm can recognise afterwards.
      for (const tag of [clusterTag(clusterID), routeTag(cidr)])
        if (!(port.tags ?? []).includes(tag)) await this.tag(port, 'PUT', tag, signal);
      const route = { destination: cidr, nexthop };
      const existed = this.routerRoutes.some((r) => r.destination === cidr && r.nexthop === nexthop);
      await this.changeRoutes('add', route, signal);
      if (!missingPair(port, cidr)) return;
      try {
        await this.changePairs(
          port,
          (pairs) =>
            pairs.some((p) => p.ip_address === cidr) ? undefined : [...pairs, { ip_address: cidr }],
          signal,
        );
      } catch (err) {
        // As the official controller's CreateRoute (cloud-provider-openstack pkg/openstack/routes.go,
        // onFailure/unwind): a route without its address pair is undone, so no Node is RouteCreated
        // while its port drops the Pods' traffic, and the next pass makes both again.
        if (!existed) await this.changeRoutes('remove', route, signal).catch(() => undefined);
        throw err;
      }
      this.owned.add(routeKey(route));
    });
  }

  /**
   * Runs `fn` on the port, one change of a port at a time: a dual-stack Node has two routes through one
   * port, and tags and address pairs are read-modify-writes. A port changed by ccm since it was read
   * is read again first.
   */
  private async withPort(
    port: NeutronPort,
    signal: AbortSignal | undefined,
    fn: (port: NeutronPort) => Promise<void>,
  ): Promise<void> {
    const seen = this.portWrites.get(port.id) ?? 0;
    const run = (this.portLocks.get(port.id) ?? Promise.resolve()).then(async () => {
      let current = port;
      if ((this.portWrites.get(port.id) ?? 0) !== seen) {
        const res = await this.session.request<{ port: NeutronPort }>(
          'network',
          'GET',
          `v2.0/ports/${port.id}`,
          {
            signal,
          },
        );
        current = res.body.port;
      }
      await fn(current);
    });
    const tail = run.catch(() => undefined);
    this.portLocks.set(port.id, tail);
    try {
      await run;
    } finally {
      if (this.portLocks.get(port.id) === tail) this.portLocks.delete(port.id);
    }
  }

  /**
   * Adds (PUT) or removes (DELETE) one tag of the port, no other tag touched: Neutron's single-tag
   * calls (neutron/extensions/tagging.py TaggingController update / delete), not a replace of the whole
   * list that would wipe a tag another client added meanwhile.
   */
  private async tag(
    port: NeutronPort,
    method: 'PUT' | 'DELETE',
    tag: string,
    signal?: AbortSignal,
  ): Promise<void> {
    this.portWrites.set(port.id, (this.portWrites.get(port.id) ?? 0) + 1);
    try {
      await this.session.request('network', method, `v2.0/ports/${port.id}/tags/${encodeURIComponent(tag)}`, {
        signal,
      });
    } catch (err) {
      // TagNotFound: already removed.
      if (!(method === 'DELETE' && httpStatus(err) === 404)) throw err;
    }
    port.tags = method === 'PUT' ? [...(port.tags ?? []), tag] : (port.tags ?? []).filter((t) => t !== tag);
    // A tag change bumps the port's revision_number by one (neutron's test_revision_plugin.py
    // test_net_tag_bumps_net_revision): the next If-Match write uses it rather than meet a 412.
    if (port.revision_number !== undefined) port.revision_number++;
  }

  /**
   * Takes the address pair off the port first, then the route off the router, then ccm's tags off the
   * port: each step cut short (a failure, a stop, a lost lease) leaves a state the next listing still
   * shows, and its delete finishes it. The pair gone first: the route and its tags are still listed
   * (as incomplete). The route gone: its port's tag is listed as an orphan (see list). The official
   * controller (cloud-provider-openstack pkg/openstack/routes.go DeleteRoute) removes the route first
   * and re-adds it when the port update fails; a failed re-add left the pair and tags for good.
   */
  async delete(clusterID: string, route: Route, signal?: AbortSignal): Promise<void> {
    const cidr = route.destinationCIDR;
    const gone = { destination: cidr, nexthop: route.nextHop };
    if (this.blackholes.has(routeKey(gone))) {
      // No port to change: as upstream's DeleteRoute for a Blackhole route, only the route goes.
      await this.changeRoutes('remove', gone, signal);
      this.forget(gone);
      return;
    }
    const orphan = this.orphans.has(routeKey(gone));
    const listed = this.ports.get(route.nextHop) ?? (await this.portOf(route.nextHop, signal));
    await this.withPort(listed, signal, async (port) => {
      const tags = port.tags ?? [];
      if (!tags.includes(clusterTag(clusterID)) || !tags.includes(routeTag(cidr))) {
        throw new InvalidConfigError(
          `the route ${cidr} via ${route.nextHop} is not this cluster's (its port has no ${routeTag(cidr)} tag); ccm leaves it`,
        );
      }
      await this.changePairs(
        port,
        (pairs) =>
          pairs.some((p) => p.ip_address === cidr) ? pairs.filter((p) => p.ip_address !== cidr) : undefined,
        signal,
      );
      if (!orphan) await this.changeRoutes('remove', gone, signal);
      this.forget(gone);
      this.orphans.delete(routeKey(gone));
      await this.tag(port, 'DELETE', routeTag(cidr), signal);
      if (!(port.tags ?? []).some((t) => tagCIDR(t) !== undefined))
        await this.tag(port, 'DELETE', clusterTag(clusterID), signal);
    });
  }

  /**
   * The Nova name of the port's server (`GET /servers/{id}`), read for each create: a Node's route goes
   * only to the server of its name (refuseOtherName). Undefined when Nova has no such server.
   */
  private async serverName(port: NeutronPort, signal?: AbortSignal): Promise<string | undefined> {
    try {
      const res = await this.session.request<{ server: { name?: string } }>(
        'compute',
        'GET',
        `servers/${encodeURIComponent(port.device_id ?? '')}`,
        { signal },
      );
      return res.body.server.name;
    } catch (err) {
      if ((err as { kind?: string }).kind === 'NotFound') return undefined;
      throw err;
    }
  }

  private async portsWith(address: string, signal?: AbortSignal): Promise<NeutronPort[]> {
    const res = await this.session.request<{ ports: NeutronPort[] }>('network', 'GET', 'v2.0/ports', {
      query: { fixed_ips: `ip_address=${address}` },
      signal,
    });
    return res.body.ports;
  }

  /** The one port holding `address` (the official controller's getPortByIP). */
  private async portOf(address: string, signal?: AbortSignal): Promise<NeutronPort> {
    const [port, ...more] = await this.portsWith(address, signal);
    if (!port || more.length) {
      throw new InvalidConfigError(
        `Neutron has ${port ? 'several ports' : 'no port'} with the address ${address}; ccm routes a Pod CIDR to the one port of its Node`,
      );
    }
    return port;
  }

  /**
   * The subnets of the router's ports (its interfaces and gateway), where a next hop is reached: the
   * official controller looks for the Node's port only on the networks of the router's ports
   * (cloud-provider-openstack pkg/openstack/routes.go getRouterNetworkIDs, getPortByIP).
   */
  private subnetsOfRouter(signal?: AbortSignal): Promise<Set<string>> {
    this.routerSubnets ??= this.session
      .request<{ ports: NeutronPort[] }>('network', 'GET', 'v2.0/ports', {
        query: { device_id: this.routerID },
        signal,
      })
      .then(
        (res) =>
          new Set(res.body.ports.flatMap((p) => (p.fixed_ips ?? []).flatMap((ip) => ip.subnet_id ?? []))),
      );
    this.routerSubnets.catch(() => {
      this.routerSubnets = undefined;
    });
    return this.routerSubnets;
  }

  /**
   * The port of the Node's own server that holds `address` on a subnet of the router: the router sends
   * the Pod CIDR to whoever holds the address there. Refused, before any write, when no such port of
   * that server has it: the InternalIP is the kubelet's word, the provider ID the cloud's, and the same
   * address on another network (one reusing the range) is another machine's as far as the router knows.
   */
  private async serverPort(target: RouteTarget, address: string, signal?: AbortSignal): Promise<NeutronPort> {
    const server = serverOf(target);
    const held = (await this.portsWith(address, signal)).filter((p) => p.device_id === server);
    const subnets = held.length > 0 ? await this.subnetsOfRouter(signal) : new Set<string>();
    const own = held.filter((p) =>
      (p.fixed_ips ?? []).some(
        (ip) => ip.ip_address === address && ip.subnet_id && subnets.has(ip.subnet_id),
      ),
    );
    const [port, ...more] = own;
    if (!port && held.length > 0) {
      throw new InvalidConfigError(
        `Node ${target.name}'s InternalIP ${address} is held by its server ${server} only on a subnet router ${this.routerID} has no port on; the router would send the Pod CIDR to whatever holds ${address} on its own subnets: give the Node the address of its port on the router's network`,
      );
    }
    if (!port) {
      throw new InvalidConfigError(
        `Node ${target.name}'s InternalIP ${address} is not an address of its server ${server} (no port of that server has it); ccm routes a Pod CIDR only to the Node's own server: correct the Node's addresses`,
      );
    }
    if (more.length) {
      throw new InvalidConfigError(
        `server ${server} of Node ${target.name} has several ports with the address ${address}; ccm routes a Pod CIDR to the one port of its Node`,
      );
    }
    return port;
  }

  /**
   * The port's allowed address pairs, changed by `change` (undefined: nothing to do). A
   * read-modify-write, as the official controller's; where Neutron lists `revision-if-match`, the write
   * carries `If-Match: revision_number=<the revision read>` and a 412 (the port changed meanwhile:
   * neutron/services/revisions/revision_plugin.py RevisionNumberConstraintFailed) reads the port again
   * and retries, so a pair another client added (a kube-vip VIP) is never lost.
   */
  private async changePairs(
    port: NeutronPort,
    change: (
      pairs: NonNullable<NeutronPort['allowed_address_pairs']>,
    ) => NeutronPort['allowed_address_pairs'],
    signal?: AbortSignal,
  ): Promise<void> {
    const ifMatch = await this.supports(IF_MATCH, signal);
    let current = port;
    for (let attempt = 1; ; attempt++) {
      const pairs = change(current.allowed_address_pairs ?? []);
      if (!pairs) break;
      this.portWrites.set(port.id, (this.portWrites.get(port.id) ?? 0) + 1);
      try {
        const res = await this.session.request<{ port: NeutronPort }>(
          'network',
          'PUT',
          `v2.0/ports/${port.id}`,
          {
            body: { port: { allowed_address_pairs: pairs } },
            ...(ifMatch && current.revision_number !== undefined
              ? { headers: { 'if-match': `revision_number=${current.revision_number}` } }
              : {}),
            signal,
          },
        );
        current = {
          ...current,
          ...res.body.port,
          allowed_address_pairs: res.body.port.allowed_address_pairs ?? pairs,
        };
        break;
      } catch (err) {
        if (!ifMatch || httpStatus(err) !== 412 || attempt >= CONFLICT_TRIES) throw err;
        current = (
          await this.session.request<{ port: NeutronPort }>('network', 'GET', `v2.0/ports/${port.id}`, {
            signal,
          })
        ).body.port;
      }
    }
    port.allowed_address_pairs = current.allowed_address_pairs;
    port.revision_number = current.revision_number;
  }

  private async supports(alias: string, signal?: AbortSignal): Promise<boolean> {
    // One read per process, shared by the creates that run at once (a failed read is tried again).
    this.extensions ??= this.session
      .request<{ extensions: { alias: string }[] }>('network', 'GET', 'v2.0/extensions', { signal })
      .then((res) => new Set(res.body.extensions.map((e) => e.alias)));
    this.extensions.catch(() => {
      this.extensions = undefined;
    });
    return (await this.extensions).has(alias);
  }

  private supportsAtomic(signal?: AbortSignal): Promise<boolean> {
    return this.supports(ATOMIC, signal);
  }

  private async changeRoutes(op: 'add' | 'remove', route: NeutronRoute, signal?: AbortSignal): Promise<void> {
    if (await this.supportsAtomic(signal)) {
      await this.session.request('network', 'PUT', `${this.routerPath}/${op}_extraroutes`, {
        body: { router: { routes: [route] } },
        signal,
      });
      return;
    }
    // A read-modify-write of the whole list, as the official controller's updateRoutes; with
    // `revision-if-match`, constrained to the revision read, and read again on a 412, so a route another
    // client added between the read and the write is kept.
    const ifMatch = await this.supports(IF_MATCH, signal);
    const run = this.routerLock.then(async () => {
      for (let attempt = 1; ; attempt++) {
        const router = await this.router(signal);
        const current = router.routes ?? [];
        const same = (r: NeutronRoute) => r.destination === route.destination && r.nexthop === route.nexthop;
        if (op === 'add' && current.some(same)) return;
        if (op === 'remove' && !current.some(same)) return;
        const routes = op === 'add' ? [...current, route] : current.filter((r) => !same(r));
        try {
          await this.session.request('network', 'PUT', this.routerPath, {
            body: { router: { routes } },
            ...(ifMatch && router.revision_number !== undefined
              ? { headers: { 'if-match': `revision_number=${router.revision_number}` } }
              : {}),
            signal,
          });
          return;
        } catch (err) {
          if (!ifMatch || httpStatus(err) !== 412 || attempt >= CONFLICT_TRIES) throw err;
        }
      }
    });
    this.routerLock = run.catch(() => undefined);
    await run;
  }
}

function serverOf(target: RouteTarget): string {
  const parsed = target.providerID ? parseProviderID(target.providerID) : undefined;
  if (parsed?.scheme !== SCHEME) {
    throw new InvalidConfigError(
      `Node ${target.name} has no OpenStack provider ID (${target.providerID || 'none'}); the cloud-node controller sets it, and ccm routes a Pod CIDR only to a port of the Node's own server`,
    );
  }
  return parsed.id;
}
