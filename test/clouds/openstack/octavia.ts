/**
 * Octavia load balancers and Neutron floating IPs of the OpenStack simulator, from the Octavia
 * api-ref (loadbalancer.inc: fully populated create, cascade delete, 409 while PENDING_*) and the
 * Neutron floating IP samples. Unknown attributes are refused as the real API's validation does.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { fileURLToPath } from 'node:url';
import { findRoute, type Route } from '../http-core.js';
import { HttpError } from './http-error.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/openstack/', import.meta.url));
const fixture = (name: string) => JSON.parse(readFileSync(`${FIXTURES}${name}`, 'utf8'));
const LB_SAMPLE = fixture('octavia-loadbalancer-show-response.json').loadbalancer as Record<string, unknown>;
const FIP_SAMPLE = fixture('neutron-floatingip-create-response.json').floatingip as Record<string, unknown>;

/** The official example cloud.conf's subnet and floating network. */
export const SUBNET_ID = '9c018814-f2a8-45dd-9679-5400d49b333a';
export const NETWORK_ID = '02dd8479-ef26-4398-a102-d19d0a7b3a1f';
export const FLOATING_NETWORK_ID = '80c9fc78-a2be-45d5-a85b-f17a6c98df92';

const PROJECT_ID = 'a6944d763bf64ee6a275f1263fae0352';
const LISTENER_PROTOCOLS = ['TCP', 'UDP', 'SCTP', 'HTTP', 'HTTPS', 'TERMINATED_HTTPS', 'PROMETHEUS'];
const POOL_PROTOCOLS: Record<string, string[]> = {
  TCP: ['TCP', 'HTTP', 'HTTPS', 'PROXY', 'PROXYV2'],
  UDP: ['UDP'],
  SCTP: ['SCTP'],
  HTTP: ['HTTP', 'PROXY', 'PROXYV2'],
  HTTPS: ['HTTPS', 'PROXY', 'PROXYV2', 'TCP'],
};
const ALGORITHMS = ['ROUND_ROBIN', 'LEAST_CONNECTIONS', 'SOURCE_IP', 'SOURCE_IP_PORT'];
const MONITOR_TYPES = ['HTTP', 'HTTPS', 'PING', 'TCP', 'TLS-HELLO', 'UDP-CONNECT', 'SCTP'];

const LB_FIELDS = [
  'name',
  'description',
  'admin_state_up',
  'project_id',
  'flavor_id',
  'listeners',
  'pools',
  'vip_subnet_id',
  'vip_network_id',
  'vip_port_id',
  'vip_address',
  'vip_qos_policy_id',
  'provider',
  'availability_zone',
  'tags',
];
const LISTENER_FIELDS = [
  'name',
  'description',
  'admin_state_up',
  'protocol',
  'protocol_port',
  'connection_limit',
  'default_pool',
  'default_pool_id',
  'default_tls_container_ref',
  'sni_container_refs',
  'l7policies',
  'insert_headers',
  'timeout_client_data',
  'timeout_member_connect',
  'timeout_member_data',
  'timeout_tcp_inspect',
  'allowed_cidrs',
  'tags',
  'loadbalancer_id',
];
const POOL_FIELDS = [
  'name',
  'description',
  'admin_state_up',
  'protocol',
  'lb_algorithm',
  'session_persistence',
  'members',
  'healthmonitor',
  'tags',
  'listener_id',
  'loadbalancer_id',
];
const MEMBER_FIELDS = [
  'name',
  'address',
  'protocol_port',
  'subnet_id',
  'weight',
  'admin_state_up',
  'monitor_address',
  'monitor_port',
  'backup',
  'tags',
];
const MONITOR_FIELDS = [
  'name',
  'type',
  'delay',
  'timeout',
  'max_retries',
  'max_retries_down',
  'http_method',
  'url_path',
  'expected_codes',
  'admin_state_up',
  'tags',
  'pool_id',
];
const FIP_FIELDS = [
  'floating_network_id',
  'port_id',
  'subnet_id',
  'fixed_ip_address',
  'floating_ip_address',
  'description',
  'dns_domain',
  'dns_name',
  'qos_policy_id',
  'project_id',
  'tenant_id',
];

type Obj = Record<string, unknown>;

interface LbRecord {
  lb: Obj;
  /** Reads left before a PENDING_* status settles. */
  pendingReads: number;
  /** Where the pending operation ends: ACTIVE, ERROR, or gone (delete). */
  settlesTo: 'ACTIVE' | 'ERROR' | 'DELETED';
  /** The operation on a child in flight, if the pending one is one (see `childOperation`). */
  child?: ChildOperation;
}

/**
 * A change to listeners, pools, members or health monitors. Its objects are PENDING_* while the
 * load balancer is PENDING_UPDATE; when it ends they are ACTIVE (or removed, for a delete). When it
 * fails, Octavia's revert marks them ERROR and puts the load balancer back to ACTIVE
 * (octavia/controller/worker/v2/tasks/lifecycle_tasks.py: ListenerToErrorOnRevertTask,
 * PoolToErrorOnRevertTask, MembersToErrorOnRevertTask, HealthMonitorToErrorOnRevertTask each
 * mark_*_prov_status_error on the child, then mark_loadbalancer_prov_status_active).
 */
interface ChildOperation {
  objects: Obj[];
  /** Run when the operation succeeds: a delete removes its objects then. */
  done?: () => void;
}

const fault = (status: number, faultstring: string) =>
  new HttpError(status, { faultcode: status < 500 ? 'Client' : 'Server', faultstring, debuginfo: null });
/**
 * octavia/common/exceptions.py NotFound: '%(resource)s %(id)s not found.', the resource named by
 * its model's _name() ("Load Balancer", "Health Monitor"), raised by api/v2/controllers/base.py.
 */
const notFound = (resource: string, id: unknown) => fault(404, `${resource} ${String(id)} not found.`);
const neutronError = (status: number, type: string, message: string) =>
  new HttpError(status, { NeutronError: { type, message, detail: '' } });

