/**
 * A DigitalOcean API (v2) on 127.0.0.1 for tests: droplets, load balancers that move from new to
 * active, the account, pagination (per_page, page, links.pages, meta.total), the rate limits per token
 * (250 a minute, 5,000 an hour, with their headers and 429s: rateLimit), and injectable faults. Written from DigitalOcean's OpenAPI document. When the document
 * is found (openapi.ts), every request and every response is checked against it and each mismatch is kept
 * in `specViolations`; what breaks the simulator's own rules is kept in `violations` either way.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Operation } from 'openapi-backend';
import { FaultList, findRoute, type Listening, listen, type Route, readBody } from '../http-core.js';
import { SpecChecker, specViolations } from './openapi.js';

const fixture = (name: string) =>
  JSON.parse(readFileSync(new URL(`../../fixtures/digitalocean/${name}`, import.meta.url), 'utf8'));
const DROPLET_TEMPLATE = fixture('droplet.json');
const LB_TEMPLATE = fixture('load-balancer.json');

/** One operation the simulator answers: its row in the route table, with its OpenAPI operationId. */
export interface OperationRow extends Route<(sim: DigitalOceanSimulator, call: OperationCall) => Answer> {
  method: string;
  operationId: string;
}
interface OperationCall {
  url: URL;
  body: unknown;
  match: RegExpExecArray;
}

export interface DropletInput {
  id?: number;
  name: string;
  status?: 'new' | 'active' | 'off' | 'archive';
  size?: string;
  region?: string;
  privateIP?: string;
  publicIP?: string;
  ipv6?: string;
  vpc?: string;
  tags?: string[];
}

export interface Fault {
  method?: string;
  /** Exact pathname, or a pattern over it. */
  path?: string | RegExp;
  /** For listings: only this page (page 1 when the query has none). */
  page?: number;
  /** How many matching requests it hits; default 1. */
  times?: number;
  /** Answer with this status and DigitalOcean's error body. */
  status?: number;
  /** With status 429: the retry-after header, in seconds. */
  retryAfterSeconds?: number;
  /** Answer this much later (a slow API). */
  delayMs?: number;
  /** Never answer (the client's timeout must end it). */
  hang?: boolean;
  /** Answer with this raw body instead (e.g. a proxy's HTML 404). */
  raw?: { body: string; contentType: string };
  /**
   * The request is handled (a create creates), but the client gets `status` (default 504) instead of
   * the answer: a gateway that timed out after the cloud did the work.
   */
  lostAnswer?: boolean;
  /** Runs once the answer is sent: e.g. a droplet vanishes between two pages. */
  after?: (sim: DigitalOceanSimulator) => void;
}

export interface RecordedRequest {
  method: string;
  /** Pathname and query as received. */
  url: string;
  /** Date.now() when it arrived and when its answer was sent. */
  at: number;
  answeredAt?: number;
  status?: number;
  authorization?: string;
  body?: unknown;
}

interface Answer {
  status: number;
  body?: unknown;
}

type Json = Record<string, unknown>;

const ERRORS: Record<number, [string, string]> = {
  400: ['bad_request', 'The request could not be understood.'],
  401: ['unauthorized', 'Unable to authenticate you.'],
  404: ['not_found', 'The resource you were accessing could not be found.'],
  422: ['unprocessable_entity', 'The request could not be processed.'],
  429: ['too_many_requests', 'API Rate limit exceeded.'],
  500: ['server_error', 'Unexpected server-side error'],
  502: ['bad_gateway', 'Bad gateway.'],
  503: ['service_unavailable', 'The service is temporarily unavailable.'],
};

export function errorBody(status: number, message?: string): Json {
  const [id, text] = ERRORS[status] ?? ['error', 'Something went wrong.'];
  return { id, message: message ?? text, request_id: randomUUID() };
}

