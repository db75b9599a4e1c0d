/**
 * An OpenStack simulator on one loopback port: Keystone v3, Nova, Neutron and Octavia behind path
 * prefixes named in the catalog (/identity/v3, /compute/v2.1, /network, /load-balancer); the
 * internal and admin interfaces have URLs of their own (/internal/…, /admin/…), so that a client
 * that picks the wrong one is seen to. Each service's version document is served without a token,
 * as the real services do. Payloads
 * are built from the api-ref samples in test/fixtures/openstack (see NOTICE there), field for field;
 * requests are validated as strictly as the real APIs do (unknown token → 401, bad microversion →
 * 406, bad limit/marker → 400, changes to a PENDING_* load balancer → 409) and faults can be injected.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { FaultList, findRoute, type Listening, listen, type Route, readBody } from '../http-core.js';
import { HttpError } from './http-error.js';
import { NeutronRouting } from './neutron-routes.js';
import { OctaviaState } from './octavia.js';

export { HttpError };

const FIXTURES = fileURLToPath(new URL('../../fixtures/openstack/', import.meta.url));
const fixture = (name: string) => JSON.parse(readFileSync(`${FIXTURES}${name}`, 'utf8'));
const SERVER_SAMPLE = fixture('nova-servers-details-v2.47.json').servers[0] as Record<string, unknown>;

/** The auth-url of the official example cloud.conf files. */
const EXAMPLE_AUTH_URL = 'http://192.128.1.15:5000/v3';

export const REGION = 'RegionOne';
/** The project of the Keystone samples; also the user's default project (for unscoped requests). */
export const PROJECT = {
  id: 'a6944d763bf64ee6a275f1263fae0352',
  name: 'admin',
  domain: { id: 'default', name: 'Default' },
};
/** The official example cloud.conf's user and password; the id of the Keystone samples. */
export const USER = {
  id: '423f19a4ac1e4f48bbb4180756e6eb6c',
  name: 'admin',
  domain: { id: 'default', name: 'Default' },
};
export const PASSWORD = 'passw0rd';
/** The Keystone samples' application credential (id and name requests). */
export const APP_CREDENTIAL = {
  id: '423f19a4ac1e4f48bbb4180756e6eb6c',
  name: 'monitoring',
  secret: 'rEaqvJka48mpv',
};

export interface ServerSpec {
  id?: string;
  name: string;
  status?: string;
  az?: string;
  flavor?: string;
  /** network name → addresses; type defaults to fixed. */
  addresses?: Record<string, { addr: string; type?: 'fixed' | 'floating' }[]>;
  accessIPv4?: string;
  accessIPv6?: string;
}

export interface Fault {
  method?: string;
  path: RegExp;
  status: number;
  body?: unknown;
  /** Matching requests let through before the fault fires. */
  skip?: number;
  /** How many times it fires; default forever. */
  times?: number;
  headers?: Record<string, string>;
}

/**
 * An authenticated route a file beside this one adds (more of Neutron, say), answered before the
 * built-in ones: the first row whose method and path (without /internal or /admin) match answers.
 * Push rows to OPENSTACK_ROUTES from that file; throw HttpError for an error answer.
 */
export interface OpenStackRoute {
  method: string;
  path: RegExp;
  handle(
    sim: OpenStackSimulator,
    match: RegExpExecArray,
    url: URL,
    body: unknown,
  ): [number, unknown, Record<string, string>?];
}
export const OPENSTACK_ROUTES: OpenStackRoute[] = [];

