/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's leaderelection semantics:
 *
 * - try every retry period: get the Lease (create it when missing); a Lease held by another identity
 *   is respected while `observedTime + leaseDurationSeconds` is in the future, where observedTime is
 *   OUR clock's time when we last saw the record change. Clocks of different machines are never
 *   compared (client-go's skew rule): renewTime in the record is only written, never trusted.
 * - write ourselves as holder with an update that carries the resourceVersion read (optimistic
 *   concurrency: two candidates can never both win), keeping acquireTime and counting transitions.
 * - leading, renew every retry period; when no renewal succeeded for the renew deadline, leadership is
 *   lost: `isLeader()` turns false at once (the write gate) and `run()` resolves 'lost'. A read that
 *   shows another holder ends it at once, as client-go's IsLeader compares the observed holder.
 * - `release()` (on shutdown) writes an empty holder with a 1 s lease so a successor takes over at
 *   its next try instead of waiting out the lease.
 * Retries are jittered by up to 20 % (client-go: 120 %) so a released Lease is taken within ~2.5 s.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { monotonicMs } from '../clock.js';
import { KubeApiError } from './errors.js';
import type { KubeTransport } from './transport.js';

export interface LeaderElectionOptions {
  transport: KubeTransport;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs: number;
  renewDeadlineMs: number;
  retryPeriodMs: number;
  log?: Logger;
  onStartedLeading?: () => void;
  onNewLeader?: (identity: string) => void;
  /** Monotonic milliseconds. */
  now?: () => number;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

interface Lease {
  apiVersion: 'coordination.k8s.io/v1';
  kind: 'Lease';
  metadata: { name: string; namespace: string; resourceVersion?: string };
  spec?: LeaseSpec;
}

/** Kubernetes MicroTime: RFC 3339 with microseconds. */
function microTime(date = new Date()): string {
  return date.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class LeaderElector {
  private observed?: LeaseSpec;
  private observedRaw = '';
  private observedTime = 0;
  private lastRenew = Number.NEGATIVE_INFINITY;
  private leading = false;
  private lastHolder?: string;
  private readonly now: () => number;
  private readonly stopper = new AbortController();
  /** Ends the current wait: aborted by stop() and by wake(), then made anew. */
  private waking = new AbortController();
  private running?: Promise<'lost' | 'stopped'>;

  constructor(private readonly options: LeaderElectionOptions) {
    this.now = options.now ?? monotonicMs;
  }

  /** The write gate: true only while leading and the last renewal is within the renew deadline. */
  isLeader(): boolean {
    return (
      this.leading &&
      this.observed?.holderIdentity === this.options.identity &&
      this.now() - this.lastRenew < this.options.renewDeadlineMs
    );
  }

  /** The last read Lease names another holder: leadership is over now, not at the renew deadline. */
  private supplanted(): boolean {
    const holder = this.observed?.holderIdentity;
    return Boolean(holder) && holder !== this.options.identity;
  }

  /** The identity holding the Lease as last observed. */
  get holder(): string | undefined {
    return this.observed?.holderIdentity || undefined;
  }

  private get path(): string {
    const { namespace, name } = this.options;
    return `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases/${encodeURIComponent(name)}`;
  }

  /**
   * Waits, or less when stopped. Node's abortable timer removes its listener from the (long-lived)
   * signal when it fires: one left per wait was ~590 bytes a retry period, ~25 MB a day at 2 s.
   */
  private async sleep(ms: number): Promise<void> {
    await delay(ms, undefined, { signal: this.waking.signal }).catch(() => {});
    if (this.waking.signal.aborted && !this.stopper.signal.aborted) this.waking = new AbortController();
  }

  /** Tries at once instead of at the end of the current wait (the API server answers again). */
  wake(): void {
    this.waking.abort();
  }

  private jittered(): number {
    return this.options.retryPeriodMs * (1 + Math.random() * 0.2);
  }

  /**
   * Acquires the Lease, then renews it. Resolves 'lost' when a renewal missed the deadline,
   * 'stopped' after `stop()`. After 'lost', `run()` again is a candidate with the same identity: a
   * Lease that still names it (nobody could write during an outage) is taken back at the first try,
   * as client-go lets a holder renew its own record.
   */
  run(): Promise<'lost' | 'stopped'> {
    this.running ??= this.loop().then((outcome) => {
      if (outcome === 'lost') this.running = undefined;
      return outcome;
    });
    return this.running;
  }

  private async loop(): Promise<'lost' | 'stopped'> {
    while (!this.stopper.signal.aborted) {
      if (await this.tryAcquireOrRenew()) break;
      await this.sleep(this.jittered());
    }
    if (this.stopper.signal.aborted) return 'stopped';
    this.leading = true;
    const lease = `${this.options.namespace}/${this.options.name}`;
    this.options.log?.info(
      { lease, identity: this.options.identity },
      `became leader of ${lease} as ${this.options.identity}`,
    );
    this.options.onStartedLeading?.();
    while (!this.stopper.signal.aborted) {
      await this.sleep(this.options.retryPeriodMs);
      if (this.stopper.signal.aborted) break;
      const deadline = this.lastRenew + this.options.renewDeadlineMs;
      let renewed = false;
      while (!this.stopper.signal.aborted && this.now() < deadline) {
        if (await this.tryAcquireOrRenew(deadline - this.now())) {
          renewed = true;
          break;
        }
        // As client-go's IsLeader: a record naming someone else (the Lease deleted and re-created by
        // another replica, or rewritten by hand) ends leadership at once; the gate is already shut.
        if (this.supplanted()) break;
        await this.sleep(Math.min(this.options.retryPeriodMs, Math.max(0, deadline - this.now())));
      }
      if (!renewed && !this.stopper.signal.aborted) {
        this.leading = false;
        return 'lost';
      }
    }
    return 'stopped';
  }

  /** Ends `run()` (without releasing). */
  stop(): void {
    this.stopper.abort();
    this.waking.abort();
  }

  /** Gives the Lease up (shutdown): empty holder, 1 s duration. Stops `run()` first. */
  async release(): Promise<void> {
    this.stop();
    // A renewal in flight would race the release's update (409): let it land first.
    await this.running;
    if (!this.leading || this.observed?.holderIdentity !== this.options.identity) return;
    this.leading = false;
    for (let attempt = 0; attempt < 3; attempt++) {
      const now = microTime();
      try {
        const current = await this.get();
        if (current?.spec?.holderIdentity !== this.options.identity) return;
        await this.options.transport.request({
          method: 'PUT',
          path: this.path,
          ungated: true,
          timeoutMs: 2000,
          body: {
            ...current,
            spec: {
              leaseDurationSeconds: 1,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: current.spec?.leaseTransitions ?? 0,
            },
          },
        });
        this.options.log?.info({}, 'released the leader Lease');
        return;
      } catch (err) {
        if (err instanceof KubeApiError && err.status === 409) continue;
        this.options.log?.warn({}, `could not release the leader Lease: ${(err as Error).message}`);
        return;
      }
    }
  }

  private async get(timeoutMs = 5000): Promise<Lease | undefined> {
    try {
      return await this.options.transport.request<Lease>({ method: 'GET', path: this.path, timeoutMs });
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  private observe(spec: LeaseSpec): void {
    const raw = JSON.stringify(spec);
    if (raw !== this.observedRaw) {
      this.observed = spec;
      this.observedRaw = raw;
      this.observedTime = this.now();
    }
    const holder = spec.holderIdentity ?? '';
    if (holder && holder !== this.lastHolder) {
      this.lastHolder = holder;
      if (holder !== this.options.identity) {
        this.options.log?.info({ leader: holder }, `the leader is ${holder}; standing by`);
      }
      this.options.onNewLeader?.(holder);
    }
  }

  private async tryAcquireOrRenew(timeoutMs = 5000): Promise<boolean> {
    const { identity, namespace, name } = this.options;
    const now = microTime();
    const leaseDurationSeconds = Math.ceil(this.options.leaseDurationMs / 1000);
    const mine: LeaseSpec = {
      holderIdentity: identity,
      leaseDurationSeconds,
      acquireTime: now,
      renewTime: now,
    };
    const started = this.now();
    try {
      const current = await this.get(Math.max(500, timeoutMs));
      if (!current) {
        mine.leaseTransitions = 0;
        await this.options.transport.request({
          method: 'POST',
          path: `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`,
          ungated: true,
          timeoutMs: Math.max(500, timeoutMs),
          body: {
            apiVersion: 'coordination.k8s.io/v1',
            kind: 'Lease',
            metadata: { name, namespace },
            spec: mine,
          },
        });
        this.observe(mine);
        this.lastRenew = started;
        return true;
      }
      const spec = current.spec ?? {};
      this.observe(spec);
      const iLead = this.observed?.holderIdentity === identity;
      const valid = this.observedTime + (this.observed?.leaseDurationSeconds ?? 0) * 1000 > this.now();
      if (spec.holderIdentity && valid && !iLead) return false;
      if (iLead && spec.acquireTime) {
        mine.acquireTime = spec.acquireTime;
        mine.leaseTransitions = spec.leaseTransitions ?? 0;
      } else {
        mine.leaseTransitions = (spec.leaseTransitions ?? 0) + 1;
      }
      await this.options.transport.request({
        method: 'PUT',
        path: this.path,
        ungated: true,
        timeoutMs: Math.max(500, timeoutMs),
        body: { ...current, spec: mine },
      });
      this.observe(mine);
      this.lastRenew = started;
      return true;
    } catch (err) {
      this.options.log?.debug({}, `leader election: ${(err as Error).message}`);
      return false;
    }
  }
}
