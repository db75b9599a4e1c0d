/**
 * A Brightbox API simulator on 127.0.0.1: the OAuth2 token endpoint and the `/1.0` resources ccm uses
 * (servers, cloud IPs, load balancers, server groups, firewall policies and rules).
 *
 * Written from the official references (see test/fixtures/brightbox/SOURCES.md): resource paths and
 * JSON keys from brightbox/gobrightbox (struct tags, `v2/paths.yaml`, `v2/enums`), the action paths
 * (`cloud_ips/{id}/map|unmap`, `server_groups/{id}/add_servers|remove_servers`) from its client, the
 * error body (`error_name` + `errors`, OAuth's `error` + `error_description`) from its APIError.
 *
 * Strict where the references are: unknown option keys, values outside the enums, references to
 * resources that do not exist, a second policy on one server group, mapping a mapped cloud IP and
 * destroying a mapped one are all refused. Faults are injected per request or per write.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { FaultList, type Listening, listen, pathMatches, readBody } from '../http-core.js';

export type ServerStatus =
  | 'creating'
  | 'active'
  | 'inactive'
  | 'deleting'
  | 'deleted'
  | 'failed'
  | 'unavailable';

export interface SimInterface {
  id: string;
  ipv4: string;
  ipv6?: string;
}

export interface SimServer {
  id: string;
  name: string;
  status: ServerStatus;
  zone: string;
  serverType: string;
  interfaces: SimInterface[];
}

export interface SimCloudIP {
  id: string;
  name: string;
  publicIPv4: string;
  publicIPv6: string;
  reverseDNS: string;
  /** `lba-…` or `int-…` when mapped. */
  mappedTo?: string;
}

export interface SimListener {
  protocol: string;
  in: number;
  out: number;
  timeout: number;
  proxy_protocol: string | null;
}

export interface SimHealthcheck {
  type: string;
  port: number;
  request: string;
  interval: number;
  timeout: number;
  threshold_up: number;
  threshold_down: number;
}

export interface SimLoadBalancer {
  id: string;
  name: string;
  status: 'creating' | 'active' | 'deleting' | 'deleted' | 'failing' | 'failed';
  locked: boolean;
  policy: string;
  httpsRedirect: boolean;
  domains: string[];
  /** Let's Encrypt state of each domain; pending ones turn valid after `acmeReadsLeft` reads. */
  acme: Record<string, { status: 'pending' | 'valid' | 'invalid'; lastMessage: string | null }>;
  acmeReadsLeft: number;
  listeners: SimListener[];
  healthcheck: SimHealthcheck;
  nodes: string[];
  /** Reads left before a creating balancer turns active, or a deleting one disappears. */
  readsLeft: number;
}

export interface SimServerGroup {
  id: string;
  name: string;
  description: string;
  isDefault: boolean;
  servers: string[];
}

export interface SimFirewallPolicy {
  id: string;
  name: string;
  description: string;
  serverGroup?: string;
}

export interface SimFirewallRule {
  id: string;
  policy: string;
  protocol: string | null;
  source: string | null;
  sourcePort: string | null;
  destination: string | null;
  destinationPort: string | null;
  icmpTypeName: string | null;
  description: string | null;
}

export interface Fault {
  method?: string;
  /** Matched against the path without query; a string must be equal. */
  path?: string | RegExp;
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** How many matching requests fail (default 1). */
  times?: number;
  /** Carry the request out, then answer with the fault: the response is "lost". */
  apply?: boolean;
}

export interface SeenRequest {
  method: string;
  path: string;
  query: string;
  status: number;
}

export interface SimulatorOptions {
  clients?: Record<string, string>;
  accountId?: string;
  /** expires_in of issued tokens, seconds (default 7200). */
  tokenLifetimeSec?: number;
  /** Reads a new load balancer stays `creating` (default 1). */
  lbCreatingReads?: number;
  /** Reads of an active balancer with a cloud IP before its pending ACME domains are valid (default 1). */
  acmeValidReads?: number;
  /** Reads a deleted load balancer stays `deleting` before it is gone (default 1). */
  lbDeletingReads?: number;
}

const API_CLIENT_ID = 'cli-ccm01';
const API_CLIENT_SECRET = 'sim-secret-do-not-log';
export const SIM_CLIENT = { id: API_CLIENT_ID, secret: API_CLIENT_SECRET };

const POLICIES = ['least-connections', 'round-robin', 'source-address'];
const LISTENER_PROTOCOLS = ['tcp', 'http', 'https'];
const PROXY_PROTOCOLS = ['v1', 'v2', 'v2-ssl', 'v2-ssl-cn'];
const HEALTHCHECK_TYPES = ['tcp', 'http'];

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorName: string,
    readonly errors: string[],
  ) {
    super(errors.join('; '));
  }
}

const missing = (what: string) => new ApiError(404, 'missing_resource', [`Cannot find ${what}`]);
const invalid = (...errors: string[]) => new ApiError(422, 'invalid_record', errors);
const badParams = (...errors: string[]) => new ApiError(400, 'invalid_parameters', errors);
// gobrightbox v2.2.2 api_error.go declares the JSON error fields (`error_name` + `errors`, OAuth's
// `error` + `error_description`) but does not show that every error is JSON: its Error() falls back
// to ParseError (l.51) and HttpError (l.53), client.go newAPIError (l.192) reads a body that may be
// empty or not JSON, and api_error_test.go l.43-51 (TestAuthError) is a 401 with an empty body.
// NOT VERIFIED: that the real API answers an unknown route with a JSON body; the simulator does, and
// the name `no_route` is ours.
const noRoute = (method: string, path: string) =>
  new ApiError(404, 'no_route', [`No route matches ${method} ${path}`]);

export class BrightboxSimulator {
  readonly servers = new Map<string, SimServer>();
  readonly cloudIPs = new Map<string, SimCloudIP>();
  readonly loadBalancers = new Map<string, SimLoadBalancer>();
  readonly serverGroups = new Map<string, SimServerGroup>();
  readonly firewallPolicies = new Map<string, SimFirewallPolicy>();
  readonly firewallRules = new Map<string, SimFirewallRule>();
  readonly requests: SeenRequest[] = [];
  /** Every access token issued, valid or not; tests check that none reaches a log. */
  readonly issuedTokens: string[] = [];
  /** The `scope` of each token request ('' when it had none). */
  readonly tokenScopes: string[] = [];
  readonly accountId: string;
  tokenLifetimeSec: number;
  lbCreatingReads: number;
  acmeValidReads: number;
  lbDeletingReads: number;

  private readonly clients: Record<string, string>;
  private readonly tokens = new Map<string, number>();
  private readonly faults = new FaultList<Fault>(1);
  private writeFault?: { at: number; fault: Fault };
  private writes = 0;
  private serial = 0;
  private listening?: Listening;
  url = '';

