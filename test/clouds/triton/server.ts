/**
 * A CloudAPI simulator, written from TritonDataCenter/sdc-cloudapi docs/index.md (authentication,
 * ListMachines, GetMachine, GetAccount, ListDatacenters, the machine tag endpoints, error codes);
 * where the docs are silent, from sdc-cloudapi's code (lib/auth.js, lib/authorization.js,
 * lib/machines.js, lib/tags.js, lib/errors.js, lib/app.js), sdc-vmapi's (the listing order and
 * filter, tag validation in lib/endpoints/metadata.js and lib/common/validation.js) and restify
 * 4.3.3's (version negotiation). `triton.*` tags are validated by the npm `triton-tags` package
 * (TritonDataCenter/node-triton-tags) at 1.4.0, the version sdc-vmapi's package.json pins: the
 * validator VMAPI itself runs for CloudAPI's tag writes.
 *
 * Every request's signature is verified with the npm `http-signature` package, the reference
 * implementation CloudAPI itself uses, against the public keys registered for the account (or
 * sub-user): the algorithms CloudAPI accepts (RSA, DSA, ECDSA, Ed25519), the keyId forms
 * /<login>/keys/<fp> and /<login>/users/<user>/keys/<fp>, and a Date within 300 s.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import sshpk from 'sshpk';
import { FaultList, findRoute, type Listening, listen, type Route, readBody } from '../http-core.js';
import { FabricNetworks } from './fabric-networks.js';

interface ParsedSignature {
  keyId: string;
  algorithm: string;
  params: { headers: string[] };
}
interface HttpSignature {
  parseRequest(req: IncomingMessage, options?: { algorithms?: string[] }): ParsedSignature;
  verifySignature(parsed: ParsedSignature, key: sshpk.Key): boolean;
}
const require = createRequire(import.meta.url);
const httpSignature = require('http-signature') as HttpSignature;
interface TritonTags {
  isTritonTag(key: string): boolean;
  /** null when valid, else the message VMAPI puts in the error's `errors[0].message`. */
  validateTritonTag(key: string, value: unknown): string | null;
}
const tritonTags = require('triton-tags') as TritonTags;

/**
 * sdc-cloudapi lib/authorization.js OPTIONS.algorithms (what the Authorization header may name) and
 * lib/auth.js SIGN_ALGOS (what signatureAuth verifies): ed25519-sha512 in both since TRITON-2417
 * (sdc-cloudapi c490cdb, December 2023). `ed25519: false` is a CloudAPI from before it.
 */
const HEADER_ALGOS = [
  'rsa-sha1',
  'rsa-sha256',
  'rsa-sha384',
  'rsa-sha512',
  'dsa-sha1',
  'dsa-sha256',
  'ecdsa-sha256',
  'ecdsa-sha384',
  'ecdsa-sha512',
  'ed25519-sha512',
];
const MAX_LIMIT = 1000;

export interface SimMachine {
  id: string;
  name: string;
  type: string;
  brand: string;
  state: string;
  image: string;
  ips: string[];
  memory: number;
  disk: number;
  metadata: Record<string, string>;
  tags: Record<string, string | number | boolean>;
  created: string;
  updated: string;
  networks: string[];
  /** Absent for a machine without NICs (sdc-cloudapi lib/machines.js translate, l.193-219). */
  primaryIp?: string;
  firewall_enabled: boolean;
  compute_node: string;
  package: string;
}

export interface Fault {
  method?: string;
  /** Matched against the path (without query). */
  path: RegExp;
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** How many matching requests fail; default every one. */
  times?: number;
  /** Skip this many matching requests first (e.g. fail the third page). */
  after?: number;
}