export interface SimulatorOptions {
  token?: string;
  /** GETs of a new load balancer before it is active; default 1. */
  lbActivationPolls?: number;
  /** Requests per minute and token before 429 (DigitalOcean's burst limit); default 250. */
  burstLimitPerMinute?: number;
  /** Requests per hour and token before 429 (the `ratelimit-limit` header); default 5,000. */
  limitPerHour?: number;
  /**
   * How long a load balancer refuses changes after each change (it "processes previous actions");
   * default 200 ms, so a client that sends two changes back to back meets the refusal.
   */
  busyAfterChangeMs?: number;
  /**
   * The origin that `links.pages` name instead of the simulator's own: the API behind a proxy that
   * does not rewrite bodies (DO_OVERRIDE_URL), whose links still say https://api.digitalocean.com.
   */
  linkOrigin?: string;
  /** PEM key and certificate: listen over HTTPS, as the real API does (a test of the connection itself). */
  tls?: { key: string; cert: string };
}

/**
 * What the API answers a change to a load balancer that is still new or still applying the previous
 * change: digitalocean/openapi issue 1173 shows this body with status 403, and
 * ansible-collections/community.digitalocean issue 185 the same message on updates right after a
 * change. The published document has no 403 for these operations; it is their `default` error.
 */
const BUSY_MESSAGE = "Load Balancer can't be updated while it processes previous actions";

export class DigitalOceanSimulator {
  readonly token: string;
  readonly requests: RecordedRequest[] = [];
  readonly violations: string[] = [];
  readonly droplets = new Map<number, Json>();
  readonly loadBalancers = new Map<string, Json>();
  private readonly polls = new Map<string, number>();
  /** When each load balancer was last changed (Date.now()). */
  private readonly changedAt = new Map<string, number>();
  private readonly faults = new FaultList<Fault>(1);
  /** Other accounts on the same API, by their `Authorization` header (addAccount). */
  private readonly accounts = new Map<string, DigitalOceanSimulator>();
  /** More tokens of this same account (`Authorization` headers), as a rotated personal access token. */
  private readonly moreTokens = new Set<string>();
  /**
   * The rate limits' count, per token (its `Authorization` header): when each request it was
   * answered for arrived (Date.now()), oldest first, kept for an hour. See rateLimit.
   */
  private readonly counted = new Map<string, number[]>();
  /** The ratelimit-* headers worked out for each request when it arrived (send adds them). */
  private readonly limitHeaders = new WeakMap<RecordedRequest, Record<string, string>>();
  /**
   * While true, a load balancer stays `new` however often it is read: DigitalOcean takes minutes to
   * build one, and its official controller answers "load-balancer is not yet active" until then
   * (digitalocean-cloud-controller-manager cloud-controller-manager/do/loadbalancers.go,
   * EnsureLoadBalancer). lbActivationPolls without a count, switched by the test.
   */
  holdNew = false;
  private nextDropletId = 100_001;
  private nextLbIp = 1;
  url = '';

  private listening?: Listening;

  private constructor(
    private readonly spec: SpecChecker | undefined,
    private readonly options: SimulatorOptions,
  ) {
    this.token = options.token ?? 'dop_v1_simulated0123456789abcdef';
  }

  static async start(options: SimulatorOptions = {}): Promise<DigitalOceanSimulator> {
    const spec = await SpecChecker.load();
    spec?.warm(DigitalOceanSimulator.OPERATIONS.map((row) => row.operationId));
    const sim = new DigitalOceanSimulator(spec, options);
    sim.listening = await listen((req, res) => {
      sim.handle(req, res).catch((err) => {
        sim.violations.push(`simulator failed: ${err instanceof Error ? err.stack : String(err)}`);
        if (!res.headersSent) res.writeHead(500).end();
      });
    }, options.tls);
    sim.url = sim.listening.url;
    return sim;
  }

  async stop(): Promise<void> {
    await this.listening?.close();
  }

