/**
 * Neutron's routers (extra routes), ports (allowed address pairs, tags) and extension list, for the
 * route controller. Request and answer shapes follow gophercloud's fixtures
 * (openstack/networking/v2/extensions/layer3/extraroutes/testing/requests_test.go for
 * add_extraroutes / remove_extraroutes, layer3/routers/testing/requests_test.go for a router's
 * `routes`, ports/testing/fixtures.go for `allowed_address_pairs`, attributestags/testing for
 * PUT …/tags); the rules are Neutron's own, each cited where it is enforced.
 */
import { randomUUID } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { HttpError } from './http-error.js';

type Obj = Record<string, unknown>;

export interface SimRoute {
  destination: string;
  nexthop: string;
}

export interface SimRouter {
  id: string;
  name: string;
  /** CIDRs of the subnets the router has interfaces on, and its own addresses on them. */
  subnets: string[];
  ips: string[];
  routes: SimRoute[];
  tags: string[];
}

export interface SimPort {
  id: string;
  name: string;
  network_id: string;
  mac_address: string;
  device_id: string;
  device_owner: string;
  fixed_ips: { subnet_id: string; ip_address: string }[];
  allowed_address_pairs: { ip_address: string; mac_address: string }[];
  port_security_enabled: boolean;
  tags: string[];
}

const neutronError = (status: number, type: string, message: string) =>
  new HttpError(status, { NeutronError: { type, message, detail: '' } });

/** The subnet of a port made without one, and of a router's first interface. */
const DEFAULT_SUBNET_ID = 'a0304c3a-4f08-4c43-88af-d796509c97d2';

function firstHost(cidr: string): string {
  const [net] = ipaddr.parseCIDR(cidr);
  const bytes = net.toByteArray();
  bytes[bytes.length - 1] = (bytes[bytes.length - 1] ?? 0) + 1;
  return ipaddr.fromByteArray(bytes).toString();
}

/** neutron/extensions/tagging.py MAX_TAG_LEN and MAX_TAGS_COUNT. */
const MAX_TAG_LEN = 255;
const MAX_TAGS_COUNT = 50;

export class NeutronRouting {
  readonly routers = new Map<string, SimRouter>();
  readonly ports = new Map<string, SimPort>();
  /** Extension aliases listed by GET /v2.0/extensions; `extraroute-atomic` since Ussuri. */
  extensions = new Set([
    'router',
    'extraroute',
    'extraroute-atomic',
    'allowed-address-pairs',
    'standard-attr-tag',
    'standard-attr-revisions',
    'revision-if-match',
  ]);
  /**
   * The If-Match header of the request being handled (the simulator's server sets it before
   * `handle`, so a test's wrapper of `handle` keeps it).
   */
  ifMatch: string | undefined;
  /** revision_number of each port and router, and the state it numbers (see revisionOf). */
  private readonly revisions = new WeakMap<object, { n: number; state: string }>();

  /**
   * A resource's revision_number: neutron/db/standard_attr.py bumps it on every update
   * (neutron/services/revisions/revision_plugin.py bump_revisions). Here any change of the resource,
   * through the API or made by a test standing in for another client, is an update.
   */
  private revisionOf(resource: SimPort | SimRouter): number {
    const state = JSON.stringify(resource);
    const known = this.revisions.get(resource);
    if (!known) {
      this.revisions.set(resource, { n: 1, state });
      return 1;
    }
    if (known.state !== state) {
      known.n++;
      known.state = state;
    }
    return known.n;
  }

  /** One update through the API: one bump of revision_number (a change made before it counts apart). */
  private update(resource: SimPort | SimRouter, change: () => unknown): void {
    this.revisionOf(resource);
    change();
    this.revisionOf(resource);
  }

