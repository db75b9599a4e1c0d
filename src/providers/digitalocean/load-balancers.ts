import { monotonicMs } from '../../clock.js';
import {
  InvalidConfigError,
  isNotFound,
  NotFoundError,
  ProvisioningError,
  RetryableError,
} from '../errors.js';
import { parseProviderID } from '../provider-id.js';
import type { LoadBalancerNode, LoadBalancerRequest, LoadBalancerStatus, LoadBalancers } from '../types.js';
import { claimRefusal, doAdoption } from './adoption.js';
import {
  bool,
  CERTIFICATE_ID,
  DISOWN,
  ENABLE_BACKEND_KEEPALIVE,
  ENABLE_PROXY_PROTOCOL,
  HEALTHCHECK_HEALTHY,
  HEALTHCHECK_INTERVAL,
  HEALTHCHECK_PATH,
  HEALTHCHECK_PORT,
  HEALTHCHECK_PROTOCOL,
  HEALTHCHECK_TIMEOUT,
  HEALTHCHECK_UNHEALTHY,
  HOSTNAME,
  HTTP_IDLE_TIMEOUT_SECONDS,
  integer,
  invalid,
  LOAD_BALANCER_ID,
  NAME,
  oneOf,
  PROTOCOL,
  ports,
  REDIRECT_HTTP_TO_HTTPS,
  SIZE_UNIT,
  STICKY_SESSIONS_COOKIE_NAME,
  STICKY_SESSIONS_COOKIE_TTL,
  STICKY_SESSIONS_TYPE,
  TLS_PASSTHROUGH,
  TLS_PORTS,
  text,
} from './annotations.js';
import { type DigitalOceanClient, ListingChangedError, PER_PAGE } from './client.js';
import { DropletMemo, dropletIdFromProviderID, getDroplet, listDroplets, SCHEME } from './instances.js';

/** components/schemas/forwarding_rule */
export interface ForwardingRule {
  entry_protocol: 'http' | 'https' | 'http2' | 'tcp' | 'udp';
  entry_port: number;
  target_protocol: 'http' | 'https' | 'http2' | 'tcp' | 'udp';
  target_port: number;
  certificate_id?: string;
  tls_passthrough?: boolean;
}

/** components/schemas/health_check */
export interface HealthCheck {
  protocol: 'http' | 'https' | 'tcp';
  port: number;
  path: string;
  check_interval_seconds: number;
  response_timeout_seconds: number;
  unhealthy_threshold: number;
  healthy_threshold: number;
}

/** components/schemas/sticky_sessions */
export interface StickySessions {
  type: 'none' | 'cookies';
  cookie_name?: string;
  cookie_ttl_seconds?: number;
}

/** The fields of components/schemas/load_balancer that ccm sets or reads. */
export interface DoLoadBalancer {
  id: string;
  name: string;
  ip?: string;
  ipv6?: string;
  status?: 'new' | 'active' | 'errored';
  region?: { slug: string };
  droplet_ids?: number[];
  forwarding_rules: ForwardingRule[];
  health_check?: HealthCheck;
  sticky_sessions?: StickySessions;
  size_unit?: number;
  redirect_http_to_https?: boolean;
  enable_proxy_protocol?: boolean;
  enable_backend_keepalive?: boolean;
  http_idle_timeout_seconds?: number;
  firewall?: { allow?: string[]; deny?: string[] };
  vpc_uuid?: string;
  created_at?: string;
  /**
   * Not in DigitalOcean's published OpenAPI document, but accepted and returned by the API: the
   * official controller tags its load balancers `k8s:<cluster id>` the same way.
   */
  tags?: string[];
}

/** What ccm sets on a load balancer, from the Service alone (no cloud call). */
interface Settings {
  name: string;
  forwarding_rules: ForwardingRule[];
  health_check: HealthCheck;
  sticky_sessions: StickySessions;
  size_unit?: number;
  redirect_http_to_https: boolean;
  enable_proxy_protocol: boolean;
  enable_backend_keepalive: boolean;
  http_idle_timeout_seconds?: number;
  firewall: { allow: string[]; deny: string[] };
}

/** What finds the load balancer and says whether ccm may touch it. */
interface Identity {
  name: string;
  /**
   * The name is ccm's own for this Service (derived from its UID), not one a user chose by annotation:
   * only then are two load balancers of that name and tag certainly two creations of this Service.
   */
  ownName: boolean;
  tag: string;
  disown: boolean;
  hostname?: string;
  /** The load balancer id the Service names (a UUID), if any. */
  id?: string;
  /** On deletion: why an identifying annotation was ignored (it names nothing ccm could own). */
  ignored?: string;
}

const TAG_PREFIX = 'k8s:';
const TAG = /^[a-zA-Z0-9_\-:]+$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PROVISIONING_RETRY_MS = 10_000;
/**
 * How old a finished load balancer listing may be and still answer a Service, when it started after
 * that Service's own last write: what ccm wrote is in it, and what changed since by anyone else is
 * seen at most this late. Shared by every Service syncing meanwhile, so 300 Services deleted or
 * given new Nodes at once cost a listing every 10 s, not one each.
 */
const RECENT_LISTING_MS = 10_000;
/**
 * The least time between the starts of two load balancer listings: 100 Services waiting for their
 * addresses, each asking for a listing newer than its last look, share one every 2 s at most rather
 * than keeping one always under way (30 a minute, not 120).
 */
