import { monotonicMs } from '../clock.js';
import { isProviderError, RetryableError } from '../providers/errors.js';
import type {
  InstanceGroups,
  LoadBalancerAdoption,
  LoadBalancerRequest,
  LoadBalancers,
  Provider,
  Routes,
} from '../providers/types.js';
import type { Metrics } from './metrics.js';

/**
 * The cloud request budget every controller shares: a token bucket of `qps` tokens a second holding
 * at most `burst`. When it is empty, a request waits its turn (first come, first served); it never
 * fails for want of budget.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  private tail: Promise<void> = Promise.resolve();

  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly now: () => number = monotonicMs,
  ) {
    this.tokens = burst;
    this.last = now();
  }

  /** Resolves once a token is taken; returns how long it waited (ms). */
  take(): Promise<number> {
    const started = this.now();
    const turn = this.tail.then(async () => {
      this.refill();
      if (this.tokens < 1) {
        // A hold (below) puts `last` in the future: nothing refills before it.
        const waitMs = Math.max(0, this.last - this.now()) + ((1 - this.tokens) / this.qps) * 1000;
        await new Promise((r) => setTimeout(r, waitMs));
        this.refill();
      }
      this.tokens -= 1;
    });
    this.tail = turn;
    return turn.then(() => this.now() - started);
  }

  /**
   * The cloud answered "too many requests, retry in `ms`" (429 with Retry-After or ratelimit-reset):
   * the budget is empty for everyone until then, and refills from then on, with no burst saved up
   * meanwhile. Without this, every other request queued behind it would be sent and refused too.
   */
  hold(ms: number): void {
    if (!(ms > 0)) return;
    this.refill();
    this.tokens = Math.min(this.tokens, 0);
    this.last = Math.max(this.last, this.now() + ms);
  }

  private refill(): void {
    const now = this.now();
    if (now <= this.last) return;
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
  }
}

/** Where the current provider lives: re-created when credentials or the cloud config change. */
export interface ProviderHolder {
  current: Provider;
}

export function outcomeOf(err: unknown): string {
  if (!isProviderError(err)) return 'error';
  return {
    NotFound: 'not_found',
    Unauthorized: 'unauthorized',
    Retryable: 'retryable',
    InvalidConfig: 'invalid_config',
  }[err.kind];
}

/**
 * The provider every controller uses: each call waits for the shared budget, goes to the holder's
 * current provider, and is counted in the metrics. The load balancer capability is wrapped the same
 * way, so the service controller gets the budget for free.
 *
 * `mayWrite` is the leader gate, asked after the budget wait and before each call that changes the
 * cloud: a leader that waited (1 qps, a paused VM) past its renew deadline must not create or change
 * a load balancer while the new leader does the same. The provider's own HTTP client asks it again
 * before every request it sends (ProviderDeps.mayWrite).
 */
