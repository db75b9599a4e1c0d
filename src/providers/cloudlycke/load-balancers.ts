import { InvalidConfigError, RetryableError } from '../errors.js';
import type {
  LoadBalancerNode,
  LoadBalancerPort,
  LoadBalancerRequest,
  LoadBalancerStatus,
  LoadBalancers,
} from '../types.js';
import type { AddressPool } from './address-pool.js';
import {
  ANNOTATION_ALLOCATION,
  ANNOTATION_LOAD_BALANCER_IP,
  formatAllocation,
  parseAllocation,
} from './annotations.js';

/**
 * Load balancers of a local cloud: there is no load balancer service, so each Service gets one
 * address from a pool (a VIP that the host routes to the Nodes' node ports). The allocation is
 * recorded on the Service (ANNOTATION_ALLOCATION) and rebuilt from the Services in `observe`, never
 * kept in memory alone: a restart or a new leader hands out the same addresses.
 */

export interface CloudlyckeLoadBalancer {
  ip: string;
  service: string;
  ports: LoadBalancerPort[];
  backends: LoadBalancerNode[];
}

export interface LoadBalancerDeps {
  /** The pool, read fresh for each call (the inventory file may change); undefined when none is set. */
  pool(signal?: AbortSignal): Promise<AddressPool | undefined>;
}

export class CloudlyckeLoadBalancers implements LoadBalancers {
  /** Address → UID of the Service holding it. */
  private readonly holders = new Map<string, string>();
  private readonly byUid = new Map<string, CloudlyckeLoadBalancer>();

  constructor(private readonly deps: LoadBalancerDeps) {}

  observe(services: readonly LoadBalancerRequest[]): void {
    const sorted = [...services].sort((a, b) => key(a).localeCompare(key(b)));
    for (const req of sorted) {
      const record = parseAllocation(req.service.annotations[ANNOTATION_ALLOCATION.key]);
      // A record copied onto another Service (another UID) or from another cluster is not ours.
      if (!record || record.uid !== req.service.uid || record.cluster !== req.clusterID) continue;
      const holder = this.holders.get(record.ip);
      if (holder !== undefined && holder !== req.service.uid) continue;
      this.take(record.ip, req);
    }
  }

  async get(req: LoadBalancerRequest): Promise<LoadBalancerStatus | undefined> {
    const lb = this.byUid.get(req.service.uid);
    return lb ? this.status(lb, req) : undefined;
  }

  async ensure(req: LoadBalancerRequest, signal?: AbortSignal): Promise<LoadBalancerStatus> {
    const pool = await this.deps.pool(signal);
    if (!pool) {
      throw new InvalidConfigError(
        'no load balancer address pool is configured; set loadBalancerPool in the inventory (or CLOUDLYCKE_LOAD_BALANCER_POOL) to a CIDR or range',
      );
    }
    const uid = req.service.uid;
    const current = this.byUid.get(uid);
    const wanted = this.requestedAddress(req, pool);
    let ip: string;
    if (wanted) {
      const holder = this.holders.get(wanted);
      if (holder !== undefined && holder !== uid) {
        throw new InvalidConfigError(
          `address ${wanted} is held by Service ${this.byUid.get(holder)?.service ?? 'another Service'}; ask for another address of the pool ${pool.source}`,
        );
      }
      ip = wanted;
    } else if (current && pool.normalise(current.ip)) {
      ip = current.ip;
    } else {
      const free = pool.firstFree((address) => this.holders.has(address));
      if (!free) {
        throw new RetryableError(
          `the load balancer address pool ${pool.source} is exhausted (${pool.size} addresses, all held); enlarge loadBalancerPool or delete a LoadBalancer Service`,
        );
      }
      ip = free;
    }
    if (current && current.ip !== ip) this.release(uid);
    const lb = this.take(ip, req);
    lb.ports = req.ports.map((p) => ({ ...p }));
    lb.backends = req.nodes.map((n) => ({ ...n }));
    return this.status(lb, req);
  }

  async updateNodes(req: LoadBalancerRequest): Promise<void> {
    const lb = this.byUid.get(req.service.uid);
    if (lb) lb.backends = req.nodes.map((n) => ({ ...n }));
  }

  async delete(req: LoadBalancerRequest): Promise<void> {
    this.release(req.service.uid);
  }

  /** What the host needs to route: each address, its ports → node ports and backends. */
  list(): CloudlyckeLoadBalancer[] {
    return [...this.byUid.values()];
  }

  private requestedAddress(req: LoadBalancerRequest, pool: AddressPool): string | undefined {
    const fromSpec = req.service.loadBalancerIP;
    const fromAnnotation = req.service.annotations[ANNOTATION_LOAD_BALANCER_IP.key];
    const asked = fromSpec || fromAnnotation;
    if (!asked) return undefined;
    const where = fromSpec ? 'spec.loadBalancerIP' : `annotation ${ANNOTATION_LOAD_BALANCER_IP.key}`;
    const inPool = pool.normalise(asked.trim());
    if (!inPool) {
      throw new InvalidConfigError(
        `${where} ${JSON.stringify(asked)} is not an address of the pool ${pool.source}; ask for one of its addresses or remove it`,
      );
    }
    return inPool;
  }

  private take(ip: string, req: LoadBalancerRequest): CloudlyckeLoadBalancer {
    const uid = req.service.uid;
    this.holders.set(ip, uid);
    const lb = this.byUid.get(uid) ?? { ip, service: key(req), ports: [], backends: [] };
    lb.ip = ip;
    this.byUid.set(uid, lb);
    return lb;
  }

  private release(uid: string): void {
    const lb = this.byUid.get(uid);
    if (!lb) return;
    if (this.holders.get(lb.ip) === uid) this.holders.delete(lb.ip);
    this.byUid.delete(uid);
  }

  private status(lb: CloudlyckeLoadBalancer, req: LoadBalancerRequest): LoadBalancerStatus {
    return {
      ingress: [{ ip: lb.ip, ipMode: 'VIP' }],
      annotations: {
        [ANNOTATION_ALLOCATION.key]: formatAllocation({
          ip: lb.ip,
          uid: req.service.uid,
          cluster: req.clusterID,
        }),
      },
    };
  }
}

function key(req: LoadBalancerRequest): string {
  return `${req.service.namespace}/${req.service.name}`;
}