  /** The simulator's own violations so far, cleared: assert it is empty after each test. */
  takeViolations(): string[] {
    return this.violations.splice(0);
  }

  reset(): void {
    this.accounts.clear();
    this.moreTokens.clear();
    this.counted.clear();
    this.requests.length = 0;
    this.droplets.clear();
    this.loadBalancers.clear();
    this.polls.clear();
    this.changedAt.clear();
    this.faults.clear();
    this.holdNew = false;
  }

  fault(fault: Fault): void {
    this.faults.add(fault);
  }

  /**
   * Another account on the same API: requests with its token see its own droplets and load
   * balancers, never this account's (a droplet of this one is a plain 404 to it), and are recorded
   * in its own `requests`.
   */
  addAccount(token: string): DigitalOceanSimulator {
    const other = new DigitalOceanSimulator(this.spec, { ...this.options, token });
    other.url = this.url;
    this.accounts.set(`Bearer ${token}`, other);
    return other;
  }

  /** Another token of this account: a rotation to it changes the credentials, not what they see. */
  acceptToken(token: string): void {
    this.moreTokens.add(`Bearer ${token}`);
  }

  addDroplets(...inputs: DropletInput[]): Json[] {
    return inputs.map((input) => {
      const id = input.id ?? this.nextDropletId++;
      const region = input.region ?? 'nyc3';
      const droplet: Json = {
        ...structuredClone(DROPLET_TEMPLATE),
        id,
        name: input.name,
        status: input.status ?? 'active',
        size_slug: input.size ?? 's-2vcpu-4gb',
        size: { ...DROPLET_TEMPLATE.size, slug: input.size ?? 's-2vcpu-4gb' },
        region: { ...DROPLET_TEMPLATE.region, slug: region },
        networks: {
          v4: [
            ...(input.privateIP
              ? [{ ip_address: input.privateIP, netmask: '255.255.0.0', gateway: 'nil', type: 'private' }]
              : []),
            ...(input.publicIP
              ? [
                  {
                    ip_address: input.publicIP,
                    netmask: '255.255.255.0',
                    gateway: '203.0.113.1',
                    type: 'public',
                  },
                ]
              : []),
          ],
          v6: input.ipv6
            ? [{ ip_address: input.ipv6, netmask: 64, gateway: '2001:db8::1', type: 'public' }]
            : [],
        },
        vpc_uuid: input.vpc ?? 'c33931f2-a26a-4e61-b85c-4e95a2ec431b',
        tags: input.tags ?? [],
      };
      this.droplets.set(id, droplet);
      if (id >= this.nextDropletId) this.nextDropletId = id + 1;
      return droplet;
    });
  }

  removeDroplet(id: number): void {
    this.droplets.delete(id);
  }

  /** A load balancer made outside ccm (by hand, by another cluster). */
  addLoadBalancer(fields: Json): Json {
    const lb: Json = { ...this.newLoadBalancer(fields), status: 'active', ip: this.lbIp() };
    this.loadBalancers.set(lb.id as string, lb);
    return lb;
  }

  setLoadBalancerStatus(id: string, status: 'new' | 'active' | 'errored'): void {
    const lb = this.loadBalancers.get(id);
    if (lb) lb.status = status;
  }