/** A request as an Octavia or Neutron floating IP row sees it (path below the API version). */
interface OctaviaCall {
  method: string;
  path: string;
  url: URL;
  q: URLSearchParams;
  body: unknown;
  match: RegExpExecArray;
}
type Handler = (o: OctaviaState, call: OctaviaCall) => [number, unknown];

export class OctaviaState {
  readonly loadBalancers = new Map<string, LbRecord>();
  readonly listeners = new Map<string, Obj>();
  readonly pools = new Map<string, Obj>();
  readonly members = new Map<string, Obj[]>();
  readonly monitors = new Map<string, Obj>();
  readonly floatingIps = new Map<string, Obj>();
  readonly subnets = new Set([SUBNET_ID]);
  readonly networks = new Set([NETWORK_ID]);
  readonly externalNetworks = new Set([FLOATING_NETWORK_ID]);
  /** How many reads a PENDING_* load balancer shows before it settles. */
  settleAfterReads = 1;
  /**
   * [api_settings] pagination_max_limit (octavia/common/config.py, default
   * constants.DEFAULT_PAGE_SIZE = 1000): the most items one listing returns.
   */
  pageMax = 1000;
  /**
   * The API version this Octavia serves, v2.<apiMinor> (the simulator's octaviaV2Alias sets it).
   * An attribute added after it is unknown to its wsme types: 400 "Unknown attribute" (see SINCE).
   */
  apiMinor = 30;
  /** [api_settings] api_base_uri: the base of the pagination links, when set (pagination.py _make_links). */
  apiBaseUri: string | undefined;
  /** The roles of the tokens Keystone issues (the Keystone samples' "member" by default). */
  roles: string[] = ['member'];
  /** The next provisioning operation ends in ERROR (Octavia could not build the amphora). */
  failNextProvisioning = false;
  private nextFloatingIp = 10;

  // ---- Octavia ---------------------------------------------------------------------------------