export interface RequestRecord {
  method: string;
  path: string;
  query: string;
  status: number;
  keyId?: string;
  algorithm?: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export interface TritonSimOptions {
  login?: string;
  accountId?: string;
  cnsEnabled?: boolean;
  datacenter?: string;
  /** Tag writes apply after this long (CloudAPI applies them asynchronously). Default: at once. */
  tagDelayMs?: number;
  /** false: a CloudAPI older than TRITON-2417, which refuses Ed25519 signatures. Default true. */
  ed25519?: boolean;
  /**
   * CloudAPI's throttle (TritonSim.throttle): `rate` requests a second and bursts of `burst` per
   * account and endpoint group. Default what every Triton DataCenter ships, 10 and 30; false: none,
   * as for an account on CLOUDAPI_THROTTLE_WHITELIST.
   */
  throttle?: { rate: number; burst: number } | false;
  /** The throttle's clock, ms; default Date.now (restify's). */
  now?: () => number;
}

interface Account {
  id: string;
  login: string;
  cnsEnabled: boolean;
  keys: Map<string, sshpk.Key>;
  users: Map<string, Map<string, sshpk.Key>>;
  /** Per sub-user: the actions its default roles' policies allow ("*": all). */
  grants: Map<string, Set<string>>;
}

interface ErrorsElem {
  field: string;
  code: string;
  message: string;
}

class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** sdc-cloudapi lib/errors.js ExposedSDCError (l.261-283) passes VMAPI's `errors` on. */
    readonly errors?: ErrorsElem[],
  ) {
    super(message);
  }
}

/**
 * The throttle each route is mounted with (sdc-cloudapi lib/app.js: `userThrottle(config, <name>)` per
 * endpoint module, and one `machineThrottle` shared by the machines, tags, metadata, snapshots, …
 * modules), by the route's name as authorize sees it. The shipped configuration names no endpoint, so
 * each of these falls back to "all" (lib/throttle.js getThrottle), but every userThrottle call makes a
 * restify.throttle of its own: one bucket per group, per account.
 */
const THROTTLE_GROUPS: Record<string, string> = {
  getaccount: 'account',
  listdatacenters: 'datacenter',
  listservices: 'services',
  // lib/endpoints/networks.js mounts the fabric routes with the networks module's throttle.
  getfabricnetwork: 'networks',
  updatefabricnetwork: 'networks',
};

/** What a route answers. */
interface Answer {
  status: number;
  payload?: unknown;
  headers?: Record<string, string>;
}

/** A request as a route row sees it: its path's captures are decoded. */
interface TritonCall {
  method: string;
  url: URL;
  body: string;
  /** Refuses (403) a sub-user whose roles do not allow the action (see TritonSim.authorize). */
  authorize: (action: string) => void;
  params: (string | undefined)[];
  /** The path's match as it stands (not decoded). */
  match: RegExpExecArray;
}

export class TritonSim {
  readonly account: Account;
  readonly datacenter: string;
  readonly machines = new Map<string, SimMachine>();
  /** Fabric networks (GetFabricNetwork, UpdateFabricNetwork), for the route controller. */
  readonly fabrics = new FabricNetworks();
  readonly requests: RequestRecord[] = [];
  /**
   * ListServices' answer, name to URL, besides `cloudapi` (this simulator's URL). A CMON simulator
   * (cmon.ts) started on this CloudAPI adds `cmon`; without it the account's data centre has no CMON,
   * which `triton profile cmon-certgen` reports as 'no "cmon" service on this datacenter'
   * (joyent/node-triton lib/do_profile/profilecommon.js checkForCmon).
   */
  readonly services: Record<string, string> = {};
  private readonly injected = new FaultList<Fault & { skip?: number }>(Number.POSITIVE_INFINITY);
  /** The injected faults, with their counts; `faults.length = 0` removes them. */
  get faults() {
    return this.injected.entries;
  }
  readonly ed25519: boolean;
  /** The throttle in force (see TritonSimOptions.throttle); tests may change it. */
  throttleLimits: { rate: number; burst: number } | false;
  /** Each throttle bucket: `<group> <login>` → its tokens and when they were last counted. */
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private readonly now: () => number;
  tagDelayMs: number;
  /** Runs before a tag list is answered: tests use it to write tags "between" ccm's read and write. */
  onTagsRead?: (id: string) => void;
  /** Runs before a ListMachines page is cut: tests use it to change the machines between pages. */
  onListPage?: (offset: number) => void;
  url = '';
  private listening?: Listening;
  private order = 0;