  /** Requests other than the ones matching `method path` (path without query). */
  requestsTo(method: string, pathname: string | RegExp): RecordedRequest[] {
    return this.requests.filter((r) => {
      const path = r.url.split('?')[0] ?? '';
      return r.method === method && (typeof pathname === 'string' ? path === pathname : pathname.test(path));
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const account = this.accounts.get(req.headers.authorization ?? '');
    if (account) return account.handle(req, res);
    const raw = await readBody(req);
    const url = new URL(req.url ?? '/', this.url);
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      url: url.pathname + url.search,
      at: Date.now(),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    };
    this.requests.push(record);

    let body: unknown;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
        record.body = body;
      } catch {
        this.violations.push(`${record.method} ${record.url}: body is not JSON`);
        return this.send(res, record, undefined, { status: 400, body: errorBody(400) });
      }
    }
    const query: Record<string, string | string[]> = {};
    for (const key of new Set(url.searchParams.keys())) {
      const all = url.searchParams.getAll(key);
      query[key] = all.length === 1 ? (all[0] ?? '') : all;
    }
    const headers = Object.fromEntries(
      Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
    );
    const found = findRoute(DigitalOceanSimulator.OPERATIONS, record.method, url.pathname);
    if (!found) {
      this.violations.push(`${record.method} ${url.pathname} is no operation the simulator answers`);
    }
    const checked = this.spec?.checkRequest({
      method: record.method,
      path: url.pathname,
      query,
      headers,
      body,
    });
    specViolations.push(...(checked?.errors ?? []));

    const authorization = req.headers.authorization ?? '';
    if (authorization !== `Bearer ${this.token}` && !this.moreTokens.has(authorization)) {
      return this.send(res, record, checked?.operation, { status: 401, body: errorBody(401) });
    }
    const limited = this.rateLimit(authorization, record);
    if (limited) {
      return this.send(
        res,
        record,
        checked?.operation,
        { status: 429, body: errorBody(429) },
        limited.retryAfterSeconds,
      );
    }

    const page = Number(url.searchParams.get('page') ?? '1');
    const fault = this.faults.take(
      record.method,
      url.pathname,
      (f) => f.page === undefined || f.page === page,
    );
    if (fault) {
      if (fault.hang) return; // the socket stays open until the client gives up or stop()
      if (fault.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
      if (fault.raw) {
        record.status = fault.status ?? 404;
        record.answeredAt = Date.now();
        res.writeHead(record.status, { 'content-type': fault.raw.contentType }).end(fault.raw.body);
        fault.after?.(this);
        return;
      }
      if (fault.lostAnswer) {
        if (found && !checked?.errors.length) found.route.handle(this, { url, body, match: found.match });
        const status = fault.status ?? 504;
        this.send(res, record, checked?.operation, { status, body: errorBody(status) });
        fault.after?.(this);
        return;
      }
      if (fault.status) {
        this.send(
          res,
          record,
          checked?.operation,
          { status: fault.status, body: errorBody(fault.status) },
          fault.retryAfterSeconds,
        );
        fault.after?.(this);
        return;
      }
    }

    const answer: Answer = !found
      ? { status: 404, body: errorBody(404) }
      : checked?.errors.length
        ? { status: 422, body: errorBody(422, checked.errors[0]) }
        : found.route.handle(this, { url, body, match: found.match });
    this.send(res, record, checked?.operation, answer);
    fault?.after?.(this);
  }

  private send(
    res: ServerResponse,
    record: RecordedRequest,
    operation: Operation | undefined,
    answer: Answer,
    retryAfterSeconds?: number,
  ): void {
    const headers: Record<string, string> = {
      'content-type': 'application/json; charset=utf-8',
      ...(this.limitHeaders.get(record) ?? this.rateLimitHeaders([], record.at)),
      ...(retryAfterSeconds !== undefined ? { 'retry-after': String(retryAfterSeconds) } : {}),
    };
    if (this.spec && operation) {
      specViolations.push(...this.spec.checkResponse(operation, answer.status, headers, answer.body));
    }
    record.status = answer.status;
    record.answeredAt = Date.now();
    if (answer.body === undefined) {
      delete headers['content-type'];
      res.writeHead(answer.status, headers).end();
    } else {
      res.writeHead(answer.status, headers).end(JSON.stringify(answer.body));
    }
  }