  /**
   * If-Match: revision_number=N on an update (neutron/api/api_common.py
   * check_request_for_revision_constraint; revision_plugin.py _enforce_if_match_constraints raises
   * RevisionNumberConstraintFailed, an HTTP 412, when the resource is at another revision).
   */
  private enforceIfMatch(resource: SimPort | SimRouter): void {
    const m = /revision_number=(\d+)/.exec(this.ifMatch ?? '');
    if (!m) return;
    if (!this.extensions.has('revision-if-match'))
      throw neutronError(
        400,
        'BadRequest',
        'This server does not support constraining operations based on revision numbers',
      );
    const current = this.revisionOf(resource);
    if (current !== Number(m[1]))
      throw neutronError(
        412,
        'HTTPPreconditionFailed',
        `Constrained to ${m[1]}, but current revision is ${current}`,
      );
  }
  /**
   * Routes per router: neutron/conf/quota.py quota_router_route (DEFAULT_QUOTA_ROUTER_ROUTE = 30),
   * formerly [DEFAULT] max_routes, also 30.
   */
  maxRoutes = 30;
  private macs = 0;

  /**
   * A router with an interface on each subnet (`subnetIDs`, the first by default the subnet addPort
   * puts ports on). Each interface is a port of the router: neutron/db/l3_db.py add_router_interface
   * makes it with device_id = the router's id and device_owner network:router_interface, which is how
   * the official controller finds the router's networks (cloud-provider-openstack
   * pkg/openstack/routes.go getRouterNetworkIDs, ports listed by device_id).
   */
  addRouter(spec: {
    id?: string;
    name?: string;
    subnets: string[];
    ips?: string[];
    subnetIDs?: string[];
  }): SimRouter {
    const router: SimRouter = {
      id: spec.id ?? randomUUID(),
      name: spec.name ?? 'router1',
      subnets: spec.subnets,
      ips: spec.ips ?? [],
      routes: [],
      tags: [],
    };
    this.routers.set(router.id, router);
    spec.subnets.forEach((cidr, i) => {
      const subnetID = spec.subnetIDs?.[i] ?? (i === 0 ? DEFAULT_SUBNET_ID : randomUUID());
      this.interfacePort(router, cidr, subnetID, spec.ips?.[i]);
    });
    return router;
  }

  /** One more interface of the router, on subnet `subnetID` (CIDR `cidr`). */
  addInterface(router: SimRouter, spec: { cidr: string; subnetID: string; ip?: string }): void {
    router.subnets.push(spec.cidr);
    if (spec.ip) router.ips.push(spec.ip);
    this.interfacePort(router, spec.cidr, spec.subnetID, spec.ip);
  }

  private interfacePort(router: SimRouter, cidr: string, subnetID: string, ip?: string): void {
    const port = this.addPort({
      ip: ip ?? firstHost(cidr),
      deviceID: router.id,
      subnetID,
      portSecurity: false,
    });
    port.device_owner = 'network:router_interface';
  }

  addPort(spec: {
    ip: string;
    deviceID?: string;
    subnetID?: string;
    portSecurity?: boolean;
    tags?: string[];
  }): SimPort {
    const n = ++this.macs;
    const port: SimPort = {
      id: randomUUID(),
      name: '',
      network_id: 'a87cc70a-3e15-4acf-8205-9b711a3531b7',
      mac_address: `fa:16:3e:${((n >> 16) & 255).toString(16).padStart(2, '0')}:${((n >> 8) & 255).toString(16).padStart(2, '0')}:${(n & 255).toString(16).padStart(2, '0')}`,
      device_id: spec.deviceID ?? randomUUID(),
      device_owner: 'compute:nova',
      fixed_ips: [{ subnet_id: spec.subnetID ?? DEFAULT_SUBNET_ID, ip_address: spec.ip }],
      allowed_address_pairs: [],
      port_security_enabled: spec.portSecurity ?? true,
      tags: spec.tags ?? [],
    };
    this.ports.set(port.id, port);
    return port;
  }