  private static readonly ROUTES: readonly Route<Handler>[] = [
    {
      method: 'GET',
      path: /^\/loadbalancers$/,
      handle: (o, { url, q }) => {
        const list = [...o.loadBalancers.values()]
          .map((r) => o.read(r))
          .filter((lb): lb is Obj => lb !== undefined);
        return [
          200,
          o.page(
            'loadbalancers',
            list.filter((lb) => matches(lb, q, ['name', 'id'])),
            url,
          ),
        ];
      },
    },
    {
      method: 'POST',
      path: /^\/loadbalancers$/,
      handle: (o, { body }) => {
        return [201, { loadbalancer: o.createLoadBalancer(body) }];
      },
    },
    {
      path: /^\/loadbalancers\/([^/]+)$/,
      handle: (o, { method, path, q, body, match: m }) => {
        const record = o.loadBalancers.get(m[1] as string);
        const lb = record && o.read(record);
        if (!record || !lb) throw notFound('Load Balancer', m[1]);
        if (method === 'GET') return [200, { loadbalancer: lb }];
        if (method === 'PUT') {
          // load_balancer.py put: status_code=200, the load balancer PENDING_UPDATE while it applies.
          o.mutable(record);
          const spec = objectField(body, 'loadbalancer');
          o.allow(
            spec,
            ['name', 'description', 'admin_state_up', 'vip_qos_policy_id', 'tags'],
            'loadbalancer',
          );
          Object.assign(lb, spec, { updated_at: new Date().toISOString().slice(0, 19) });
          o.pending(record, 'PENDING_UPDATE');
          return [200, { loadbalancer: lb }];
        }
        if (method === 'DELETE') {
          o.mutable(record, true);
          const children = (lb.listeners as unknown[]).length + (lb.pools as unknown[]).length;
          if (children > 0 && q.get('cascade') !== 'true') {
            // load_balancer.py delete: ValidationException ('Validation failure: %(detail)s').
            throw fault(400, `Validation failure: Cannot delete Load Balancer ${lb.id} - it has children`);
          }
          o.pending(record, 'PENDING_DELETE', 'DELETED');
          return [204, undefined];
        }
        throw fault(404, `no route ${method} ${path}`);
      },
    },
    {
      method: 'GET',
      path: /^\/listeners$/,
      handle: (o, { url, q }) => o.pageOfLoadBalancer('listeners', o.listeners, url, q),
    },
    {
      method: 'POST',
      path: /^\/listeners$/,
      handle: (o, { body }) => {
        const spec = objectField(body, 'listener');
        const record = o.ownerOf(spec.loadbalancer_id);
        o.mutable(record);
        const listener = o.addListener(record.lb, spec);
        o.childChange(record, 'PENDING_CREATE', [listener]);
        return [201, { listener }];
      },
    },
    {
      path: /^\/listeners\/([^/]+)$/,
      handle: (o, { method, path, body, match: m }) => {
        const listener = o.listeners.get(m[1] as string);
        if (!listener) throw notFound('Listener', m[1]);
        const record = o.ownerOf(lbOf(listener));
        if (method === 'PUT') {
          o.mutable(record);
          const fixed = ['protocol', 'protocol_port', 'loadbalancer_id', 'default_pool'];
          return o.updateChild(record, listener, body, 'listener', {
            allowed: LISTENER_FIELDS.filter((f) => !fixed.includes(f)),
            view: (spec) => ('allowed_cidrs' in spec ? { allowed_cidrs: cidrsView(spec.allowed_cidrs) } : {}),
          });
        }
        if (method === 'DELETE') {
          o.mutable(record);
          o.childChange(record, 'PENDING_DELETE', [listener], () => {
            o.listeners.delete(listener.id as string);
            record.lb.listeners = (record.lb.listeners as Obj[]).filter((l) => l.id !== listener.id);
          });
          return [204, undefined];
        }
        throw fault(404, `no route ${method} ${path}`);
      },
    },
    {
      method: 'GET',
      path: /^\/pools$/,
      handle: (o, { url, q }) => o.pageOfLoadBalancer('pools', o.pools, url, q),
    },
    {
      method: 'POST',
      path: /^\/pools$/,
      handle: (o, { body }) => {
        const spec = objectField(body, 'pool');
        const listener = o.listeners.get(String(spec.listener_id));
        if (!listener) throw notFound('Listener', String(spec.listener_id));
        // exceptions.py DuplicatePoolEntry.
        if (listener.default_pool_id) throw fault(409, 'This listener already has a default pool');
        const record = o.ownerOf(lbOf(listener));
        o.mutable(record);
        const { listener_id: _l, ...rest } = spec;
        const pool = o.addPool(record.lb, rest, listener);
        o.childChange(record, 'PENDING_CREATE', [pool]);
        return [201, { pool }];
      },
    },
    {
      path: /^\/pools\/([^/]+)\/members$/,
      handle: (o, { method, path, url, body, match: m }) => {
        const pool = o.pools.get(m[1] as string);
        if (!pool) throw notFound('Pool', m[1]);
        if (method === 'GET') return [200, o.page('members', o.members.get(pool.id as string) ?? [], url)];
        if (method === 'PUT') {
          const record = o.ownerOf(lbOf(pool));
          poolMutable(pool);
          o.mutable(record);
          const specs = (body as { members?: unknown })?.members;
          if (!Array.isArray(specs)) throw fault(400, 'Invalid input for field/attribute members.');
          // octavia/api/v2/controllers/member.py MembersController.put: a member matched by address
          // and protocol_port is updated (PENDING_UPDATE, same id), a new one created (PENDING_CREATE),
          // one left out deleted (PENDING_DELETE, gone once the flow ends).
          const key = (m: Obj) => `${String(m.address)}|${String(m.protocol_port)}`;
          const old = o.members.get(pool.id as string) ?? [];
          const wanted = specs.map((s) => o.member(s as Obj));
          const kept = wanted.map((m) => {
            const was = old.find((o) => key(o) === key(m));
            return was
              ? Object.assign(was, m, { id: was.id, provisioning_status: 'PENDING_UPDATE' })
              : { ...m, provisioning_status: 'PENDING_CREATE' };
          });
          const dropped = old.filter((o) => !wanted.some((m) => key(m) === key(o)));
          for (const d of dropped) d.provisioning_status = 'PENDING_DELETE';
          o.members.set(pool.id as string, [...kept, ...dropped]);
          o.pending(record, 'PENDING_UPDATE', undefined, {
            objects: [...kept, ...dropped],
            done: () => o.members.set(pool.id as string, kept),
          });
          return [202, undefined];
        }
        throw fault(404, `no route ${method} ${path}`);
      },
    },
    {
      path: /^\/pools\/([^/]+)$/,
      handle: (o, { method, path, body, match: m }) => {
        const pool = o.pools.get(m[1] as string);
        if (!pool) throw notFound('Pool', m[1]);
        const record = o.ownerOf(lbOf(pool));
        if (method === 'PUT') {
          o.mutable(record);
          return o.updateChild(record, pool, body, 'pool', {
            allowed: ['name', 'description', 'admin_state_up', 'lb_algorithm', 'session_persistence', 'tags'],
            view: (spec) => {
              if (spec.lb_algorithm !== undefined && !ALGORITHMS.includes(String(spec.lb_algorithm))) {
                throw fault(
                  400,
                  `Invalid input for field/attribute lb_algorithm. Value: '${String(spec.lb_algorithm)}'.`,
                );
              }
              return 'session_persistence' in spec
                ? { session_persistence: persistenceView(spec.session_persistence) }
                : {};
            },
          });
        }
        if (method === 'DELETE') {
          o.mutable(record);
          o.childChange(record, 'PENDING_DELETE', [pool], () => o.removePool(record.lb, pool));
          return [204, undefined];
        }
        throw fault(404, `no route ${method} ${path}`);
      },
    },
    {
      method: 'POST',
      path: /^\/healthmonitors$/,
      handle: (o, { body }) => {
        const spec = objectField(body, 'healthmonitor');
        const pool = o.pools.get(String(spec.pool_id));
        if (!pool) throw notFound('Pool', String(spec.pool_id));
        // exceptions.py DuplicateHealthMonitor.
        if (pool.healthmonitor_id) throw fault(409, 'This pool already has a health monitor');
        const record = o.ownerOf(lbOf(pool));
        poolMutable(pool);
        o.mutable(record);
        const { pool_id: _p, ...rest } = spec;
        const monitor = o.monitor(rest, pool);
        o.childChange(record, 'PENDING_CREATE', [monitor]);
        return [201, { healthmonitor: monitor }];
      },
    },
    {
      path: /^\/healthmonitors\/([^/]+)$/,
      handle: (o, { method, path, body, match: m }) => {
        const monitor = o.monitors.get(m[1] as string);
        if (!monitor) throw notFound('Health Monitor', m[1]);
        const pool = o.pools.get(String((monitor.pools as Obj[])[0]?.id)) as Obj;
        if (method === 'GET') return [200, { healthmonitor: monitor }];
        const record = o.ownerOf(lbOf(pool));
        poolMutable(pool);
        o.mutable(record);
        if (method === 'PUT') {
          return o.updateChild(record, monitor, body, 'healthmonitor', {
            allowed: MONITOR_FIELDS.filter((f) => f !== 'type' && f !== 'pool_id'),
          });
        }
        if (method === 'DELETE') {
          o.childChange(record, 'PENDING_DELETE', [monitor], () => {
            o.monitors.delete(monitor.id as string);
            pool.healthmonitor_id = null;
          });
          return [204, undefined];
        }
        throw fault(404, `no route ${method} ${path}`);
      },
    },
  ];