  /**
   * DigitalOcean's rate limits, from the "Rate Limit" section of its OpenAPI document
   * (info.description): "Requests through the API are rate limited per OAuth token", "5,000 requests
   * per hour" and "250 requests per minute (5% of the hourly total)"; "each request contributes toward
   * the ratelimit-remaining count for one complete hour after the request is made" (a sliding window,
   * not a reset on the hour); ratelimit-limit is the requests an hour, ratelimit-reset the Unix time
   * at which the oldest counted request expires. Over either limit the answer is 429 with the
   * `too_many_requests` body ("Sample Rate Exceeded Response", components.responses.too_many_requests)
   * and ratelimit-remaining 0 ("ratelimit-remaining reaching zero can also indicate that the burst
   * limit of 250 requests per minute limit was met"); only a burst 429 carries retry-after ("More rate
   * limiting information is returned only within burst limit error response headers"). godo reads the
   * same three headers from every answer, errors included (godo.go `Rate`, `populateRate`;
   * godo_test.go TestDo_rateLimit_errorResponse), and CheckResponse turns the 429 body into its
   * ErrorResponse.
   *
   * The document does not say whether a refused request counts: here it does not, so a client that
   * waits retry-after is served. A request whose token is refused (401) counts for no token.
   *
   * Returns the refusal, or undefined once the request is counted; the headers are kept for send.
   */
  private rateLimit(
    authorization: string,
    record: RecordedRequest,
  ): { retryAfterSeconds?: number } | undefined {
    const now = record.at;
    let times = this.counted.get(authorization);
    if (!times) {
      times = [];
      this.counted.set(authorization, times);
    }
    const expired = times.findIndex((t) => t > now - 3_600_000);
    times.splice(0, expired === -1 ? times.length : expired);
    const perHour = this.options.limitPerHour ?? 5000;
    const perMinute = this.options.burstLimitPerMinute ?? 250;
    if (times.length >= perHour) {
      this.limitHeaders.set(record, { ...this.rateLimitHeaders(times, now), 'ratelimit-remaining': '0' });
      return {};
    }
    const minuteStart = times.findIndex((t) => t > now - 60_000);
    const inMinute = minuteStart === -1 ? 0 : times.length - minuteStart;
    if (inMinute >= perMinute) {
      // Free again when the request perMinute places back expires from the minute.
      const freedAt = (times[times.length - perMinute] ?? now) + 60_000;
      this.limitHeaders.set(record, { ...this.rateLimitHeaders(times, now), 'ratelimit-remaining': '0' });
      return { retryAfterSeconds: Math.max(1, Math.ceil((freedAt - now) / 1000)) };
    }
    times.push(now);
    this.limitHeaders.set(record, this.rateLimitHeaders(times, now));
    return undefined;
  }

  /** ratelimit-* for a token's counted requests (oldest first) at `now`. */
  private rateLimitHeaders(times: readonly number[], now: number): Record<string, string> {
    const perHour = this.options.limitPerHour ?? 5000;
    return {
      'ratelimit-limit': String(perHour),
      'ratelimit-remaining': String(Math.max(0, perHour - times.length)),
      'ratelimit-reset': String(Math.ceil(((times[0] ?? now) + 3_600_000) / 1000)),
    };
  }

