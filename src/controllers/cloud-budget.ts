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
 * A request's turn: how long it waited for it, and what to call once it was answered, or with
 * `false` once it is sure it was never sent (its caller gave up, the leader gate refused it): then
 * it counts in no window.
 */
export interface Turn {
  waitedMs: number;
  done(sent?: boolean): void;
}

const NOTHING = () => {};
/** Node's longest timer: a longer one fires after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A budget of cloud requests: `take` waits for a turn (never fails), `hold` stops every turn for a while. */
export interface RequestBudget {
  /** Resolves once the request may be sent. */
  take(): Promise<Turn>;
  /** The cloud answered "too many requests, retry in `ms`": nothing is sent until then. */
  hold(ms: number): void;
}

/** A cloud's published limit: at most `max` requests in any `windowMs`. */
export interface RateWindow {
  readonly windowMs: number;
  readonly max: number;
}

/**
 * The cloud's own limits, kept as the cloud counts them: each request counts in every window from
 * when it is sent until that window's length after its answer (a sliding window, as DigitalOcean
 * counts, not a reset on the minute). A request waits until it fits in every window. Unlike a token bucket, it
 * can spend a whole window's allowance at once and never more: a bucket that may burst the
 * per-minute limit and refills at the hourly rate lets through more than the minute allows.
 * First come, first served. Memory: one timestamp per request of the longest window.
 */
export class SlidingWindows implements RequestBudget {
  /** When each counted request was answered, oldest first (those of the longest window). */
  private readonly sent: number[] = [];
  private head = 0;
  /** Requests sent and not answered yet: they count in every window until they are. */
  private inFlight = 0;
  private heldUntil = 0;
  private tail: Promise<void> = Promise.resolve();
  private readonly longest: number;
  /** Wakes the head of the queue when an answer arrives while every window is full of requests in flight. */
  private wake?: () => void;

  constructor(
    readonly windows: readonly RateWindow[],
    private readonly now: () => number = monotonicMs,
  ) {
    if (windows.length === 0 || windows.some((w) => !(w.max >= 1) || !(w.windowMs > 0)))
      throw new Error('a rate window needs max ≥ 1 and a length above 0');
    this.longest = Math.max(...windows.map((w) => w.windowMs));
  }

  /**
   * A request counts from when its turn comes until a window's length after it was answered: the
   * cloud counts it from its arrival, somewhere in between, and a request queued for a connection
   * or slow to answer must not leave the count before the cloud's does.
   */
  take(): Promise<Turn> {
    const started = this.now();
    const turn = this.tail.then(async () => {
      for (;;) {
        const wait = this.waitMs();
        if (wait <= 0) break;
        await new Promise<void>((resolve) => {
          const timer = Number.isFinite(wait) ? setTimeout(wake, wait) : undefined;
          function wake() {
            clearTimeout(timer);
            resolve();
          }
          this.wake = wake;
        });
        this.wake = undefined;
      }
      this.inFlight++;
    });
    this.tail = turn;
    return turn.then(() => {
      let once = false;
      return {
        waitedMs: this.now() - started,
        done: (sent = true) => {
          if (once) return;
          once = true;
          this.inFlight--;
          if (sent) this.sent.push(this.now());
          this.wake?.();
        },
      };
    });
  }

  hold(ms: number): void {
    if (ms > 0) this.heldUntil = Math.max(this.heldUntil, this.now() + ms);
  }

  /** Requests counted in the last `windowMs`, those in flight included (for tests and metrics). */
  countIn(windowMs: number): number {
    const from = this.now() - windowMs;
    let n = this.inFlight;
    for (let i = this.sent.length - 1; i >= this.head && (this.sent[i] as number) > from; i--) n++;
    return n;
  }

  /** How long until one more request fits in every window (≤ 0: now; Infinity: when an answer comes). */
  private waitMs(): number {
    const now = this.now();
    while (this.head < this.sent.length && (this.sent[this.head] as number) <= now - this.longest)
      this.head++;
    if (this.head > 1024 && this.head * 2 > this.sent.length) {
      this.sent.splice(0, this.head);
      this.head = 0;
    }
    let wait = this.heldUntil - now;
    for (const w of this.windows) {
      const count = this.countIn(w.windowMs);
      if (count < w.max) continue;
      // Full: the oldest answered request of the newest `max` must leave the window, or, when fewer
      // than `max` were answered, an answer must come first.
      const answeredNeeded = w.max - this.inFlight;
      const leaving = answeredNeeded > 0 ? this.sent[this.sent.length - answeredNeeded] : undefined;
      wait = Math.max(
        wait,
        leaving === undefined ? Number.POSITIVE_INFINITY : leaving + w.windowMs - now + 1,
      );
    }
    return wait;
  }
}

/** Every budget at once: a request waits its turn in each (the operator's bucket within the cloud's windows). */
export class EveryBudget implements RequestBudget {
  constructor(private readonly budgets: readonly RequestBudget[]) {}

  async take(): Promise<Turn> {
    let waitedMs = 0;
    const turns: Turn[] = [];
    for (const b of this.budgets) {
      const turn = await b.take();
      waitedMs += turn.waitedMs;
      turns.push(turn);
    }
    return {
      waitedMs,
      done: (sent = true) => {
        for (const t of turns) t.done(sent);
      },
    };
  }

  hold(ms: number): void {
    for (const b of this.budgets) b.hold(ms);
  }
}

/**
 * The cloud request budget every controller shares: a token bucket of `qps` tokens a second holding
 * at most `burst`. When it is empty, a request waits its turn (first come, first served); it never
 * fails for want of budget.
 */
export class TokenBucket implements RequestBudget {
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

  /** Resolves once a token is taken. */
  take(): Promise<Turn> {
    const started = this.now();
    const turn = this.tail.then(async () => {
      this.refill();
      while (this.tokens < 1) {
        // A hold (below) puts `last` in the future: nothing refills before it. A wait past Node's
        // longest timer (2^31 ms, about 25 days) would fire at once: it is waited in parts.
        const waitMs = Math.max(0, this.last - this.now()) + ((1 - this.tokens) / this.qps) * 1000;
        await new Promise((r) => setTimeout(r, Math.min(Math.ceil(waitMs), MAX_TIMER_MS)));
        this.refill();
      }
      this.tokens -= 1;
    });
    this.tail = turn;
    return turn.then(() => ({ waitedMs: this.now() - started, done: NOTHING }));
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
  bucket: RequestBudget,
  metrics?: Metrics,
  mayWrite: () => boolean = () => true,
): Provider {
  const call = async <T>(operation: string, fn: (p: Provider) => Promise<T>, writes = false): Promise<T> => {
    // A provider whose client takes a token per request (every cloud with an HTTP API) is not charged
    // per operation too. Cloudlycke has none (it runs vagrant or reads a file): one per operation.
    let turn: Turn | undefined;
    if (!holder.current.requestBudgeted) {
      turn = await bucket.take();
      metrics?.cloudBudgetWaitSeconds.inc(turn.waitedMs / 1000);
    }
    if (writes && !mayWrite()) {
      turn?.done(false);
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
      turn?.done();
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