  route(method: string, path: string, url: URL, body: unknown): [number, unknown] {
    const found = findRoute(OctaviaState.ROUTES, method, path);
    if (!found) throw fault(404, `no route ${method} ${path}`);
    return found.route.handle(this, { method, path, url, q: url.searchParams, body, match: found.match });
  }

  /**
   * One page of a listing, as octavia/api/common/pagination.py makes it: `limit` (at most
   * pageMax; "infinite" or < 1 is no limit only when pagination_max_limit is infinite, so here the
   * max), `marker` the id of the previous page's last item (400 InvalidMarker if none has it), and a
   * "next" link when the page is full. The link keeps limit but not the filters, on api_base_uri or
   * the request's own URL (_make_links). Items are in creation order (DEFAULT_SORT_KEYS created_at, id).
   */
  private page(key: string, all: Obj[], url: URL): Obj {
    const q = url.searchParams;
    const limitText = q.get('limit');
    let limit = this.pageMax;
    if (limitText !== null) {
      if (!/^-?\d+$/.test(limitText))
        throw fault(400, `Supplied pagination limit '${limitText}' is not valid.`);
      if (Number(limitText) >= 1) limit = Math.min(Number(limitText), this.pageMax);
    }
    let start = 0;
    const marker = q.get('marker');
    if (marker !== null) {
      const at = all.findIndex((o) => o.id === marker);
      if (at < 0) throw fault(400, `Supplied pagination marker '${marker}' is not valid.`);
      start = at + 1;
    }
    const items = all.slice(start, start + limit);
    const links: Obj[] = [];
    const base = this.apiBaseUri
      ? `${this.apiBaseUri.replace(/\/+$/, '')}${url.pathname}`
      : `${url.origin}${url.pathname}`;
    if (items.length > 0 && marker !== null) {
      links.push({
        rel: 'previous',
        href: `${base}?limit=${limit}&marker=${String(items[0]?.id)}&page_reverse=True`,
      });
    }
    if (items.length > 0 && items.length >= limit) {
      links.push({ rel: 'next', href: `${base}?limit=${limit}&marker=${String(items.at(-1)?.id)}` });
    }
    return { [key]: items, [`${key}_links`]: links };
  }

  private allow(spec: Obj, fields: readonly string[], what: string): void {
    allowOnly(
      spec,
      fields.filter((f) => (SINCE[f] ?? 0) <= this.apiMinor),
      what,
    );
  }

  /** Creates a load balancer from a fully populated request, as Octavia's graph create does. */
  private createLoadBalancer(body: unknown): Obj {
    const spec = objectField(body, 'loadbalancer');
    this.allow(spec, LB_FIELDS, 'loadbalancer');
    const vip = ['vip_subnet_id', 'vip_network_id', 'vip_port_id'].filter((k) => spec[k] !== undefined);
    if (vip.length === 0)
      throw fault(
        400,
        'Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.',
      );
    if (spec.vip_subnet_id !== undefined && !this.subnets.has(String(spec.vip_subnet_id))) {
      throw fault(400, `Validation failure: Subnet ${String(spec.vip_subnet_id)} not found.`);
    }
    if (spec.vip_network_id !== undefined && !this.networks.has(String(spec.vip_network_id))) {
      throw fault(400, `Validation failure: Network ${String(spec.vip_network_id)} not found.`);
    }
    if (
      spec.tags !== undefined &&
      (!Array.isArray(spec.tags) || spec.tags.some((t) => typeof t !== 'string' || t.length > 255))
    ) {
      throw fault(400, 'Invalid input for field/attribute tags.');
    }
    const id = randomUUID();
    const lb: Obj = {
      ...structuredClone(LB_SAMPLE),
      id,
      name: spec.name ?? '',
      description: spec.description ?? '',
      project_id: PROJECT_ID,
      provisioning_status: 'PENDING_CREATE',
      operating_status: 'OFFLINE',
      vip_subnet_id: spec.vip_subnet_id ?? SUBNET_ID,
      vip_network_id: NETWORK_ID,
      vip_port_id: randomUUID(),
      vip_address: `10.0.0.${100 + this.loadBalancers.size}`,
      provider: spec.provider ?? 'amphora',
      flavor_id: spec.flavor_id ?? '',
      availability_zone: spec.availability_zone ?? null,
      tags: spec.tags ?? [],
      listeners: [],
      pools: [],
      created_at: new Date().toISOString().slice(0, 19),
      updated_at: null,
    };
    const listeners = spec.listeners ?? [];
    if (!Array.isArray(listeners)) throw fault(400, 'Invalid input for field/attribute listeners.');
    // Validate the whole graph before anything is stored: a refused request leaves nothing behind.
    const staged = new OctaviaState();
    for (const subnet of this.subnets) staged.subnets.add(subnet);
    for (const l of listeners) staged.addListener(lb, structuredClone(l) as Obj);
    lb.listeners = [];
    lb.pools = [];
    for (const l of listeners) this.addListener(lb, l as Obj);
    for (const o of this.childrenOf(id)) o.provisioning_status = 'PENDING_CREATE';
    const record: LbRecord = { lb, pendingReads: 0, settlesTo: 'ACTIVE' };
    this.loadBalancers.set(id, record);
    this.pending(record, 'PENDING_CREATE');
    return lb;
  }

