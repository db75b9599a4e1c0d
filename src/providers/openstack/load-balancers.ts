import { isIP } from 'node:net';
import { InvalidConfigError, NotFoundError, RetryableError } from '../errors.js';
import { httpStatus } from '../http.js';
import type {
  LoadBalancerAdoption,
  LoadBalancerNode,
  LoadBalancerPort,
  LoadBalancerRequest,
  LoadBalancerStatus,
  LoadBalancers,
} from '../types.js';
import { notHandedOver, octaviaAdoption } from './adoption.js';
import { LOAD_BALANCER_ID, type ServiceOptions, serviceOptions } from './annotations.js';
import type { ServiceType, Session } from './client.js';
import type { LoadBalancerConfig } from './config.js';

/**
 * Octavia load balancers, one per Service, created fully populated (listeners → default pools →
 * members → health monitors) and then reconciled one change at a time: Octavia refuses changes
 * while a load balancer is PENDING_*, so after each change ccm waits for ACTIVE, as the official
 * controller does, but only for SETTLE_MS: a load balancer still busy then (an amphora booting
 * takes minutes) is the caller's to come back to (RetryableError), so no worker is held for long.
 * A member update, which settles in seconds, thus finishes in one call with no Warning. The
 * floating IP comes from Neutron.
 *
 * A change that fails on a listener, pool, member or health monitor does not show on the load
 * balancer: Octavia's revert marks that child ERROR and puts the load balancer back to ACTIVE
 * (octavia/controller/worker/v2/tasks/lifecycle_tasks.py). So each pass reads the children's own
 * provisioning_status too: one in ERROR is sent again once per call, and still ERROR after that is
 * a RetryableError naming it (a Warning on the Service, retried with the Service backoff).
 *
 * Ownership: the load balancer is named "ccm_" + the request's name and tagged with the cluster
 * identity; one named like it without this cluster's tag is never adopted, changed or deleted.
 * A floating IP is ccm's only when its description says so; any other is only disassociated.
 */

const POLL_MS = 5_000;
/** How long one call waits for a load balancer to leave PENDING_*, polling every SETTLE_POLL_MS. */
const SETTLE_MS = 15_000;
const SETTLE_POLL_MS = 1_000;
/** Octavia's own listener defaults (milliseconds), what a listener without the annotations has. */
const OCTAVIA_DEFAULTS = {
  timeoutClientData: 50_000,
  timeoutMemberConnect: 5_000,
  timeoutMemberData: 50_000,
  timeoutTcpInspect: 0,
};

interface Ref {
  id: string;
}

interface OctaviaLoadBalancer {
  id: string;
  name: string;
  provisioning_status: string;
  vip_address: string;
  vip_port_id: string;
  tags?: string[];
}

/** Every Octavia object has its own provisioning_status (ACTIVE, PENDING_*, ERROR). */
interface Provisioned {
  provisioning_status?: string;
}

interface Listener extends Provisioned {
  id: string;
  name: string;
  protocol: string;
  protocol_port: number;
  default_pool_id: string | null;
  connection_limit: number;
  timeout_client_data?: number;
  timeout_member_connect?: number;
  timeout_member_data?: number;
  timeout_tcp_inspect?: number;
  allowed_cidrs?: string[] | null;
}

interface Pool extends Provisioned {
  id: string;
  name: string;
  protocol: string;
  lb_algorithm: string;
  session_persistence: { type: string } | null;
  healthmonitor_id: string | null;
  listeners: Ref[];
}

interface Member extends Provisioned {
  id?: string;
  name: string;
  address: string;
  protocol_port: number;
  subnet_id?: string;
  monitor_port?: number | null;
}

interface HealthMonitor extends Provisioned {
  id: string;
  type: string;
  delay: number;
  timeout: number;
  max_retries: number;
  max_retries_down: number;
  url_path?: string;
  http_method?: string;
  expected_codes?: string;
}

interface FloatingIp {
  id: string;
  floating_ip_address: string;
  port_id: string | null;
  description: string;
}

/**
 * What this Octavia accepts, from the newest API version its version document lists, as the
 * official controller decides (cloud-provider-openstack pkg/util/openstack/loadbalancer.go
 * getOctaviaVersion, IsOctaviaFeatureSupported; the ovn provider has none of these but tags, and no
 * HTTP health monitor at all: pkg/openstack/loadbalancer.go canUseHTTPMonitor). Octavia refuses an
 * attribute its API version does not know (400 Unknown attribute).
 */
interface OctaviaFeatures {
  version: string;
  /** API 2.5 (Stein). */
  tags: boolean;
  /** API 2.1 (Rocky): listener timeout_*. */
  timeouts: boolean;
  /** API 2.12 (Train): listener allowed_cidrs. */
  allowedCidrs: boolean;
  /** API 2.6: flavor_id. */
  flavors: boolean;
  /** API 2.14: availability_zone. */
  availabilityZones: boolean;
  /** HTTP health monitors at all (never on ovn), and on UDP pools (API 2.16). */
  httpMonitor: boolean;
  httpMonitorOnUdp: boolean;
}