export function budgetedProvider(
  holder: ProviderHolder,
  bucket: TokenBucket,
  metrics?: Metrics,
  mayWrite: () => boolean = () => true,
): Provider {
  const call = async <T>(operation: string, fn: (p: Provider) => Promise<T>, writes = false): Promise<T> => {
    // A provider whose client takes a token per request (every cloud with an HTTP API) is not charged
    // per operation too. Cloudlycke has none (it runs vagrant or reads a file): one per operation.
    if (!holder.current.requestBudgeted) {
      const waited = await bucket.take();
      metrics?.cloudBudgetWaitSeconds.inc(waited / 1000);
    }
    if (writes && !mayWrite()) {
      throw new RetryableError(`${operation} refused: this replica is not the leader`);
    }
    const provider = holder.current;
    const end = metrics?.cloudSeconds.startTimer({ provider: provider.name, operation });
    try {
      const result = await fn(provider);
      metrics?.cloudRequests.inc({ provider: provider.name, operation, code: 'ok' });
      return result;
    } catch (err) {
      metrics?.cloudRequests.inc({ provider: provider.name, operation, code: outcomeOf(err) });
      throw err;
    } finally {
      end?.();
    }
  };
  const lb = holder.current.loadBalancers;
  // A provider re-created on a config reload starts empty: it is shown what its predecessor was
  // shown (e.g. Cloudlycke's allocations, recorded on the Services) before its first call.
  let observed: { services: readonly LoadBalancerRequest[]; by: Provider } | undefined;
  const balancers = (p: Provider): LoadBalancers => {
    const current = p.loadBalancers as LoadBalancers;
    if (observed && observed.by !== p) {
      current.observe?.(observed.services);
      observed = { services: observed.services, by: p };
    }
    return current;
  };
  const adoptionOf = (p: Provider): LoadBalancerAdoption => {
    const adoption = p.loadBalancers?.adoption;
    if (!adoption) throw new Error(`the ${p.name} provider lost its load balancer adoption on a reload`);
    return adoption;
  };
  const loadBalancers: LoadBalancers | undefined = lb && {
    get: (req, signal) => call('lb_get', (p) => balancers(p).get(req, signal)),
    ensure: (req, signal) => call('lb_ensure', (p) => balancers(p).ensure(req, signal), true),
    updateNodes: (req, signal) => call('lb_update_nodes', (p) => balancers(p).updateNodes(req, signal), true),
    delete: (req, signal) => call('lb_delete', (p) => balancers(p).delete(req, signal), true),
    ignoredOnDelete: (req) => holder.current.loadBalancers?.ignoredOnDelete?.(req),
    observe: (services) => {
      observed = { services, by: holder.current };
      holder.current.loadBalancers?.observe?.(services);
    },
    ...(lb.adoption
      ? {
          adoption: {
            findOfficial: (services, cluster, signal, options) =>
              call('lb_find_official', (p) => adoptionOf(p).findOfficial(services, cluster, signal, options)),
            ownershipTags: (found, clusterID) => adoptionOf(holder.current).ownershipTags(found, clusterID),
            setTags: (found, tags, signal) =>
              call('lb_set_tags', (p) => adoptionOf(p).setTags(found, tags, signal), true),
          },
        }
      : {}),
  };
  const groupsOf = (p: Provider): InstanceGroups => {
    // A reload that turned the groups off: nothing to plan, nothing of the old plan to write.
    if (!p.instanceGroups)
      throw new RetryableError(`the ${p.name} provider keeps no instance groups since a reload`);
    return p.instanceGroups;
  };
  const routes: Routes | undefined = holder.current.routes && {
    list: (clusterID, signal) => call('route_list', (p) => (p.routes as Routes).list(clusterID, signal)),
    create: (clusterID, nameHint, route, signal) =>
      call('route_create', (p) => (p.routes as Routes).create(clusterID, nameHint, route, signal), true),
    delete: (clusterID, route, signal) =>
      call('route_delete', (p) => (p.routes as Routes).delete(clusterID, route, signal), true),
  };
  // The instance groups' tag writes are cloud writes like a load balancer's: budgeted, counted, gated.
  const instanceGroups: InstanceGroups | undefined = holder.current.instanceGroups && {
    plan: (clusterID, nodes, signal) =>
      call('instance_groups_plan', (p) => groupsOf(p).plan(clusterID, nodes, signal)),
    apply: (clusterID, change, signal) =>
      call('instance_groups_apply', (p) => groupsOf(p).apply(clusterID, change, signal), true),
  };
  return {
    get name() {
      return holder.current.name;
    },
    get providerIdScheme() {
      return holder.current.providerIdScheme;
    },
    instances: {
      list: (signal) => call('list', (p) => p.instances.list(signal)),
      get: (providerID, signal) => call('get', (p) => p.instances.get(providerID, signal)),
    },
    ...(loadBalancers ? { loadBalancers } : {}),
    ...(routes ? { routes } : {}),
    ...(instanceGroups ? { instanceGroups } : {}),
    ...(holder.current.noRoutesReason ? { noRoutesReason: holder.current.noRoutesReason } : {}),
  };
}