  /**
   * The operations the simulator answers, by method and path, with their operationId in the OpenAPI
   * document (its `paths`: /v2/account, /v2/droplets, /v2/droplets/{droplet_id}, /v2/load_balancers,
   * /v2/load_balancers/{lb_id}, /v2/load_balancers/{lb_id}/droplets). Any other request is a violation.
   */
  static readonly OPERATIONS: readonly OperationRow[] = [
    {
      method: 'GET',
      path: /^\/v2\/account$/,
      operationId: 'account_get',
      handle: () => ({
        status: 200,
        body: {
          account: {
            droplet_limit: 25,
            floating_ip_limit: 5,
            email: 'sammy@digitalocean.com',
            name: 'Sammy the Shark',
            uuid: 'b6fr89dbf6d9156cace5f3c78dc9851d957381ef',
            email_verified: true,
            status: 'active',
            status_message: ' ',
            team: { uuid: '5df3e3004a17e242b7c20ca6c9fc25b701a47ece', name: 'My Team' },
          },
        },
      }),
    },
    {
      // Asked by DigitalOcean's own controller at start to check REGION (cloud-controller-manager/do/
      // metadata.go isValidRegion); the regions of the document's all_regions example, paged like any list.
      method: 'GET',
      path: /^\/v2\/regions$/,
      operationId: 'regions_list',
      handle: (sim, { url }) => {
        const regions = ['nyc1', 'nyc3', 'sfo3', 'ams3', 'fra1', 'lon1', 'sgp1', 'tor1', 'blr1', 'syd1'].map(
          (slug) => ({
            name: slug,
            slug,
            features: ['private_networking', 'backups', 'ipv6', 'metadata', 'install_agent', 'storage'],
            available: true,
            sizes: ['s-1vcpu-1gb', 's-1vcpu-2gb', 's-2vcpu-2gb'],
          }),
        );
        return { status: 200, body: sim.page(url, 'regions', regions) };
      },
    },
    {
      method: 'GET',
      path: /^\/v2\/droplets$/,
      operationId: 'droplets_list',
      handle: (sim, { url }) => {
        const name = url.searchParams.get('name')?.toLowerCase();
        const all = [...sim.droplets.values()]
          .filter((d) => name === undefined || String(d.name).toLowerCase() === name)
          .sort((a, b) => Number(a.id) - Number(b.id));
        return { status: 200, body: sim.page(url, 'droplets', all) };
      },
    },
    {
      method: 'GET',
      path: /^\/v2\/droplets\/([^/]+)$/,
      operationId: 'droplets_get',
      handle: (sim, { match }) => {
        const droplet = sim.droplets.get(Number(match[1]));
        return droplet ? { status: 200, body: { droplet } } : { status: 404, body: errorBody(404) };
      },
    },
    {
      method: 'GET',
      path: /^\/v2\/load_balancers$/,
      operationId: 'loadBalancers_list',
      handle: (sim, { url }) => {
        const all = [...sim.loadBalancers.values()].map((lb) => sim.observe(lb));
        return { status: 200, body: sim.page(url, 'load_balancers', all) };
      },
    },
    {
      method: 'POST',
      path: /^\/v2\/load_balancers$/,
      operationId: 'loadBalancers_create',
      handle: (sim, { body }) => sim.createLoadBalancer(body as Json),
    },
    {
      method: 'GET',
      path: /^\/v2\/load_balancers\/([^/]+)$/,
      operationId: 'loadBalancers_get',
      handle: (sim, { match }) => {
        const lb = sim.loadBalancers.get(match[1] as string);
        return lb
          ? { status: 200, body: { load_balancer: sim.observe(lb) } }
          : { status: 404, body: errorBody(404) };
      },
    },
    {
      method: 'PUT',
      path: /^\/v2\/load_balancers\/([^/]+)$/,
      operationId: 'loadBalancers_update',
      handle: (sim, { match: [, id = ''], body }) => sim.busy(id) ?? sim.updateLoadBalancer(id, body as Json),
    },
    {
      method: 'DELETE',
      path: /^\/v2\/load_balancers\/([^/]+)$/,
      operationId: 'loadBalancers_delete',
      handle: (sim, { match: [, id = ''] }) => {
        sim.changedAt.delete(id);
        return sim.loadBalancers.delete(id) ? { status: 204 } : { status: 404, body: errorBody(404) };
      },
    },
    {
      method: 'POST',
      path: /^\/v2\/load_balancers\/([^/]+)\/droplets$/,
      operationId: 'loadBalancers_add_droplets',
      handle: (sim, { match: [, id = ''], body }) => sim.changeMembers(id, body, 'add'),
    },
    {
      method: 'DELETE',
      path: /^\/v2\/load_balancers\/([^/]+)\/droplets$/,
      operationId: 'loadBalancers_remove_droplets',
      handle: (sim, { match: [, id = ''], body }) => sim.changeMembers(id, body, 'remove'),
    },
  ];

