import { monotonicMs } from '../clock.js';
import type { SlimNode } from '../kube/slim-node.js';
import type { Instance } from '../providers/types.js';
import { type CloudView, type ListingOutcome, viewOf } from './cloud-view.js';

export interface InstanceCacheOptions {
  /** One listing; `signal` is aborted when the listing is dropped (invalidate). */
  list: (signal: AbortSignal) => Promise<Instance[]>;
  /** The Nodes the listing is checked against (listingKnowsCluster). */
  nodes: () => readonly SlimNode[];
  /** At most one listing per this interval for refreshes asked by cache misses. Default 2 s. */
  minIntervalMs?: number;
  onRefresh?: (view: CloudView) => void;
  now?: () => number;
}

/**
 * The one cloud listing `ccm run` shares between controllers. Reads never call the cloud; a refresh
 * is one listing, and concurrent refreshes are coalesced: one listing in flight, every caller
 * waiting for a refresh served by the same next listing, at most one per `minIntervalMs`.
 * A failed listing replaces the view with a failed one (as in `nodes init`): nothing is deleted, and
 * nothing is initialised or refreshed from data the cloud could not confirm.
 */
export class InstanceCache {
  private current: CloudView;
  private inFlight?: Promise<CloudView>;
  /** Drops the listing in flight: aborts it, and hands its waiters the given one instead. */
  private dropInFlight?: (instead: Promise<CloudView>) => void;
  private pending?: Promise<CloudView>;
  private lastStart = Number.NEGATIVE_INFINITY;
  /** When requestRefresh() was last called. */
  private lastAsked = Number.NEGATIVE_INFINITY;
  private failures = 0;
  private completed = 0;
  /** Bumped by invalidate(): a listing started before it is dropped when it lands. */
  private generation = 0;
  /** The generation each view was listed in (the credentials and cloud config it was made with). */
  private readonly generationOf = new WeakMap<CloudView, number>();
  /** The error of the last listing, when it failed. */
  lastError?: unknown;
  private readonly minIntervalMs: number;
  private readonly now: () => number;

  constructor(private readonly options: InstanceCacheOptions) {
    this.minIntervalMs = options.minIntervalMs ?? 2000;
    this.now = options.now ?? monotonicMs;
    this.current = viewOf({ error: new Error('not listed yet') }, []);
  }

  view(): CloudView {
    return this.current;
  }

  /** When the view's listing was started (monotonicMs() time), -Infinity before the first. */
  get listedAt(): number {
    return this.lastStart;
  }

  /** Whether a listing has completed (successfully or not). */
  get hasListed(): boolean {
    return this.completed > 0;
  }

  /**
   * Refreshes when the view is older than `maxAgeMs` (after a failure: sooner, 5 s doubling up to
   * `maxAgeMs`); returns the view either way.
   */
  async refreshIfOlderThan(maxAgeMs: number): Promise<CloudView> {
    if (this.inFlight) return this.inFlight;
    const retryMs = this.failures > 0 ? Math.min(maxAgeMs, 5000 * 2 ** (this.failures - 1)) : maxAgeMs;
    if (this.now() - this.lastStart < retryMs) return this.current;
    return this.start();
  }

  /**
   * A view whose listing started at `since` (monotonicMs() time) or later: the current one, the one
   * in flight, or a refresh.
   */
  viewSince(since: number): Promise<CloudView> {
    if ((this.current.listedAt ?? Number.NEGATIVE_INFINITY) >= since) return Promise.resolve(this.current);
    if (this.inFlight && this.lastStart >= since) return this.inFlight;
    return this.requestRefresh();
  }

  /**
   * A refresh for a cache miss: a listing started after the call, coalesced, and never more than one
   * per `minIntervalMs`.
   */
  requestRefresh(): Promise<CloudView> {
    this.lastAsked = this.now();
    if (this.pending) return this.pending;
    let pending: Promise<CloudView> | undefined;
    pending = (async () => {
      await Promise.resolve();
      if (this.inFlight) {
        const view = await this.inFlight;
        // It was dropped for one started after every caller asked (a reload): that one serves.
        if ((view.listedAt ?? Number.NEGATIVE_INFINITY) >= this.lastAsked) {
          if (this.pending === pending) this.pending = undefined;
          return view;
        }
      }
      const wait = this.lastStart + this.minIntervalMs - this.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      // From here on, a new request waits for the next listing, not this one.
      if (this.pending === pending) this.pending = undefined;
      const askedUntil = this.lastAsked;
      // A listing started during the wait (a reload, a periodic refresh) serves if it started after
      // the last of these callers asked; one started before is let finish, and a new one started.
      for (;;) {
        if ((this.current.listedAt ?? Number.NEGATIVE_INFINITY) >= askedUntil) return this.current;
        if (!this.inFlight) return this.start();
        if (this.lastStart >= askedUntil) return this.inFlight;
        await this.inFlight;
      }
    })();
    this.pending = pending;
    return pending as Promise<CloudView>;
  }

  /**
   * The credentials or the cloud config changed: what was listed with the old ones (possibly another
   * account, project or region) is no longer trusted. The view becomes a failed one until a listing
   * made with the new ones lands; a listing still in flight with the old ones is dropped.
   */
  invalidate(reason: string): Promise<CloudView> {
    this.generation++;
    this.failures = 0;
    this.current = viewOf({ error: new Error(reason) }, []);
    const drop = this.dropInFlight;
    this.inFlight = undefined;
    const next = this.start();
    drop?.(next);
    return next;
  }

  /**
   * Whether `view` was listed with the credentials and cloud config in use now. A deletion confirmed
   * by a lookup must be confirmed with the provider that made the listing: a lookup made with newer
   * credentials (maybe another account or region) answers "not found" for every instance it cannot
   * see, and the new listing, which would show them foreign to it, was never consulted.
   */
  isCurrent(view: CloudView): boolean {
    return this.generationOf.get(view) === this.generation;
  }

  private start(): Promise<CloudView> {
    const generation = this.generation;
    const listedAt = this.now();
    this.lastStart = listedAt;
    const abort = new AbortController();
    let replace!: (instead: Promise<CloudView>) => void;
    // Whoever waits for this listing when it is dropped gets the listing that replaced it.
    const replaced = new Promise<CloudView>((resolve) => {
      replace = resolve;
    });
    const drop = (instead: Promise<CloudView>) => {
      abort.abort();
      replace(instead);
    };
    const listing: Promise<CloudView> = this.options
      .list(abort.signal)
      .then(
        (instances): ListingOutcome => ({ instances }),
        (error: unknown): ListingOutcome => ({ error }),
      )
      .then((outcome) => {
        if (generation !== this.generation) return this.inFlight ?? this.current;
        this.completed++;
        this.failures = 'error' in outcome ? this.failures + 1 : 0;
        this.lastError = 'error' in outcome ? outcome.error : undefined;
        this.current = { ...viewOf(outcome, this.options.nodes()), listedAt };
        this.generationOf.set(this.current, generation);
        this.inFlight = undefined;
        if (this.dropInFlight === drop) this.dropInFlight = undefined;
        this.options.onRefresh?.(this.current);
        return this.current;
      });
    const settled = Promise.race([listing, replaced]);
    this.inFlight = settled;
    this.dropInFlight = drop;
    return settled;
  }
}