  /** Answers a Neutron request it serves, or undefined for the rest of the simulator. */
  handle(method: string, path: string, url: URL, body: unknown): [number, unknown] | undefined {
    if (path === '/v2.0/extensions' && method === 'GET') {
      // neutron/api/extensions.py ExtensionController.index: {"extensions": [{name, alias, …}]}
      return [
        200,
        {
          extensions: [...this.extensions].map((alias) => ({
            alias,
            name: alias,
            description: alias,
            updated: '2019-01-01T00:00:00-00:00',
            links: [],
          })),
        },
      ];
    }
    let m = /^\/v2\.0\/routers\/([^/]+)(?:\/(add_extraroutes|remove_extraroutes|tags))?$/.exec(path);
    if (m) return this.router(method, m[1] as string, m[2], body);
    if (path === '/v2.0/ports' && method === 'GET') return [200, { ports: this.listPorts(url) }];
    m = /^\/v2\.0\/ports\/([^/]+)\/tags\/([^/]+)$/.exec(path);
    if (m) return this.portTag(method, m[1] as string, decodeURIComponent(m[2] as string));
    m = /^\/v2\.0\/ports\/([^/]+)(\/tags)?$/.exec(path);
    if (m) return this.port(method, m[1] as string, Boolean(m[2]), body);
    return undefined;
  }

  private getRouter(id: string): SimRouter {
    const router = this.routers.get(id);
    // neutron_lib/exceptions/l3.py RouterNotFound
    if (!router) throw neutronError(404, 'RouterNotFound', `Router ${id} could not be found`);
    return router;
  }

  private routerView(r: SimRouter): Obj {
    return {
      id: r.id,
      name: r.name,
      status: 'ACTIVE',
      admin_state_up: true,
      tenant_id: 'd6554fe62e2f41efbb6e026fad5c1542',
      project_id: 'd6554fe62e2f41efbb6e026fad5c1542',
      external_gateway_info: null,
      distributed: false,
      routes: r.routes.map((x) => ({ ...x })),
      tags: [...r.tags],
      revision_number: this.revisionOf(r),
    };
  }

  private router(method: string, id: string, action: string | undefined, body: unknown): [number, unknown] {
    const router = this.getRouter(id);
    if (!action && method === 'GET') return [200, { router: this.routerView(router) }];
    if (action === 'tags') throw neutronError(405, 'HTTPMethodNotAllowed', 'not simulated');
    if (method !== 'PUT') throw neutronError(405, 'HTTPMethodNotAllowed', `${method} not allowed`);
    const routes = (body as { router?: { routes?: unknown } })?.router?.routes;
    if (action) {
      // The atomic calls exist only where the extension is loaded (404 for an unknown path otherwise).
      if (!this.extensions.has('extraroute-atomic'))
        throw neutronError(404, 'HTTPNotFound', 'The resource could not be found.');
      const given = validRoutes(routes);
      // neutron/db/extraroute_db.py _add_extra_routes / _remove_extra_routes: set union and difference
      // of {destination, nexthop}; removing a route that is absent is no error.
      const key = (r: SimRoute) => `${r.destination} ${r.nexthop}`;
      const next =
        action === 'add_extraroutes'
          ? [...router.routes, ...given.filter((g) => !router.routes.some((r) => key(r) === key(g)))]
          : router.routes.filter((r) => !given.some((g) => key(g) === key(r)));
      this.update(router, () => this.setRoutes(router, next));
      return [200, { router: this.routerView(router) }];
    }
    this.enforceIfMatch(router);
    if (routes === undefined) return [200, { router: this.routerView(router) }];
    this.update(router, () => this.setRoutes(router, validRoutes(routes)));
    return [200, { router: this.routerView(router) }];
  }

  /** neutron/db/extraroute_db.py update_router → _update_extra_routes: validation, then the quota. */
  private setRoutes(router: SimRouter, routes: SimRoute[]): void {
    for (const r of routes) {
      // _validate_routes_nexthop: the next hop must be on a subnet of the router, and not its own IP.
      const hop = ipaddr.parse(r.nexthop);
      if (
        !router.subnets.some(
          (s) => hop.kind() === ipaddr.parseCIDR(s)[0].kind() && hop.match(ipaddr.parseCIDR(s)),
        )
      ) {
        throw neutronError(
          400,
          'InvalidRoutes',
          `Invalid format for routes: ${JSON.stringify(routes)}, the nexthop is not connected with router`,
        );
      }
      if (router.ips.includes(r.nexthop))
        throw neutronError(
          400,
          'InvalidRoutes',
          `Invalid format for routes: ${JSON.stringify(routes)}, the nexthop is used by router`,
        );
    }
    // quota.QUOTAS.limit_check(router_route=len(routes)) → OverQuota (409)
    if (routes.length > this.maxRoutes)
      throw neutronError(409, 'OverQuota', "Quota exceeded for resources: ['router_route'].");
    router.routes = routes;
  }