  constructor(options: TritonSimOptions = {}) {
    this.account = {
      id: options.accountId ?? randomUUID(),
      login: options.login ?? 'demo',
      cnsEnabled: options.cnsEnabled ?? true,
      keys: new Map(),
      users: new Map(),
      grants: new Map(),
    };
    this.datacenter = options.datacenter ?? 'us-test-1';
    this.tagDelayMs = options.tagDelayMs ?? 0;
    this.ed25519 = options.ed25519 ?? true;
    this.throttleLimits = options.throttle ?? { rate: 10, burst: 30 };
    this.now = options.now ?? Date.now;
  }

  /** Every throttle bucket full again (between tests that share the simulator). */
  clearThrottle(): void {
    this.buckets.clear();
  }

  async start(): Promise<this> {
    this.listening = await listen((req, res) => {
      this.handle(req, res).catch((err: Error) => {
        this.reply(req, res, 500, { code: 'InternalError', message: err.message }, '');
      });
    });
    this.listening.server.keepAliveTimeout = 1000;
    this.url = this.listening.url;
    return this;
  }

  async stop(): Promise<void> {
    await this.listening?.close();
  }

  /** Registers an OpenSSH public key for the account, or for a sub-user of it. */
  addKey(publicKey: string, user?: string): string {
    const key = sshpk.parseKey(publicKey, 'auto');
    const fp = key.fingerprint('md5').toString('hex');
    if (user) {
      const keys = this.account.users.get(user) ?? new Map<string, sshpk.Key>();
      keys.set(fp, key);
      this.account.users.set(user, keys);
    } else {
      this.account.keys.set(fp, key);
    }
    return fp;
  }

  /**
   * Gives a sub-user a default role whose policy allows these actions (CloudAPI's lower-cased
   * route names: getaccount, listmachines, getmachine, listdatacenters, listmachinetags,
   * addmachinetags, deletemachinetag, …), or every action ("*"). A sub-user without one is refused
   * everything, as CloudAPI refuses it (see authorize below).
   */
  grant(user: string, actions: readonly string[] | '*'): void {
    const set = this.account.grants.get(user) ?? new Set<string>();
    for (const a of actions === '*' ? ['*'] : actions) set.add(a);
    this.account.grants.set(user, set);
  }

  addMachine(partial: Partial<SimMachine> & { name: string }): SimMachine {
    const id = partial.id ?? randomUUID();
    const created = new Date(Date.UTC(2026, 0, 1) + this.order++ * 1000).toISOString();
    const machine: SimMachine = {
      id,
      type: 'virtualmachine',
      brand: 'bhyve',
      state: 'running',
      image: '2b683a82-a066-11e3-97ab-2faa44701c5a',
      ips: [],
      memory: 4096,
      disk: 102400,
      metadata: {},
      tags: {},
      created,
      updated: created,
      networks: [],
      // sdc-cloudapi lib/machines.js translate (l.193-219) sets primaryIp only inside
      // `if (machine.nics && machine.nics.length)`: a machine without NICs has no such field.
      ...(partial.ips?.length ? { primaryIp: partial.ips[0] } : {}),
      firewall_enabled: false,
      compute_node: '564d0b8e-6099-7648-351e-877faf6c56f6',
      package: 'k8s-4g',
      ...partial,
    };
    this.machines.set(id, machine);
    return machine;
  }

  /** A machine of the simulator's state, by id (throws for an unknown one). */
  machine(id: string): SimMachine {
    const m = this.machines.get(id);
    if (!m) throw new Error(`no machine ${id}`);
    return m;
  }

  fault(f: Fault): void {
    this.injected.add({ ...f, skip: f.after });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const url = new URL(req.url ?? '/', 'http://sim');
    const method = req.method ?? 'GET';
    let auth: { keyId?: string; algorithm?: string } = {};
    try {
      const version = apiVersion(req, method, url.pathname);
      res.setHeader('api-version', version);
      const caller = this.authenticate(req, url.pathname);
      auth = { keyId: caller.keyId, algorithm: caller.algorithm };
      const fault = this.injected.take(method, url.pathname);
      if (fault) {
        this.reply(req, res, fault.status, fault.body, body, auth, fault.headers);
        return;
      }
      // CloudAPI's auth.authorize is a server.use handler; the throttle is the first handler of the
      // route itself (`before` in each module's mount): a request refused 401, 403 or 404 takes no token.
      const authorize = (action: string) => {
        this.authorize(caller.user, action, url.pathname);
        this.throttle(action);
      };
      const { status, payload, headers } = this.route(method, url, body, authorize);
      this.reply(req, res, status, payload, body, auth, headers);
    } catch (err) {
      if (err instanceof ApiError) {
        const payload = {
          code: err.code,
          message: err.message,
          ...(err.errors ? { errors: err.errors } : {}),
        };
        this.reply(req, res, err.status, payload, body, auth);
        return;
      }
      throw err;
    }
  }