function octaviaFeatures(minor: number, provider: string | undefined): OctaviaFeatures {
  const ovn = provider === 'ovn';
  return {
    version: `v2.${minor}`,
    tags: minor >= 5,
    timeouts: !ovn && minor >= 1,
    allowedCidrs: !ovn && minor >= 12,
    flavors: !ovn && minor >= 6,
    availabilityZones: !ovn && minor >= 14,
    httpMonitor: !ovn,
    httpMonitorOnUdp: !ovn && minor >= 16,
  };
}

/** Everything ccm wants of one listener and its pool. */
interface DesiredListener {
  listener: Record<string, unknown> & { protocol: string; protocol_port: number };
  pool: Record<string, unknown> & { lb_algorithm: string };
  members: Member[];
  monitor?: Record<string, unknown> & { type: string };
}

/** How the load balancer is shown on the Service: its Octavia id. */
const statusAnnotations = (lb: OctaviaLoadBalancer) => ({ [LOAD_BALANCER_ID]: lb.id });

export class OctaviaLoadBalancers implements LoadBalancers {
  private octavia?: Promise<OctaviaFeatures>;

  /** Taking over cloud-provider-openstack's load balancers (adoption.ts has its rules). */
  readonly adoption: LoadBalancerAdoption = octaviaAdoption({
    list: (path, key, signal) => this.list(path, key, signal),
    floatingIpOf: (lb, signal) => this.floatingIpOf(lb, signal),
    portDevice: async (address, subnetID, signal) => {
      // Filtered here as well: the port must hold this address on this subnet, in one fixed IP.
      const { ports } = await this.call<{
        ports: { device_id?: string; fixed_ips?: { ip_address: string; subnet_id?: string }[] }[];
      }>(
        'network',
        'GET',
        `v2.0/ports?fixed_ips=${encodeURIComponent(`ip_address=${address}`)}&fixed_ips=${encodeURIComponent(`subnet_id=${subnetID}`)}`,
        undefined,
        signal,
      );
      const holders = ports.filter((p) =>
        (p.fixed_ips ?? []).some((ip) => ip.ip_address === address && ip.subnet_id === subnetID),
      );
      return holders.length === 1 ? holders[0]?.device_id || undefined : undefined;
    },
    putTags: async (id, tags, signal) => {
      // Octavia answers a change to a PENDING_* load balancer with 409 (immutable): wait until it is
      // ACTIVE, as before any change here, and until the new tags are in, so the next one finds it so.
      const pending = { id, name: id, provisioning_status: 'PENDING_UPDATE' } as OctaviaLoadBalancer;
      const lb = await this.settle(pending, signal, 'waiting to tag it');
      await this.call(
        'load-balancer',
        'PUT',
        `v2.0/lbaas/loadbalancers/${id}`,
        { loadbalancer: { tags } },
        signal,
      );
      await this.settle(lb, signal, 'tagging it');
    },
    ownershipTag: (clusterID) => clusterTag({ clusterID } as LoadBalancerRequest),
  });

  constructor(
    private readonly session: Session,
    private readonly config: LoadBalancerConfig,
  ) {}

  /**
   * Octavia's version document (its root, served without a token: octavia/api/root_controller.py
   * index, octavia/common/keystone.py SkippingAuthProtocol), read once: the newest v2.N it lists.
   */
  private features(signal?: AbortSignal): Promise<OctaviaFeatures> {
    this.octavia ??= (async () => {
      const doc = await this.call<{ versions?: { id?: unknown }[] } | undefined>(
        'load-balancer',
        'GET',
        '',
        undefined,
        signal,
      );
      const minors = (Array.isArray(doc?.versions) ? doc.versions : [])
        .map((v) => /^v2\.(\d+)$/.exec(String(v?.id))?.[1])
        .filter((m): m is string => m !== undefined)
        .map(Number);
      if (minors.length === 0) {
        throw new InvalidConfigError(
          "Octavia's version document (the load-balancer endpoint's root) lists no v2 API version; check the catalog's load-balancer endpoint",
        );
      }
      return octaviaFeatures(Math.max(...minors), this.config.lbProvider);
    })().catch((err: unknown) => {
      this.octavia = undefined;
      throw err;
    });
    return this.octavia;
  }

  /** What the Service asks that this Octavia cannot do, refused before any change. */
  private refuseUnsupported(req: LoadBalancerRequest, options: ServiceOptions, f: OctaviaFeatures): void {
    const provider = this.config.lbProvider === 'ovn' ? ' (and the ovn provider never has it)' : '';
    const needs = (what: string, api: string) =>
      new InvalidConfigError(
        `Service ${serviceName(req)}: ${what} needs Octavia API ${api}${provider}; this Octavia serves ${f.version}`,
      );
    if (!f.tags) throw needs('ccm tags its load balancers to know them, which', 'v2.5 (Stein)');
    if (req.service.loadBalancerSourceRanges.length > 0 && !f.allowedCidrs)
      throw needs('loadBalancerSourceRanges (listener allowed_cidrs)', 'v2.12 (Train)');
    if (Object.values(options.timeouts).some((t) => t !== undefined) && !f.timeouts)
      throw needs('a listener timeout annotation', 'v2.1 (Rocky)');
    if (options.flavorId && !f.flavors) throw needs('a flavor', 'v2.6 (Stein)');
    if (options.availabilityZone && !f.availabilityZones)
      throw needs('an availability zone', 'v2.14 (Ussuri)');
  }