const LISTING_GAP_MS = 2_000;
/** After how long a Service's last write is forgotten: far longer than any listing takes. */
const FORGET_WRITES_MS = 15 * 60_000;
/**
 * Backend droplets a create reads at most, of those the last listing did not show: a droplet found
 * gone (404) is remembered and never read again, so each attempt gets further.
 */
const MAX_DROPLET_READS = 3;

/** The ownership tag, `k8s:<cluster id>`, the official controller's format. */
export function ownershipTag(clusterID: string): string {
  const tag = `${TAG_PREFIX}${clusterID}`;
  if (!clusterID || !TAG.test(tag) || tag.length > 255) {
    throw new InvalidConfigError(
      `cluster name ${JSON.stringify(clusterID)} cannot be a DigitalOcean tag; use letters, digits, "-", "_" and ":" (--cluster-name)`,
    );
  }
  return tag;
}

/**
 * The annotations that find the load balancer. Deliberately few, so that a Service with a broken
 * protocol annotation can still be deleted.
 */
export function identify(req: LoadBalancerRequest): Identity {
  const a = req.service.annotations;
  const tag = ownershipTag(req.clusterID);
  const ignored: string[] = [];
  // On deletion a malformed value names no load balancer ccm could have made: ccm's own name and
  // tag find it instead, and the finalizer can go.
  const refuse = (error: InvalidConfigError) => {
    if (!req.deleting) throw error;
    ignored.push(error.message.replace(/; use .*$/, ''));
  };
  let id = text(a, LOAD_BALANCER_ID);
  if (id !== undefined && !UUID.test(id)) {
    refuse(invalid(LOAD_BALANCER_ID, id, 'a load balancer id (a UUID)'));
    id = undefined;
  }
  let name = text(a, NAME) ?? req.name;
  if (name.length > 255) {
    refuse(invalid(NAME, name, 'a name of at most 255 characters'));
    name = req.name;
  }
  const hostname = text(a, HOSTNAME);
  return {
    name,
    ownName: name === req.name,
    tag,
    disown: bool(a, DISOWN),
    ...(hostname ? { hostname } : {}),
    ...(id ? { id } : {}),
    ...(ignored.length > 0
      ? {
          ignored: `${ignored.join('; ')}; it names no load balancer ccm could have created, so ccm deleted the one with its own name and tag ${tag}, if any`,
        }
      : {}),
  };
}

/** Every annotation the load balancer's configuration depends on; a bad one fails before any cloud call. */
export function settingsOf(req: LoadBalancerRequest): Settings {
  const a = req.service.annotations;
  const { name } = identify(req);

  const sticky = oneOf(a, STICKY_SESSIONS_TYPE, ['none', 'cookies'] as const) ?? 'none';
  const sticky_sessions: StickySessions = { type: sticky };
  if (sticky === 'cookies') {
    const cookie = text(a, STICKY_SESSIONS_COOKIE_NAME);
    if (!cookie) {
      throw new InvalidConfigError(
        `Service annotation ${STICKY_SESSIONS_COOKIE_NAME} is required with ${STICKY_SESSIONS_TYPE}=cookies; set it to a cookie name`,
      );
    }
    const ttl = integer(a, STICKY_SESSIONS_COOKIE_TTL, 1, 2_147_483_647);
    if (ttl === undefined) {
      throw new InvalidConfigError(
        `Service annotation ${STICKY_SESSIONS_COOKIE_TTL} is required with ${STICKY_SESSIONS_TYPE}=cookies; set it to the cookie lifetime in seconds`,
      );
    }
    sticky_sessions.cookie_name = cookie;
    sticky_sessions.cookie_ttl_seconds = ttl;
  }

  const settings: Settings = {
    name,
    forwarding_rules: forwardingRules(req),
    health_check: healthCheck(req),
    sticky_sessions,
    redirect_http_to_https: bool(a, REDIRECT_HTTP_TO_HTTPS),
    enable_proxy_protocol: bool(a, ENABLE_PROXY_PROTOCOL),
    enable_backend_keepalive: bool(a, ENABLE_BACKEND_KEEPALIVE),
    firewall: {
      allow: [...req.service.loadBalancerSourceRanges].map((cidr) => `cidr:${cidr}`).sort(),
      deny: [],
    },
  };
  const sizeUnit = integer(a, SIZE_UNIT, 1, 100);
  if (sizeUnit !== undefined) settings.size_unit = sizeUnit;
  const idle = integer(a, HTTP_IDLE_TIMEOUT_SECONDS, 30, 600);
  if (idle !== undefined) settings.http_idle_timeout_seconds = idle;
  return settings;
}