  private reply(
    req: IncomingMessage,
    res: ServerResponse,
    status: number,
    payload: unknown,
    body: string,
    auth: { keyId?: string; algorithm?: string } = {},
    headers: Record<string, string> = {},
  ): void {
    const url = new URL(req.url ?? '/', 'http://sim');
    this.requests.push({
      method: req.method ?? '',
      path: url.pathname,
      query: url.search,
      status,
      ...auth,
      headers: { ...req.headers },
      body,
    });
    const text = payload === undefined ? '' : JSON.stringify(payload);
    res.writeHead(status, {
      'content-type': 'application/json',
      'request-id': randomUUID(),
      ...headers,
    });
    res.end(text);
  }

  /**
   * CloudAPI's authorizationParser (lib/authorization.js), then signatureAuth (lib/auth.js), then the
   * path's login. The answers are CloudAPI's own: a header that does not parse (a Date outside
   * http-signature's default 300 s clock skew among them) is 400 InvalidHeader "Authorization header
   * invalid: <http-signature's message>"; an unknown account, sub-user or key and a signature that
   * does not verify are all the one 401 "Invalid authorization credentials supplied" (INVALID_CREDS).
   */
  private authenticate(
    req: IncomingMessage,
    path: string,
  ): { keyId: string; algorithm: string; user?: string } {
    const header = req.headers.authorization;
    // lib/auth.js authenticate: no caller after the parsers is DEF_401.
    const unauthenticated = new ApiError(
      401,
      'InvalidCredentials',
      'You must make authenticated requests to use CloudAPI',
    );
    if (!header) throw unauthenticated;
    const pieces = header.split(' ', 2);
    if (pieces.length !== 2) throw new ApiError(400, 'InvalidHeader', 'BasicAuth content is invalid.');
    if (pieces[0]?.toLowerCase() !== 'signature') throw unauthenticated;
    const algorithms = this.ed25519 ? HEADER_ALGOS : HEADER_ALGOS.filter((a) => !a.startsWith('ed25519'));
    let parsed: ParsedSignature;
    try {
      parsed = httpSignature.parseRequest(req, { algorithms });
    } catch (err) {
      throw new ApiError(400, 'InvalidHeader', `Authorization header invalid: ${(err as Error).message}`);
    }
    if (!algorithms.includes(parsed.algorithm.toLowerCase())) {
      throw new ApiError(
        401,
        'InvalidCredentials',
        `${parsed.algorithm} is not a supported signing algorithm`,
      );
    }
    const invalidCreds = new ApiError(
      401,
      'InvalidCredentials',
      'Invalid authorization credentials supplied',
    );
    const parts = parsed.keyId.split('/');
    let keys: Map<string, sshpk.Key> | undefined;
    let fp: string | undefined;
    let user: string | undefined;
    if (parts.length === 4 && parts[2] === 'keys') {
      fp = parts[3];
      if (parts[1] === this.account.login) keys = this.account.keys;
    } else if (parts.length === 6 && parts[4] === 'keys') {
      fp = parts[5];
      user = parts[3] ?? '';
      if (parts[1] === this.account.login) keys = this.account.users.get(user);
    } else {
      throw new ApiError(401, 'InvalidCredentials', `Invalid KeyId ${parsed.keyId} in authorization header`);
    }
    const key = keys?.get(fp ?? '');
    if (!key) throw invalidCreds;
    let ok = false;
    try {
      ok = httpSignature.verifySignature(parsed, key);
    } catch {
      ok = false;
    }
    if (!ok) throw invalidCreds;
    const login = decodeURIComponent(path.split('/')[1] ?? '');
    if (login !== 'my' && login !== this.account.login) {
      throw new ApiError(403, 'NotAuthorized', `You do not have permission to access ${login}`);
    }
    return { keyId: parsed.keyId, algorithm: parsed.algorithm, ...(user !== undefined ? { user } : {}) };
  }

