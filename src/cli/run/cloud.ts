import type { Logger } from 'pino';
import { monotonicMs } from '../../clock.js';
import {
  budgetedProvider,
  EveryBudget,
  type ProviderHolder,
  type RequestBudget,
  SlidingWindows,
  TokenBucket,
} from '../../controllers/cloud-budget.js';
import { type CloudView, isFatalCloudError } from '../../controllers/cloud-view.js';
import { InstanceCache } from '../../controllers/instance-cache.js';
import type { Metrics } from '../../controllers/metrics.js';
import { UnauthorizedError } from '../../providers/errors.js';
import { onCloudWait } from '../../providers/http.js';
import type { Provider } from '../../providers/types.js';
import type { Informers } from './kube.js';
import type { RunPhase } from './types.js';

/** After how long a start-up cloud request still unanswered is said: as a one-pass command's, on a terminal. */
const START_WAIT_NOTICE_MS = 3000;

/** The budget of a cloud that publishes no limits (ProviderDefinition.requestBudget): --cloud-qps, --cloud-burst. */
export const DEFAULT_CLOUD_QPS = 1;
export const DEFAULT_CLOUD_BURST = 10;

/**
 * The cloud request budget every controller shares. Its waits are counted once the metrics exist:
 * they are made after the provider, which takes `takeToken` when it is built.
 *
 * Where the cloud publishes its limits (ProviderDefinition.rateLimits), every request is kept within
 * them as the cloud counts them, and within a token bucket too when the provider has a default one
 * (requestBudget: DigitalOcean's paces the hour) or --cloud-qps or --cloud-burst is given.
 * Elsewhere the bucket is the budget, with the provider's defaults, else 1 a second and bursts of 10.
 */
export class CloudBudget {
  readonly bucket: RequestBudget;
  /** The cloud's own limits, when it publishes them. */
  readonly windows?: SlidingWindows;
  private waitSeconds?: { inc(seconds: number): void };

  constructor(options: {
    qps?: number;
    burst?: number;
    requestBudget?: { qps: number; burst: number };
    rateLimits?: readonly { windowMs: number; max: number; margin: number }[];
  }) {
    const given = options.qps !== undefined || options.burst !== undefined;
    const bucket =
      given || options.requestBudget || !options.rateLimits?.length
        ? new TokenBucket(
            options.qps ?? options.requestBudget?.qps ?? DEFAULT_CLOUD_QPS,
            options.burst ?? options.requestBudget?.burst ?? DEFAULT_CLOUD_BURST,
          )
        : undefined;
    if (options.rateLimits?.length) {
      this.windows = new SlidingWindows(
        options.rateLimits.map((l) => ({ windowMs: l.windowMs, max: Math.max(1, l.max - l.margin) })),
      );
    }
    // The windows last: a request counts in them from its turn there, as close to its send as can be.
    const all: RequestBudget[] = [];
    if (bucket) all.push(bucket);
    if (this.windows) all.push(this.windows);
    this.bucket = all.length === 1 ? (all[0] as RequestBudget) : new EveryBudget(all);
  }

  /** One token per request the provider's API client sends (ProviderDeps.takeToken), not per operation. */
  readonly takeToken = async (): Promise<(sent?: boolean) => void> => {
    const turn = await this.bucket.take();
    this.waitSeconds?.inc(turn.waitedMs / 1000);
    return turn.done;
  };

  /**
   * The cloud refused a request for its rate limit: nothing is sent until the wait it asked for is
   * over, at most a minute (an hour-long reset is probed once a minute, not waited out in silence).
   */
  readonly rateLimited = (waitMs: number): void => {
    this.bucket.hold(Math.min(waitMs, 60_000));
  };

  countWaitsIn(counter: { inc(seconds: number): void }): void {
    this.waitSeconds = counter;
  }
}

export interface Cloud {
  /** The provider in use; a reload puts a new one here. */
  holder: ProviderHolder;
  /** The holder's provider, every call through the budget, counted, and gated by leadership. */
  provider: Provider;
  budget: RequestBudget;
  /** The one cached instance listing the controllers share. */
  cache: InstanceCache;
  /**
   * At start: the credentials must work (one cheap call, or the first listing) before anything is
   * written. A cloud slow to answer is said once, what is waited for and how long; `signal` ends the
   * wait (a signal during the start).
   *
   * Credentials the cloud refuses (401, 403) end the start, unless `watchedSecret` names the Secret
   * they come from, which the reload stage re-reads: then the start goes on, not ready, the refusal
   * said once, until the Secret changes to credentials the cloud accepts (as a running replica
   * waits). A Pod started during a credentials incident must not crash-loop, or a rollout never ends.
   */
  checkCredentials(signal?: AbortSignal, watchedSecret?: string): Promise<void>;
  /** For readiness: whether the cloud accepted the credentials; asked again (at most every 10 s) while not. */
  credentialsAccepted(): boolean;
  /** For readiness, while not accepted: why, in one line, when the cloud refused them at start. */
  credentialsRefusal(): string | undefined;
  /** Once the start was accepted: a listing made at start that failed, said once. */
  reportStartListing(): void;
  /** Aborts a listing in flight: one the cloud does not answer must not outlive the shutdown. */
  stopListing(): void;
  /**
   * Calls `listener` after each reload of the credentials or the cloud config, once the cloud was
   * listed with the new ones (whatever the listing's outcome); returns what unsubscribes it.
   */
  onReload(listener: () => void): () => void;
  /** The reload stage: the provider was replaced and the listing made with it has landed. */
  reloaded(): void;
}