function forwardingRules(req: LoadBalancerRequest): ForwardingRule[] {
  const a = req.service.annotations;
  if (req.ports.length === 0) {
    throw new InvalidConfigError(
      `Service ${req.service.namespace}/${req.service.name} has no ports; a DigitalOcean load balancer needs at least one`,
    );
  }
  const protocol = oneOf(a, PROTOCOL, ['tcp', 'http', 'https', 'http2'] as const) ?? 'tcp';
  const certificate = text(a, CERTIFICATE_ID);
  const passthrough = bool(a, TLS_PASSTHROUGH);
  if (certificate && passthrough) {
    throw new InvalidConfigError(
      `Service annotations ${CERTIFICATE_ID} and ${TLS_PASSTHROUGH}=true exclude each other; keep one`,
    );
  }
  const servicePorts = new Set(req.ports.map((p) => p.port));
  let tlsPorts = ports(a, TLS_PORTS);
  for (const port of tlsPorts ?? []) {
    if (!servicePorts.has(port)) throw invalid(TLS_PORTS, a[TLS_PORTS] ?? '', 'ports of the Service');
  }
  // The official controller's rule: TLS settings without tls-ports mean port 443.
  if (!tlsPorts && (certificate || passthrough)) tlsPorts = [443];
  const tls = new Set(tlsPorts ?? []);

  return [...req.ports]
    .sort((x, y) => x.port - y.port)
    .map((port): ForwardingRule => {
      if (port.protocol === 'SCTP') {
        throw new InvalidConfigError(
          `Service port ${port.name || port.port} is SCTP; DigitalOcean load balancers forward TCP and UDP only`,
        );
      }
      if (port.protocol === 'UDP') {
        return {
          entry_protocol: 'udp',
          entry_port: port.port,
          target_protocol: 'udp',
          target_port: port.nodePort,
        };
      }
      const entry = tls.has(port.port) ? 'https' : protocol;
      if (entry === 'tcp' || entry === 'http') {
        return {
          entry_protocol: entry,
          entry_port: port.port,
          target_protocol: entry,
          target_port: port.nodePort,
        };
      }
      if (passthrough) {
        return {
          entry_protocol: entry,
          entry_port: port.port,
          target_protocol: entry,
          target_port: port.nodePort,
          tls_passthrough: true,
        };
      }
      if (!certificate) {
        throw new InvalidConfigError(
          `Service port ${port.port} uses ${entry}; set Service annotation ${CERTIFICATE_ID} (a DigitalOcean certificate id) or ${TLS_PASSTHROUGH}=true`,
        );
      }
      return {
        entry_protocol: entry,
        entry_port: port.port,
        target_protocol: 'http',
        target_port: port.nodePort,
        certificate_id: certificate,
      };
    });
}

function healthCheck(req: LoadBalancerRequest): HealthCheck {
  const a = req.service.annotations;
  const local = req.service.externalTrafficPolicy === 'Local' && req.service.healthCheckNodePort;
  const portAnnotation = integer(a, HEALTHCHECK_PORT, 1, 65535);
  let port: number;
  if (portAnnotation !== undefined) {
    const found = req.ports.find((p) => p.port === portAnnotation);
    if (!found) throw invalid(HEALTHCHECK_PORT, String(portAnnotation), 'a port of the Service');
    port = found.nodePort;
  } else {
    port = local
      ? (req.service.healthCheckNodePort ?? 0)
      : ([...req.ports].sort((x, y) => x.port - y.port)[0]?.nodePort ?? 0);
  }
  // kube-proxy answers /healthz on the health check node port for externalTrafficPolicy Local.
  const viaKubeProxy = local && portAnnotation === undefined;
  return {
    protocol:
      oneOf(a, HEALTHCHECK_PROTOCOL, ['tcp', 'http', 'https'] as const) ?? (viaKubeProxy ? 'http' : 'tcp'),
    port,
    path: text(a, HEALTHCHECK_PATH) ?? (viaKubeProxy ? '/healthz' : '/'),
    check_interval_seconds: integer(a, HEALTHCHECK_INTERVAL, 3, 300) ?? 3,
    response_timeout_seconds: integer(a, HEALTHCHECK_TIMEOUT, 3, 300) ?? 5,
    unhealthy_threshold: integer(a, HEALTHCHECK_UNHEALTHY, 2, 10) ?? 3,
    healthy_threshold: integer(a, HEALTHCHECK_HEALTHY, 2, 10) ?? 5,
  };
}

/** By created_at (whole seconds at DigitalOcean), then by id: the same order for every replica. */
function oldestFirst(x: DoLoadBalancer, y: DoLoadBalancer): number {
  const byAge = Date.parse(x.created_at ?? '') - Date.parse(y.created_at ?? '');
  return Number.isNaN(byAge) || byAge === 0 ? x.id.localeCompare(y.id) : byAge;
}

export function owned(lb: DoLoadBalancer, tag: string): boolean {
  return (lb.tags ?? []).includes(tag);
}

function describe(lb: DoLoadBalancer): string {
  return `load balancer ${lb.name} (${lb.id})`;
}

/**
 * The Service's status from an active load balancer; in-progress and errored states are errors. With
 * `claim` (the Service created it, or its id or UID-derived name found it) they carry the id annotation,
 * which the controller records at once, as the official controller does: its EnsureLoadBalancer
 * (cloud-controller-manager/do/loadbalancers.go) sets load-balancer-id right after the create and
 * patches the Service in a deferred call, before it looks at the status.
 */