  private listPorts(url: URL): Obj[] {
    const q = url.searchParams;
    let ports = [...this.ports.values()];
    // fixed_ips=ip_address=… (gophercloud ports.ListOpts FixedIPs), tags=… (all of them must match)
    for (const f of q.getAll('fixed_ips')) {
      const [k, v] = f.split('=');
      ports = ports.filter((p) => p.fixed_ips.some((ip) => (ip as Obj)[k as string] === v));
    }
    const tags = q.getAll('tags').flatMap((t) => t.split(','));
    if (tags.length) ports = ports.filter((p) => tags.every((t) => p.tags.includes(t)));
    for (const key of ['device_id', 'network_id'] as const) {
      const v = q.get(key);
      if (v !== null) ports = ports.filter((p) => p[key] === v);
    }
    return ports.map((p) => this.portView(p));
  }

  private portView(p: SimPort): Obj {
    return { ...structuredClone(p), revision_number: this.revisionOf(p) };
  }

  /**
   * One tag: PUT adds it, DELETE removes it (neutron/extensions/tagging.py TaggingController update /
   * delete; gophercloud networking/v2/extensions/attributestags Add / Delete), no other tag touched.
   */
  private portTag(method: string, id: string, tag: string): [number, unknown] {
    const port = this.ports.get(id);
    if (!port) throw neutronError(404, 'PortNotFound', `Port ${id} could not be found.`);
    if (tag.length > MAX_TAG_LEN)
      throw neutronError(400, 'InvalidInput', 'Invalid input for operation: Invalid tag.');
    if (method === 'PUT') {
      if (!port.tags.includes(tag)) {
        if (port.tags.length + 1 > MAX_TAGS_COUNT)
          throw neutronError(
            400,
            'BadRequest',
            `The number of tags exceed the per-resource limit of ${MAX_TAGS_COUNT}`,
          );
        this.update(port, () => port.tags.push(tag));
      }
      return [201, null];
    }
    if (method === 'DELETE') {
      // TagNotFound (404) for a tag the resource does not have.
      if (!port.tags.includes(tag)) throw neutronError(404, 'TagNotFound', `Tag ${tag} could not be found.`);
      this.update(port, () => {
        port.tags = port.tags.filter((t) => t !== tag);
      });
      return [204, null];
    }
    throw neutronError(405, 'HTTPMethodNotAllowed', `${method} not allowed`);
  }