  /** loadBalancers_add_droplets and loadBalancers_remove_droplets. */
  private changeMembers(id: string, body: unknown, change: 'add' | 'remove'): Answer {
    const lb = this.loadBalancers.get(id);
    if (!lb) return { status: 404, body: errorBody(404) };
    const busy = this.busy(lb.id as string);
    if (busy) return busy;
    const ids = (body as { droplet_ids: number[] }).droplet_ids;
    const missing = this.missingDroplets(ids, lb);
    if (missing) return missing;
    const current = new Set(lb.droplet_ids as number[]);
    for (const droplet of ids) {
      if (change === 'add') current.add(droplet);
      else current.delete(droplet);
    }
    lb.droplet_ids = [...current].sort((a, b) => a - b);
    this.changedAt.set(lb.id as string, Date.now());
    return { status: 204 };
  }

  /** One page, as the API pages: per_page (default 20, at most 200), links.pages, meta.total. */
  private page(url: URL, key: string, all: Json[]): Json {
    const perPage = Number(url.searchParams.get('per_page') ?? '20');
    const page = Number(url.searchParams.get('page') ?? '1');
    const last = Math.max(1, Math.ceil(all.length / perPage));
    const link = (n: number) => {
      const u = new URL(url.pathname, this.options.linkOrigin ?? this.url);
      u.searchParams.set('page', String(n));
      u.searchParams.set('per_page', String(perPage));
      return u.toString();
    };
    const pages: Record<string, string> = {};
    if (page > 1) Object.assign(pages, { first: link(1), prev: link(page - 1) });
    if (page < last) Object.assign(pages, { last: link(last), next: link(page + 1) });
    return {
      [key]: all.slice((page - 1) * perPage, page * perPage),
      links: Object.keys(pages).length > 0 ? { pages } : {},
      meta: { total: all.length },
    };
  }

  /** The 403 of a load balancer that is new or still applying its last change, else undefined. */
  private busy(id: string): Answer | undefined {
    const lb = this.loadBalancers.get(id);
    if (!lb) return undefined;
    const since = Date.now() - (this.changedAt.get(id) ?? Number.NEGATIVE_INFINITY);
    if (lb.status !== 'new' && since >= (this.options.busyAfterChangeMs ?? 200)) return undefined;
    return { status: 403, body: { id: 'forbidden', message: BUSY_MESSAGE, request_id: randomUUID() } };
  }

  /** A new address each: DigitalOcean never gives two load balancers one IP (past 250, the shared space 100.64/10). */
  private lbIp(): string {
    const n = this.nextLbIp++;
    if (n < 250) return `203.0.113.${n + 2}`;
    return `100.64.${Math.floor(n / 250)}.${(n % 250) + 2}`;
  }

  /** A new load balancer becomes active after `lbActivationPolls` reads. */
  private observe(lb: Json): Json {
    if (lb.status === 'new' && !this.holdNew) {
      const seen = (this.polls.get(lb.id as string) ?? 0) + 1;
      this.polls.set(lb.id as string, seen);
      if (seen > (this.options.lbActivationPolls ?? 1) - 1) {
        lb.status = 'active';
        lb.ip = this.lbIp();
      }
    }
    return lb;
  }