export function statusOf(
  lb: DoLoadBalancer,
  hostname: string | undefined,
  claim = false,
): LoadBalancerStatus {
  const annotations = { [LOAD_BALANCER_ID]: lb.id };
  const pending = (message: string, retryAfterMs: number) =>
    claim
      ? new ProvisioningError(message, retryAfterMs, annotations)
      : new RetryableError(message, retryAfterMs);
  if (lb.status === 'errored') {
    throw pending(
      `DigitalOcean reports ${describe(lb)} as errored; look at it in the DigitalOcean control panel (fix or delete it); ccm checks again, waiting longer each time`,
      0,
    );
  }
  if (lb.status !== 'active' || !lb.ip) {
    throw pending(
      `${describe(lb)} is still being set up at DigitalOcean (status ${lb.status ?? 'unknown'}); ccm checks again in ${PROVISIONING_RETRY_MS / 1000} s`,
      PROVISIONING_RETRY_MS,
    );
  }
  const ingress = hostname ? [{ hostname }] : [{ ip: lb.ip }, ...(lb.ipv6 ? [{ ip: lb.ipv6 }] : [])];
  return { ingress, annotations };
}

function sameRule(x: ForwardingRule, y: ForwardingRule): boolean {
  return (
    x.entry_protocol === y.entry_protocol &&
    x.entry_port === y.entry_port &&
    x.target_protocol === y.target_protocol &&
    x.target_port === y.target_port &&
    (x.certificate_id ?? '') === (y.certificate_id ?? '') &&
    (x.tls_passthrough ?? false) === (y.tls_passthrough ?? false)
  );
}