  private port(method: string, id: string, tags: boolean, body: unknown): [number, unknown] {
    const port = this.ports.get(id);
    if (!port) throw neutronError(404, 'PortNotFound', `Port ${id} could not be found.`);
    if (tags) {
      if (method === 'GET') return [200, { tags: [...port.tags] }];
      if (method !== 'PUT') throw neutronError(405, 'HTTPMethodNotAllowed', `${method} not allowed`);
      // neutron/extensions/tagging.py validate_tags / validate_tags_limit (replace-all, attributestags ReplaceAll)
      const given = (body as { tags?: unknown })?.tags;
      if (
        !Array.isArray(given) ||
        given.some((t) => typeof t !== 'string' || t.length > MAX_TAG_LEN) ||
        new Set(given).size !== given.length
      )
        throw neutronError(400, 'InvalidInput', 'Invalid input for operation: Invalid tags body.');
      if (given.length > MAX_TAGS_COUNT)
        throw neutronError(
          400,
          'BadRequest',
          `The number of tags exceed the per-resource limit of ${MAX_TAGS_COUNT}`,
        );
      this.update(port, () => {
        port.tags = [...(given as string[])];
      });
      return [200, { tags: [...port.tags] }];
    }
    if (method === 'GET') return [200, { port: this.portView(port) }];
    if (method !== 'PUT') throw neutronError(405, 'HTTPMethodNotAllowed', `${method} not allowed`);
    this.enforceIfMatch(port);
    const spec = (body as { port?: Obj })?.port;
    if (!spec || typeof spec !== 'object')
      throw neutronError(400, 'HTTPBadRequest', 'Resource body required');
    for (const key of Object.keys(spec)) {
      if (!['allowed_address_pairs', 'name', 'description'].includes(key))
        throw neutronError(400, 'HTTPBadRequest', `Unrecognized attribute(s) '${key}'`);
    }
    if (spec.allowed_address_pairs !== undefined) {
      const pairs = spec.allowed_address_pairs;
      // neutron/plugins/ml2/plugin.py _process_port_update… : pairs need port security
      if (!port.port_security_enabled && Array.isArray(pairs) && pairs.length)
        throw neutronError(
          409,
          'AddressPairAndPortSecurityRequired',
          'Port Security must be enabled in order to have allowed address pairs on a port.',
        );
      if (!Array.isArray(pairs))
        throw neutronError(400, 'InvalidInput', 'Invalid input for allowed_address_pairs.');
      const seen = new Set<string>();
      const next = pairs.map((p: unknown) => {
        const pair = p as { ip_address?: unknown; mac_address?: unknown };
        const ip = typeof pair?.ip_address === 'string' ? pair.ip_address : '';
        if (!ipaddr.isValid(ip) && !isCIDR(ip))
          throw neutronError(
            400,
            'InvalidInput',
            `Invalid input for operation: '${ip}' is not a valid IP address.`,
          );
        // neutron/db/allowedaddresspairs_db.py: a pair without mac_address gets the port's
        const mac = typeof pair.mac_address === 'string' ? pair.mac_address : port.mac_address;
        const key = `${ip} ${mac}`;
        // neutron_lib/api/validators/allowedaddresspairs.py: duplicates in one request are refused
        if (seen.has(key))
          throw neutronError(
            400,
            'DuplicateAddressPairInRequest',
            `Request contains duplicate address pair: mac_address ${mac} ip_address ${ip}.`,
          );
        seen.add(key);
        return { ip_address: ip, mac_address: mac };
      });
      this.update(port, () => {
        port.allowed_address_pairs = next;
      });
    }
    return [200, { port: this.portView(port) }];
  }
}

function isCIDR(value: string): boolean {
  try {
    ipaddr.parseCIDR(value);
    return true;
  } catch {
    return false;
  }
}

/** neutron_lib/api/validators validate_hostroutes: a list of {destination: CIDR, nexthop: IP}, no duplicates. */
function validRoutes(value: unknown): SimRoute[] {
  if (!Array.isArray(value))
    throw neutronError(400, 'HTTPBadRequest', "Invalid input for routes. Reason: 'None' is not a list.");
  const seen = new Set<string>();
  return value.map((r) => {
    const route = r as { destination?: unknown; nexthop?: unknown };
    const keys = Object.keys(route ?? {});
    if (
      keys.some((k) => k !== 'destination' && k !== 'nexthop') ||
      typeof route.destination !== 'string' ||
      typeof route.nexthop !== 'string'
    )
      throw neutronError(
        400,
        'HTTPBadRequest',
        `Invalid input for routes. Reason: Validation of dictionary's keys failed.`,
      );
    if (!isCIDR(route.destination) || !ipaddr.isValid(route.nexthop))
      throw neutronError(
        400,
        'HTTPBadRequest',
        `Invalid input for routes. Reason: '${route.destination}' is not a valid subnet.`,
      );
    const key = `${route.destination} ${route.nexthop}`;
    if (seen.has(key))
      throw neutronError(
        400,
        'HTTPBadRequest',
        `Invalid input for routes. Reason: Duplicate hostroute '${key}'.`,
      );
    seen.add(key);
    return { destination: route.destination, nexthop: route.nexthop };
  });
}