  private newLoadBalancer(fields: Json): Json {
    const template = structuredClone(LB_TEMPLATE) as Json;
    const region = typeof fields.region === 'string' ? fields.region : 'nyc3';
    const { region: _region, ...rest } = fields;
    return {
      ...template,
      id: randomUUID(),
      name: `lb-${randomUUID().slice(0, 8)}`,
      ip: '',
      status: 'new',
      created_at: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      droplet_ids: [],
      tag: '',
      size_unit: 1,
      firewall: { deny: [], allow: [] },
      sticky_sessions: { type: 'none' },
      redirect_http_to_https: false,
      enable_proxy_protocol: false,
      enable_backend_keepalive: false,
      http_idle_timeout_seconds: 60,
      ...rest,
      forwarding_rules: ((rest.forwarding_rules ?? template.forwarding_rules) as Json[]).map((r) => ({
        certificate_id: '',
        tls_passthrough: false,
        ...r,
      })),
      health_check: { ...(template.health_check as Json), ...((rest.health_check as Json) ?? {}) },
      region: { ...(template.region as Json), slug: region },
    };
  }

  /** What the API refuses beyond the schema: unknown fields, missing droplets, https without TLS. */
  private refuse(body: Json): Answer | undefined {
    const known = new Set([
      ...Object.keys(LB_TEMPLATE),
      'size_unit',
      'network',
      'network_stack',
      'type',
      'domains',
      'glb_settings',
      'target_load_balancer_ids',
      'tls_cipher_policy',
      'vpc_uuid',
      'project_id',
      'tags',
    ]);
    const unknown = Object.keys(body).filter((k) => !known.has(k));
    if (unknown.length > 0) {
      this.violations.push(
        `load balancer request with fields the API does not document: ${unknown.join(', ')}`,
      );
      return { status: 422, body: errorBody(422, `unknown fields: ${unknown.join(', ')}`) };
    }
    if (body.droplet_ids && body.tag) {
      return { status: 422, body: errorBody(422, 'droplet_ids and tag are mutually exclusive') };
    }
    for (const rule of (body.forwarding_rules as Json[]) ?? []) {
      const tls = rule.entry_protocol === 'https' || rule.entry_protocol === 'http2';
      if (tls && !rule.certificate_id && !rule.tls_passthrough) {
        return {
          status: 422,
          body: errorBody(
            422,
            `forwarding rule ${rule.entry_port}: ${rule.entry_protocol} needs a certificate_id or tls_passthrough`,
          ),
        };
      }
    }
    return undefined;
  }

  private missingDroplets(ids: number[], lb: { region?: unknown }): Answer | undefined {
    const region = (lb.region as { slug?: string } | undefined)?.slug;
    for (const id of ids) {
      const droplet = this.droplets.get(id);
      if (!droplet) return { status: 422, body: errorBody(422, `droplet ${id} does not exist`) };
      if (region && (droplet.region as { slug: string }).slug !== region) {
        return { status: 422, body: errorBody(422, `droplet ${id} is not in region ${region}`) };
      }
    }
    return undefined;
  }

  private createLoadBalancer(body: Json): Answer {
    const refused = this.refuse(body);
    if (refused) return refused;
    const lb = this.newLoadBalancer(body);
    const missing = this.missingDroplets((body.droplet_ids as number[]) ?? [], lb);
    if (missing) return missing;
    this.loadBalancers.set(lb.id as string, lb);
    this.changedAt.set(lb.id as string, Date.now());
    return { status: 202, body: { load_balancer: lb } };
  }

  private updateLoadBalancer(id: string, body: Json): Answer {
    const current = this.loadBalancers.get(id);
    if (!current) return { status: 404, body: errorBody(404) };
    const refused = this.refuse(body);
    if (refused) return refused;
    const next = this.newLoadBalancer(body);
    const missing = this.missingDroplets((body.droplet_ids as number[]) ?? [], next);
    if (missing) return missing;
    const lb = {
      ...next,
      id,
      ip: current.ip,
      status: current.status,
      created_at: current.created_at,
      // godo load_balancers.go: "Tags can only be provided upon the creation of a Load Balancer".
      tags: current.tags,
    };
    this.loadBalancers.set(id, lb);
    this.changedAt.set(id, Date.now());
    return { status: 200, body: { load_balancer: lb } };
  }
}

export const OPERATIONS = DigitalOceanSimulator.OPERATIONS;