function sameNumbers(x: readonly number[] = [], y: readonly number[] = []): boolean {
  const a = [...new Set(x)].sort((p, q) => p - q);
  const b = [...new Set(y)].sort((p, q) => p - q);
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** A tcp check has no path: the API may keep or drop it, neither is a difference. */
function sameHealthCheck(have: HealthCheck, want: HealthCheck): boolean {
  return (Object.keys(want) as (keyof HealthCheck)[]).every(
    (k) => (k === 'path' && want.protocol === 'tcp') || have[k] === want[k],
  );
}

/** Whether the load balancer already is what the Service asks for. */
function upToDate(lb: DoLoadBalancer, want: Settings, droplets: number[]): boolean {
  const rules = lb.forwarding_rules ?? [];
  const hc = lb.health_check;
  const sticky = lb.sticky_sessions ?? { type: 'none' };
  const allow = [...(lb.firewall?.allow ?? [])].sort();
  return (
    lb.name === want.name &&
    rules.length === want.forwarding_rules.length &&
    want.forwarding_rules.every((rule) => rules.some((r) => sameRule(r, rule))) &&
    hc !== undefined &&
    sameHealthCheck(hc, want.health_check) &&
    sticky.type === want.sticky_sessions.type &&
    (want.sticky_sessions.type === 'none' ||
      (sticky.cookie_name === want.sticky_sessions.cookie_name &&
        sticky.cookie_ttl_seconds === want.sticky_sessions.cookie_ttl_seconds)) &&
    (want.size_unit === undefined || lb.size_unit === want.size_unit) &&
    (lb.redirect_http_to_https ?? false) === want.redirect_http_to_https &&
    (lb.enable_proxy_protocol ?? false) === want.enable_proxy_protocol &&
    (lb.enable_backend_keepalive ?? false) === want.enable_backend_keepalive &&
    (want.http_idle_timeout_seconds === undefined ||
      lb.http_idle_timeout_seconds === want.http_idle_timeout_seconds) &&
    allow.length === want.firewall.allow.length &&
    allow.every((rule, i) => rule === want.firewall.allow[i]) &&
    (lb.firewall?.deny ?? []).length === 0 &&
    sameNumbers(lb.droplet_ids, droplets)
  );
}

/** Where new load balancers go when configured (REGION, DO_CLUSTER_VPC_ID), not read off a backend. */
export interface LoadBalancerPlacement {
  region?: string;
  vpcId?: string;
  /** Where the region is given (or belongs): the operator's Secret, a flag; default REGION or kube-system/digitalocean. */
  regionFrom?: string;
}

/**
 * One listing shared by every caller who asked before it started: `next` answers with the first
 * listing that starts after the call, never one already under way (which may predate what the
 * caller must see); `since` also accepts the one under way when it started after the given time
 * (monotonicMs), e.g. after the caller's own last create was answered. So N Services waiting for
 * their status at once cost one listing (its pages), not N. A caller's signal ends its own wait,
 * not the listing.
 */
export class NextListing<T> {
  private queued?: Promise<T>;
  private running?: { listing: Promise<T>; startedAt: number; done: boolean };
  /** What the last listing that succeeded held, for whether one costs more than one request. */
  lastSize?: number;
  /** The last listing that succeeded: what it showed, when it started and when it was answered. */
  private last?: { items: T; startedAt: number; doneAt: number };

  constructor(
    private readonly list: () => Promise<T>,
    private readonly now: () => number = monotonicMs,
    /** The least time between the starts of two listings: Services waiting in turn share one. */
    private readonly gapMs = 0,
  ) {}

  /** The listing under way if it started after `after` (undefined: any), else the next. */
  since(after: number | undefined, signal?: AbortSignal): Promise<T> {
    const running = this.running;
    if (running && !running.done && (after === undefined || running.startedAt > after)) {
      return this.wait(running.listing, signal);
    }
    return this.next(signal);
  }

  /**
   * The last listing that succeeded, if it started after `after` (undefined: any) and was answered at
   * most `maxAgeMs` ago: as good as a new one for whoever needs only what was written before it
   * started, and costs nothing.
   */
  recent(after: number | undefined, maxAgeMs: number): T | undefined {
    const last = this.last;
    if (!last || (after !== undefined && last.startedAt <= after)) return undefined;
    return this.now() - last.doneAt <= maxAgeMs ? last.items : undefined;
  }

  /** Whether a listing is already queued, or under way and started after `after`: joining it is free. */
  joinable(after: number | undefined): boolean {
    const running = this.running;
    return (
      this.queued !== undefined ||
      (running !== undefined && !running.done && (after === undefined || running.startedAt > after))
    );
  }

  next(signal?: AbortSignal): Promise<T> {
    this.queued ??= (async () => {
      await this.running?.listing.catch(() => undefined);
      const wait = this.running ? this.running.startedAt + this.gapMs - this.now() : 0;
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      // Started now: whoever asks from here on waits for the one after.
      this.queued = undefined;
      const running = { listing: this.list(), startedAt: this.now(), done: false };
      this.running = running;
      running.listing.then(
        (items) => {
          running.done = true;
          if (Array.isArray(items)) this.lastSize = items.length;
          this.last = { items, startedAt: running.startedAt, doneAt: this.now() };
        },
        () => {
          running.done = true;
        },
      );
      return running.listing;
    })();
    return this.wait(this.queued, signal);
  }

  private wait(shared: Promise<T>, signal?: AbortSignal): Promise<T> {
    if (!signal) return shared;
    signal.throwIfAborted();
    return new Promise<T>((resolve, reject) => {
      const abort = () => reject(signal.reason);
      signal.addEventListener('abort', abort, { once: true });
      shared.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
    });
  }
}

/**
 * Load balancers through /v2/load_balancers. ccm only ever touches a load balancer that carries its
 * cluster's tag (`k8s:<cluster id>`): one made by hand, by another cluster or by a controller without
 * this cluster's identity is never adopted, changed or deleted.
 */
export function doLoadBalancers(
  client: DigitalOceanClient,
  place: LoadBalancerPlacement = {},
  memo: DropletMemo = new DropletMemo(),
  {
    recentListingMs = RECENT_LISTING_MS,
    listingGapMs = LISTING_GAP_MS,
    writes = new Map<string, number>(),
  }: { recentListingMs?: number; listingGapMs?: number; writes?: Map<string, number> } = {},
): LoadBalancers {
  const adoption = doAdoption(client);
  /** Every load balancer of the account, one listing for all the Services that asked meanwhile. */
  const listing = new NextListing(
    () => client.listAll<DoLoadBalancer>('listing load balancers', '/v2/load_balancers', 'load_balancers'),
    monotonicMs,
    listingGapMs,
  );
  /**
   * When this provider's last write to each Service's load balancers (create, update, droplets,
   * delete) was answered or failed: only a listing started after it is sure to show that write, so
   * the Service waits for the next listing, and any other joins the one under way.
   */
  const writtenAt = writes;
  const written = (req: LoadBalancerRequest) => {
    const now = monotonicMs();
    // Oldest first: deleted and set again, so that the loop below stops at the first recent one.
    writtenAt.delete(req.name);
    writtenAt.set(req.name, now);
    // Forgotten once no listing that started before it can still be used (RECENT_LISTING_MS after
    // it was answered): a write of long ago is older than every listing from here on.
    for (const [name, at] of writtenAt) {
      if (at > now - FORGET_WRITES_MS) break;
      writtenAt.delete(name);
    }
  };
  /** When a Service still waiting for its address last looked for it: it looks next in a later listing. */
  const waitedAt = new Map<string, number>();
  /** When Services last looked their load balancer up by id (the last RECENT_LISTING_MS), oldest first. */
  const lookups: number[] = [];
  /**
   * A Service's load balancer is read from the shared listing, not by id, when that costs no more:
   * a listing is already queued or under way (free to join); or the last one fit in one page (one
   * request, as a read by id, and shared with whoever else asks meanwhile, as every Service does
   * when Nodes change); or at least as many Services looked theirs up in the last 10 s as a listing
   * has pages (a burst: 300 Services given a new Node, or deleted, read one listing every 10 s,
   * not one each). The first is taken from a listing too: most accounts have fewer than 200.
   */
  const fromListing = (req: LoadBalancerRequest) => {
    const now = monotonicMs();
    while (lookups.length > 0 && (lookups[0] as number) <= now - RECENT_LISTING_MS) lookups.shift();
    lookups.push(now);
    const pages = Math.max(1, Math.ceil((listing.lastSize ?? 0) / PER_PAGE));
    return (
      listing.joinable(writtenAt.get(req.name)) ||
      (listing.lastSize ?? 0) < PER_PAGE ||
      lookups.length > pages
    );
  };
  /** Load balancers named `who.name` with this cluster's tag, the oldest first. */
  async function namesakes(
    req: LoadBalancerRequest,
    who: Identity,
    signal?: AbortSignal,
    listed?: readonly DoLoadBalancer[],
  ): Promise<DoLoadBalancer[]> {
    return (await tagged(req, who, signal, listed)).filter((lb) => lb.name === who.name);
  }

  /** Every load balancer with this cluster's tag, the oldest first (of `listed`, else of the next listing). */
  async function tagged(
    req: LoadBalancerRequest,
    who: Identity,
    signal?: AbortSignal,
    listed?: readonly DoLoadBalancer[],
  ): Promise<DoLoadBalancer[]> {
    const after = writtenAt.get(req.name);
    const all = listed ?? listing.recent(after, recentListingMs) ?? (await listing.since(after, signal));
    return all.filter((lb) => owned(lb, who.tag)).sort(oldestFirst);
  }

  /**
   * This Service's load balancer: by the id annotation first, else by name; only with our tag.
   * Found by ccm's own name for the Service, it is the oldest of ccm's load balancers of that name, and
   * `extras` the others: two creations of one Service, as when the Lease changed hands while the old leader's create was
   * still on its way. Each replica picks the same one (by created_at, then id).
   */
  async function find(
    req: LoadBalancerRequest,
    who: Identity,
    foreignById: 'refuse' | 'skip',
    signal?: AbortSignal,
  ): Promise<{ lb?: DoLoadBalancer; extras: DoLoadBalancer[]; byId?: true; adopted?: true; own?: true }> {
    // Handed over by `ccm migrate` (or found by --adopt-official): the official controller's, without
    // ccm's tag, which DigitalOcean cannot add after creation. It is used as it is, under its name.
    if (req.adoptedID) {
      const adopted = await byIdOrNothing(req.adoptedID, signal);
      const refused = adopted && claimRefusal(adopted, req, true);
      if (refused && foreignById === 'refuse') throw new InvalidConfigError(refused);
      if (adopted && !refused) return { lb: adopted, extras: [], byId: true, adopted: true };
    }
    if (who.id) {
      // A Service whose status shows no address yet (its load balancer is being made) needs the
      // listing anyway, for second creations of it (below): its load balancer is read from that
      // listing, shared with every other Service waiting, rather than on its own. One the listing
      // does not show (made after it started, or the id of something else) is still read by id.
      const waiting = who.ownName && req.claims && req.claims.ownIngress.length === 0;
      // A Service waiting for its address needs a listing newer than the one it last looked at: at its
      // first look, one that started after its own create, or, when this replica made none (a new
      // leader), one that starts from now, so that a second creation of it (a former leader's create
      // that landed late) is seen before its status shows the one kept.
      const now = monotonicMs();
      const wrote = writtenAt.get(req.name);
      const after = waiting
        ? Math.max(wrote ?? Number.NEGATIVE_INFINITY, waitedAt.get(req.name) ?? wrote ?? now)
        : wrote;
      if (waiting) waitedAt.set(req.name, now);
      else waitedAt.delete(req.name);
      // A listing whose pages shifted is no answer here: the load balancer is then read by its id.
      const listed =
        listing.recent(after, recentListingMs) ??
        (waiting || fromListing(req)
          ? await listing.since(after, signal).catch((err: unknown) => {
              if (err instanceof ListingChangedError) return undefined;
              throw err;
            })
          : undefined);
      const lb = listed?.find((x) => x.id === who.id) ?? (await byIdOrNothing(who.id, signal));
      // Our tag names the cluster, not the Service: another Service's load balancer carries it too.
      const refused = lb && owned(lb, who.tag) && claimRefusal(lb, req, false);
      if (refused && foreignById === 'refuse') throw new InvalidConfigError(refused);
      if (lb && owned(lb, who.tag) && !refused) {
        // The id is recorded right after the create, so the old leader's create landing after it (a
        // Lease handover) is found by name only: until the Service shows its load balancer, others
        // with its own name are extras (never one its status shows).
        const shown = (x: DoLoadBalancer) =>
          (req.claims?.ownIngress ?? []).some((a) => a === x.ip || a === x.ipv6);
        const extras =
          who.ownName && req.claims && !shown(lb)
            ? (await namesakes(req, who, signal, listed)).filter((x) => x.id !== lb.id && !shown(x))
            : [];
        return { lb, extras, byId: true };
      }
      if (lb && foreignById === 'refuse') {
        throw new InvalidConfigError(
          `Service annotation ${LOAD_BALANCER_ID} names ${describe(lb)}, which does not carry this cluster's tag ${who.tag}; ccm takes over a load balancer it did not create only when handed it (ccm migrate --provider digitalocean); remove the annotation to get a new one instead`,
        );
      }
    }
    if (!who.ownName) {
      // What marks a load balancer as this Service's is ccm's own: the cluster's tag (given at
      // creation, the only time DigitalOcean takes tags) and the name ccm gives it from the Service's
      // UID. A create whose answer was lost (a gateway's 504, a timeout after the cloud did the work)
      // left no id annotation behind; if the Service was given a do-loadbalancer-name since, that
      // load balancer is found by its UID name and adopted (ensure renames it), never created again.
      const all = await tagged(req, who, signal);
      const shown = (x: DoLoadBalancer) =>
        (req.claims?.ownIngress ?? []).some((a) => a === x.ip || a === x.ipv6);
      const own = all.filter((x) => x.name === req.name);
      const named = all.filter((x) => x.name === who.name);
      const kept = own.find(shown) ?? own[0];
      if (kept && named.length === 0)
        return { lb: kept, extras: own.filter((x) => x.id !== kept.id && !shown(x)), own: true };
      const found = pickNamed(req, who, named, foreignById);
      // The Service has its load balancer under the annotated name: any left with its UID name are
      // second creations of it (by a ccm that created again after a lost answer), never shown in its
      // status.
      if (found.lb) found.extras.push(...own.filter((x) => !shown(x)));
      return found;
    }
    return pickNamed(req, who, await namesakes(req, who, signal), foreignById);
  }

  /** Of ccm's load balancers named `who.name` (the oldest first), this Service's, and the extras. */
  function pickNamed(
    req: LoadBalancerRequest,
    who: Identity,
    namesakes: DoLoadBalancer[],
    foreignById: 'refuse' | 'skip',
  ): { lb?: DoLoadBalancer; extras: DoLoadBalancer[] } {
    const [lb, ...extras] = namesakes;
    // A name chosen by annotation may be another Service's too (the tag names the cluster, not the
    // Service): which of them is this Service's is for a person to say, and none is deleted.
    if (extras.length > 0 && !who.ownName) {
      throw new InvalidConfigError(
        `${extras.length + 1} DigitalOcean load balancers named ${who.name} carry tag ${who.tag} (${[lb, ...extras].map((x) => x?.id).join(', ')}); give each Service its own ${NAME}, or set ${LOAD_BALANCER_ID} to the one to keep`,
      );
    }
    // And the one load balancer of that name may be another Service's (its status shows it, or its id
    // annotation names it): a Service naming it is refused, as one naming it by id is.
    const refused = lb && !who.ownName && claimRefusal(lb, req, false, NAME);
    if (refused && foreignById === 'refuse') throw new InvalidConfigError(refused);
    if (refused) return { extras: [] };
    return { lb, extras };
  }

  async function byIdOrNothing(id: string, signal?: AbortSignal): Promise<DoLoadBalancer | undefined> {
    try {
      return (
        await client.get<{ load_balancer: DoLoadBalancer }>(
          `reading load balancer ${id}`,
          `/v2/load_balancers/${id}`,
          signal,
        )
      ).load_balancer;
    } catch (err) {
      if (!isNotFound(err)) throw err;
      return undefined;
    }
  }

  async function remove(lb: DoLoadBalancer, signal?: AbortSignal): Promise<void> {
    try {
      await client.call(
        `deleting ${describe(lb)}`,
        'DELETE',
        `/v2/load_balancers/${lb.id}`,
        undefined,
        signal,
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }

  /**
   * Region and VPC of a new load balancer, and the backend droplets it is created with. The region is
   * as configured (as the official controller takes REGION), else that of a backend droplet that
   * exists: the droplets the last listing showed (the instance listing the node controllers share)
   * cost no call; one it did not show is read, at most MAX_DROPLET_READS of them, and one the cloud
   * answers 404 for is left out (DigitalOcean refuses a load balancer over a droplet that does not
   * exist). A Node whose droplet is gone can stay for a while (the deletion brake holds it, or the
   * lifecycle controller has not deleted it yet): it must not keep every new load balancer from
   * being made. Upstream's service controller asks for a load balancer even with no backend Node (a
   * one-Node kubeadm cluster labels its only Node excluded): with a region configured it is made
   * without backends, and gets them as Nodes qualify.
   */
  async function placementOf(
    req: LoadBalancerRequest,
    droplets: readonly number[],
    signal?: AbortSignal,
  ): Promise<{ region: string; vpc_uuid?: string; droplet_ids: number[] }> {
    let reads = 0;
    for (const id of droplets) {
      if (reads >= MAX_DROPLET_READS) break;
      if (memo.isGone(id) || memo.placeOf(id)) continue;
      reads++;
      try {
        memo.seen(await getDroplet(client, id, signal));
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
        memo.markGone(id);
      }
    }
    const existing = droplets.filter((id) => !memo.isGone(id));
    const from = existing.map((id) => memo.placeOf(id)).find((p) => p !== undefined);
    const region = place.region ?? from?.region;
    if (!region) {
      const gone = droplets.filter((id) => memo.isGone(id));
      const why =
        gone.length > 0
          ? `the droplets of its backend Nodes are gone (${gone.join(', ')}) or were not read yet`
          : 'no backend Node with a DigitalOcean droplet';
      throw new RetryableError(
        `Service ${req.service.namespace}/${req.service.name} has ${why}, so the load balancer's region is unknown; set the region (${place.regionFrom ?? 'env REGION, or key region of Secret kube-system/digitalocean'}) to create it without backends`,
        PROVISIONING_RETRY_MS,
      );
    }
    // A droplet of another region says nothing of this region's VPCs: DigitalOcean then picks its default.
    const vpc = place.vpcId ?? (from?.region === region ? from.vpc : undefined);
    return { region, ...(vpc ? { vpc_uuid: vpc } : {}), droplet_ids: existing };
  }

  /**
   * Droplet ids of the backend Nodes: by provider ID, else by a unique droplet name (never a guess).
   * A droplet a read found gone (404) is left out: DigitalOcean refuses one that does not exist.
   */
  async function backendDroplets(
    nodes: readonly LoadBalancerNode[],
    signal?: AbortSignal,
  ): Promise<number[]> {
    const ids = new Set<number>();
    const unnamed: string[] = [];
    for (const node of nodes) {
      if (!node.providerID) unnamed.push(node.name);
      else if (parseProviderID(node.providerID)?.scheme === SCHEME)
        ids.add(dropletIdFromProviderID(node.providerID));
    }
    if (unnamed.length > 0) {
      const byName = new Map<string, number[]>();
      for (const droplet of await listDroplets(client, signal, memo)) {
        const key = droplet.name.toLowerCase();
        byName.set(key, [...(byName.get(key) ?? []), droplet.id]);
      }
      for (const name of unnamed) {
        const matches = byName.get(name.toLowerCase()) ?? [];
        if (matches.length === 1 && matches[0] !== undefined) ids.add(matches[0]);
      }
    }
    return [...ids].filter((id) => !memo.isGone(id)).sort((a, b) => a - b);
  }

  return {
    adoption,
    ignoredOnDelete: (req) => identify(req).ignored,
    async get(req, signal) {
      const who = identify(req);
      const { lb } = await find(req, who, 'skip', signal);
      if (!lb) return undefined;
      if (lb.status !== 'active' || !lb.ip)
        return { ingress: [], annotations: { [LOAD_BALANCER_ID]: lb.id } };
      return statusOf(lb, who.hostname);
    },

    async ensure(req, signal) {
      const who = identify(req);
      const settings = settingsOf(req);
      const { lb, extras, adopted, byId, own } = await find(req, who, 'refuse', signal);
      // An adopted load balancer keeps the name the official controller gave it.
      if (lb && adopted) settings.name = lb.name;
      if (who.disown) {
        if (!lb) {
          throw new InvalidConfigError(
            `Service annotation ${DISOWN}=true, and the Service has no load balancer of this cluster; remove the annotation to let ccm create one`,
          );
        }
        return statusOf(lb, who.hostname);
      }
      // ccm's, with this Service's name, and not the one kept: a second creation of this Service.
      for (const extra of extras) await remove(extra, signal);
      // Still being created, or errored: nothing is changed until DigitalOcean is done with it. Found
      // by a name a user chose, it is not claimed here: the Service that created it claimed it then.
      if (lb && lb.status !== 'active') return statusOf(lb, who.hostname, byId || who.ownName || own);
      const droplets = await backendDroplets(req.nodes, signal);
      if (!lb) {
        const body = { ...settings, ...(await placementOf(req, droplets, signal)), tags: [who.tag] };
        let created: DoLoadBalancer;
        try {
          created = (
            await client.call<{ load_balancer: DoLoadBalancer }>(
              `creating load balancer ${settings.name}`,
              'POST',
              '/v2/load_balancers',
              body,
              signal,
            )
          ).load_balancer;
        } finally {
          // Answered or not (a lost answer may still have created it): only a listing started from
          // now on is sure to show it.
          written(req);
        }
        return statusOf(created, who.hostname, true);
      }
      if (upToDate(lb, settings, droplets)) return statusOf(lb, who.hostname);
      const updated = (
        await client
          .call<{ load_balancer: DoLoadBalancer }>(
            `updating ${describe(lb)}`,
            'PUT',
            `/v2/load_balancers/${lb.id}`,
            {
              ...settings,
              region: lb.region?.slug,
              ...(lb.vpc_uuid ? { vpc_uuid: lb.vpc_uuid } : {}),
              // No tags: godo (load_balancers.go) says they are given at creation only, and the API
              // keeps the ones it was created with, which is what ownership is read from.
              droplet_ids: droplets,
            },
            signal,
          )
          .finally(() => written(req))
      ).load_balancer;
      return statusOf(updated, who.hostname);
    },

    async updateNodes(req, signal) {
      const who = identify(req);
      const { lb } = await find(req, who, 'refuse', signal);
      if (!lb || who.disown) return;
      // A load balancer that is new (its creation still running) or errored is reported, not changed:
      // DigitalOcean refuses changes until it is active.
      if (lb.status !== 'active') statusOf(lb, who.hostname);
      const want = await backendDroplets(req.nodes, signal);
      const have = new Set(lb.droplet_ids ?? []);
      const add = want.filter((id) => !have.has(id));
      const remove = [...have].filter((id) => !want.includes(id)).sort((a, b) => a - b);
      const path = `/v2/load_balancers/${lb.id}/droplets`;
      try {
        if (add.length > 0) {
          await client.call(`adding droplets to ${describe(lb)}`, 'POST', path, { droplet_ids: add }, signal);
        }
        if (remove.length > 0) {
          await client.call(
            `removing droplets from ${describe(lb)}`,
            'DELETE',
            path,
            { droplet_ids: remove },
            signal,
          );
        }
      } finally {
        if (add.length > 0 || remove.length > 0) written(req);
      }
    },

    async delete(req, signal) {
      const who = identify(req);
      if (who.disown) return;
      // The one the annotation names, and every other of ccm's with this Service's name (a second
      // creation of it, whose id no Service recorded).
      const { lb, extras, byId } = await find(req, who, 'skip', signal);
      // Hundreds of load balancers deleted at once shift the listing's pages under every reader: its
      // own, found by id, is deleted anyway; second creations are looked for when a listing holds.
      const all =
        byId && who.ownName
          ? await namesakes(req, who, signal).catch((err: unknown) => {
              if (lb && err instanceof ListingChangedError) return [];
              throw err;
            })
          : extras;
      if (lb) all.push(lb);
      for (const x of new Map(all.map((x) => [x.id, x])).values()) await remove(x, signal);
      // Recorded, not forgotten: a Service made a LoadBalancer again must not be shown, by a listing
      // that started before this delete landed, the load balancer it just deleted.
      written(req);
      waitedAt.delete(req.name);
    },
  };
}