  private addListener(lb: Obj, spec: Obj): Obj {
    this.allow(spec, LISTENER_FIELDS, 'listener');
    const protocol = String(spec.protocol);
    if (!LISTENER_PROTOCOLS.includes(protocol))
      throw fault(400, `Invalid input for field/attribute protocol. Value: '${protocol}'.`);
    const port = spec.protocol_port;
    if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) {
      throw fault(400, `Invalid input for field/attribute protocol_port. Value: '${String(port)}'.`);
    }
    const clash = [...this.listeners.values()].some(
      (l) => lbOf(l) === lb.id && l.protocol_port === port && sameFamily(String(l.protocol), protocol),
    );
    // exceptions.py DuplicateListenerEntry (409).
    if (clash)
      throw fault(
        409,
        `Another Listener on this Load Balancer is already using protocol ${protocol} and protocol_port ${String(port)}`,
      );
    for (const key of [
      'timeout_client_data',
      'timeout_member_connect',
      'timeout_member_data',
      'timeout_tcp_inspect',
    ]) {
      if (spec[key] !== undefined && (!Number.isInteger(spec[key]) || (spec[key] as number) < 0)) {
        throw fault(400, `Invalid input for field/attribute ${key}. Value: '${String(spec[key])}'.`);
      }
    }
    const id = randomUUID();
    const { default_pool: defaultPool, loadbalancer_id: _lb, ...rest } = spec;
    const listener: Obj = {
      l7policies: [],
      description: '',
      default_tls_container_ref: null,
      admin_state_up: true,
      project_id: PROJECT_ID,
      default_tls_container_id: null,
      connection_limit: -1,
      sni_container_refs: [],
      timeout_client_data: 50000,
      timeout_member_connect: 5000,
      timeout_member_data: 50000,
      timeout_tcp_inspect: 0,
      tags: [],
      ...rest,
      allowed_cidrs: cidrsView(rest.allowed_cidrs),
      id,
      default_pool_id: null,
      loadbalancers: [{ id: lb.id }],
      provisioning_status: 'ACTIVE',
      operating_status: 'ONLINE',
    };
    this.listeners.set(id, listener);
    (lb.listeners as Obj[]).push({ id });
    if (defaultPool !== undefined) {
      if (typeof defaultPool !== 'object' || defaultPool === null)
        throw fault(400, 'Invalid input for field/attribute default_pool.');
      if (!(defaultPool as Obj).name)
        throw fault(
          400,
          'Validation failure: Pools must be named when creating a fully populated loadbalancer.',
        );
      this.addPool(lb, defaultPool as Obj, listener);
    }
    return listener;
  }

  private addPool(lb: Obj, spec: Obj, listener: Obj): Obj {
    this.allow(spec, POOL_FIELDS, 'pool');
    const protocol = String(spec.protocol);
    if (!(POOL_PROTOCOLS[String(listener.protocol)] ?? []).includes(protocol)) {
      throw fault(
        400,
        `Validation failure: The pool protocol '${protocol}' is invalid while the listener protocol is '${String(listener.protocol)}'.`,
      );
    }
    if (!ALGORITHMS.includes(String(spec.lb_algorithm))) {
      throw fault(
        400,
        `Invalid input for field/attribute lb_algorithm. Value: '${String(spec.lb_algorithm)}'.`,
      );
    }
    const id = randomUUID();
    const { members = [], healthmonitor, ...rest } = spec;
    const pool: Obj = {
      description: '',
      admin_state_up: true,
      project_id: PROJECT_ID,
      tags: [],
      ...rest,
      session_persistence: persistenceView(rest.session_persistence),
      id,
      healthmonitor_id: null,
      listeners: [{ id: listener.id }],
      loadbalancers: [{ id: lb.id }],
      members: [],
      provisioning_status: 'ACTIVE',
      operating_status: 'ONLINE',
    };
    if (!Array.isArray(members)) throw fault(400, 'Invalid input for field/attribute members.');
    this.pools.set(id, pool);
    this.members.set(
      id,
      (members as Obj[]).map((m) => this.member(m)),
    );
    (lb.pools as Obj[]).push({ id });
    listener.default_pool_id = id;
    if (healthmonitor !== undefined) this.monitor(healthmonitor as Obj, pool);
    return pool;
  }

  private member(spec: Obj): Obj {
    this.allow(spec, MEMBER_FIELDS, 'member');
    if (typeof spec.address !== 'string' || isIP(spec.address) === 0) {
      throw fault(400, `Invalid input for field/attribute address. Value: '${String(spec.address)}'.`);
    }
    const port = spec.protocol_port;
    if (!Number.isInteger(port) || (port as number) < 1 || (port as number) > 65535) {
      throw fault(400, `Invalid input for field/attribute protocol_port. Value: '${String(port)}'.`);
    }
    if (spec.subnet_id !== undefined && !this.subnets.has(String(spec.subnet_id))) {
      throw fault(400, `Validation failure: Subnet ${String(spec.subnet_id)} not found.`);
    }
    return {
      name: '',
      weight: 1,
      admin_state_up: true,
      project_id: PROJECT_ID,
      monitor_port: null,
      ...spec,
      id: randomUUID(),
      provisioning_status: 'ACTIVE',
      operating_status: 'NO_MONITOR',
    };
  }

  private monitor(spec: Obj, pool: Obj): Obj {
    this.allow(spec, MONITOR_FIELDS, 'healthmonitor');
    const type = String(spec.type);
    if (!MONITOR_TYPES.includes(type))
      throw fault(400, `Invalid input for field/attribute type. Value: '${type}'.`);
    for (const key of ['delay', 'timeout', 'max_retries']) {
      if (spec[key] === undefined)
        throw fault(400, `Invalid input for field/attribute ${key}. Mandatory field missing.`);
    }
    const delay = Number(spec.delay);
    const timeout = Number(spec.timeout);
    // (Octavia does not compare timeout with delay.) On a UDP or SCTP pool: health_monitor.py
    // _validate_healthmonitor_request_for_udp_sctp allows UDP-CONNECT, SCTP, and TCP and HTTP since
    // API 2.16 (root_controller.py: "v2.16 Additional UDP Healthcheck Types (HTTP/TCP)"), and a
    // UDP-CONNECT delay of at least [api_settings] udp_connect_min_interval_health_monitor
    // (common/config.py, default 3).
    if (pool.protocol === 'UDP' || pool.protocol === 'SCTP') {
      const types = ['UDP-CONNECT', 'SCTP', ...(this.apiMinor >= 16 ? ['TCP', 'HTTP'] : [])];
      if (!types.includes(type))
        throw fault(
          400,
          `Validation failure: The associated pool protocol is ${String(pool.protocol)}, so only a ${types.join('/')} health monitor is supported.`,
        );
      if (type === 'UDP-CONNECT' && delay < 3)
        throw fault(
          400,
          `Validation failure: The request delay value ${delay} should be larger than 3 for UDP-CONNECT health monitor type.`,
        );
    }
    const retries = Number(spec.max_retries);
    if (retries < 1 || retries > 10)
      throw fault(400, `Invalid input for field/attribute max_retries. Value: '${retries}'.`);
    const id = randomUUID();
    const monitor: Obj = {
      name: '',
      admin_state_up: true,
      project_id: PROJECT_ID,
      max_retries_down: 3,
      ...spec,
      delay,
      timeout,
      id,
      pools: [{ id: pool.id }],
      provisioning_status: 'ACTIVE',
      operating_status: 'ONLINE',
    };
    this.monitors.set(id, monitor);
    pool.healthmonitor_id = id;
    return monitor;
  }

  private removePool(lb: Obj, pool: Obj): void {
    this.pools.delete(pool.id as string);
    this.members.delete(pool.id as string);
    if (pool.healthmonitor_id) this.monitors.delete(pool.healthmonitor_id as string);
    lb.pools = (lb.pools as Obj[]).filter((p) => p.id !== pool.id);
    for (const listener of this.listeners.values())
      if (listener.default_pool_id === pool.id) listener.default_pool_id = null;
  }

  private ownerOf(id: unknown): LbRecord {
    const record = this.loadBalancers.get(String(id));
    if (!record) throw notFound('Load Balancer', String(id));
    return record;
  }

  /**
   * Octavia changes a load balancer or its children only while it is ACTIVE, and deletes it only
   * while ACTIVE or ERROR; any other status is 409 ImmutableObject (octavia/db/repositories.py
   * test_and_set_provisioning_status with MUTABLE_STATUSES = (ACTIVE,) and DELETABLE_STATUSES =
   * (ACTIVE, ERROR) of octavia/common/constants.py; the message is exceptions.ImmutableObject's).
   */
  private mutable(record: LbRecord, deleting = false): void {
    const status = String(record.lb.provisioning_status);
    if (status === 'ACTIVE' || (deleting && status === 'ERROR')) return;
    throw fault(409, `Load Balancer ${String(record.lb.id)} is immutable and cannot be updated.`);
  }

  /**
   * Starts an operation on the load balancer. With `child`, the operation is on its children: a
   * failure (failNextProvisioning) ends with them ERROR and the load balancer ACTIVE, as Octavia's
   * revert leaves it. Without, a failure ends with the load balancer ERROR (a create that could not
   * build its amphora: LoadBalancerToErrorOnRevertTask).
   */
  private pending(
    record: LbRecord,
    status: string,
    settlesTo?: LbRecord['settlesTo'],
    child?: ChildOperation,
  ): void {
    record.lb.provisioning_status = status;
    record.pendingReads = this.settleAfterReads;
    const fails = settlesTo === undefined && this.failNextProvisioning;
    if (settlesTo === undefined) this.failNextProvisioning = false;
    record.settlesTo = settlesTo ?? (fails && !child ? 'ERROR' : 'ACTIVE');
    if (child) record.child = { ...child, ...(fails ? { failed: true } : {}) } as ChildOperation;
    else delete record.child;
    if (record.pendingReads === 0) this.settle(record);
  }

  /** A change to children of `record`: they are `status` until the load balancer settles. */
  private childChange(record: LbRecord, status: string, objects: Obj[], done?: () => void): void {
    for (const o of objects) o.provisioning_status = status;
    this.pending(record, 'PENDING_UPDATE', undefined, { objects, ...(done ? { done } : {}) });
  }

  /** GET /listeners or /pools: a page of the ones of the load balancer `loadbalancer_id` names. */
  private pageOfLoadBalancer(
    key: string,
    items: Map<string, Obj>,
    url: URL,
    q: URLSearchParams,
  ): [number, unknown] {
    const list = [...items.values()].filter((item) => lbOf(item) === q.get('loadbalancer_id'));
    return [200, this.page(key, list, url)];
  }

  /**
   * The PUT of a listener, pool or health monitor, once its load balancer is mutable: only the
   * `allowed` fields of body[key], applied with their stored `view` (which may refuse a value), the
   * object PENDING_UPDATE with its load balancer. listener.py, pool.py and health_monitor.py put:
   * status_code=200 (only the member batch update is 202).
   */
  private updateChild(
    record: LbRecord,
    target: Obj,
    body: unknown,
    key: string,
    { allowed, view = () => ({}) }: { allowed: readonly string[]; view?: (spec: Obj) => Obj },
  ): [number, unknown] {
    const spec = objectField(body, key);
    this.allow(spec, allowed, key);
    Object.assign(target, spec, view(spec));
    this.childChange(record, 'PENDING_UPDATE', [target]);
    return [200, { [key]: target }];
  }

  /** Reads the load balancer; a pending one settles after `settleAfterReads` reads. */
  private read(record: LbRecord): Obj | undefined {
    if (String(record.lb.provisioning_status).startsWith('PENDING_')) {
      if (record.pendingReads-- <= 0) this.settle(record);
    }
    return this.loadBalancers.has(record.lb.id as string) ? record.lb : undefined;
  }

  private settle(record: LbRecord): void {
    if (record.settlesTo === 'DELETED') {
      this.removeLoadBalancer(record.lb);
      return;
    }
    const child = record.child as (ChildOperation & { failed?: boolean }) | undefined;
    delete record.child;
    if (child?.failed) {
      for (const o of child.objects) {
        o.provisioning_status = 'ERROR';
        o.operating_status = 'ERROR';
      }
    } else if (child) {
      child.done?.();
      for (const o of child.objects) o.provisioning_status = 'ACTIVE';
    }
    // The graph a create made settles with it (ERROR too: ListenersToErrorOnRevertTask & co.).
    for (const o of this.childrenOf(String(record.lb.id))) {
      if (String(o.provisioning_status).startsWith('PENDING_')) o.provisioning_status = record.settlesTo;
    }
    record.lb.provisioning_status = record.settlesTo;
    record.lb.operating_status = record.settlesTo === 'ACTIVE' ? 'ONLINE' : 'ERROR';
  }

  private childrenOf(lbId: string): Obj[] {
    return this.tree(lbId).flatMap((t) => [
      t.listener,
      ...(t.pool ? [t.pool] : []),
      ...t.members,
      ...(t.monitor ? [t.monitor] : []),
    ]);
  }

  private removeLoadBalancer(lb: Obj): void {
    for (const ref of lb.pools as Obj[]) {
      const pool = this.pools.get(String(ref.id));
      if (pool) this.removePool(lb, pool);
    }
    for (const ref of lb.listeners as Obj[]) this.listeners.delete(String(ref.id));
    this.loadBalancers.delete(lb.id as string);
  }

  /** The listeners, pools, members and monitors of a load balancer, for assertions. */
  tree(lbId: string) {
    const listeners = [...this.listeners.values()].filter((l) => lbOf(l) === lbId);
    return listeners.map((l) => {
      const pool = l.default_pool_id ? this.pools.get(String(l.default_pool_id)) : undefined;
      return {
        listener: l,
        pool,
        members: pool ? (this.members.get(pool.id as string) ?? []) : [],
        monitor: pool?.healthmonitor_id ? this.monitors.get(String(pool.healthmonitor_id)) : undefined,
      };
    });
  }

  // ---- Neutron floating IPs ----------------------------------------------------------------------

  private static readonly NEUTRON_ROUTES: readonly Route<Handler>[] = [
    {
      method: 'GET',
      path: /^\/v2\.0\/floatingips$/,
      handle: (o, { q }) => {
        const list = [...o.floatingIps.values()].filter((f) =>
          matches(f, q, ['port_id', 'floating_ip_address', 'description', 'floating_network_id']),
        );
        return [200, { floatingips: list }];
      },
    },
    {
      method: 'POST',
      path: /^\/v2\.0\/floatingips$/,
      handle: (o, { body }) => {
        const spec = (body as { floatingip?: Obj })?.floatingip;
        if (!spec || typeof spec !== 'object')
          throw neutronError(400, 'HTTPBadRequest', 'Resource body required');
        for (const key of Object.keys(spec)) {
          if (!FIP_FIELDS.includes(key))
            throw neutronError(400, 'HTTPBadRequest', `Unrecognized attribute(s) '${key}'`);
        }
        // neutron/conf/policies/floatingip.py: create_floatingip:floating_ip_address is
        // ADMIN_OR_PROJECT_MANAGER; a POST that fails a policy check is 403
        // (neutron/pecan_wsgi/hooks/policy_enforcement.py). The message is the simulator's own.
        if (
          spec.floating_ip_address !== undefined &&
          !o.roles.some((r) => r === 'admin' || r === 'manager')
        ) {
          throw neutronError(
            403,
            'PolicyNotAuthorized',
            'rule:create_floatingip:floating_ip_address is disallowed by policy',
          );
        }
        const network = String(spec.floating_network_id ?? '');
        if (!o.externalNetworks.has(network)) {
          throw neutronError(404, 'NetworkNotFound', `Network ${network} could not be found.`);
        }
        const address = spec.floating_ip_address
          ? String(spec.floating_ip_address)
          : `172.24.4.${o.nextFloatingIp++}`;
        if ([...o.floatingIps.values()].some((f) => f.floating_ip_address === address)) {
          throw neutronError(
            409,
            'IpAddressAlreadyAllocated',
            `IP address ${address} already allocated in subnet`,
          );
        }
        const fip: Obj = {
          ...structuredClone(FIP_SAMPLE),
          id: randomUUID(),
          floating_ip_address: address,
          floating_network_id: network,
          port_id: spec.port_id ?? null,
          fixed_ip_address: spec.port_id ? '10.0.0.100' : null,
          router_id: spec.port_id ? FIP_SAMPLE.router_id : null,
          status: spec.port_id ? 'ACTIVE' : 'DOWN',
          description: spec.description ?? '',
          dns_domain: '',
          dns_name: '',
          port_details: null,
          tags: [],
          project_id: PROJECT_ID,
          tenant_id: PROJECT_ID,
        };
        o.floatingIps.set(fip.id as string, fip);
        return [201, { floatingip: fip }];
      },
    },
    {
      path: /^\/v2\.0\/floatingips\/([^/]+)$/,
      handle: (o, { method, path, body, match: m }) => {
        const fip = o.floatingIps.get(m[1] as string);
        if (!fip) throw neutronError(404, 'FloatingIPNotFound', `Floating IP ${m[1]} could not be found`);
        if (method === 'GET') return [200, { floatingip: fip }];
        if (method === 'DELETE') {
          o.floatingIps.delete(fip.id as string);
          return [204, undefined];
        }
        if (method === 'PUT') {
          const spec = (body as { floatingip?: Obj })?.floatingip;
          if (!spec) throw neutronError(400, 'HTTPBadRequest', 'Resource body required');
          for (const key of Object.keys(spec)) {
            if (!['port_id', 'fixed_ip_address', 'description', 'qos_policy_id'].includes(key)) {
              throw neutronError(400, 'HTTPBadRequest', `Cannot update read-only attribute ${key}`);
            }
          }
          if (spec.port_id && fip.port_id && fip.port_id !== spec.port_id) {
            throw neutronError(
              409,
              'FloatingIPPortAlreadyAssociated',
              `Cannot associate floating IP ${String(fip.floating_ip_address)}: already associated`,
            );
          }
          Object.assign(fip, spec, { status: spec.port_id ? 'ACTIVE' : 'DOWN' });
          return [200, { floatingip: fip }];
        }
        throw neutronError(404, 'HTTPNotFound', `The resource could not be found: ${method} ${path}`);
      },
    },
  ];

  neutron(method: string, path: string, url: URL, body: unknown): [number, unknown] {
    const found = findRoute(OctaviaState.NEUTRON_ROUTES, method, path);
    if (!found) throw neutronError(404, 'HTTPNotFound', `The resource could not be found: ${method} ${path}`);
    return found.route.handle(this, { method, path, url, q: url.searchParams, body, match: found.match });
  }
}