export interface LoggedRequest {
  method: string;
  path: string;
  /** The catalog interface whose URL the request used (path without its /internal or /admin prefix). */
  interface: 'public' | 'internal' | 'admin';
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

interface TokenRecord {
  expiresAt: number;
  revoked: boolean;
}

const UNAUTHORIZED = {
  error: { code: 401, message: 'The request you have made requires authentication.', title: 'Unauthorized' },
};

/** Octavia's API versions and their dates, as octavia/api/root_controller.py `index` lists them. */
const OCTAVIA_VERSIONS = [
  ['v2.0', '2016-12-11'],
  ['v2.1', '2018-04-20'],
  ['v2.2', '2018-07-31'],
  ['v2.3', '2018-12-18'],
  ['v2.4', '2018-12-19'],
  ['v2.5', '2019-01-21'],
  ['v2.6', '2019-01-25'],
  ['v2.7', '2018-01-25T12'],
  ['v2.8', '2019-02-12'],
  ['v2.9', '2019-03-04'],
  ['v2.10', '2019-03-05'],
  ['v2.11', '2019-06-24'],
  ['v2.12', '2019-09-11'],
  ['v2.13', '2019-09-13'],
  ['v2.14', '2019-11-10'],
  ['v2.15', '2020-03-10'],
  ['v2.16', '2020-03-15'],
  ['v2.17', '2020-04-29'],
  ['v2.18', '2020-04-29T01'],
  ['v2.19', '2020-05-12'],
  ['v2.20', '2020-08-02'],
  ['v2.21', '2020-09-03'],
  ['v2.22', '2020-09-04'],
  ['v2.23', '2020-09-07'],
  ['v2.24', '2020-10-15'],
  ['v2.25', '2021-10-02'],
  ['v2.26', '2022-08-29'],
  ['v2.27', '2023-05-05'],
  ['v2.28', '2023-11-08'],
  ['v2.29', '2024-10-15'],
  ['v2.30', '2025-02-26'],
].map(([id, day]) => [id, `${day}${(day as string).includes('T') ? ':00:00Z' : 'T00:00:00Z'}`] as const);

/** A request as a built-in route row sees it. */
interface OpenStackCall {
  method: string;
  url: URL;
  req: IncomingMessage;
  body: unknown;
  match: RegExpExecArray;
}
type Reply = [number, unknown, Record<string, string>?];
type Handler = (sim: OpenStackSimulator, call: OpenStackCall) => Reply;

/** pecan's answer (Octavia) to a path no controller serves. */
function pecanNotFound(): HttpError {
  return new HttpError(404, {
    faultcode: 'Client',
    faultstring: 'The resource could not be found.',
    debuginfo: null,
  });
}

/**
 * A Nova row: the microversion is negotiated first (406 before any 404), and every answer carries
 * the version headers; `view` shows a server as that microversion does.
 */
function nova(
  answer: (
    sim: OpenStackSimulator,
    call: OpenStackCall,
    view: (server: Record<string, unknown>) => Record<string, unknown>,
    headers: Record<string, string>,
    version: string,
  ) => Reply,
): Handler {
  return (sim, call) => {
    const version = sim.microversion(call.req);
    const headers = {
      'OpenStack-API-Version': `compute ${version}`,
      'X-OpenStack-Nova-API-Version': version,
      Vary: 'OpenStack-API-Version, X-OpenStack-Nova-API-Version',
    };
    const view = (server: Record<string, unknown>) =>
      serverView(server, version, (name) => sim.flavorId(name), sim.url);
    return answer(sim, call, view, headers, version);
  };
}

export class OpenStackSimulator {
  url = '';
  readonly requests: LoggedRequest[] = [];
  readonly servers = new Map<string, Record<string, unknown>>();
  readonly tokens = new Map<string, TokenRecord>();
  readonly octavia = new OctaviaState();
  /** Neutron's routers, ports and extensions (the route controller's calls). */
  readonly routing = new NeutronRouting();
  /** Token lifetime; Keystone's default is an hour. */
  tokenTtlMs = 3_600_000;
  /** Highest Nova microversion served; requests above it are refused with 406. */
  novaMaxVersion = '2.96';
  /** Nova's max_limit: page size cap. */
  maxLimit = 1000;
  /**
   * What Nova's links start with (its [api] compute_link_prefix); by default the URL asked.
   * A cloud behind a proxy or load balancer hands out links naming its internal host.
   */
  novaLinkPrefix?: string;
  /**
   * Octavia since Rocky answers on /v2 as well as /v2.0 (octavia/api/root_controller.py, commit
   * 87fca27 "Fix version discovery for the Octavia API" added `setattr(self, 'v2', …)` beside
   * `setattr(self, 'v2.0', …)`); false simulates an older Octavia (Queens, tag queens-eol), which
   * serves only /v2.0, API 2.0. Setting it sets octavia.apiMinor (0, or the newest).
   */
  get octaviaV2Alias(): boolean {
    return this.octavia.apiMinor >= 1;
  }
  set octaviaV2Alias(on: boolean) {
    this.octavia.apiMinor = on ? OCTAVIA_VERSIONS.length - 1 : 0;
  }
  /**
   * Keystone's [DEFAULT] public_endpoint: when set, its version document links name it instead of
   * the URL asked (keystone/server/flask/common.py base_url), as on a cloud whose setting names a
   * host the client cannot or should not reach.
   */
  keystonePublicEndpoint?: string;
  /** Nova's flavors: id → name. m1.* are devstack's defaults; addServer adds any other name. */
  readonly flavors = new Map<string, string>([
    ['1', 'm1.tiny'],
    ['2', 'm1.small'],
    ['3', 'm1.medium'],
    ['4', 'm1.large'],
    ['5', 'm1.xlarge'],
  ]);
  private readonly faults = new FaultList<Fault>(Number.POSITIVE_INFINITY);
  /** One-shot hooks run after a reply; a hook returning true is removed. */
  private afterReply: ((logged: LoggedRequest) => boolean)[] = [];
  private listening?: Listening;