  /**
   * sdc-cloudapi lib/auth.js authorize (l.500-697): the account itself may do everything; a
   * sub-user only what a policy of its active roles (its default roles: ccm sends no `as-role`)
   * allows for the route's name (lib/app.js reqRoutename, l.442-473, restify's route names
   * lower-cased, restify 4.3.3 lib/router.js l.228). Otherwise 403 NotAuthorized "You do not have
   * permission to access <path> (<action>)" (FORBIDDEN, l.82; the details l.680-688). It runs after
   * lib/machines.js loadMachine (lib/app.js l.438-476), so an unknown machine is 404 first.
   * Aperture's policy language (conditions on time, source IP, tags) is not simulated: a grant is
   * a plain list of actions.
   */
  private authorize(user: string | undefined, action: string, path: string): void {
    if (user === undefined) return;
    const grants = this.account.grants.get(user);
    if (grants?.has('*') || grants?.has(action)) return;
    throw new ApiError(403, 'NotAuthorized', `You do not have permission to access ${path} (${action})`);
  }

  /**
   * CloudAPI's throttle, as every Triton DataCenter ships it: sdc-cloudapi
   * sapi_manifests/cloudapi/template sets `userThrottles.all` to `username: true, burst: 30, rate: 10`
   * (overrides only for CLOUDAPI_THROTTLE_WHITELIST and the admin login; docs/admin.md "Throttles"
   * explains the token bucket), and lib/throttle.js hands it to restify's throttle plugin (restify
   * 4.3.3, sdc-cloudapi's package.json). That plugin (lib/plugins/throttle.js) keys the bucket by
   * req.username, which lib/auth.js sets to the account's login for the account and its sub-users
   * alike; a bucket starts full with `burst` tokens and refills at `rate` a second; a request finding
   * less than one token is refused without taking any, with TooManyRequestsError: 429 and the body
   * `{"code": "TooManyRequestsError", "message": "You have exceeded your request rate of <rate> r/s."}`
   * (restify lib/errors/http_error.js names the code after the status text). No Retry-After and no
   * rate-limit header: nothing says when to come back. docs/index.md's 420 "Slow Down" and
   * RequestThrottled (which triton-go's errors.IsRequestThrottled still looks for) are older answers.
   */
  private throttle(action: string): void {
    const limits = this.throttleLimits;
    if (!limits) return;
    const key = `${THROTTLE_GROUPS[action] ?? 'machines'} ${this.account.login}`;
    const now = this.now();
    const bucket = this.buckets.get(key) ?? { tokens: limits.burst, at: now };
    bucket.tokens = Math.min(
      limits.burst,
      bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * limits.rate,
    );
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens < 1) {
      throw new ApiError(
        429,
        'TooManyRequestsError',
        `You have exceeded your request rate of ${limits.rate} r/s.`,
      );
    }
    bucket.tokens -= 1;
  }

  /**
   * CloudAPI's routes (sdc-cloudapi lib/app.js mounts them; lib/account.js, lib/datacenters.js,
   * lib/machines.js, lib/tags.js), /<login>/…, first match answers; a path no row matches is 404
   * ResourceNotFound. Rows without a method answer a wrong one themselves (405 BadMethod), after
   * the checks CloudAPI makes first.
   */
  private static readonly ROUTES: readonly Route<(sim: TritonSim, call: TritonCall) => Answer>[] = [
    {
      path: /^\/[^/]+\/fabrics\/default\/vlans\/(\d+)\/networks\/([^/]+)$/,
      handle: (sim, { method, match, body, authorize }) =>
        sim.fabrics.handle(
          method,
          Number(match[1]),
          match[2] as string,
          body,
          authorize,
          (status, code, message) => new ApiError(status, code, message),
        ),
    },
    {
      // "/<login>" and "/<login>/": GetAccount.
      path: /^\/[^/]*\/?$/,
      handle: (sim, { method, authorize }) => {
        if (method !== 'GET') throw new ApiError(405, 'BadMethod', `${method} is not allowed`);
        authorize('getaccount'); // lib/account.js: GetAccount
        const a = sim.account;
        return {
          status: 200,
          payload: {
            id: a.id,
            login: a.login,
            email: `${a.login}@example.com`,
            created: '2026-01-01T00:00:00.000Z',
            updated: '2026-01-01T00:00:00.000Z',
            triton_cns_enabled: a.cnsEnabled,
          },
        };
      },
    },
    {
      method: 'GET',
      path: /^\/[^/]+\/datacenters$/,
      handle: (sim, { authorize }) => {
        authorize('listdatacenters'); // lib/datacenters.js: ListDatacenters
        return {
          status: 200,
          payload: { [sim.datacenter]: sim.url, 'us-other-1': 'https://us-other-1.api.example.com' },
        };
      },
    },
    {
      // GET /<login>/services (joyent/node-triton lib/cloudapi2.js listServices).
      method: 'GET',
      path: /^\/[^/]+\/services$/,
      handle: (sim, { authorize }) => {
        authorize('listservices');
        return { status: 200, payload: { cloudapi: sim.url, ...sim.services } };
      },
    },
    {
      path: /^\/[^/]+\/machines$/,
      handle: (sim, { method, url, authorize }) => sim.listMachines(method, url, authorize),
    },
    {
      path: /^\/[^/]+\/machines\/([^/]*)$/,
      handle: (sim, { method, params: [id], authorize }) => {
        const machine = sim.machines.get(id as string);
        if (!machine) throw new ApiError(404, 'ResourceNotFound', `VM not found`);
        if (method !== 'GET') throw new ApiError(405, 'BadMethod', `${method} is not allowed`);
        authorize('getmachine'); // lib/machines.js: GetMachine
        // A destroyed machine whose history is kept: 410 with the record (state "deleted").
        return { status: machine.state === 'deleted' ? 410 : 200, payload: machine };
      },
    },
    {
      // /<login>/machines/<id>/tags[/<tag>]; the machine is looked up before the rest is checked.
      path: /^\/[^/]+\/machines\/([^/]*)\/([^/]*)(?:\/([^/]*))?$/,
      handle: (sim, { method, url, body, params: [id, sub, tag], authorize }) => {
        const machine = sim.machines.get(id as string);
        if (!machine) throw new ApiError(404, 'ResourceNotFound', `VM not found`);
        if (sub !== 'tags') throw new ApiError(404, 'ResourceNotFound', `${url.pathname} does not exist`);
        // No state check for tags: sdc-cloudapi lib/machines.js loadMachine (l.1141) loads a destroyed
        // machine like any other, and lib/tags.js hands every tag call to VMAPI, whose
        // lib/interceptors.js loadVm and lib/endpoints/metadata.js check none either. What VMAPI's
        // update job then does to a destroyed machine no upstream file here shows: the simulator
        // applies the write.
        // lib/tags.js mount: the routes' names.
        const action =
          tag === undefined
            ? {
                GET: 'listmachinetags',
                HEAD: 'headmachinetags',
                POST: 'addmachinetags',
                PUT: 'replacemachinetags',
                DELETE: 'deletemachinetags',
              }[method]
            : { GET: 'getmachinetag', HEAD: 'headmachinetag', DELETE: 'deletemachinetag' }[method];
        if (action === undefined) throw new ApiError(405, 'BadMethod', `${method} is not allowed`);
        authorize(action);
        return sim.tags(method, machine, tag, body);
      },
    },
  ];

  private route(method: string, url: URL, body: string, authorize: (action: string) => void): Answer {
    const found = findRoute(TritonSim.ROUTES, method, url.pathname);
    if (!found) throw new ApiError(404, 'ResourceNotFound', `${url.pathname} does not exist`);
    const params = found.match.slice(1).map((p) => (p === undefined ? p : decodeURIComponent(p)));
    return found.route.handle(this, { method, url, body, authorize, params, match: found.match });
  }

  private listMachines(method: string, url: URL, authorize: (action: string) => void) {
    if (method !== 'GET' && method !== 'HEAD')
      throw new ApiError(405, 'BadMethod', `${method} is not allowed`);
    authorize(method === 'GET' ? 'listmachines' : 'headmachines'); // lib/machines.js mount
    const limit = intParam(url, 'limit', MAX_LIMIT);
    const offset = intParam(url, 'offset', 0);
    if (limit < 1 || limit > MAX_LIMIT) {
      throw new ApiError(409, 'InvalidArgument', `limit must be between 1 and ${MAX_LIMIT}`);
    }
    this.onListPage?.(offset);
    // sdc-cloudapi lib/machines.js getListOptions (l.400-404): without `tombstone` (any non-empty
    // value, as restify's query parser hands it over, counts) the state filter is 'active', which
    // sdc-vmapi lib/apis/moray.js _vmsListParams (l.496-497) turns into
    // (&(!(state=destroyed))(!(state=failed))): a failed machine is listed only with tombstone, as
    // docs/index.md ListMachines says ("Include destroyed and failed instances").
    const tombstone = (url.searchParams.get('tombstone') ?? '') !== '';
    // sdc-cloudapi lib/machines.js getListOptions passes no sort to VMAPI, and VMAPI then orders by
    // uuid, descending (sdc-vmapi lib/apis/moray.js _sortOptionsFromSortParam, docs/index.md
    // "Sorting"): the order does not follow creation, and a destroyed machine shifts what follows.
    // docs/index.md ListMachines `tag.$name`: only machines with that tag value (sdc-cloudapi
    // lib/machines.js hands `tag.*` to VMAPI as a tag filter).
    const tagFilters = [...url.searchParams].filter(([k]) => k.startsWith('tag.'));
    const all = [...this.machines.values()]
      .filter((m) => tombstone || (m.state !== 'deleted' && m.state !== 'failed'))
      .filter((m) => tagFilters.every(([k, v]) => String(m.tags[k.slice(4)]) === v))
      .sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    const page = all.slice(offset, offset + limit);
    return {
      status: 200,
      payload: method === 'HEAD' ? undefined : page,
      // sdc-cloudapi lib/machines.js: x-resource-count is the page's length, not the total.
      headers: { 'x-resource-count': String(page.length), 'x-query-limit': String(limit) },
    };
  }

  private tags(method: string, machine: SimMachine, tag: string | undefined, body: string) {
    if (tag !== undefined) {
      if (method === 'GET') {
        if (!(tag in machine.tags)) throw new ApiError(404, 'ResourceNotFound', `tag ${tag} not found`);
        return { status: 200, payload: machine.tags[tag] };
      }
      if (method === 'DELETE') {
        if (!(tag in machine.tags)) throw new ApiError(404, 'ResourceNotFound', `tag ${tag} not found`);
        this.later(() => {
          delete machine.tags[tag];
        });
        return { status: 204 };
      }
      throw new ApiError(405, 'BadMethod', `${method} is not allowed`);
    }
    if (method === 'GET') {
      this.onTagsRead?.(machine.id);
      return { status: 200, payload: { ...machine.tags } };
    }
    if (method === 'POST' || method === 'PUT') {
      const input = parseTags(body, method === 'POST' ? 'adding' : 'replacing');
      const result = method === 'PUT' ? input : { ...machine.tags, ...input };
      this.later(() => {
        machine.tags = { ...(method === 'PUT' ? {} : machine.tags), ...input };
      });
      return { status: 200, payload: result };
    }
    if (method === 'DELETE') {
      this.later(() => {
        machine.tags = {};
      });
      return { status: 204 };
    }
    throw new ApiError(405, 'BadMethod', `${method} is not allowed`);
  }

  private later(apply: () => void): void {
    if (this.tagDelayMs > 0) setTimeout(apply, this.tagDelayMs).unref();
    else apply();
  }
}