  async get(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus | undefined> {
    const lb = await this.find(req, signal, false);
    if (!lb) return undefined;
    const fip = await this.floatingIpOf(lb, signal);
    return {
      ingress: [{ ip: fip?.floating_ip_address ?? lb.vip_address }],
      annotations: statusAnnotations(lb),
    };
  }

  async ensure(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus> {
    const options = serviceOptions(req.service.annotations, this.config);
    if (req.ports.length === 0)
      throw new InvalidConfigError(`Service ${serviceName(req)} has no ports to balance`);
    let lb = await this.find(req, signal, true);
    const features = await this.features(signal);
    this.refuseUnsupported(req, options, features);
    const desired = this.desiredListeners(req, options, features);
    if (!lb) {
      lb = await this.create(req, options, desired, signal);
    }
    lb = await this.settle(lb, signal);
    const retried = new Set<string>();
    for (;;) {
      const change = await this.reconcile(lb, desired, signal, false, retried);
      if (!change) break;
      lb = await this.settle(lb, signal, change);
    }
    const ip = await this.ensureFloatingIp(lb, req, options, signal);
    return { ingress: [{ ip }], annotations: statusAnnotations(lb) };
  }

  async updateNodes(req: LoadBalancerRequest, signal?: AbortSignal): Promise<void> {
    const options = serviceOptions(req.service.annotations, this.config);
    let lb = await this.find(req, signal, true);
    if (!lb) return;
    lb = await this.settle(lb, signal);
    const desired = this.desiredListeners(req, options, await this.features(signal));
    const retried = new Set<string>();
    for (;;) {
      const change = await this.reconcile(lb, desired, signal, true, retried);
      if (!change) return;
      lb = await this.settle(lb, signal, change);
    }
  }

  async delete(req: LoadBalancerRequest, signal?: AbortSignal): Promise<void> {
    const options = serviceOptions(req.service.annotations, this.config);
    const found = await this.find(req, signal, false);
    if (!found) return;
    // An adopted one that the official controller would not delete either (shared, or not its own):
    // left as it is (ccm migrate never hands such a one over; this holds whatever the hand-over said).
    if (req.adoptedID === found.id && notHandedOver(found, found.name)) return;
    if (found.provisioning_status !== 'PENDING_DELETE' && found.provisioning_status !== 'DELETED') {
      // A change in flight is waited for; ERROR is deleted like ACTIVE.
      const lb = await this.untilSettled(found, signal);
      if (!lb) return;
      await this.deleteNow(lb, req, options, signal);
    }
    // Done once Octavia has removed it, as the official controller waits: a cascade delete that
    // ends in ERROR would otherwise leave a balancer behind a Service that is gone.
    const left = await this.untilSettled(found, signal, 'deleting it');
    if (left) {
      throw new RetryableError(
        `Octavia load balancer ${left.name} (${left.id}) is ${left.provisioning_status} after ccm deleted it; ccm deletes it again`,
      );
    }
  }

  private async deleteNow(
    lb: OctaviaLoadBalancer,
    req: LoadBalancerRequest,
    options: ServiceOptions,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const fip = await this.floatingIpOf(lb, signal);
    if (fip) {
      const created = fip.description === fipDescription(lb, req) || officialFloatingIp(fip, req);
      if (created && !options.keepFloatingIp) {
        await this.call('network', 'DELETE', `v2.0/floatingips/${fip.id}`, undefined, signal, true);
      } else {
        await this.call(
          'network',
          'PUT',
          `v2.0/floatingips/${fip.id}`,
          { floatingip: { port_id: null } },
          signal,
        );
      }
    }
    await this.call(
      'load-balancer',
      'DELETE',
      `v2.0/lbaas/loadbalancers/${lb.id}?cascade=true`,
      undefined,
      signal,
      true,
    );
  }

  /** The load balancer ccm made for this Service in this cluster; `strict`: another one by its name is an error. */
  private async find(
    req: LoadBalancerRequest,
    signal: AbortSignal | undefined,
    strict: boolean,
  ): Promise<OctaviaLoadBalancer | undefined> {
    // Handed over by `ccm migrate` (or found by --adopt-official): the official controller's, used
    // as it is, under its own name; a hand-over whose load balancer is gone falls back to ccm's own.
    if (req.adoptedID) {
      const adopted = await this.call<{ loadbalancer: OctaviaLoadBalancer } | undefined>(
        'load-balancer',
        'GET',
        `v2.0/lbaas/loadbalancers/${encodeURIComponent(req.adoptedID)}`,
        undefined,
        signal,
        true,
      );
      if (adopted?.loadbalancer) return adopted.loadbalancer;
    }
    const name = lbName(req);
    const loadbalancers = await this.list<OctaviaLoadBalancer>(
      `loadbalancers?name=${encodeURIComponent(name)}`,
      'loadbalancers',
      signal,
    );
    const owned = loadbalancers.filter((lb) => lb.tags?.includes(clusterTag(req)));
    if (owned.length > 1) {
      throw new InvalidConfigError(
        `Octavia has ${owned.length} load balancers named ${name} for this cluster (${owned.map((lb) => lb.id).join(', ')}); delete the extra ones`,
      );
    }
    if (owned.length === 0 && loadbalancers.length > 0 && strict) {
      throw new InvalidConfigError(
        `a load balancer named ${name} exists in Octavia without the tag ${clusterTag(req)}: ccm never adopts it; delete or rename it`,
      );
    }
    return owned[0];
  }

  private async create(
    req: LoadBalancerRequest,
    options: ServiceOptions,
    desired: DesiredListener[],
    signal?: AbortSignal,
  ): Promise<OctaviaLoadBalancer> {
    if (!options.subnetId && !options.networkId) {
      throw new InvalidConfigError(
        'no VIP subnet: set [LoadBalancer] subnet-id in cloud.conf or the annotation loadbalancer.openstack.org/subnet-id',
      );
    }
    const body = {
      loadbalancer: {
        name: lbName(req),
        description: `Kubernetes Service ${serviceName(req)} (cluster ${req.clusterID}), managed by ccm`,
        ...(options.subnetId ? { vip_subnet_id: options.subnetId } : { vip_network_id: options.networkId }),
        ...(this.config.lbProvider ? { provider: this.config.lbProvider } : {}),
        ...(options.flavorId ? { flavor_id: options.flavorId } : {}),
        ...(options.availabilityZone ? { availability_zone: options.availabilityZone } : {}),
        tags: tags(req),
        listeners: desired.map((d) => ({
          ...withoutEmpty(d.listener, 'allowed_cidrs'),
          default_pool: {
            ...d.pool,
            members: d.members,
            ...(d.monitor ? { healthmonitor: d.monitor } : {}),
          },
        })),
      },
    };
    const { loadbalancer } = await this.call<{ loadbalancer: OctaviaLoadBalancer }>(
      'load-balancer',
      'POST',
      'v2.0/lbaas/loadbalancers',
      body,
      signal,
    );
    return loadbalancer;
  }

  /** The load balancer once ACTIVE (untilSettled); ERROR, gone, or still PENDING_* throws. */
  private async settle(
    lb: OctaviaLoadBalancer,
    signal: AbortSignal | undefined,
    changed?: string,
  ): Promise<OctaviaLoadBalancer> {
    const current = await this.untilSettled(lb, signal, changed);
    if (!current) {
      throw new RetryableError(
        `Octavia load balancer ${lb.name} (${lb.id}) disappeared while ccm changed it; it is created again`,
        POLL_MS,
      );
    }
    this.assertActive(current);
    return current;
  }

  /**
   * The load balancer once it is no longer PENDING_*, or undefined once it is gone: as it is when
   * nothing was just changed and it is not pending, else read again every SETTLE_POLL_MS for up to
   * SETTLE_MS; still PENDING_* then throws the RetryableError that tells the caller to come back.
   */
  private async untilSettled(
    lb: OctaviaLoadBalancer,
    signal: AbortSignal | undefined,
    changed?: string,
  ): Promise<OctaviaLoadBalancer | undefined> {
    let current = lb;
    const pending = (x: OctaviaLoadBalancer) => x.provisioning_status.startsWith('PENDING_');
    if (!changed && !pending(current)) return current;
    for (let polls = 0; ; polls++) {
      if (changed || polls > 0) {
        const read = await this.call<{ loadbalancer: OctaviaLoadBalancer } | undefined>(
          'load-balancer',
          'GET',
          `v2.0/lbaas/loadbalancers/${current.id}`,
          undefined,
          signal,
          true,
        );
        if (!read || read.loadbalancer.provisioning_status === 'DELETED') return undefined;
        current = read.loadbalancer;
      }
      if (!pending(current)) return current;
      if (polls >= SETTLE_MS / SETTLE_POLL_MS)
        throw this.busy(current, changed ?? current.provisioning_status);
      await this.session.sleep(SETTLE_POLL_MS, signal);
    }
  }

  private assertActive(lb: OctaviaLoadBalancer): void {
    const status = lb.provisioning_status;
    if (status === 'ACTIVE') return;
    if (status === 'ERROR') {
      throw new RetryableError(
        `Octavia load balancer ${lb.name} (${lb.id}) is in provisioning status ERROR; ccm retries, fix it in Octavia or delete it (openstack loadbalancer delete --cascade ${lb.id}) to have it recreated`,
      );
    }
    throw this.busy(lb, status);
  }

  private busy(lb: OctaviaLoadBalancer, what: string): RetryableError {
    return new RetryableError(
      `Octavia load balancer ${lb.name} is busy (${what}); checking again in ${POLL_MS / 1000} s`,
      POLL_MS,
    );
  }

  /**
   * Brings listeners, pools, members and health monitors to `desired`, one change per call (Octavia
   * takes one at a time). Returns what it changed, or undefined when everything matches. A child
   * Octavia left in ERROR is changed again once (its key goes into `retried`); in ERROR again, it
   * throws.
   */
  private async reconcile(
    lb: OctaviaLoadBalancer,
    desired: DesiredListener[],
    signal: AbortSignal | undefined,
    membersOnly: boolean,
    retried: Set<string>,
  ): Promise<string | undefined> {
    /** Whether `objects` (of one change) include one in ERROR that is to be sent again. */
    const failed = (what: string, key: string, objects: readonly Provisioned[]): boolean => {
      const errored = objects.filter((o) => o.provisioning_status === 'ERROR');
      if (errored.length === 0) return false;
      if (retried.has(key)) {
        const ids = errored.map((o) => (o as { id?: string }).id).join(', ');
        throw new RetryableError(
          `Octavia load balancer ${lb.name} (${lb.id}) is ACTIVE but ${what} failed twice: Octavia left ${key.split(' ')[0]} ${ids} in provisioning status ERROR; ccm tries again later, see Octavia's worker log for why`,
        );
      }
      retried.add(key);
      return true;
    };
    const listeners = await this.list<Listener>(`listeners?loadbalancer_id=${lb.id}`, 'listeners', signal);
    const pools = await this.list<Pool>(`pools?loadbalancer_id=${lb.id}`, 'pools', signal);
    const lbCall = <T>(method: string, path: string, body?: unknown) =>
      this.call<T>('load-balancer', method, `v2.0/lbaas/${path}`, body, signal);

    for (const want of desired) {
      const { protocol, protocol_port: port } = want.listener;
      const listener = listeners.find((l) => l.protocol === protocol && l.protocol_port === port);
      const label = `${protocol} ${port}`;
      if (!listener) {
        if (membersOnly) continue;
        await lbCall('POST', 'listeners', {
          listener: { ...withoutEmpty(want.listener, 'allowed_cidrs'), loadbalancer_id: lb.id },
        });
        return `creating the listener for ${label}`;
      }
      // failed() first: a child in ERROR counts its retry whether or not it also differs.
      const listenerFailed =
        !membersOnly && failed(`the listener for ${label}`, `listener ${listener.id}`, [listener]);
      if (!membersOnly && (listenerFailed || differs(listener, want.listener))) {
        const { name: _n, protocol: _p, protocol_port: _pp, ...update } = want.listener;
        await lbCall('PUT', `listeners/${listener.id}`, { listener: update });
        return `updating the listener for ${label}`;
      }
      const pool = pools.find((p) => p.id === listener.default_pool_id);
      if (!pool) {
        if (membersOnly) continue;
        await lbCall('POST', 'pools', { pool: { ...want.pool, listener_id: listener.id } });
        return `creating the pool for ${label}`;
      }
      // Checked on a members-only pass too: Octavia refuses member changes while the pool is not
      // ACTIVE (409 "Pool … is immutable", octavia/api/v2/controllers/member.py
      // _test_lb_and_listener_and_pool_statuses), and a pool PUT is what clears its ERROR.
      const poolFailed = failed(`the pool for ${label}`, `pool ${pool.id}`, [pool]);
      if (poolFailed || (!membersOnly && differs(pool, want.pool))) {
        const { name: _n, protocol: _p, ...update } = want.pool;
        await lbCall('PUT', `pools/${pool.id}`, { pool: update });
        return `updating the pool for ${label}`;
      }
      const members = await this.list<Member>(`pools/${pool.id}/members`, 'members', signal);
      // A failed batch leaves its members ERROR, those it was to delete among them.
      const membersFailed = failed(`the members for ${label}`, `member(s) of pool ${pool.id}`, members);
      if (membersFailed || !sameMembers(members, want.members)) {
        await lbCall('PUT', `pools/${pool.id}/members`, { members: want.members });
        return `updating the members for ${label}`;
      }
      if (membersOnly) continue;
      const monitor = pool.healthmonitor_id
        ? (await lbCall<{ healthmonitor: HealthMonitor }>('GET', `healthmonitors/${pool.healthmonitor_id}`))
            .healthmonitor
        : undefined;
      if (monitor && (!want.monitor || monitor.type !== want.monitor.type)) {
        await lbCall('DELETE', `healthmonitors/${monitor.id}`);
        return `removing the health monitor for ${label}`;
      }
      if (!monitor && want.monitor) {
        await lbCall('POST', 'healthmonitors', { healthmonitor: { ...want.monitor, pool_id: pool.id } });
        return `creating the health monitor for ${label}`;
      }
      if (
        monitor &&
        want.monitor &&
        (failed(`the health monitor for ${label}`, `healthmonitor ${monitor.id}`, [monitor]) ||
          differs(monitor, want.monitor))
      ) {
        const { type: _t, ...update } = want.monitor;
        await lbCall('PUT', `healthmonitors/${monitor.id}`, { healthmonitor: update });
        return `updating the health monitor for ${label}`;
      }
    }
    if (membersOnly) return undefined;
    for (const listener of listeners) {
      const wanted = desired.some(
        (d) =>
          d.listener.protocol === listener.protocol && d.listener.protocol_port === listener.protocol_port,
      );
      if (wanted) continue;
      const label = `${listener.protocol} ${listener.protocol_port}`;
      if (listener.default_pool_id) {
        // Deleting a pool takes its members and health monitor with it.
        await lbCall('DELETE', `pools/${listener.default_pool_id}`);
        return `removing the pool of the old port ${label}`;
      }
      await lbCall('DELETE', `listeners/${listener.id}`);
      return `removing the listener of the old port ${label}`;
    }
    return undefined;
  }

  private desiredListeners(
    req: LoadBalancerRequest,
    options: ServiceOptions,
    features: OctaviaFeatures,
  ): DesiredListener[] {
    const local =
      req.service.externalTrafficPolicy === 'Local' && req.service.healthCheckNodePort !== undefined;
    const family = req.service.ipFamilies[0] === 'IPv6' ? 6 : 4;
    return req.ports.map((port) => {
      const protocol = port.protocol;
      const name = `${lbName(req)}_${protocol.toLowerCase()}_${port.port}`;
      const timeouts = options.timeouts;
      // Every setting this Octavia knows is sent, defaults included, so that removing an annotation
      // resets the listener; no source ranges is [] (it clears them; null is no list).
      const listener = {
        name,
        protocol,
        protocol_port: port.port,
        connection_limit: options.connectionLimit ?? -1,
        ...(features.timeouts
          ? {
              timeout_client_data: timeouts.clientData ?? OCTAVIA_DEFAULTS.timeoutClientData,
              timeout_member_connect: timeouts.memberConnect ?? OCTAVIA_DEFAULTS.timeoutMemberConnect,
              timeout_member_data: timeouts.memberData ?? OCTAVIA_DEFAULTS.timeoutMemberData,
              timeout_tcp_inspect: timeouts.tcpInspect ?? OCTAVIA_DEFAULTS.timeoutTcpInspect,
            }
          : {}),
        ...(features.allowedCidrs
          ? { allowed_cidrs: canonicalCidrs(req.service.loadBalancerSourceRanges) }
          : {}),
        // An adopted load balancer's listeners and pools keep the official controller's tags, which
        // `ccm migrate --rollback` relies on (cloud-provider-openstack tags them with its lb name).
        ...(req.adoptedID ? {} : { tags: tags(req) }),
      };
      const pool = {
        name,
        protocol,
        lb_algorithm: this.config.lbMethod,
        session_persistence: req.service.sessionAffinity === 'ClientIP' ? { type: 'SOURCE_IP' } : null,
        ...(req.adoptedID ? {} : { tags: tags(req) }),
      };
      const http = local && features.httpMonitor && (port.protocol !== 'UDP' || features.httpMonitorOnUdp);
      const monitor = options.healthMonitor ? healthMonitor(port, options, http) : undefined;
      return {
        listener,
        pool,
        members: members(
          req.nodes,
          port,
          family,
          options,
          http && monitor ? req.service.healthCheckNodePort : undefined,
        ),
        ...(monitor ? { monitor } : {}),
      };
    });
  }

  private async floatingIpOf(lb: OctaviaLoadBalancer, signal?: AbortSignal): Promise<FloatingIp | undefined> {
    const { floatingips } = await this.call<{ floatingips: FloatingIp[] }>(
      'network',
      'GET',
      `v2.0/floatingips?port_id=${encodeURIComponent(lb.vip_port_id)}`,
      undefined,
      signal,
    );
    return floatingips[0];
  }

  /** The ingress address: the VIP for an internal load balancer, else its floating IP (made if need be). */
  private async ensureFloatingIp(
    lb: OctaviaLoadBalancer,
    req: LoadBalancerRequest,
    options: ServiceOptions,
    signal?: AbortSignal,
  ): Promise<string> {
    const current = await this.floatingIpOf(lb, signal);
    const net = <T>(method: string, path: string, body?: unknown) =>
      this.call<T>('network', method, `v2.0/${path}`, body, signal);
    if (options.internal) {
      if (current) {
        if (current.description === fipDescription(lb, req) && !options.keepFloatingIp) {
          await net('DELETE', `floatingips/${current.id}`);
        } else {
          await net('PUT', `floatingips/${current.id}`, { floatingip: { port_id: null } });
        }
      }
      return lb.vip_address;
    }
    if (current) return current.floating_ip_address;

    const wanted = req.service.loadBalancerIP;
    if (wanted) {
      const { floatingips } = await net<{ floatingips: FloatingIp[] }>(
        'GET',
        `floatingips?floating_ip_address=${encodeURIComponent(wanted)}`,
      );
      const existing = floatingips[0];
      if (existing?.port_id) {
        throw new InvalidConfigError(
          `spec.loadBalancerIP ${wanted} is a floating IP already associated with port ${existing.port_id}; free it or choose another`,
        );
      }
      if (existing) {
        await net('PUT', `floatingips/${existing.id}`, { floatingip: { port_id: lb.vip_port_id } });
        return existing.floating_ip_address;
      }
    }
    if (!options.floatingNetworkId) {
      throw new InvalidConfigError(
        'no floating network: set [LoadBalancer] floating-network-id in cloud.conf, the annotation loadbalancer.openstack.org/floating-network-id, or service.beta.kubernetes.io/openstack-internal-load-balancer: "true"',
      );
    }
    let created: { floatingip: FloatingIp };
    try {
      created = await net<{ floatingip: FloatingIp }>('POST', 'floatingips', {
        floatingip: {
          floating_network_id: options.floatingNetworkId,
          port_id: lb.vip_port_id,
          description: fipDescription(lb, req),
          ...(options.floatingSubnetId ? { subnet_id: options.floatingSubnetId } : {}),
          ...(wanted ? { floating_ip_address: wanted } : {}),
        },
      });
    } catch (err) {
      // Neutron's policy create_floatingip:floating_ip_address: admin or the project's manager only
      // (neutron/conf/policies/floatingip.py).
      if (wanted && httpStatus(err) === 403) {
        throw new InvalidConfigError(
          `spec.loadBalancerIP ${wanted}: Neutron refused to create a floating IP with that address (403: only an admin or the project's manager may choose it); create it first (openstack floating ip create --floating-ip-address ${wanted} ${options.floatingNetworkId}), which ccm then associates, or give ccm's user the manager role`,
        );
      }
      throw err;
    }
    return created.floatingip.floating_ip_address;
  }

  /**
   * Every page of an Octavia listing: Octavia returns at most pagination_max_limit (1000) items and
   * a "next" link when a page is full (octavia/common/config.py pagination_max_limit,
   * octavia/api/common/pagination.py _make_links). Only the link's marker is used: the link is built
   * on Octavia's own idea of its URL (api_base_uri or the request's, possibly an internal host the
   * token must not go to) and drops the request's filters.
   */
  private async list<T extends { id?: string }>(
    path: string,
    key: string,
    signal?: AbortSignal,
  ): Promise<T[]> {
    const out: T[] = [];
    const seen = new Set<string>();
    let marker: string | undefined;
    for (;;) {
      const sep = path.includes('?') ? '&' : '?';
      const page = await this.call<Record<string, unknown>>(
        'load-balancer',
        'GET',
        `v2.0/lbaas/${path}${marker ? `${sep}marker=${encodeURIComponent(marker)}` : ''}`,
        undefined,
        signal,
      );
      const items = (page[key] ?? []) as T[];
      out.push(...items);
      const links = (page[`${key}_links`] ?? []) as { rel?: string; href?: string }[];
      const next = links.find((l) => l.rel === 'next')?.href;
      if (!next || items.length === 0) return out;
      let nextMarker: string | null = null;
      try {
        nextMarker = new URL(next, 'http://octavia.invalid/').searchParams.get('marker');
      } catch {
        nextMarker = null;
      }
      if (!nextMarker || seen.has(nextMarker)) {
        throw new RetryableError(
          `Octavia's listing ${path} has a next page ccm cannot follow (${next}); checking again in ${POLL_MS / 1000} s`,
          POLL_MS,
        );
      }
      seen.add(nextMarker);
      marker = nextMarker;
    }
  }

  /** One Octavia or Neutron call; 409 (the load balancer is immutable right now) is "try again". */
  private async call<T>(
    type: ServiceType,
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    goneIsDone = false,
  ): Promise<T> {
    try {
      const res = await this.session.request<T>(type, method, path, {
        ...(body !== undefined ? { body } : {}),
        ...(signal ? { signal } : {}),
      });
      return res.body;
    } catch (err) {
      if (goneIsDone && err instanceof NotFoundError) return undefined as T;
      if (httpStatus(err) === 409) {
        throw new RetryableError(`${(err as Error).message}; checking again in ${POLL_MS / 1000} s`, POLL_MS);
      }
      throw err;
    }
  }
}

export function lbName(req: LoadBalancerRequest): string {
  return `ccm_${req.name}`;
}

function clusterTag(req: LoadBalancerRequest): string {
  return `ccm-cluster:${req.clusterID}`;
}

function tags(req: LoadBalancerRequest): string[] {
  return [clusterTag(req), `ccm-service:${req.service.namespace}/${req.service.name}`];
}

function serviceName(req: LoadBalancerRequest): string {
  return `${req.service.namespace}/${req.service.name}`;
}

/**
 * The floating IP the official controller created for a load balancer handed to ccm: released with
 * it, as the official controller would have (pkg/openstack/loadbalancer.go ensureFloatingIP describes
 * it "Floating IP for Kubernetes external service <ns>/<name> from cluster <cluster>", and
 * deleteFIPIfCreatedByProvider deletes one so described, unless keep-floatingip says otherwise). One
 * made by hand, or another Service's, stays.
 */
function officialFloatingIp(fip: { description?: string }, req: LoadBalancerRequest): boolean {
  return (
    req.adoptedID !== undefined &&
    (fip.description ?? '').startsWith(
      `Floating IP for Kubernetes external service ${serviceName(req)} from cluster `,
    )
  );
}

export function fipDescription(lb: { name: string }, req: LoadBalancerRequest): string {
  return `Floating IP of ${lb.name} for Kubernetes Service ${serviceName(req)} (cluster ${req.clusterID}), created by ccm`;
}

/** `http`: externalTrafficPolicy Local where this Octavia has HTTP monitors for the pool's protocol. */
function healthMonitor(port: LoadBalancerPort, options: ServiceOptions, http: boolean) {
  const timing = {
    delay: options.monitorDelay,
    timeout: options.monitorTimeout,
    max_retries: options.monitorMaxRetries,
    max_retries_down: options.monitorMaxRetriesDown,
  };
  // externalTrafficPolicy Local: kube-proxy's health check node port says which nodes have endpoints.
  if (http)
    return { type: 'HTTP', ...timing, http_method: 'GET', url_path: '/healthz', expected_codes: '200' };
  const type = port.protocol === 'UDP' ? 'UDP-CONNECT' : port.protocol;
  return { type, ...timing };
}

function members(
  nodes: readonly LoadBalancerNode[],
  port: LoadBalancerPort,
  family: 4 | 6,
  options: ServiceOptions,
  monitorPort: number | undefined,
): Member[] {
  const out: Member[] = [];
  for (const node of [...nodes].sort((a, b) => a.name.localeCompare(b.name))) {
    const address = node.addresses.find(
      (a) => a.type === 'InternalIP' && (family === 6 ? a.address.includes(':') : !a.address.includes(':')),
    )?.address;
    if (!address) continue;
    out.push({
      name: node.name,
      address,
      protocol_port: port.nodePort,
      ...(options.subnetId ? { subnet_id: options.subnetId } : {}),
      ...(monitorPort !== undefined ? { monitor_port: monitorPort } : {}),
    });
  }
  return out;
}

function sameMembers(current: Member[], wanted: Member[]): boolean {
  const key = (m: Member) => `${m.name}|${m.address}|${m.protocol_port}|${m.monitor_port ?? ''}`;
  const a = current.map(key).sort();
  const b = wanted.map(key).sort();
  return a.length === b.length && a.every((k, i) => k === b[i]);
}

/** An empty `allowed_cidrs` is left out of creations: nothing to set. */
function withoutEmpty<T extends Record<string, unknown>>(obj: T, key: string): T {
  const value = obj[key];
  if (!Array.isArray(value) || value.length > 0) return obj;
  const { [key]: _dropped, ...rest } = obj;
  return rest as T;
}

/**
 * Whether any field of `wanted` (but tags and names) differs from the object Octavia shows. Nested
 * objects compare by the fields ccm sets: Octavia adds its own (session_persistence.cookie_name…).
 */
function differs(current: object, wanted: Record<string, unknown>): boolean {
  const shown = current as Record<string, unknown>;
  return Object.entries(wanted).some(([key, value]) => {
    if (key === 'tags' || key === 'name') return false;
    if (key === 'allowed_cidrs') return !sameCidrs(shown[key], value);
    return !matches(shown[key], value);
  });
}

function matches(shown: unknown, wanted: unknown): boolean {
  if (wanted === null || wanted === undefined) return shown === null || shown === undefined;
  if (typeof wanted === 'object' && !Array.isArray(wanted)) {
    if (typeof shown !== 'object' || shown === null) return false;
    return Object.entries(wanted).every(([k, v]) => matches((shown as Record<string, unknown>)[k], v));
  }
  return JSON.stringify(shown) === JSON.stringify(wanted);
}

/**
 * Octavia stores allowed_cidrs as a set of canonical networks (octavia/api/common/types.py CidrType:
 * ip_network(value, strict=False).with_prefixlen; db/repositories.py ListenerCidrRepository.create:
 * `for cidr in set(allowed_cidrs)`) and shows them in its own order; the official controller compares
 * them as sets (cloud-provider-openstack pkg/util/util.go StringListEqual). Compared otherwise, a
 * range with host bits or two ranges in another order would update the listener on every pass.
 */
function sameCidrs(shown: unknown, wanted: unknown): boolean {
  const set = (v: unknown) => (Array.isArray(v) && v.length > 0 ? canonicalCidrs(v.map(String)) : []);
  const a = set(shown);
  const b = set(wanted);
  return a.length === b.length && a.every((c, i) => c === b[i]);
}

/** The ranges as Octavia keeps them: canonical, each once, sorted. */
export function canonicalCidrs(ranges: readonly string[]): string[] {
  return [...new Set(ranges.map(canonicalCidr))].sort();
}

/** A CIDR with its host bits cleared (Python's ip_network(strict=False)); text that is none is kept for Octavia to refuse. */
export function canonicalCidr(text: string): string {
  const trimmed = text.trim();
  const slash = trimmed.indexOf('/');
  const ip = slash < 0 ? trimmed : trimmed.slice(0, slash);
  const family = isIP(ip);
  if (family === 0) return text;
  const bits = family === 4 ? 32 : 128;
  const lenText = slash < 0 ? String(bits) : trimmed.slice(slash + 1);
  if (!/^\d{1,3}$/.test(lenText) || Number(lenText) > bits) return text;
  const len = Number(lenText);
  const value = family === 4 ? ipv4ToBig(ip) : ipv6ToBig(ip);
  const mask = len === 0 ? 0n : ((1n << BigInt(len)) - 1n) << BigInt(bits - len);
  const net = value & mask;
  return `${family === 4 ? bigToIpv4(net) : bigToIpv6(net)}/${len}`;
}

function ipv4ToBig(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function bigToIpv4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 255n)).join('.');
}

function ipv6ToBig(ip: string): bigint {
  let text = ip;
  // An embedded IPv4 tail (::ffff:1.2.3.4) is two hextets.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (v4) {
    const n = ipv4ToBig(v4[1] as string);
    text = `${text.slice(0, v4.index)}${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
}

/** RFC 5952 text, as Python's ipaddress prints it: the longest run of two or more zero groups is "::". */
function bigToIpv6(value: bigint): string {
  const groups = Array.from({ length: 8 }, (_, i) => Number((value >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}