  get authUrl(): string {
    return `${this.url}/identity/v3`;
  }

  /**
   * An official example cloud.conf (test/fixtures/openstack/<name>), unchanged but for its auth-url,
   * which names `authUrl` (by default this simulator's Keystone v3).
   */
  cloudConf(name = 'occm-cloud-config', authUrl = this.authUrl): string {
    return readFileSync(`${FIXTURES}${name}`, 'utf8').replace(EXAMPLE_AUTH_URL, authUrl);
  }

  /** Listens on 127.0.0.1; with `tls` (PEM key and certificate) over HTTPS. */
  async start(tls?: { key: string; cert: string }): Promise<this> {
    this.listening = await listen((req, res) => {
      this.handle(req, res).catch((err) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: String(err) } }));
      });
    }, tls);
    this.url = this.listening.url;
    return this;
  }

  async stop(): Promise<void> {
    await this.listening?.close();
  }

  fault(fault: Fault): void {
    this.faults.add(fault);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  /**
   * A rate limit's refusal, as a deployment that rate-limits its APIs answers. Nova, Neutron and
   * Octavia publish no limit and enforce none of their own: an operator who wants one puts middleware
   * or a proxy in front, with numbers of its own, so none is enforced here. The one published for
   * OpenStack APIs, sapcc/openstack-rate-limit-middleware (SAP's Converged Cloud), answers 429 with
   * `{"error": {"message": "Too Many Requests", "status": "429 Too Many Requests"}}` and the headers
   * X-RateLimit-Limit (`<n>r/<m><unit>`), X-RateLimit-Remaining 0, X-RateLimit-Retry-After and
   * X-Retry-After, both the seconds until the window frees a request (rate_limit/response.py
   * RateLimitExceededResponse and set_headers, rate_limit/backend.py, docs/user.md); no Retry-After.
   * Its default response, as here; operators may configure another (docs/configure.md
   * rate_limit_response, e.g. 498, which gophercloud's provider_client.go also treats as a rate limit).
   */
  rateLimit(options: {
    path: RegExp;
    method?: string;
    times?: number;
    skip?: number;
    retryAfterSeconds?: number;
    limit?: string;
  }): void {
    const { retryAfterSeconds = 60, limit = '60r/m', ...where } = options;
    this.fault({
      ...where,
      status: 429,
      body: { error: { message: 'Too Many Requests', status: '429 Too Many Requests' } },
      headers: {
        'x-ratelimit-limit': limit,
        'x-ratelimit-remaining': '0',
        'x-ratelimit-retry-after': String(retryAfterSeconds),
        'x-retry-after': String(retryAfterSeconds),
      },
    });
  }

  /** Every token issued so far stops working, as at expiry or revocation. */
  expireTokens(): void {
    for (const record of this.tokens.values()) record.revoked = true;
  }

  /** Tokens expire right after the first request matching `path` is answered (mid-run expiry). */
  expireTokensAfter(path: RegExp): void {
    this.afterReply.push((logged) => {
      if (!path.test(logged.path)) return false;
      this.expireTokens();
      return true;
    });
  }

  addServer(spec: ServerSpec): Record<string, unknown> {
    const id = spec.id ?? randomUUID();
    const addresses: Record<string, unknown[]> = {};
    for (const [network, entries] of Object.entries(spec.addresses ?? {})) {
      addresses[network] = entries.map((e) => ({
        'OS-EXT-IPS-MAC:mac_addr': 'fa:16:3e:00:00:01',
        'OS-EXT-IPS:type': e.type ?? 'fixed',
        addr: e.addr,
        version: e.addr.includes(':') ? 6 : 4,
      }));
    }
    const sampleFlavor = SERVER_SAMPLE.flavor as Record<string, unknown>;
    const flavorName = spec.flavor ?? 'm1.small';
    this.flavorId(flavorName);
    const server = {
      ...structuredClone(SERVER_SAMPLE),
      id,
      name: spec.name,
      status: spec.status ?? 'ACTIVE',
      'OS-EXT-AZ:availability_zone': spec.az ?? 'nova',
      'OS-EXT-SRV-ATTR:hostname': spec.name,
      accessIPv4: spec.accessIPv4 ?? '',
      accessIPv6: spec.accessIPv6 ?? '',
      addresses,
      // Since 2.47 the flavor is embedded: original_name and the sizes, no id (serverView shows the
      // older {id, links}, the id from `flavors`).
      flavor: { ...sampleFlavor, original_name: flavorName },
      tenant_id: PROJECT.id,
      user_id: USER.id,
      links: [
        { href: `${this.url}/compute/v2.1/servers/${id}`, rel: 'self' },
        { href: `${this.url}/compute/servers/${id}`, rel: 'bookmark' },
      ],
    };
    this.servers.set(id, server);
    return server;
  }

  /** The id of the flavor named `name`, made (a new id) when Nova has none by that name. */
  flavorId(name: string): string {
    for (const [id, n] of this.flavors) if (n === name) return id;
    const id = String(this.flavors.size + 1);
    this.flavors.set(id, name);
    return id;
  }

  requestsTo(pattern: RegExp, method?: string): LoggedRequest[] {
    return this.requests.filter((r) => pattern.test(r.path) && (!method || r.method === method));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', this.url);
    const iface = /^\/(internal|admin)\//.exec(url.pathname)?.[1] as LoggedRequest['interface'] | undefined;
    if (iface) url.pathname = url.pathname.slice(iface.length + 1);
    (req as IncomingMessage & { iface?: string }).iface = iface ?? 'public';
    const method = req.method ?? 'GET';
    const text = await readBody(req);
    let body: unknown;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        return this.reply(req, res, url, 400, {
          error: { code: 400, message: 'Malformed JSON', title: 'Bad Request' },
        });
      }
    }
    const fault = this.faults.take(method, url.pathname);
    if (fault) {
      return this.reply(
        req,
        res,
        url,
        fault.status,
        fault.body ?? { error: { code: fault.status, message: 'injected fault' } },
        fault.headers,
        body,
      );
    }
    try {
      const [status, payload, headers] = this.route(method, url, req, body);
      return this.reply(req, res, url, status, payload, headers, body);
    } catch (err) {
      if (err instanceof HttpError) return this.reply(req, res, url, err.status, err.body, {}, body);
      throw err;
    }
  }

  private reply(
    req: IncomingMessage,
    res: ServerResponse,
    url: URL,
    status: number,
    payload: unknown,
    headers: Record<string, string> = {},
    requestBody?: unknown,
  ): void {
    const logged = {
      method: req.method ?? 'GET',
      path: url.pathname + url.search,
      interface: ((req as IncomingMessage & { iface?: string }).iface ??
        'public') as LoggedRequest['interface'],
      status,
      headers: req.headers,
      body: requestBody,
    };
    this.requests.push(logged);
    this.afterReply = this.afterReply.filter((hook) => !hook(logged));
    const text = payload === undefined ? '' : JSON.stringify(payload);
    res.writeHead(status, { ...(text ? { 'content-type': 'application/json' } : {}), ...headers });
    res.end(text);
  }

  /** Neutron's handler sees the request's If-Match header (revision_number constraints). */
  routingWith<T>(req: IncomingMessage, fn: () => T): T {
    const ifMatch = req.headers['if-match'];
    this.routing.ifMatch = Array.isArray(ifMatch) ? ifMatch.join(',') : ifMatch;
    try {
      return fn();
    } finally {
      this.routing.ifMatch = undefined;
    }
  }

  /**
   * The routes answered without a token: Keystone's token request and each service's version
   * document (the services' own discovery; gophercloud's utils.ChooseVersion and apiversions
   * packages read them):
   * - Keystone, keystone/api/discovery.py: GET / → 300 {"versions": {"values": [v3]}} with a
   *   Location header, GET /v3 → 200 {"version": v3}; v3's self link is base_url() + "/", i.e. …/v3/;
   * - Octavia, octavia/api/root_controller.py `index`: {"versions": [v2.0 … v2.30]}, each with a self
   *   link to …/v2 (SkippingAuthProtocol in octavia/common/keystone.py lets only the paths of
   *   _NOAUTH_PATHS through without a token: "/" and "/load-balancer/", with the trailing slash);
   * - Neutron, neutron/pecan_wsgi/controllers/root.py `RootController.index` and
   *   neutron/api/views/versions.py: {"versions": [{"id": "v2.0", "status": "CURRENT", "links":
   *   [{"rel": "self", "href": …/v2.0/}]}]}.
   */
  private static readonly PUBLIC_ROUTES: readonly Route<Handler>[] = [
    {
      method: 'POST',
      path: /^\/identity\/v3\/auth\/tokens$/,
      handle: (sim, { body }) => sim.issueToken(body),
    },
    {
      method: 'GET',
      path: /^\/identity\/?$/,
      handle: (sim, { req }) => {
        const v3 = sim.keystoneV3(req);
        return [300, { versions: { values: [v3] } }, { Location: String(v3.links[0]?.href) }];
      },
    },
    {
      method: 'GET',
      path: /^\/identity\/v3\/?$/,
      handle: (sim, { req }) => [200, { version: sim.keystoneV3(req) }],
    },
    {
      method: 'GET',
      path: /^\/network\/?$/,
      handle: (sim, { req }) => [
        200,
        {
          versions: [
            {
              id: 'v2.0',
              status: 'CURRENT',
              links: [{ rel: 'self', href: sim.linkAsAsked(req, '/network/v2.0/') }],
            },
          ],
        },
      ],
    },
    // Only "/load-balancer/" (trailing slash) is let through without a token
    // (octavia/common/keystone.py _NOAUTH_PATHS); the route below serves "/load-balancer" to a token.
    { method: 'GET', path: /^\/load-balancer\/$/, handle: (sim, { req }) => sim.octaviaVersions(req) },
  ];

  /** The routes that want a valid token, after the rows of OPENSTACK_ROUTES; first match answers. */
  private static readonly ROUTES: readonly Route<Handler>[] = [
    {
      method: 'GET',
      path: /^\/compute\/v2\.1\/servers\/detail$/,
      handle: nova((sim, { url }, view, headers) => {
        const limitText = url.searchParams.get('limit');
        if (limitText !== null && !/^\d+$/.test(limitText)) {
          throw new HttpError(400, {
            badRequest: {
              code: 400,
              message: `Invalid input for query parameters limit. Value: ${limitText}.`,
            },
          });
        }
        const limit = Math.min(limitText === null ? sim.maxLimit : Number(limitText), sim.maxLimit);
        const all = [...sim.servers.values()];
        let start = 0;
        const marker = url.searchParams.get('marker');
        if (marker !== null) {
          const at = all.findIndex((s) => s.id === marker);
          if (at < 0)
            throw new HttpError(400, { badRequest: { code: 400, message: `marker [${marker}] not found` } });
          start = at + 1;
        }
        const page = all.slice(start, start + limit);
        // nova/api/openstack/common.py ViewBuilder._get_collection_links / _get_next_link: a next link
        // when the page is full, the request's own query (limit and all) with marker= the last item,
        // on the link prefix.
        const next = new URLSearchParams(url.searchParams);
        next.set('marker', String(page.at(-1)?.id));
        next.sort();
        const links =
          page.length === limit && limit > 0
            ? [
                {
                  href: `${sim.novaLinkPrefix ?? sim.url}/compute/v2.1/servers/detail?${next}`,
                  rel: 'next',
                },
              ]
            : undefined;
        return [200, { servers: page.map(view), ...(links ? { servers_links: links } : {}) }, headers];
      }),
    },
    {
      method: 'GET',
      path: /^\/compute\/v2\.1\/flavors\/([^/]+)$/,
      handle: nova((sim, { match }, _view, headers, version) => {
        // nova/api/openstack/compute/flavors.py show: by flavorid only (never by name).
        const id = decodeURIComponent(match[1] as string);
        const name = sim.flavors.get(id);
        if (name === undefined) {
          throw new HttpError(404, {
            itemNotFound: { code: 404, message: `Flavor ${id} could not be found.` },
          });
        }
        return [200, { flavor: flavorView(id, name, sim.url, version) }, headers];
      }),
    },
    {
      method: 'GET',
      path: /^\/compute\/v2\.1\/servers\/([^/]+)$/,
      handle: nova((sim, { match }, view, headers) => {
        const server = sim.servers.get(decodeURIComponent(match[1] as string));
        if (!server) {
          throw new HttpError(404, {
            itemNotFound: { code: 404, message: `Instance ${match[1]} could not be found.` },
          });
        }
        return [200, { server: view(server) }, headers];
      }),
    },
    {
      path: /^\/compute\/v2\.1\//,
      handle: nova(() => {
        throw new HttpError(404, {
          itemNotFound: { code: 404, message: 'The resource could not be found.' },
        });
      }),
    },
    {
      path: /^\/network(\/v2\.0\/.*)$/,
      handle: (sim, { method, url, body, match, req }) =>
        sim.routingWith(req, () => sim.routing.handle(method, match[1] as string, url, body)) ??
        sim.octavia.neutron(method, match[1] as string, url, body),
    },
    {
      // Octavia's API is /v2.0 (every release) and, since Rocky, /v2 too (octaviaV2Alias); an older
      // Octavia has no /v2: pecan's 404, as below.
      path: /^\/load-balancer\/(v2\.0|v2)\/lbaas(\/.*)$/,
      handle: (sim, { method, url, body, match }) => {
        if (match[1] !== 'v2.0' && !sim.octaviaV2Alias) throw pecanNotFound();
        return sim.octavia.route(method, match[2] as string, url, body);
      },
    },
    { method: 'GET', path: /^\/load-balancer$/, handle: (sim, { req }) => sim.octaviaVersions(req) },
    {
      // pecan's answer to a path no controller serves.
      path: /^\/load-balancer\//,
      handle: () => {
        throw pecanNotFound();
      },
    },
  ];

  private route(
    method: string,
    url: URL,
    req: IncomingMessage,
    body: unknown,
  ): [number, unknown, Record<string, string>?] {
    const path = url.pathname;
    const open = findRoute(OpenStackSimulator.PUBLIC_ROUTES, method, path);
    if (open) return open.route.handle(this, { method, url, req, body, match: open.match });
    this.authenticate(req);
    const added = findRoute(OPENSTACK_ROUTES, method, path);
    if (added) return added.route.handle(this, added.match, url, body);
    const found = findRoute(OpenStackSimulator.ROUTES, method, path);
    if (found) return found.route.handle(this, { method, url, req, body, match: found.match });
    throw new HttpError(404, { error: { message: `no route ${method} ${path}` } });
  }

  /** A link to `path` on the URL asked, through the interface it was asked on. */
  private linkAsAsked(req: IncomingMessage, path: string): string {
    const used = (req as IncomingMessage & { iface?: string }).iface;
    return `${this.url}${used && used !== 'public' ? `/${used}` : ''}${path}`;
  }

  /** Keystone v3's version entry; its self link names public_endpoint when that is set. */
  private keystoneV3(req: IncomingMessage) {
    return {
      id: 'v3.14',
      status: 'stable',
      updated: '2020-04-07T00:00:00Z',
      links: [
        {
          rel: 'self',
          href: this.keystonePublicEndpoint
            ? `${this.keystonePublicEndpoint.replace(/\/+$/, '')}/v3/`
            : this.linkAsAsked(req, '/identity/v3/'),
        },
      ],
      'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.identity-v3+json' }],
    };
  }

  /** Octavia's version document, as the release apiMinor stands for serves it. */
  private octaviaVersions(req: IncomingMessage): [number, unknown] {
    const iface = (p: string) => this.linkAsAsked(req, p);
    if (!this.octaviaV2Alias) {
      // Octavia before 87fca27 (tag queens-eol, root_controller.py get): v2.0 only, its link
      // path_url + 'v2.0' (v1 too where api_v1_enabled, off by default).
      return [
        200,
        {
          versions: [
            {
              status: 'CURRENT',
              updated: '2017-06-22T00:00:00Z',
              id: 'v2.0',
              links: [{ href: iface('/load-balancer/v2.0'), rel: 'self' }],
            },
          ],
        },
      ];
    }
    const served = OCTAVIA_VERSIONS.slice(0, this.octavia.apiMinor + 1);
    return [
      200,
      {
        versions: served.map(([id, updated], i) => ({
          id,
          status: i === served.length - 1 ? 'CURRENT' : 'SUPPORTED',
          updated,
          links: [{ href: iface('/load-balancer/v2'), rel: 'self' }],
        })),
      },
    ];
  }

  private authenticate(req: IncomingMessage): void {
    const token = req.headers['x-auth-token'];
    const record = typeof token === 'string' ? this.tokens.get(token) : undefined;
    if (!record || record.revoked || record.expiresAt <= Date.now()) throw new HttpError(401, UNAUTHORIZED);
  }

  // ---- Keystone ------------------------------------------------------------------------------

  private issueToken(body: unknown): [number, unknown, Record<string, string>] {
    const bad = (message: string) =>
      new HttpError(400, { error: { code: 400, message, title: 'Bad Request' } });
    // keystone/exception.py ValidationError, raised by keystone/auth/core.py (project by name) and
    // keystone/auth/plugins/core.py (user by name, for a password or an application credential)
    // when the name comes without its domain: names are unique only within a domain.
    const noDomain = (target: 'user' | 'project') =>
      bad(
        `Expecting to find domain in ${target}. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.`,
      );
    const identity = (body as { auth?: { identity?: Record<string, unknown> } })?.auth?.identity;
    const methods = identity?.methods;
    if (!Array.isArray(methods) || methods.length !== 1)
      throw bad('auth.identity.methods must list one method');
    const scope = (body as { auth: { scope?: { project?: Record<string, unknown> } } }).auth.scope;
    let method: string;
    if (methods[0] === 'password') {
      const user = (identity?.password as { user?: Record<string, unknown> })?.user;
      if (!user || typeof user.password !== 'string') throw bad("'password' is a required property");
      const byId = user.id === USER.id;
      const domain = user.domain as { id?: string; name?: string } | undefined;
      if (!user.id && user.name !== undefined && !domain) throw noDomain('user');
      const byName =
        user.name === USER.name && (domain?.id === USER.domain.id || domain?.name === USER.domain.name);
      if (!(byId || byName) || user.password !== PASSWORD) throw new HttpError(401, UNAUTHORIZED);
      if (scope?.project) {
        const p = scope.project;
        const d = p.domain as { id?: string; name?: string } | undefined;
        if (!p.id && p.name !== undefined && !d) throw noDomain('project');
        const matches =
          p.id === PROJECT.id ||
          (p.name === PROJECT.name && (d?.id === PROJECT.domain.id || d?.name === PROJECT.domain.name));
        if (!matches) throw new HttpError(401, UNAUTHORIZED);
      }
      method = 'password';
    } else if (methods[0] === 'application_credential') {
      const cred = identity?.application_credential as Record<string, unknown> | undefined;
      if (!cred || typeof cred.secret !== 'string') throw bad("'secret' is a required property");
      const user = cred.user as { id?: string; name?: string } | undefined;
      const byId = cred.id === APP_CREDENTIAL.id;
      const userDomain = (user as { domain?: { id?: string; name?: string } } | undefined)?.domain;
      const byName =
        cred.name === APP_CREDENTIAL.name &&
        (user?.id === USER.id ||
          (user?.name === USER.name &&
            (userDomain?.id === USER.domain.id || userDomain?.name === USER.domain.name)));
      // keystone/auth/core.py _lookup_app_cred: by id, get_application_credential (an unknown id is
      // ApplicationCredentialNotFound, 404); by name, the user (ValidationError without one; by name,
      // get_user_by_name: an unknown one is UserNotFound, 404), then the user's credentials by name
      // (none is Unauthorized, 401). exception.py NotFound: code 404, title "Not Found".
      const notFound = (message: string) =>
        new HttpError(404, { error: { code: 404, message, title: 'Not Found' } });
      if (cred.id !== undefined && !byId) {
        throw notFound(`Could not find Application Credential: ${String(cred.id)}.`);
      }
      if (cred.id === undefined && cred.name !== undefined && !user) {
        throw bad(
          'Expecting to find user in application credential. The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.',
        );
      }
      if (user && !user.id && user.name !== undefined && !(user as { domain?: unknown }).domain)
        throw noDomain('user');
      // (An unknown domain is Unauthorized before that: _lookup_domain turns DomainNotFound into 401.)
      const knownDomain = userDomain?.id === USER.domain.id || userDomain?.name === USER.domain.name;
      if (cred.id === undefined && user && !user.id && knownDomain && user.name !== USER.name) {
        throw notFound(`Could not find user: ${String(user.name)}.`);
      }
      if (!(byId || byName) || cred.secret !== APP_CREDENTIAL.secret) throw new HttpError(401, UNAUTHORIZED);
      // Application credentials are bound to their project: another scope is refused.
      if (scope) throw new HttpError(401, UNAUTHORIZED);
      method = 'application_credential';
    } else {
      throw bad(`unsupported method ${String(methods[0])}`);
    }
    const value = `gAAAAA${randomBytes(24).toString('base64url')}`;
    const expiresAt = Date.now() + this.tokenTtlMs;
    this.tokens.set(value, { expiresAt, revoked: false });
    const endpoint = (type: string, path: string, name: string) => ({
      // Each interface its own URL, as a real deployment registers them (public behind the proxy,
      // internal on the management network): a client using the wrong one is seen in the log.
      endpoints: ['public', 'internal', 'admin'].map((iface) => ({
        region_id: REGION,
        url: `${this.url}${iface === 'public' ? '' : `/${iface}`}${path}`,
        region: REGION,
        interface: iface,
        id: randomUUID().replaceAll('-', ''),
      })),
      type,
      id: randomUUID().replaceAll('-', ''),
      name,
    });
    return [
      201,
      {
        token: {
          methods: [method],
          roles: this.octavia.roles.map((name) => ({ id: randomUUID().replaceAll('-', ''), name })),
          expires_at: new Date(expiresAt).toISOString().replace('Z', '000Z'),
          issued_at: new Date().toISOString().replace('Z', '000Z'),
          project: PROJECT,
          is_domain: false,
          catalog: [
            endpoint('identity', '/identity/v3', 'keystone'),
            endpoint('compute', '/compute/v2.1', 'nova'),
            endpoint('network', '/network', 'neutron'),
            endpoint('load-balancer', '/load-balancer', 'octavia'),
          ],
          user: { ...USER, password_expires_at: null },
          audit_ids: [randomBytes(16).toString('base64url')],
        },
      },
      { 'X-Subject-Token': value },
    ];
  }

  // ---- Nova ----------------------------------------------------------------------------------

  microversion(req: IncomingMessage): string {
    const legacy = req.headers['x-openstack-nova-api-version'];
    const modern = req.headers['openstack-api-version'];
    let asked: string | undefined = typeof legacy === 'string' ? legacy : undefined;
    if (typeof modern === 'string') {
      const match = /^compute\s+(\S+)$/.exec(modern.trim());
      if (match) asked = match[1];
    }
    if (!asked) return '2.1';
    if (asked === 'latest') return this.novaMaxVersion;
    if (!/^2\.\d+$/.test(asked) || compareVersions(asked, this.novaMaxVersion) > 0) {
      throw new HttpError(406, {
        computeFault: {
          code: 406,
          message: `Version ${asked} is not supported by the API. Minimum is 2.1 and maximum is ${this.novaMaxVersion}.`,
        },
      });
    }
    return asked;
  }
}