/** sdc-cloudapi lib/app.js config.version: the API versions CloudAPI's routes serve. */
const API_VERSIONS = ['9.0.0', '8.0.0', '7.3.0', '7.2.0', '7.1.0', '7.0.0'];

/**
 * restify 4.3.3 (CloudAPI's, its package.json): the range is Accept-Version, else X-Api-Version,
 * else "*" (lib/request.js getVersion); the route answers as the highest version in it and says so
 * in Api-Version (lib/plugins/full_response.js), and a range none satisfies is 400 InvalidVersion
 * "<range> is not supported by <method> <path>" (lib/router.js).
 */
function apiVersion(req: IncomingMessage, method: string, path: string): string {
  const header = req.headers['accept-version'] ?? req.headers['x-api-version'] ?? '*';
  const range = Array.isArray(header) ? header.join(',') : header;
  const version = API_VERSIONS.find((v) => satisfies(v, range));
  if (!version) throw new ApiError(400, 'InvalidVersion', `${range} is not supported by ${method} ${path}`);
  return version;
}

/**
 * The node-semver range forms CloudAPI's clients send ("*", "8", "8.x", "~8", "~8.1", "^8", "8.0.0",
 * joined by "||"); anything else satisfies nothing.
 */
function satisfies(version: string, range: string): boolean {
  const [major = 0, minor = 0, patch = 0] = version.split('.').map(Number);
  const wild = (v: string | undefined) => v === undefined || v === '*' || v.toLowerCase() === 'x';
  return range.split('||').some((part) => {
    const m = /^\s*([~^=])?\s*v?(\*|x|\d+)(?:\.(\*|x|\d+))?(?:\.(\*|x|\d+))?\s*$/i.exec(part);
    if (!m) return false;
    const [, op, a, b, c] = m;
    if (wild(a)) return true;
    if (Number(a) !== major) return false;
    if (wild(b)) return true;
    if (op === '^') return minor > Number(b) || (minor === Number(b) && (wild(c) || patch >= Number(c)));
    if (minor !== Number(b)) return false;
    if (wild(c)) return true;
    return op === '~' ? patch >= Number(c) : patch === Number(c);
  });
}