/**
 * Members and health monitors change only while their pool is ACTIVE: a pool left in ERROR is 409
 * (octavia/api/v2/controllers/member.py and health_monitor.py _test_lb_and_listener_and_pool_statuses,
 * exceptions.ImmutableObject); a pool PUT does not check the pool's own status (pool.py
 * _test_lb_and_listener_statuses), so that is how a pool in ERROR is repaired.
 */
function poolMutable(pool: Obj): void {
  if (pool.provisioning_status !== 'ACTIVE')
    throw fault(409, `Pool ${String(pool.id)} is immutable and cannot be updated.`);
}

/**
 * allowed_cidrs as Octavia keeps them: each validated and canonicalised (octavia/api/common/types.py
 * CidrType.validate: ip_network(value, strict=False).with_prefixlen, else 400), stored once each
 * (db/repositories.py ListenerCidrRepository.create: `for cidr in set(allowed_cidrs)`) in the
 * listener_cidr table whose primary key is (listener_id, cidr) (db/models.py ListenerCidr), and read
 * back through a relationship without order_by, i.e. in the key's order: sorted here. None or [] is null.
 */
function cidrsView(value: unknown): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) throw fault(400, 'Invalid input for field/attribute allowed_cidrs.');
  if (value.length === 0) return null;
  const canonical = value.map((c) => {
    const net = typeof c === 'string' ? pythonNetwork(c) : undefined;
    if (!net)
      throw fault(
        400,
        `Invalid input for field/attribute allowed_cidrs. Value: '${String(c)}'. Value should be IPv4 or IPv6 CIDR format`,
      );
    return net;
  });
  return [...new Set(canonical)].sort();
}