  constructor(options: SimulatorOptions = {}) {
    this.clients = options.clients ?? { [API_CLIENT_ID]: API_CLIENT_SECRET };
    this.accountId = options.accountId ?? 'acc-ccm01';
    this.tokenLifetimeSec = options.tokenLifetimeSec ?? 7200;
    this.lbCreatingReads = options.lbCreatingReads ?? 1;
    this.acmeValidReads = options.acmeValidReads ?? 1;
    this.lbDeletingReads = options.lbDeletingReads ?? 1;
  }

  async start(): Promise<this> {
    this.listening = await listen(async (req, res) => this.handle(req, await readBody(req), res));
    this.url = this.listening.url;
    return this;
  }

  async close(): Promise<void> {
    await this.listening?.close();
  }

  // --- state helpers for tests ------------------------------------------------------------------

  private nextID(prefix: string): string {
    this.serial++;
    return `${prefix}-${this.serial.toString(36).padStart(5, '0')}`;
  }

  addServer(spec: Partial<SimServer> & { ipv4?: string; ipv6?: string } = {}): SimServer {
    const id = spec.id ?? this.nextID('srv');
    const n = this.servers.size + 1;
    const server: SimServer = {
      id,
      name: spec.name ?? '',
      status: spec.status ?? 'active',
      zone: spec.zone ?? 'gb1-a',
      serverType: spec.serverType ?? '2gb.ssd',
      interfaces: spec.interfaces ?? [
        {
          id: this.nextID('int'),
          ipv4: spec.ipv4 ?? `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
          ...(spec.ipv6 ? { ipv6: spec.ipv6 } : {}),
        },
      ],
    };
    this.servers.set(id, server);
    return server;
  }

  addCloudIP(spec: Partial<SimCloudIP> = {}): SimCloudIP {
    const id = spec.id ?? this.nextID('cip');
    const n = this.cloudIPs.size + 1;
    const cip: SimCloudIP = {
      id,
      name: spec.name ?? '',
      publicIPv4: spec.publicIPv4 ?? `109.107.${(n >> 8) & 255}.${n & 255}`,
      publicIPv6: spec.publicIPv6 ?? `2a02:1348:ffff:ffff::6d6b:${n.toString(16)}`,
      reverseDNS: spec.reverseDNS ?? `cip-${(n + 100).toString(36)}.gb1.brightbox.com`,
      ...(spec.mappedTo ? { mappedTo: spec.mappedTo } : {}),
    };
    this.cloudIPs.set(id, cip);
    return cip;
  }

  /**
   * A load balancer already there (e.g. one another controller made), with what the API gives one it
   * creates (newLoadBalancer) where `spec` leaves it out; its health check's fields one by one.
   */
  addLoadBalancer(
    spec: Partial<Omit<SimLoadBalancer, 'healthcheck'>> & { healthcheck?: Partial<SimHealthcheck> } = {},
  ): SimLoadBalancer {
    const fresh = this.newLoadBalancer(spec.id);
    const lb: SimLoadBalancer = {
      ...fresh,
      ...spec,
      healthcheck: { ...fresh.healthcheck, ...spec.healthcheck },
    };
    this.loadBalancers.set(lb.id, lb);
    return lb;
  }

  /** A load balancer as POST /1.0/load_balancers starts it, before the body's fields are applied. */
  private newLoadBalancer(id = this.nextID('lba')): SimLoadBalancer {
    return {
      id,
      name: '',
      status: 'creating',
      locked: false,
      policy: 'least-connections',
      httpsRedirect: false,
      domains: [],
      acme: {},
      acmeReadsLeft: 0,
      listeners: [],
      healthcheck: {
        type: 'tcp',
        port: 0,
        request: '/',
        interval: 5000,
        timeout: 5000,
        threshold_up: 3,
        threshold_down: 3,
      },
      nodes: [],
      readsLeft: this.lbCreatingReads,
    };
  }

  addServerGroup(spec: Partial<SimServerGroup> = {}): SimServerGroup {
    const group: SimServerGroup = {
      id: spec.id ?? this.nextID('grp'),
      name: spec.name ?? '',
      description: spec.description ?? '',
      isDefault: spec.isDefault ?? false,
      servers: spec.servers ?? [],
    };
    this.serverGroups.set(group.id, group);
    return group;
  }

  addFirewallPolicy(spec: Partial<SimFirewallPolicy> = {}): SimFirewallPolicy {
    const policy: SimFirewallPolicy = {
      id: spec.id ?? this.nextID('fwp'),
      name: spec.name ?? '',
      description: spec.description ?? '',
      ...(spec.serverGroup ? { serverGroup: spec.serverGroup } : {}),
    };
    this.firewallPolicies.set(policy.id, policy);
    return policy;
  }

  /** Empties every collection, the request log, the tokens and the faults, between tests. */
  reset(): void {
    for (const map of [
      this.servers,
      this.cloudIPs,
      this.loadBalancers,
      this.serverGroups,
      this.firewallPolicies,
      this.firewallRules,
      this.tokens,
    ])
      map.clear();
    for (const list of [this.requests, this.issuedTokens, this.tokenScopes]) list.length = 0;
    this.faults.clear();
    this.writeFault = undefined;
    this.writes = 0;
  }

  /** Every token issued so far stops working (as when the API expires them early). */
  expireTokens(): void {
    this.tokens.clear();
  }

  inject(fault: Fault): void {
    this.faults.add(fault);
  }

  /** The n-th API write (POST/PUT/DELETE under /1.0) from now on fails with the fault. */
  failWrite(n: number, fault: Omit<Fault, 'method' | 'path' | 'times'>): void {
    this.writeFault = { at: this.writes + n, fault };
  }

  /** API writes carried out or attempted so far. */
  get writeCount(): number {
    return this.writes;
  }

  count(method: string, path: string | RegExp): number {
    return this.requests.filter((r) => r.method === method && pathMatches(path, r.path)).length;
  }

  // --- HTTP ---------------------------------------------------------------------------------------

  private handle(req: IncomingMessage, text: string, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://sim');
    const method = req.method ?? 'GET';
    const seen: SeenRequest = { method, path: url.pathname, query: url.search, status: 0 };
    this.requests.push(seen);
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      seen.status = status;
      const payload = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
      res.writeHead(status, {
        'content-type': typeof body === 'string' ? 'text/plain' : 'application/json',
        ...headers,
      });
      res.end(payload);
    };

    const isWrite = url.pathname.startsWith('/1.0/') && method !== 'GET';
    let fault: Fault | undefined = this.faults.take(method, url.pathname);
    if (isWrite) {
      this.writes++;
      if (!fault && this.writeFault && this.writes === this.writeFault.at) {
        fault = this.writeFault.fault;
        this.writeFault = undefined;
      }
    }
    const answerFault = (f: Fault) =>
      send(f.status, f.body ?? { error_name: 'internal_error', errors: ['Simulated failure'] }, f.headers);
    if (fault && !fault.apply) {
      answerFault(fault);
      return;
    }

    try {
      const [status, body] = this.route(method, url, req, text);
      if (fault) answerFault(fault);
      else send(status, body);
    } catch (err) {
      if (fault) answerFault(fault);
      else if (err instanceof ApiError) {
        const body =
          err.errorName.startsWith('oauth:') || err.status === 401
            ? { error: err.errorName.replace(/^oauth:/, ''), error_description: err.message }
            : { error_name: err.errorName, errors: err.errors };
        send(err.status, body);
      } else {
        send(500, { error_name: 'internal_error', errors: [(err as Error).message] });
      }
    }
  }

  private route(method: string, url: URL, req: IncomingMessage, text: string): [number, unknown] {
    const path = url.pathname;
    if (path === '/token' || path === '/token/') {
      if (method !== 'POST') throw new ApiError(405, 'method_not_allowed', ['Use POST']);
      return [200, this.issueToken(req, text)];
    }
    if (!path.startsWith('/1.0/')) throw noRoute(method, path);
    this.authenticate(req);
    const account = url.searchParams.get('account_id');
    if (account !== null && account !== this.accountId) {
      throw new ApiError(403, 'forbidden', [`You do not have access to account ${account}`]);
    }
    const raw = method === 'GET' || method === 'DELETE' ? undefined : this.parseJSON(req, text);
    const parts = path.slice('/1.0/'.length).split('/');
    const [name, id, action] = parts;
    if (parts.length > 3 || !name) throw noRoute(method, path);
    const collection = Object.hasOwn(this.collections, name) ? this.collections[name] : undefined;
    // Only the load balancer actions take a JSON array.
    if (raw !== undefined && !collection?.arrays) objectBody(raw);
    if (!collection) throw noRoute(method, path);
    return this.serve(collection, method, path, id, action, raw);
  }

  /** A JSON object, or for the load balancer actions a JSON array (gobrightbox load_balancers.go). */
  private parseJSON(req: IncomingMessage, text: string): Record<string, unknown> | unknown[] {
    if (text === '') return {};
    if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
      throw badParams('Request body must be JSON (Content-Type: application/json)');
    }
    try {
      const parsed = JSON.parse(text) as unknown;
      if (parsed === null || typeof parsed !== 'object') throw new Error();
      return parsed as Record<string, unknown> | unknown[];
    } catch {
      throw badParams('Request body is not a JSON object');
    }
  }

  // --- OAuth2 -------------------------------------------------------------------------------------

  private issueToken(req: IncomingMessage, text: string): unknown {
    const auth = req.headers.authorization ?? '';
    const match = /^Basic ([A-Za-z0-9+/=]+)$/.exec(auth);
    if (!match?.[1]) throw new ApiError(401, 'oauth:invalid_client', ['Client authentication failed']);
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const form = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
    const id = form(decoded.slice(0, colon));
    const secret = form(decoded.slice(colon + 1));
    if (colon < 0 || this.clients[id] === undefined || this.clients[id] !== secret) {
      throw new ApiError(401, 'oauth:invalid_client', ['Client authentication failed']);
    }
    if (!(req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')) {
      throw new ApiError(400, 'oauth:invalid_request', ['Send the grant as a form']);
    }
    const grant = new URLSearchParams(text).get('grant_type');
    if (grant !== 'client_credentials') {
      throw new ApiError(400, 'oauth:unsupported_grant_type', [`Unsupported grant type ${grant}`]);
    }
    // gobrightbox v2 endpoint/constants.go: the scopes are infrastructure and orbit (k8ssdk asks for
    // both); RFC 6749 §3.3: space-separated, and an unknown one is invalid_scope.
    const scope = new URLSearchParams(text).get('scope') ?? '';
    if (scope.split(' ').some((s) => s !== '' && s !== 'infrastructure' && s !== 'orbit')) {
      throw new ApiError(400, 'oauth:invalid_scope', [`Unknown scope in "${scope}"`]);
    }
    this.tokenScopes.push(scope);
    const token = randomBytes(20).toString('hex');
    this.tokens.set(token, Date.now() + this.tokenLifetimeSec * 1000);
    this.issuedTokens.push(token);
    return { access_token: token, token_type: 'Bearer', expires_in: this.tokenLifetimeSec };
  }

  private authenticate(req: IncomingMessage): void {
    const match = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    const expires = match?.[1] ? this.tokens.get(match[1]) : undefined;
    if (expires === undefined || expires <= Date.now()) {
      throw new ApiError(401, 'oauth:invalid_token', ['The access token is invalid or has expired']);
    }
  }

  // --- rendering (gobrightbox struct tags) --------------------------------------------------------

  private account() {
    return {
      ...this.ref('account', this.accountId),
      name: 'ccm',
      status: 'active',
    };
  }

  private href(collection: string, id: string): string {
    return `${this.url}/1.0/${collection}/${id}`;
  }

  /** The three fields every gobrightbox resource starts with: its id, its resource_type and its URL. */
  private ref(resourceType: string, id: string, collection = `${resourceType}s`) {
    return { id, resource_type: resourceType, url: this.href(collection, id) };
  }

  private serverRef(s: SimServer) {
    return {
      ...this.ref('server', s.id),
      name: s.name,
      status: s.status,
      locked: false,
      hostname: s.id,
      fqdn: `${s.id}.gb1.brightbox.com`,
      created_at: '2026-01-01T00:00:00Z',
      started_at: '2026-01-01T00:01:00Z',
      deleted_at: s.status === 'deleted' ? '2026-01-02T00:00:00Z' : null,
    };
  }

  /** The servers of `ids` that still exist, as references. */
  private serverRefs(ids: string[]) {
    return ids.flatMap((id) => {
      const s = this.servers.get(id);
      return s ? [this.serverRef(s)] : [];
    });
  }

  private cloudIPRef(c: SimCloudIP) {
    return {
      ...this.ref('cloud_ip', c.id),
      status: c.mappedTo ? 'mapped' : 'unmapped',
      public_ip: c.publicIPv4,
      public_ipv4: c.publicIPv4,
      public_ipv6: c.publicIPv6,
      fqdn: `${c.id}.gb1.brightbox.com`,
      reverse_dns: c.reverseDNS,
      name: c.name,
    };
  }

  private renderServer(s: SimServer) {
    const interfaceIDs = new Set(s.interfaces.map((i) => i.id));
    return {
      ...this.serverRef(s),
      user_data: null,
      compatibility_mode: false,
      disk_encrypted: false,
      account: this.account(),
      image: {
        id: 'img-ubnt1',
        resource_type: 'image',
        name: 'ubuntu-noble-24.04-amd64-server',
        status: 'available',
      },
      zone: {
        id: `zon-${s.zone
          .replace(/[^a-z0-9]/g, '')
          .slice(-5)
          .padStart(5, '0')}`,
        resource_type: 'zone',
        handle: s.zone,
      },
      server_type: {
        id: 'typ-ccm01',
        resource_type: 'server_type',
        name: s.serverType,
        status: 'available',
        handle: s.serverType,
        cores: 2,
        ram: 2048,
        disk_size: 81920,
      },
      cloud_ips: [...this.cloudIPs.values()]
        .filter((c) => c.mappedTo && interfaceIDs.has(c.mappedTo))
        .map((c) => this.cloudIPRef(c)),
      interfaces: s.interfaces.map((i) => ({
        ...this.ref('interface', i.id),
        mac_address: '02:24:19:00:00:ee',
        ipv4_address: i.ipv4,
        ...(i.ipv6 ? { ipv6_address: i.ipv6 } : {}),
      })),
      server_groups: [...this.serverGroups.values()]
        .filter((g) => g.servers.includes(s.id))
        .map((g) => this.groupRef(g)),
      snapshots: [],
      volumes: [],
    };
  }

  private renderCloudIP(c: SimCloudIP) {
    const lb = c.mappedTo?.startsWith('lba-') ? this.loadBalancers.get(c.mappedTo) : undefined;
    const server = c.mappedTo?.startsWith('int-')
      ? [...this.servers.values()].find((s) => s.interfaces.some((i) => i.id === c.mappedTo))
      : undefined;
    return {
      ...this.cloudIPRef(c),
      mode: 'nat',
      port_translators: [],
      account: this.account(),
      interface: server ? { id: c.mappedTo, resource_type: 'interface' } : null,
      server: server ? this.serverRef(server) : null,
      load_balancer: lb
        ? { id: lb.id, resource_type: 'load_balancer', name: lb.name, status: lb.status }
        : null,
      server_group: null,
      database_server: null,
    };
  }

  private renderLoadBalancer(lb: SimLoadBalancer) {
    return {
      ...this.ref('load_balancer', lb.id),
      name: lb.name,
      status: lb.status,
      locked: lb.locked,
      created_at: '2026-01-01T00:00:00Z',
      deleted_at: lb.status === 'deleted' ? '2026-01-02T00:00:00Z' : null,
      policy: lb.policy,
      buffer_size: 4096,
      https_redirect: lb.httpsRedirect,
      ssl_minimum_version: 'TLSv1.2',
      listeners: lb.listeners,
      healthcheck: lb.healthcheck,
      acme: {
        certificate: null,
        domains: lb.domains.map((d) => ({
          identifier: d,
          status: lb.acme[d]?.status ?? 'pending',
          last_message: lb.acme[d]?.lastMessage ?? null,
        })),
      },
      certificate: null,
      account: this.account(),
      cloud_ips: [...this.cloudIPs.values()]
        .filter((c) => c.mappedTo === lb.id)
        .map((c) => this.cloudIPRef(c)),
      nodes: this.serverRefs(lb.nodes),
    };
  }

  private groupRef(g: SimServerGroup) {
    return {
      ...this.ref('server_group', g.id),
      name: g.name,
      description: g.description || null,
      created_at: '2026-01-01T00:00:00Z',
      default: g.isDefault,
    };
  }

  private renderGroup(g: SimServerGroup) {
    const policy = [...this.firewallPolicies.values()].find((p) => p.serverGroup === g.id);
    return {
      ...this.groupRef(g),
      fqdn: `${g.id}.gb1.brightbox.com`,
      account: this.account(),
      firewall_policy: policy ? this.policyRef(policy) : null,
      servers: this.serverRefs(g.servers),
    };
  }

  private policyRef(p: SimFirewallPolicy) {
    return {
      ...this.ref('firewall_policy', p.id, 'firewall_policies'),
      default: false,
      name: p.name,
      created_at: '2026-01-01T00:00:00Z',
      description: p.description || null,
    };
  }

  private renderPolicy(p: SimFirewallPolicy) {
    const group = p.serverGroup ? this.serverGroups.get(p.serverGroup) : undefined;
    return {
      ...this.policyRef(p),
      account: this.account(),
      server_group: group ? this.groupRef(group) : null,
      rules: [...this.firewallRules.values()].filter((r) => r.policy === p.id).map((r) => this.ruleRef(r)),
    };
  }

  private ruleRef(r: SimFirewallRule) {
    return {
      ...this.ref('firewall_rule', r.id),
      source: r.source,
      source_port: r.sourcePort,
      destination: r.destination,
      destination_port: r.destinationPort,
      protocol: r.protocol,
      icmp_type_name: r.icmpTypeName,
      description: r.description,
      created_at: '2026-01-01T00:00:00Z',
    };
  }

  private renderRule(r: SimFirewallRule) {
    const policy = this.firewallPolicies.get(r.policy);
    return { ...this.ruleRef(r), firewall_policy: policy ? this.policyRef(policy) : null };
  }

  // --- resources ----------------------------------------------------------------------------------

  private find<T>(map: Map<string, T>, id: string, what: string): T {
    const found = map.get(id);
    if (!found) throw missing(`${what} ${id}`);
    return found;
  }

  /** A domain Let's Encrypt will not validate (e.g. its name does not resolve to the cloud IP). */
  rejectDomain(lbID: string, domain: string, message: string): void {
    const lb = this.loadBalancers.get(lbID);
    if (!lb?.acme[domain]) throw new Error(`no ACME domain ${domain} on ${lbID}`);
    lb.acme[domain] = { status: 'invalid', lastMessage: message };
  }

  /**
   * The official controller waits for every ACME domain to be `valid` (k8ssdk v2
   * brightbox_interface.go ErrorIfAcmeNotComplete; brightbox-cloud-controller-manager
   * load_balancer_test.go TestErrorIfAcmeNotComplete: pending, valid, invalid with a last_message).
   * Let's Encrypt reaches the balancer through its cloud IP, so the domains are validated some reads
   * after it is active with one mapped.
   */
  private advanceAcme(lb: SimLoadBalancer): void {
    if (lb.status !== 'active' || ![...this.cloudIPs.values()].some((c) => c.mappedTo === lb.id)) return;
    if (lb.acmeReadsLeft > 0) {
      lb.acmeReadsLeft--;
      return;
    }
    for (const state of Object.values(lb.acme)) if (state.status === 'pending') state.status = 'valid';
  }

  /**
   * A read of a load balancer moves it along: creating → active, deleting → deleted. A deleted
   * balancer stays in the listing and answers its GET, with status `deleted`: k8ssdk v2.1.1
   * brightbox_interface.go keeps only active or creating balancers of the listing (isAlive l.69-70,
   * GetLoadBalancerByName l.93), and the official controller reads the balancer by id after its
   * DELETE and takes one not alive as erased (load_balancer_cloud.go l.122-128, k8ssdk
   * ErrorIfNotErased l.575). How long the real API keeps deleted records is not shown upstream.
   */
  private advance(lb: SimLoadBalancer): SimLoadBalancer {
    this.advanceAcme(lb);
    if (lb.status === 'creating' || lb.status === 'deleting') {
      if (lb.readsLeft > 0) {
        lb.readsLeft--;
        return lb;
      }
      lb.status = lb.status === 'creating' ? 'active' : 'deleted';
    }
    return lb;
  }

  private buildLoadBalancer(
    body: Record<string, unknown>,
    current: SimLoadBalancer | undefined,
  ): SimLoadBalancer {
    allowOnly(body, [
      'name',
      'nodes',
      'policy',
      'listeners',
      'healthcheck',
      'domains',
      'certificate_pem',
      'certificate_private_key',
      'ssl_minimum_version',
      'https_redirect',
      'buffer_size',
    ]);
    const lb: SimLoadBalancer = current ? { ...current } : this.newLoadBalancer();
    const name = optionalString(body, 'name');
    if (name !== undefined) lb.name = name;
    if (body.policy !== undefined) lb.policy = oneOf(body.policy, POLICIES, 'policy');
    if (body.https_redirect !== undefined) {
      if (typeof body.https_redirect !== 'boolean') throw invalid('https_redirect must be true or false');
      lb.httpsRedirect = body.https_redirect;
    }
    if (body.domains !== undefined) {
      if (!Array.isArray(body.domains) || body.domains.some((d) => typeof d !== 'string' || d === '')) {
        throw invalid('domains must be a list of names');
      }
      lb.domains = body.domains as string[];
      // A new name starts pending; one the certificate already covers keeps its state.
      const before = lb.acme;
      lb.acme = Object.fromEntries(
        lb.domains.map((d) => [d, before[d] ?? { status: 'pending' as const, lastMessage: null }]),
      );
      if (lb.domains.some((d) => lb.acme[d]?.status === 'pending')) lb.acmeReadsLeft = this.acmeValidReads;
    }
    // gobrightbox LoadBalancerOptions.Nodes is omitempty (load_balancers.go l.91): the SDK leaves out
    // an empty list, and a balancer keeps its nodes. NOT VERIFIED: the real API's answer to an
    // explicit `"nodes": []` is not shown upstream; the simulator accepts it and empties the list.
    if (body.nodes !== undefined) {
      if (!Array.isArray(body.nodes)) throw invalid('nodes must be a list');
      lb.nodes = this.parseNodes(body.nodes);
    }
    if (body.listeners !== undefined) {
      if (!Array.isArray(body.listeners)) throw invalid('listeners must be a list');
      lb.listeners = body.listeners.map(parseListener);
      if (new Set(lb.listeners.map((l) => l.in)).size !== lb.listeners.length) {
        throw invalid('two listeners share an incoming port');
      }
    }
    if (body.healthcheck !== undefined) {
      const hc = asObject(body.healthcheck, 'healthcheck');
      allowOnly(hc, ['type', 'port', 'request', 'interval', 'timeout', 'threshold_up', 'threshold_down']);
      lb.healthcheck = {
        type: oneOf(hc.type, HEALTHCHECK_TYPES, 'healthcheck type'),
        port: port(hc.port, 'healthcheck port'),
        request: hc.request === undefined ? '/' : requiredString(hc, 'request'),
        interval: hc.interval === undefined ? 5000 : positive(hc.interval, 'healthcheck interval'),
        timeout: hc.timeout === undefined ? 5000 : positive(hc.timeout, 'healthcheck timeout'),
        threshold_up: hc.threshold_up === undefined ? 3 : positive(hc.threshold_up, 'threshold_up'),
        threshold_down: hc.threshold_down === undefined ? 3 : positive(hc.threshold_down, 'threshold_down'),
      };
    }
    if (lb.listeners.length === 0) throw invalid('A load balancer needs at least one listener');
    if (lb.healthcheck.port === 0) throw invalid('healthcheck is required');
    if (
      lb.listeners.some((l) => l.protocol === 'https') &&
      lb.domains.length === 0 &&
      body.certificate_pem === undefined
    ) {
      throw invalid("An https listener needs domains (Let's Encrypt) or a certificate");
    }
    return lb;
  }

  private parseNodes(list: unknown[]): string[] {
    const ids = list.map((n) => {
      const node = asObject(n, 'node');
      allowOnly(node, ['node']);
      const id = requiredString(node, 'node');
      // NOT VERIFIED: no upstream file shows how the API answers a node that is not a server of the
      // account, nor one that is deleted or failed. Refusing an unknown id is our assumption (as for
      // every reference to a resource that does not exist); a server in any status is accepted, since
      // nothing upstream shows a refusal (the official controller sends its Nodes' servers as they are).
      if (!this.servers.has(id)) throw invalid(`Node ${id} is not a server of this account`);
      return id;
    });
    if (new Set(ids).size !== ids.length) throw invalid('nodes lists a server twice');
    return ids;
  }

  /**
   * The collections of the API, /1.0/<name>[/<id>[/<action>]], one row each; `serve` answers all of
   * them alike. A row holds only what its collection does of its own.
   */
  readonly collections: Record<string, Collection<unknown>> = {
    servers: row<SimServer>({
      items: this.servers,
      what: 'server',
      render: (s) => this.renderServer(s),
      readOnly: true,
    }),
    cloud_ips: row<SimCloudIP>({
      items: this.cloudIPs,
      what: 'cloud IP',
      render: (c) => this.renderCloudIP(c),
      create: (body) => {
        allowOnly(body, ['name', 'reverse_dns', 'port_translators', 'mode']);
        const cip = this.addCloudIP({ name: optionalString(body, 'name') ?? '' });
        const reverse = optionalString(body, 'reverse_dns');
        if (reverse) cip.reverseDNS = reverse;
        return cip;
      },
      update: (cip, body) => {
        allowOnly(body, ['name', 'reverse_dns', 'port_translators']);
        const name = optionalString(body, 'name');
        if (name !== undefined) cip.name = name;
        return cip;
      },
      destroy: (cip) => {
        if (cip.mappedTo) throw invalid(`Cloud IP ${cip.id} is mapped; unmap it before destroying it`);
        // gobrightbox v2 *_default_test.go (TestDestroyCloudIP, TestDestroyFirewallRule,
        // TestDestroyFirewallPolicy, TestDestroyServerGroup) and terraform-provider-brightbox's
        // Destroy calls: DELETE answers the resource's JSON, which the SDK decodes (an empty body is
        // its parse error).
        // `serve` answers every DELETE so.
      },
      actions: {
        map: post((cip, raw) => {
          const body = objectBody(raw);
          allowOnly(body, ['destination']);
          const destination = requiredString(body, 'destination');
          if (cip.mappedTo) throw invalid(`Cloud IP ${cip.id} is already mapped; unmap it first`);
          if (destination.startsWith('lba-')) {
            const lb = this.find(this.loadBalancers, destination, 'load balancer');
            if (lb.status === 'deleting' || lb.status === 'deleted')
              throw invalid(`Load balancer ${lb.id} is ${lb.status}`);
            cip.mappedTo = destination;
          } else if (destination.startsWith('int-') || destination.startsWith('srv-')) {
            const server = destination.startsWith('srv-')
              ? this.find(this.servers, destination, 'server')
              : [...this.servers.values()].find((s) => s.interfaces.some((i) => i.id === destination));
            if (!server?.interfaces[0]) throw missing(`interface ${destination}`);
            cip.mappedTo = destination.startsWith('srv-') ? server.interfaces[0].id : destination;
          } else {
            throw invalid(`${destination} cannot receive a cloud IP`);
          }
        }),
        unmap: post((cip, raw) => {
          allowOnly(objectBody(raw), []);
          if (!cip.mappedTo) throw invalid(`Cloud IP ${cip.id} is not mapped`);
          cip.mappedTo = undefined;
        }),
      },
    }),
    load_balancers: row<SimLoadBalancer>({
      items: this.loadBalancers,
      what: 'load balancer',
      render: (lb) => this.renderLoadBalancer(lb),
      read: (lb) => this.advance(lb),
      arrays: true,
      create: (body) => {
        const lb = this.buildLoadBalancer(body, undefined);
        this.loadBalancers.set(lb.id, lb);
        return lb;
      },
      update: (found, body) => {
        if (found.status !== 'active') throw invalid(`Load balancer ${found.id} is ${found.status}`);
        return this.buildLoadBalancer(body, found);
      },
      updateStatus: 202,
      destroy: (found) => {
        // terraform-provider-brightbox data_source_brightbox_image.go: a locked resource "cannot be
        // deleted". The status and error name are our assumption.
        if (found.locked) throw new ApiError(409, 'resource_locked', [`Load balancer ${found.id} is locked`]);
        if (found.status === 'deleting' || found.status === 'deleted')
          throw invalid(`Load balancer ${found.id} is ${found.status}`);
        found.status = 'deleting';
        found.readsLeft = this.lbDeletingReads;
        for (const c of this.cloudIPs.values()) if (c.mappedTo === found.id) c.mappedTo = undefined;
        return 'keep';
      },
      /*
       * gobrightbox v2 load_balancers.go and load_balancers_test.go: add_nodes and remove_nodes POST a
       * JSON array `[{"node":"srv-…"}]`, add_listeners and remove_listeners an array of listeners; each
       * answers the balancer. load_balancers_default.go: lock_resource and unlock_resource are PUTs with
       * no body that answer the balancer too.
       */
      actions: {
        lock_resource: { method: 'PUT', status: 200, run: (lb, raw) => this.lock(lb, raw, true) },
        unlock_resource: { method: 'PUT', status: 200, run: (lb, raw) => this.lock(lb, raw, false) },
        add_nodes: post((lb, raw) => this.changeNodes(lb, raw, 'add_nodes')),
        remove_nodes: post((lb, raw) => this.changeNodes(lb, raw, 'remove_nodes')),
        add_listeners: post((lb, raw) => this.changeListeners(lb, raw, 'add_listeners')),
        remove_listeners: post((lb, raw) => this.changeListeners(lb, raw, 'remove_listeners')),
      },
    }),
    server_groups: row<SimServerGroup>({
      items: this.serverGroups,
      what: 'server group',
      render: (g) => this.renderGroup(g),
      create: (body) => {
        allowOnly(body, ['name', 'description']);
        return this.addServerGroup(nameAndDescription(body));
      },
      update: (group, body) => {
        allowOnly(body, ['name', 'description']);
        updateNameAndDescription(group, body);
        return group;
      },
      destroy: (group) => {
        if (group.isDefault) throw invalid('The default server group cannot be destroyed');
        // A group with a firewall policy applied is destroyed: the official controller destroys the
        // group before its policy (brightbox-cloud-controller-manager load_balancer_cloud.go l.109
        // ensureServerGroupDeleted, then l.112 ensureFirewallClosed), so the real API accepts it.
        // NOT VERIFIED: that the policy is then applied to no group (server_group null); nothing
        // upstream shows the policy afterwards.
        for (const p of this.firewallPolicies.values())
          if (p.serverGroup === group.id) p.serverGroup = undefined;
        // As for cloud IPs: DELETE answers the group (gobrightbox server_groups_default_test.go).
      },
      actions: {
        add_servers: post((group, raw) => this.changeMembers(group, raw, 'add_servers')),
        remove_servers: post((group, raw) => this.changeMembers(group, raw, 'remove_servers')),
      },
    }),
    firewall_policies: row<SimFirewallPolicy>({
      items: this.firewallPolicies,
      what: 'firewall policy',
      render: (p) => this.renderPolicy(p),
      create: (body) => {
        allowOnly(body, ['name', 'description', 'server_group']);
        const serverGroup = optionalString(body, 'server_group');
        this.checkGroup(serverGroup);
        return this.addFirewallPolicy({
          ...nameAndDescription(body),
          ...(serverGroup ? { serverGroup } : {}),
        });
      },
      update: (policy, body) => {
        allowOnly(body, ['name', 'description', 'server_group']);
        const serverGroup = optionalString(body, 'server_group');
        this.checkGroup(serverGroup, policy.id);
        updateNameAndDescription(policy, body);
        if (serverGroup !== undefined) policy.serverGroup = serverGroup;
        return policy;
      },
      // As for cloud IPs: DELETE answers the policy (gobrightbox firewall_policies_default_test.go).
      destroyed: (policy) => {
        for (const r of [...this.firewallRules.values()])
          if (r.policy === policy.id) this.firewallRules.delete(r.id);
      },
      // gobrightbox v2 firewall_policies.go and firewall_policies_test.go: apply_to and remove POST
      // {"server_group": "grp-…"} and answer the policy; terraform-provider-brightbox
      // resource_brightbox_firewall_policy.go re-points a policy by remove, then apply_to.
      actions: {
        apply_to: post((policy, raw) => this.applyPolicy(policy, raw, 'apply_to')),
        remove: post((policy, raw) => this.applyPolicy(policy, raw, 'remove')),
      },
    }),
    firewall_rules: row<SimFirewallRule>({
      items: this.firewallRules,
      what: 'firewall rule',
      render: (r) => this.renderRule(r),
      unlisted: true,
      create: (body) => {
        allowOnly(body, ['firewall_policy', ...RULE_FIELDS]);
        const policy = this.find(
          this.firewallPolicies,
          requiredString(body, 'firewall_policy'),
          'firewall policy',
        );
        const rule = applyRule(body, {
          id: this.nextID('fwr'),
          policy: policy.id,
          protocol: null,
          source: null,
          sourcePort: null,
          destination: null,
          destinationPort: null,
          icmpTypeName: null,
          description: null,
        });
        this.firewallRules.set(rule.id, rule);
        return rule;
      },
      update: (rule, body) => {
        allowOnly(body, RULE_FIELDS);
        return applyRule(body, { ...rule });
      },
      // As for cloud IPs: DELETE answers the rule (gobrightbox firewall_rules_default_test.go).
    }),
  };

  /**
   * One request to a collection. Every collection answers in the shape gobrightbox v2's generated
   * *_default.go clients expect: GET a list or the resource (200); POST the new resource, PUT and
   * the actions the changed one (202; PUT 200 unless the row says otherwise); a method the collection
   * lacks 405, an unknown action no_route. DELETE answers the resource it destroyed: gobrightbox v2
   * *_default_test.go (TestDestroyCloudIP, TestDestroyFirewallRule, TestDestroyFirewallPolicy,
   * TestDestroyServerGroup) and terraform-provider-brightbox's Destroy calls decode the resource's JSON
   * (an empty body is their parse error).
   */
  private serve<T>(
    c: Collection<T>,
    method: string,
    path: string,
    id: string | undefined,
    action: string | undefined,
    raw: RawBody = {},
  ): [number, unknown] {
    if (c.readOnly && (method !== 'GET' || action)) throw noRoute(method, path);
    const body = id && action ? {} : objectBody(raw);
    if (!id) {
      if (method === 'GET' && !c.unlisted)
        return [200, [...c.items.values()].map((i) => c.render(c.read?.(i) ?? i))];
      if (method === 'POST' && c.create) return [202, c.render(c.create(body))];
      return [405, { error_name: 'method_not_allowed', errors: [method] }];
    }
    if (action && !c.actions) throw noRoute(method, path);
    const item = this.find(c.items, id, c.what);
    if (action) {
      const act = c.actions && Object.hasOwn(c.actions, action) ? c.actions[action] : undefined;
      if (act?.method !== method) throw noRoute(method, path);
      act.run(item, raw);
      return [act.status ?? 202, c.render(item)];
    }
    if (method === 'GET') return [200, c.render(c.read?.(item) ?? item)];
    if (method === 'PUT' && c.update) {
      const updated = c.update(item, body);
      c.items.set(id, updated);
      return [c.updateStatus ?? 200, c.render(updated)];
    }
    if (method === 'DELETE') {
      const keep = c.destroy?.(item) === 'keep';
      const answer = c.render(item);
      if (keep) return [202, answer];
      c.items.delete(id);
      c.destroyed?.(item);
      return [202, answer];
    }
    return [405, { error_name: 'method_not_allowed', errors: [method] }];
  }

  private lock(lb: SimLoadBalancer, raw: RawBody, locked: boolean): void {
    allowOnly(objectBody(raw), []);
    lb.locked = locked;
  }

  /** A non-empty JSON array, to a balancer that is active (add_nodes … remove_listeners). */
  private balancerArray(lb: SimLoadBalancer, raw: RawBody, action: string): unknown[] {
    if (!Array.isArray(raw) || raw.length === 0) throw invalid(`${action} takes a non-empty JSON array`);
    if (lb.status !== 'active') throw invalid(`Load balancer ${lb.id} is ${lb.status}`);
    return raw;
  }

  private changeNodes(lb: SimLoadBalancer, raw: RawBody, action: 'add_nodes' | 'remove_nodes'): void {
    const ids = this.parseNodes(this.balancerArray(lb, raw, action));
    for (const node of ids) {
      const member = lb.nodes.includes(node);
      if (action === 'add_nodes' && member) throw invalid(`Node ${node} is already on ${lb.id}`);
      if (action === 'remove_nodes' && !member) throw invalid(`Node ${node} is not on ${lb.id}`);
    }
    lb.nodes = action === 'add_nodes' ? [...lb.nodes, ...ids] : lb.nodes.filter((n) => !ids.includes(n));
  }

  private changeListeners(
    lb: SimLoadBalancer,
    raw: RawBody,
    action: 'add_listeners' | 'remove_listeners',
  ): void {
    const listeners = this.balancerArray(lb, raw, action).map(parseListener);
    if (action === 'add_listeners') {
      const ports = [...lb.listeners, ...listeners].map((l) => l.in);
      if (new Set(ports).size !== ports.length) throw invalid('two listeners share an incoming port');
      lb.listeners = [...lb.listeners, ...listeners];
      return;
    }
    const same = (a: SimListener, b: SimListener) =>
      a.protocol === b.protocol && a.in === b.in && a.out === b.out;
    for (const l of listeners) {
      if (!lb.listeners.some((x) => same(x, l))) throw invalid(`No listener ${l.protocol} ${l.in}:${l.out}`);
    }
    const left = lb.listeners.filter((x) => !listeners.some((l) => same(x, l)));
    if (left.length === 0) throw invalid('A load balancer needs at least one listener');
    lb.listeners = left;
  }

  private changeMembers(group: SimServerGroup, raw: RawBody, action: 'add_servers' | 'remove_servers'): void {
    const body = objectBody(raw);
    allowOnly(body, ['servers']);
    if (!Array.isArray(body.servers) || body.servers.length === 0)
      throw invalid('servers must be a non-empty list');
    const ids = body.servers.map((s) => {
      const member = asObject(s, 'server');
      allowOnly(member, ['server']);
      const serverID = requiredString(member, 'server');
      if (!this.servers.has(serverID)) throw invalid(`Server ${serverID} is not a server of this account`);
      return serverID;
    });
    if (action === 'add_servers') {
      for (const s of ids)
        if (group.servers.includes(s)) throw invalid(`Server ${s} is already in ${group.id}`);
      group.servers.push(...ids);
    } else {
      for (const s of ids) if (!group.servers.includes(s)) throw invalid(`Server ${s} is not in ${group.id}`);
      group.servers = group.servers.filter((s) => !ids.includes(s));
    }
  }

  /** A server group a policy may be applied to: one that exists and has no other policy. */
  private checkGroup(groupID: string | undefined, self?: string): void {
    if (groupID === undefined) return;
    this.find(this.serverGroups, groupID, 'server group');
    const other = [...this.firewallPolicies.values()].find((p) => p.serverGroup === groupID && p.id !== self);
    if (other) throw invalid(`Server group ${groupID} already has firewall policy ${other.id}`);
  }

  private applyPolicy(policy: SimFirewallPolicy, raw: RawBody, action: 'apply_to' | 'remove'): void {
    const body = objectBody(raw);
    allowOnly(body, ['server_group']);
    const groupID = requiredString(body, 'server_group');
    if (action === 'apply_to') {
      if (policy.serverGroup) {
        throw invalid(`Firewall policy ${policy.id} is applied to ${policy.serverGroup}; remove it first`);
      }
      this.checkGroup(groupID, policy.id);
      policy.serverGroup = groupID;
    } else {
      this.find(this.serverGroups, groupID, 'server group');
      if (policy.serverGroup !== groupID) {
        throw invalid(`Firewall policy ${policy.id} is not applied to ${groupID}`);
      }
      policy.serverGroup = undefined;
    }
  }
}

type RawBody = Record<string, unknown> | unknown[];

/** One collection of the API: what `serve` needs to answer it, and what it does of its own. */
interface Collection<T> {
  items: Map<string, T>;
  what: string;
  render(item: T): unknown;
  /** GET only (servers): any other method, or an action, is no_route. */
  readOnly?: boolean;
  /** GET /1.0/<name> is 405 (firewall rules are read through their policy). */
  unlisted?: boolean;
  /** What a GET sees: a load balancer moves on as it is read. */
  read?(item: T): T;
  /** Its bodies may be JSON arrays (the load balancer actions); others must be objects. */
  arrays?: boolean;
  create?(body: Record<string, unknown>): T;
  update?(item: T, body: Record<string, unknown>): T;
  updateStatus?: number;
  /** DELETE's refusals and side effects, before the answer is rendered; 'keep' leaves it listed. */
  destroy?(item: T): 'keep' | undefined;
  /** DELETE's clean-up after the item is gone. */
  destroyed?(item: T): void;
  actions?: Record<string, Action<T>>;
}

/** An action, POST /1.0/<collection>/<id>/<action>, or a PUT that answers 200 (lock_resource). */
interface Action<T> {
  method: 'POST' | 'PUT';
  status?: number;
  run(item: T, raw: RawBody): void;
}

const post = <T>(run: Action<T>['run']): Action<T> => ({ method: 'POST', run });

const row = <T>(c: Collection<T>) => c as unknown as Collection<unknown>;

const RULE_FIELDS = [
  'protocol',
  'source',
  'source_port',
  'destination',
  'destination_port',
  'icmp_type_name',
  'description',
];

/** Sets a firewall rule's fields from a create or update body and checks the result. */
function applyRule(body: Record<string, unknown>, rule: SimFirewallRule): SimFirewallRule {
  // gobrightbox v2 firewall_rules.go FirewallRuleOptions: every field is omitempty, so no
  // reference sends null (a destination is never cleared by one); the simulator refuses it.
  const get = (key: string) => {
    if (body[key] === null) throw invalid(`${key} may not be null; leave it out`);
    return optionalString(body, key);
  };
  const set = <K extends keyof SimFirewallRule>(key: K, value: SimFirewallRule[K] | undefined) => {
    if (value !== undefined) rule[key] = value;
  };
  set('protocol', get('protocol'));
  set('source', get('source'));
  set('sourcePort', get('source_port'));
  set('destination', get('destination'));
  set('destinationPort', get('destination_port'));
  set('icmpTypeName', get('icmp_type_name'));
  set('description', get('description'));
  if (
    rule.protocol !== null &&
    !['tcp', 'udp', 'icmp'].includes(rule.protocol) &&
    !/^\d+$/.test(rule.protocol)
  ) {
    throw invalid(`protocol ${rule.protocol} is not tcp, udp, icmp or a protocol number`);
  }
  if (!rule.source && !rule.destination) throw invalid('A firewall rule needs a source or a destination');
  const ports = rule.destinationPort ?? '';
  if (ports && !/^\d{1,5}(-\d{1,5})?(,\d{1,5}(-\d{1,5})?)*$/.test(ports)) {
    throw invalid(`destination_port ${ports} is not a list of ports or ranges`);
  }
  return rule;
}

function allowOnly(body: Record<string, unknown>, keys: string[]): void {
  const unknown = Object.keys(body).filter((k) => !keys.includes(k));
  if (unknown.length > 0) throw badParams(`Unknown parameters: ${unknown.join(', ')}`);
}

function parseListener(value: unknown): SimListener {
  const listener = asObject(value, 'listener');
  allowOnly(listener, ['protocol', 'in', 'out', 'timeout', 'proxy_protocol']);
  return {
    protocol: oneOf(listener.protocol, LISTENER_PROTOCOLS, 'listener protocol'),
    in: port(listener.in, 'listener in'),
    out: port(listener.out, 'listener out'),
    timeout: listener.timeout === undefined ? 50000 : positive(listener.timeout, 'listener timeout'),
    // gobrightbox v2 load_balancers.go LoadBalancerListener: proxy_protocol is omitempty, so no
    // reference ever sends null; the API does not document it, and the simulator refuses it.
    proxy_protocol:
      listener.proxy_protocol === undefined
        ? null
        : oneOf(listener.proxy_protocol, PROXY_PROTOCOLS, 'proxy_protocol'),
  };
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    throw invalid(`${what} must be an object`);
  return value as Record<string, unknown>;
}

function optionalString(body: Record<string, unknown>, key: string): string | undefined {
  const value = body[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(`${key} must be a string`);
  return value;
}

/** A new server group's or firewall policy's name and description (gobrightbox ServerGroupOptions, FirewallPolicyOptions): empty when left out. */
function nameAndDescription(body: Record<string, unknown>): { name: string; description: string } {
  return { name: optionalString(body, 'name') ?? '', description: optionalString(body, 'description') ?? '' };
}

/** An update changes the name and description it names, once both are valid. */
function updateNameAndDescription(
  target: { name: string; description: string },
  body: Record<string, unknown>,
): void {
  const name = optionalString(body, 'name');
  const description = optionalString(body, 'description');
  if (name !== undefined) target.name = name;
  if (description !== undefined) target.description = description;
}

function requiredString(body: Record<string, unknown>, key: string): string {
  const value = optionalString(body, key);
  if (!value) throw invalid(`${key} is required`);
  return value;
}

function oneOf(value: unknown, allowed: string[], what: string): string {
  if (typeof value !== 'string' || !allowed.includes(value)) {
    throw invalid(`${what} must be one of ${allowed.join(', ')}`);
  }
  return value;
}

function port(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    throw invalid(`${what} must be a port number`);
  }
  return value;
}

function positive(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 2 ** 32 - 1) {
    throw invalid(`${what} must be a positive number`);
  }
  return value;
}

export async function startBrightboxSimulator(options?: SimulatorOptions): Promise<BrightboxSimulator> {
  return new BrightboxSimulator(options).start();
}

function objectBody(raw: Record<string, unknown> | unknown[]): Record<string, unknown> {
  if (Array.isArray(raw)) throw badParams('Request body must be a JSON object');
  return raw;
}