function intParam(url: URL, name: string, fallback: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  if (!/^\d+$/.test(raw)) throw new ApiError(409, 'InvalidArgument', `${name} must be a number`);
  return Number(raw);
}

/**
 * AddMachineTags / ReplaceMachineTags. sdc-cloudapi lib/tags.js hands the body to VMAPI (as
 * node-sdc-clients lib/vmapi.js addMetadata sends it), which validates it in
 * lib/endpoints/metadata.js addMetadata / setMetadata (l.112-141, l.147-181): an empty set
 * (lib/common/vm-common.js addMetadata), a value not a string, number or boolean ("Forbidden Data
 * Type", lib/common/validation.js validMetadata l.2252-2279), a `triton.*` tag that triton-tags'
 * validateTritonTag refuses, and Docker's own tags ("Special tag … not supported", validTags
 * l.2291-2306) are all 409 ValidationFailed "Invalid tag parameters" with the first reason in
 * `errors`; CloudAPI's vmapiErrorWrap (lib/errors.js l.322-343) exposes it as
 * "error adding tags: Invalid tag parameters" (ExposedSDCError, l.261-283), `errors` kept.
 */
function parseTags(body: string, verb: 'adding' | 'replacing'): Record<string, string | number | boolean> {
  let input: unknown;
  try {
    input = JSON.parse(body);
  } catch {
    throw new ApiError(400, 'BadRequest', 'body is not JSON');
  }
  const invalid = (field: string, message: string) =>
    new ApiError(409, 'ValidationFailed', `error ${verb} tags: Invalid tag parameters`, [
      { field, code: 'Invalid', message },
    ]);
  if (
    typeof input !== 'object' ||
    input === null ||
    Array.isArray(input) ||
    Object.keys(input).length === 0
  ) {
    throw invalid('tags', 'Invalid parameter');
  }
  const tags: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(input)) {
    if (!['string', 'number', 'boolean'].includes(typeof value)) {
      throw invalid(`tags.${key}`, 'Forbidden Data Type');
    }
    tags[key] = value as string | number | boolean;
  }
  for (const [key, value] of Object.entries(tags)) {
    if (tritonTags.isTritonTag(key)) {
      const problem = tritonTags.validateTritonTag(key, value);
      if (problem !== null) throw invalid('tags', problem);
    } else if (DOCKER_TAG.test(key)) {
      throw invalid('tags', `Special tag "${key}" not supported`);
    }
  }
  return tags;
}

/** sdc-vmapi lib/common/validation.js DOCKER_TAG_DEFAULT_RE (l.38). */
const DOCKER_TAG = /^(?:sdc_docker$|docker:label:triton\.|docker:label:(?:com|io|org)\.docker(?:project)?\.)/;