/** Python's ipaddress.ip_network(text, strict=False).with_prefixlen, or undefined where it raises. */
function pythonNetwork(text: string): string | undefined {
  const [addr = '', len, extra] = text.split('/');
  if (extra !== undefined) return undefined;
  const family = isIP(addr);
  if (family === 0) return undefined;
  const bits = family === 4 ? 32 : 128;
  if (len !== undefined && !/^\d+$/.test(len)) return undefined;
  const prefix = len === undefined ? bits : Number(len);
  if (prefix > bits) return undefined;
  let groups: number[];
  if (family === 4) {
    groups = addr.split('.').map(Number);
  } else {
    const parts = addr.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a, b, c, d) =>
      [((+a << 8) | +b).toString(16), ((+c << 8) | +d).toString(16)].join(':'),
    );
    const [head = '', tail] = parts.split('::');
    const h = head ? head.split(':') : [];
    const t = tail ? tail.split(':') : [];
    const full = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
    groups = full.map((g) => Number.parseInt(g, 16));
  }
  const width = family === 4 ? 8 : 16;
  let left = prefix;
  groups = groups.map((g) => {
    const keep = Math.max(0, Math.min(width, left));
    left -= width;
    return keep === 0 ? 0 : g & ~((1 << (width - keep)) - 1) & ((1 << width) - 1);
  });
  if (family === 4) return `${groups.join('.')}/${prefix}`;
  // ipaddress._compress_hextets: the longest run (first of equals) of two or more zero hextets.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
  }
  const hex = groups.map((g) => g.toString(16));
  const shown =
    best < 0 ? hex.join(':') : `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
  return `${shown}/${prefix}`;
}

/** Octavia shows a pool's session persistence with all its fields, the unset ones null. */
function persistenceView(value: unknown): Obj | null {
  if (value === null || value === undefined) return null;
  return { cookie_name: null, persistence_timeout: null, persistence_granularity: null, ...(value as Obj) };
}

function objectField(body: unknown, key: string): Obj {
  const value = (body as Obj | undefined)?.[key];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw fault(400, `Invalid input for field/attribute ${key}. Mandatory field missing.`);
  }
  return value as Obj;
}

/**
 * The API minor version that added an attribute (api-ref/source/parameters.yaml min_version: tags
 * 2.5, timeout_* 2.1, allowed_cidrs 2.12; octavia/api/root_controller.py index comments: Flavors
 * v2.6, Availability Zones v2.14).
 */
const SINCE: Record<string, number> = {
  tags: 5,
  timeout_client_data: 1,
  timeout_member_connect: 1,
  timeout_member_data: 1,
  timeout_tcp_inspect: 1,
  flavor_id: 6,
  allowed_cidrs: 12,
  availability_zone: 14,
};

function allowOnly(spec: Obj, fields: readonly string[], what: string): void {
  for (const key of Object.keys(spec)) {
    if (!fields.includes(key))
      throw fault(
        400,
        `Invalid input for field/attribute ${what}. Unknown attribute for argument ${what}: ${key}`,
      );
  }
}

function lbOf(obj: Obj): string | undefined {
  return ((obj.loadbalancers as Obj[] | undefined)?.[0]?.id as string | undefined) ?? undefined;
}

/** TCP-based listeners share a port space; UDP and SCTP have their own. */
function sameFamily(a: string, b: string): boolean {
  const family = (p: string) => (p === 'UDP' || p === 'SCTP' ? p : 'TCP');
  return family(a) === family(b);
}

function matches(obj: Obj, q: URLSearchParams, keys: string[]): boolean {
  return keys.every((k) => q.get(k) === null || String(obj[k]) === q.get(k));
}