/** The cloud stage of `ccm run`: the started provider behind the shared budget, and the cached listing. */
export function startCloud({
  first,
  budget,
  metrics,
  mayWrite,
  informers,
  phase,
  log,
}: {
  first: Provider;
  budget: CloudBudget;
  metrics: Metrics;
  mayWrite: () => boolean;
  /** The cache checks the listing against `informers.nodes`, once there is one. */
  informers: Informers;
  phase: RunPhase;
  log: Logger;
}): Cloud {
  const holder: ProviderHolder = { current: first };
  budget.countWaitsIn(metrics.cloudBudgetWaitSeconds);
  const provider = budgetedProvider(holder, budget.bucket, metrics, mayWrite);

  // A failing listing is logged when it starts and when its reason changes, not at every retry.
  let listingFailure: string | undefined;
  const reportListing = (view: CloudView) => {
    if (view.listingError) {
      const level = view.listingError === listingFailure ? 'debug' : 'warn';
      log[level](`${view.listingError}; Nodes needing the cloud wait, none is deleted`);
    } else if (listingFailure) log.info('the cloud listing works again');
    listingFailure = view.listingError;
  };
  const listing = new AbortController();
  const cache = new InstanceCache({
    list: (dropped) => provider.instances.list(AbortSignal.any([listing.signal, dropped])),
    nodes: () => informers.nodes?.list() ?? [],
    onRefresh: (view) => {
      metrics.cachedInstances.set(view.index.size);
      // At start-up a failing listing is either a configuration error (one line, exit 2) or said
      // after the start line; one the shutdown aborted is no failure.
      if (phase.current === 'running') reportListing(view);
    },
  });

  const reloadListeners = new Set<() => void>();

  let credentialsVerified = false;
  let lastVerifyAt = Number.NEGATIVE_INFINITY;
  /** The cloud's refusal of the credentials at start, while a watched Secret may still fix it. */
  let refusal: string | undefined;
  const accepted = () => {
    if (refusal !== undefined) {
      refusal = undefined;
      log.info('the cloud accepts the credentials now');
    }
  };
  const verifyAgain = async () => {
    const verify = holder.current.verifyCredentials;
    if (!verify || monotonicMs() - lastVerifyAt < 10_000) return;
    lastVerifyAt = monotonicMs();
    credentialsVerified = await verify.call(holder.current).then(
      () => true,
      () => false,
    );
    if (credentialsVerified) accepted();
  };
  const refused = (err: unknown, watchedSecret: string | undefined) => {
    if (!(err instanceof UnauthorizedError) || !watchedSecret) throw err;
    refusal = `the cloud refuses the credentials from Secret ${watchedSecret}: ${(err as Error).message}`;
    log.warn(
      `${refusal}; starting anyway, not ready: ccm uses the Secret's next credentials as soon as it changes`,
    );
  };

  return {
    holder,
    provider,
    budget: budget.bucket,
    cache,
    checkCredentials: async (signal, watchedSecret) => {
      let said = false;
      const stopNotices = onCloudWait((what) => {
        if (what === undefined || said) return;
        said = true;
        log.warn(`${what}; the controllers start once it answers, or after the last attempt without it`);
      }, START_WAIT_NOTICE_MS);
      const onStop = () => listing.abort();
      signal?.addEventListener('abort', onStop, { once: true });
      try {
        if (holder.current.verifyCredentials) {
          try {
            await holder.current.verifyCredentials(signal);
            credentialsVerified = true;
          } catch (err) {
            signal?.throwIfAborted();
            if (isFatalCloudError(err)) refused(err, watchedSecret);
            else
              log.warn(
                `the cloud did not answer at start-up (${(err as Error).message}); continuing, it is asked again`,
              );
          }
        } else {
          await cache.refreshIfOlderThan(0);
          signal?.throwIfAborted();
          if (isFatalCloudError(cache.lastError)) refused(cache.lastError, watchedSecret);
        }
      } finally {
        stopNotices();
        signal?.removeEventListener('abort', onStop);
      }
    },
    credentialsAccepted: () => {
      // A listing counts too, where the provider has no cheaper check: only the leader lists, and a
      // standby must be Ready too, or a rolling update never ends.
      // A listing refused as at start proves nothing: not ready until one is not refused.
      const listed = cache.hasListed && (refusal === undefined || !isFatalCloudError(cache.lastError));
      if (credentialsVerified || listed) {
        accepted();
        return true;
      }
      void verifyAgain();
      return false;
    },
    credentialsRefusal: () => refusal,
    // Only a listing that was made and failed is worth a warning: where the credentials were proven by
    // verifyCredentials, nothing has listed yet (and with --controllers route or service, nothing may).
    reportStartListing: () => {
      if (cache.hasListed || cache.lastError) reportListing(cache.view());
    },
    stopListing: () => listing.abort(),
    onReload: (listener) => {
      const entry = () => listener();
      reloadListeners.add(entry);
      return () => reloadListeners.delete(entry);
    },
    reloaded: () => {
      // Refused at start: the new credentials are checked at once, not at the next readiness probe's turn.
      if (refusal !== undefined && !credentialsVerified) {
        lastVerifyAt = Number.NEGATIVE_INFINITY;
        void verifyAgain();
      }
      for (const listener of [...reloadListeners]) listener();
    },
  };
}