/**
 * The server as a given microversion shows it: before 2.47 the flavor is its id and a bookmark link
 * (nova/api/openstack/compute/views/servers.py `_get_flavor`: `{"id": str(flavor["flavorid"]),
 * "links": …}`), never its name.
 */
function serverView(
  server: Record<string, unknown>,
  version: string,
  flavorId: (name: string) => string,
  base: string,
): Record<string, unknown> {
  if (compareVersions(version, '2.47') >= 0) return server;
  const { flavor, ...rest } = server;
  const id = flavorId(String((flavor as { original_name?: string }).original_name));
  return { ...rest, flavor: { id, links: [{ href: `${base}/compute/flavors/${id}`, rel: 'bookmark' }] } };
}

/** GET /flavors/{id}, nova doc/api_samples/flavors/v2.75/flavor-get-resp.json in shape. */
function flavorView(id: string, name: string, base: string, version: string): Record<string, unknown> {
  return {
    id,
    name,
    ram: 2048,
    disk: 20,
    swap: compareVersions(version, '2.75') >= 0 ? 0 : '',
    'OS-FLV-EXT-DATA:ephemeral': 0,
    'OS-FLV-DISABLED:disabled': false,
    vcpus: 1,
    'os-flavor-access:is_public': true,
    rxtx_factor: 1.0,
    links: [
      { href: `${base}/compute/v2.1/flavors/${id}`, rel: 'self' },
      { href: `${base}/compute/flavors/${id}`, rel: 'bookmark' },
    ],
    ...(compareVersions(version, '2.55') >= 0 ? { description: null } : {}),
    ...(compareVersions(version, '2.61') >= 0 ? { extra_specs: {} } : {}),
  };
}

function compareVersions(a: string, b: string): number {
  const [am, an] = a.split('.').map(Number) as [number, number];
  const [bm, bn] = b.split('.').map(Number) as [number, number];
  return am - bm || an - bn;
}
