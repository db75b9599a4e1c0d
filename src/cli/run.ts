import { readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { monotonicMs } from '../clock.js';
import { budgetedProvider, type ProviderHolder, TokenBucket } from '../controllers/cloud-budget.js';
import { type CloudView, isFatalCloudError } from '../controllers/cloud-view.js';
import { delegatedAuth } from '../controllers/delegated-auth.js';
import { InstanceCache } from '../controllers/instance-cache.js';
import {
  type Controller,
  type ControllerContext,
  type ControllerLoader,
  type ControllerOptions,
  controllerLoader,
  selectControllers,
} from '../controllers/manager.js';
import type { Metrics } from '../controllers/metrics.js';
import { scopedContext } from '../controllers/scope.js';
import { type Serving, serve } from '../controllers/server.js';
import { loadKubeConfig } from '../kube/config.js';
import { KubeApiError, KubeConfigError, KubeUnreachableError } from '../kube/errors.js';
import { eventRecorder } from '../kube/event-recorder.js';
import { createInformer, type Informer, type InformerOptions } from '../kube/informer.js';
import { LeaderElector } from '../kube/lease.js';
import { createNodeClient } from '../kube/nodes.js';
import { readSecret, type SecretData, sameValues } from '../kube/secrets.js';
import { type SlimNode, slimNode } from '../kube/slim-node.js';
import { KubeTransport } from '../kube/transport.js';
import { nodeCrypto } from '../node-modules.js';
import { isLoopbackAddress } from '../plain-http.js';
import { FileNotRead, type FilesRead, filesReadBy, readConfigFileNow } from '../providers/config-files.js';
import { closeCloudConnections } from '../providers/http-transport.js';
import { loadProvider } from '../providers/registry.js';
import type { Provider, ProviderDefinition } from '../providers/types.js';
import { UsageError } from './errors.js';
import { transportOptionsFrom } from './kube-flags.js';
import { createLogger, type LogLevel } from './log.js';
import {
  createProvider,
  credentialSource,
  originOf,
  parseSecretRef,
  resolveProviderValues,
} from './provider-config.js';
import { keepYoungGenerationSmall } from './young-generation.js';

export interface RunInput {
  kubeconfig?: string;
  /** --request-timeout in ms (0: none). */
  'request-timeout'?: number;
  context?: string;
  provider?: string;
  'cloud-config'?: string;
  'cloudlycke-route-table'?: string;
  logLevel: LogLevel;
  /** ccm's version, for the start line. */
  version?: string;
  controllers: string;
  controllerOptions: ControllerOptions;
  cloudQps: number;
  cloudBurst: number;
  leaderElect: boolean;
  lease: {
    durationMs: number;
    renewDeadlineMs: number;
    retryPeriodMs: number;
    name: string;
    namespace: string;
  };
  bindAddress: string;
  /** 0 picks a free port; -1 serves nothing. */
  securePort: number;
  plainHttp: boolean;
  /** Served over HTTPS without a token (--authorization-always-allow-paths). */
  alwaysAllowPaths: string[];
  tls?: { certFile: string; keyFile: string };
  credentialsSecret?: string;
  reloadPeriodMs: number;
  env: Readonly<Record<string, string | undefined>>;
}

/** What tests (and only tests) may swap: the provider definition, a wrapper around each provider, the log sink. */
export interface RunDeps {
  definition?: ProviderDefinition;
  wrapProvider?: (provider: Provider) => Provider;
  logDestination?: NodeJS.WritableStream;
  prettyLogs?: boolean;
  identity?: string;
}

export interface RunHandle {
  identity: string;
  url?: string;
  metrics: Metrics;
  /** Resolves with the exit status: 0 after a graceful shutdown, 1 after `fail`. */
  done: Promise<number>;
  /** Graceful shutdown (SIGTERM/SIGINT): stop intake, finish in-flight writes, release the Lease. */
  shutdown(reason: string): Promise<number>;
  /** The same orderly shutdown for an error nothing else handled (one line logged), with exit status 1. */
  fail(err: unknown): Promise<number>;
}

const SHUTDOWN_BUDGET_MS = 8000;
/** How long a start waits for an API server that does not answer yet (upstream: 10 s). */
const API_SERVER_WAIT_MS = 10_000;
/** How long one re-read of the credentials and the files the provider read may take. */
const RELOAD_DEADLINE_MS = 10_000;
/** Reads of the provider's files a reload may have out at once (see `readNow`). */
const MAX_RELOAD_READS = 2;

function checkLeaseTimings(lease: RunInput['lease']): void {
  if (!(lease.durationMs > lease.renewDeadlineMs)) {
    throw new UsageError('--leader-elect-lease-duration must be longer than --leader-elect-renew-deadline');
  }
  if (!(lease.renewDeadlineMs > lease.retryPeriodMs * 1.2)) {
    throw new UsageError(
      '--leader-elect-renew-deadline must be longer than 1.2 × --leader-elect-retry-period',
    );
  }
  if (lease.durationMs < 1000) throw new UsageError('--leader-elect-lease-duration must be at least 1s');
}

/**
 * `ccm run`: validates everything first (one line, exit 2, nothing written), then serves health and
 * metrics, watches Nodes, and runs the selected controllers while leading.
 */
export async function startRun(input: RunInput, deps: RunDeps = {}): Promise<RunHandle> {
  keepYoungGenerationSmall();
  // --- configuration, checked before anything is written --------------------------------------
  if (input.plainHttp && !isLoopbackAddress(input.bindAddress)) {
    throw new UsageError(
      `--plain-http serves /metrics without authentication, so only on this machine: --bind-address ${input.bindAddress} is not a loopback address; use 127.0.0.1 or ::1 (the default), or leave out --plain-http to serve HTTPS that asks for a token`,
    );
  }
  const selection = (() => {
    try {
      return selectControllers(input.controllers);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  })();
  if (input.leaderElect) checkLeaseTimings(input.lease);
  if (input.controllerOptions.clusterCIDR !== undefined) {
    const { parseClusterCIDRs } = await import('../controllers/routes.js');
    try {
      parseClusterCIDRs(input.controllerOptions.clusterCIDR);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
  }
  if (!input.provider && !deps.definition) {
    throw new UsageError(
      'no provider given; pass --provider (e.g. --provider cloudlycke) or set CCM_PROVIDER',
    );
  }
  if (input.credentialsSecret) parseSecretRef(input.credentialsSecret);
  const log = createLogger(input.logLevel, {
    ...(deps.logDestination ? { destination: deps.logDestination } : {}),
    ...(deps.prettyLogs !== undefined ? { pretty: deps.prettyLogs } : {}),
  });
  const definition = deps.definition ?? (await loadProvider(input.provider as string));
  const access = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
  const identity = deps.identity ?? `${hostname()}_${nodeCrypto().randomBytes(4).toString('hex')}`;

  let elector: LeaderElector | undefined;
  const informers: ControllerContext['informers'] = {} as ControllerContext['informers'];
  // The one write gate, for Kubernetes and the cloud alike. Only leadership gates writes: a graceful
  // shutdown lets in-flight writes finish.
  const mayWrite = () => (elector ? elector.isLeader() : true);
  const transport = new KubeTransport(access, {
    ...transportOptionsFrom(input),
    userAgent: `ccm (${identity})`,
    mayWrite,
    onReachable: (reachable, detail) => {
      if (!probed) return; // the start says it its own way, below
      if (reachable) {
        log.info('the Kubernetes API server answers again');
        // Back from an outage: take the Lease back and watch again now, not at the end of a backoff.
        elector?.wake();
        for (const informer of Object.values(informers)) informer.wake();
      } else
        log.warn(
          `cannot reach the Kubernetes API server at ${transport.server} (${detail}); retrying until it answers`,
        );
    },
  });
  let stopping = false;
  let probed = false;

  // The API server and our identity on it, before anything else. Like the upstream
  // cloud-controller-manager (app/controllermanager.go, WaitForAPIServer), a server that does not answer
  // yet is waited for a while, then the start fails.
  const deadline = monotonicMs() + API_SERVER_WAIT_MS;
  for (let said = false; ; ) {
    try {
      await transport.request({ method: 'GET', path: '/api/v1/nodes?limit=1', timeoutMs: 15_000 });
      break;
    } catch (err) {
      if (err instanceof KubeApiError && (err.status === 401 || err.status === 403)) {
        throw new KubeConfigError(
          `the API server refused ccm's credentials (${err.message}); ${access.inCluster ? "check the Pod's ServiceAccount token" : 'check the kubeconfig user'} or ccm's RBAC`,
        );
      }
      if (!(err instanceof KubeUnreachableError) || monotonicMs() > deadline) throw err;
      if (!said) {
        log.warn(
          `waiting up to ${Math.round(API_SERVER_WAIT_MS / 1000)} s for the Kubernetes API server at ${transport.server}: ${err.message}`,
        );
        said = true;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  probed = true;

  const credentials = await credentialSource(
    definition,
    { ...input, 'credentials-secret': input.credentialsSecret },
    input.env,
    transport,
  ).catch(configError);
  const secretRef = credentials.secret && {
    namespace: credentials.secret.namespace,
    name: credentials.secret.name,
  };
  let secret: SecretData | undefined = credentials.secret;
  const budget = new TokenBucket(input.cloudQps, input.cloudBurst);
  let budgetWaitSeconds: { inc(seconds: number): void } | undefined;
  // One token per request the provider's API client sends (ProviderDeps.takeToken), not per operation.
  const takeToken = async () => {
    const waited = await budget.take();
    budgetWaitSeconds?.inc(waited / 1000);
  };
  const makeProvider = (data = secret?.data): Provider => {
    const values = resolveProviderValues(definition, input, input.env, data);
    const stored = secretRef && data ? { ...secretRef, data } : undefined;
    const origin = originOf(definition, input, input.env, stored);
    const provider = createProvider(definition, values, { mayWrite, takeToken, origin }, stored);
    return deps.wrapProvider ? deps.wrapProvider(provider) : provider;
  };
  const { value: firstProvider, files: builtFiles } = filesReadBy(() => makeProvider());
  const holder: ProviderHolder = { current: firstProvider };
  // prom-client (with @opentelemetry/api, 150 KB) is loaded once the configuration has been accepted.
  const { createMetrics } = await import('../controllers/metrics.js');
  const metrics = createMetrics();
  budgetWaitSeconds = metrics.cloudBudgetWaitSeconds;
  const provider = budgetedProvider(holder, budget, metrics, mayWrite);

  let nodes: Informer<SlimNode> | undefined;
  let started = false;
  // A failing listing is logged when it starts and when its reason changes, not at every retry.
  let listingFailure: string | undefined;
  const reportListing = (view: CloudView) => {
    if (view.listingError) {
      const level = view.listingError === listingFailure ? 'debug' : 'warn';
      log[level](`${view.listingError}; Nodes needing the cloud wait, none is deleted`);
    } else if (listingFailure) log.info('the cloud listing works again');
    listingFailure = view.listingError;
  };
  // Aborted by the shutdown: a listing the cloud does not answer must not outlive it.
  const listing = new AbortController();
  const cloud = new InstanceCache({
    list: (dropped) => provider.instances.list(AbortSignal.any([listing.signal, dropped])),
    nodes: () => nodes?.list() ?? [],
    onRefresh: (view) => {
      metrics.cachedInstances.set(view.index.size);
      // At start-up a failing listing is either a configuration error (one line, exit 2) or logged
      // below; one the shutdown aborted is no failure.
      if (started && !stopping) reportListing(view);
    },
  });

  // Whether the cloud accepted the credentials; asked again (at most every 10 s) while it has not.
  let credentialsVerified = false;
  let lastVerifyAt = Number.NEGATIVE_INFINITY;
  const verifyAgain = async () => {
    const verify = holder.current.verifyCredentials;
    if (!verify || monotonicMs() - lastVerifyAt < 10_000) return;
    lastVerifyAt = monotonicMs();
    credentialsVerified = await verify.call(holder.current).then(
      () => true,
      () => false,
    );
  };

  // --- health and metrics, served from the start (readiness waits for the caches) -------------
  let leading = !input.leaderElect;
  metrics.leader.set(leading ? 1 : 0);
  let serving: Serving | undefined;
  if (input.securePort >= 0) {
    const tls = input.tls
      ? { cert: await readFile(input.tls.certFile, 'utf8'), key: await readFile(input.tls.keyFile, 'utf8') }
      : undefined;
    try {
      serving = await serve({
        bindAddress: input.bindAddress,
        port: input.securePort,
        plain: input.plainHttp,
        ...(tls ? { tls } : {}),
        ...(input.plainHttp
          ? {}
          : { authorize: delegatedAuth({ transport, alwaysAllowPaths: input.alwaysAllowPaths }) }),
        registry: metrics.registry,
        healthz: [{ name: 'ping', run: () => ({ ok: true }) }],
        readyz: [
          {
            name: 'informer-sync',
            run: () => {
              const pending = Object.entries(informers)
                .filter(([, i]) => !i.hasSynced())
                .map(([n]) => n);
              if (!nodes) pending.unshift('nodes');
              return pending.length
                ? { ok: false, detail: `waiting for ${pending.join(', ')}` }
                : { ok: true };
            },
          },
          {
            // Credentials the cloud accepted (or a listing, where the provider has no cheaper check):
            // only the leader lists, and a standby must be Ready too, or a rolling update never ends.
            name: 'cloud',
            run: () => {
              if (credentialsVerified || cloud.hasListed) return { ok: true };
              void verifyAgain();
              return { ok: false, detail: 'waiting for the cloud to accept the credentials' };
            },
          },
          {
            name: 'leader-election',
            run: () =>
              !input.leaderElect
                ? { ok: true, detail: 'disabled' }
                : leading
                  ? { ok: true, detail: 'leading' }
                  : { ok: true, detail: `standby${elector?.holder ? ` (leader: ${elector.holder})` : ''}` },
          },
          { name: 'shutdown', run: () => (stopping ? { ok: false, detail: 'shutting down' } : { ok: true }) },
        ],
      });
    } catch (err) {
      throw new UsageError(
        `cannot serve on ${input.bindAddress}:${input.securePort} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); pick another --secure-port or --bind-address`,
      );
    }
    log.info(`serving /healthz, /readyz and /metrics on ${serving.url}`);
  }

  // The credentials must work: one cheap call (or the first listing) before anything is written.
  try {
    if (holder.current.verifyCredentials) {
      try {
        await holder.current.verifyCredentials();
        credentialsVerified = true;
      } catch (err) {
        if (isFatalCloudError(err)) throw err;
        log.warn(
          `the cloud did not answer at start-up (${(err as Error).message}); continuing, it is asked again`,
        );
      }
    } else {
      await cloud.refreshIfOlderThan(0);
      if (isFatalCloudError(cloud.lastError)) throw cloud.lastError;
    }
  } catch (err) {
    await serving?.close();
    throw err;
  }

  // Said once the start was accepted: a start refused is its one line of error, nothing more.
  // One line saying what runs, as kube-controller-manager's start does (version, controllers, election).
  const leaderElection = input.leaderElect ? `${input.lease.namespace}/${input.lease.name}` : 'off';
  log.info(
    {
      version: input.version ?? 'unknown',
      provider: definition.name,
      controllers: selection.enabled,
      leaderElection,
      identity,
    },
    `ccm${input.version ? ` ${input.version}` : ''} starting: provider ${definition.name}, controllers ${selection.enabled.join(', ') || 'none'}, leader election ${leaderElection}, identity ${identity}`,
  );
  if (selection.enabled.length === 0)
    log.warn(
      `--controllers ${input.controllers} enables no controller: this process serves health and metrics only`,
    );
  log.info(`cloud credentials from ${credentials.description}`);
  // Only a listing that was made and failed is worth a warning: where the credentials were proven by
  // verifyCredentials, nothing has listed yet (and with --controllers route or service, nothing may).
  if (cloud.hasListed || cloud.lastError) reportListing(cloud.view());
  started = true;

  // --- informers --------------------------------------------------------------------------------
  const makeInformer = <T>(options: Omit<InformerOptions<T>, 'transport'>): Informer<T> => {
    const informer = createInformer<T>({
      transport,
      log,
      onRestart: (reason) => metrics.watchRestarts.inc({ resource: options.resource, reason }),
      ...options,
    });
    (informers as Record<string, Informer<unknown>>)[options.resource] = informer as Informer<unknown>;
    informer.start();
    return informer;
  };
  nodes = makeInformer({ path: '/api/v1/nodes', resource: 'nodes', slim: slimNode });
  const countNodes = () => metrics.cachedNodes.set(nodes?.size ?? 0);
  nodes.on('add', countNodes);
  nodes.on('delete', countNodes);

  // --- controllers, while leading -----------------------------------------------------------------
  const stopper = new AbortController();
  for (const name of selection.unavailable) {
    log.warn(`controller "${name}" is not available in this build of ccm; running without it`);
  }
  const ctx: ControllerContext = {
    transport,
    kube: createNodeClient(transport),
    provider,
    budget,
    cloud,
    informers,
    informer: makeInformer,
    log,
    metrics,
    options: input.controllerOptions,
    signal: stopper.signal,
  };
  // A leadership term: the controllers started when this replica became leader, stopped when it
  // stops leading (a lost Lease, or shutdown); a replica that leads again starts a new term.
  interface Term {
    stopper: AbortController;
    running: { controller: Controller; end(): void }[];
    started: Promise<void>;
    stopped?: Promise<void>;
  }
  let term: Term | undefined;
  const startControllers = () => {
    // The last term's work in flight (a cloud call, a request without an answer) may still be ending:
    // its controllers are not started twice, and writes pass the gate again only while leading.
    const previous = term?.stopped ?? Promise.resolve();
    const t: Term = { stopper: new AbortController(), running: [], started: Promise.resolve() };
    term = t;
    const { signal } = t.stopper;
    t.started = (async () => {
      await previous;
      while (!nodes?.hasSynced()) {
        if (signal.aborted) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      for (const name of selection.enabled) {
        const factory = await (controllerLoader(name) as ControllerLoader)();
        // A start that fails (e.g. the API server answers 503 as the replica takes over) is tried again
        // with backoff while the term lasts: never an unhandled rejection, never an exit.
        let failure: string | undefined;
        for (let waitMs = 1000; !signal.aborted; waitMs = Math.min(waitMs * 2, 30_000)) {
          const controller = factory();
          const scope = scopedContext(ctx, signal);
          const entry = { controller, end: scope.end };
          t.running.push(entry);
          try {
            await controller.start(scope.ctx);
            if (signal.aborted) break;
            log.info({ controller: name }, failure ? 'started after all' : 'started');
            break;
          } catch (err) {
            t.running.splice(t.running.indexOf(entry), 1);
            await controller.stop().catch(() => {});
            scope.end();
            const message = (err as Error).message;
            log[message === failure ? 'debug' : 'warn'](
              { controller: name },
              `could not start: ${message}; trying again with backoff (${Math.round(waitMs / 1000)} s)`,
            );
            failure = message;
            await delay(waitMs, undefined, { signal }).catch(() => {});
          }
        }
      }
    })();
  };
  const stopControllers = (): Promise<void> => {
    const t = term;
    if (!t) return Promise.resolve();
    t.stopped ??= (async () => {
      t.stopper.abort();
      await t.started;
      await Promise.all(
        t.running.splice(0).map(async ({ controller, end }) => {
          await controller.stop();
          end();
        }),
      );
    })();
    return t.stopped;
  };

  // --- credentials and cloud config, re-read on change --------------------------------------------
  let providerFiles: FilesRead = builtFiles;
  let reloadFailure: string | undefined;
  let reloading = false;
  // A read that hangs (a dead mount) holds one of libuv's 4 threads, which DNS lookups and every
  // other file read share: never more than two of them for reloads.
  let readsOut = 0;
  const readNow = async (path: string): Promise<string | Error> => {
    if (readsOut >= MAX_RELOAD_READS) return new Error(`earlier reads have not returned (a hung mount?)`);
    readsOut++;
    try {
      return await readConfigFileNow(path);
    } catch (err) {
      return err as Error;
    } finally {
      readsOut--;
    }
  };
  /** What changed, and a provider built from it; nothing is applied here. */
  const check = async (deadline: AbortSignal) => {
    const fresh = secretRef
      ? await readSecret(transport, secretRef.namespace, secretRef.name, deadline)
      : undefined;
    const changed: string[] = [];
    // The data, not the resourceVersion: a label or annotation written on the Secret changes nothing.
    if (secretRef && !sameValues(fresh, secret)) {
      changed.push(`credentials from Secret ${secretRef.namespace}/${secretRef.name}`);
    }
    // What the provider read when it was built, against the files now; one gone, or one that was
    // missing and is there now, counts as changed.
    const files = new Map<string, string | Error>();
    const changedFiles: string[] = [];
    for (const [path, was] of providerFiles) {
      const now = await readNow(path);
      files.set(path, now);
      if ((typeof now === 'string' ? now : null) !== was) changedFiles.push(path);
    }
    if (changedFiles.length > 0) changed.push(changedFiles.join(', '));
    if (changed.length === 0) return undefined;
    // Built from files read here, never synchronously: one the new config names is read, then the
    // build is tried again.
    for (let tries = 1; ; tries++) {
      try {
        return { changed, fresh, built: filesReadBy(() => makeProvider((fresh ?? secret)?.data), files) };
      } catch (err) {
        if (!(err instanceof FileNotRead) || tries >= 16) throw err;
        files.set(err.path, await readNow(err.path));
      }
    }
  };
  const reload = async () => {
    // One at a time: a slow read answered after a newer one would bring old credentials back. Each
    // has a deadline, so one that hangs does not stop the next, and its result is never applied.
    if (reloading) return;
    reloading = true;
    const deadline = AbortSignal.timeout(RELOAD_DEADLINE_MS);
    try {
      const late = new Promise<never>((_, reject) =>
        deadline.addEventListener(
          'abort',
          () => reject(new Error(`they could not be read within ${RELOAD_DEADLINE_MS / 1000} s`)),
          { once: true },
        ),
      );
      const outcome = await Promise.race([check(deadline), late]);
      // Taken as seen only now, once a provider is built from it: a file unreadable or a Secret
      // without its token is tried again at the next reload, and warned about until then.
      if (outcome) {
        secret = outcome.fresh ?? secret;
        holder.current = outcome.built.value;
        providerFiles = outcome.built.files;
        const what = outcome.changed.join(' and ');
        log.info(`${what} changed; using them from now on`);
        // Nothing listed with the old ones (maybe another account) may initialise or keep a Node.
        void cloud.invalidate(`${what} changed; listing the cloud again with them`);
      }
      if (reloadFailure !== undefined) log.info('credentials and cloud config readable again');
      reloadFailure = undefined;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== reloadFailure)
        log.warn(`re-reading credentials or cloud config failed: ${message}; keeping the current ones`);
      reloadFailure = message;
    } finally {
      reloading = false;
    }
  };
  const reloadTimer = setInterval(() => void reload(), input.reloadPeriodMs);

  // --- lifecycle ------------------------------------------------------------------------------
  let resolveDone: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    resolveDone = resolve;
  });
  let finishing: Promise<number> | undefined;
  const finish = (code: number, releaseLease: boolean): Promise<number> => {
    finishing ??= (async () => {
      stopping = true;
      clearInterval(reloadTimer);
      stopper.abort();
      listing.abort();
      const bounded = <T>(p: Promise<T>, ms: number) =>
        Promise.race([p, new Promise<void>((r) => setTimeout(r, ms).unref())]);
      await bounded(stopControllers(), SHUTDOWN_BUDGET_MS - 3500);
      // What the controllers recorded is sent while this replica may still write.
      await eventRecorder(transport).flush(1000);
      elector?.stop();
      if (releaseLease) await bounded(elector?.release() ?? Promise.resolve(), 2000);
      await bounded(Promise.all(Object.values(informers).map((i) => i.stop())), 1000);
      await serving?.close();
      await transport.close().catch(() => {});
      closeCloudConnections();
      metrics.leader.set(0);
      resolveDone(code);
      return code;
    })();
    return finishing;
  };

  if (input.leaderElect) {
    elector = new LeaderElector({
      transport,
      namespace: input.lease.namespace,
      name: input.lease.name,
      identity,
      leaseDurationMs: input.lease.durationMs,
      renewDeadlineMs: input.lease.renewDeadlineMs,
      retryPeriodMs: input.lease.retryPeriodMs,
      log,
      onStartedLeading: () => {
        leading = true;
        metrics.leader.set(1);
        startControllers();
      },
    });
    log.info({ identity }, `waiting for the leader Lease ${input.lease.namespace}/${input.lease.name}`);
    const candidate = elector;
    // Losing the Lease (a renewal missed its deadline: an API server outage, a paused process, a
    // stolen Lease) stops every write at once and the controllers, not the process: the replica stays
    // a candidate under the same identity, keeps its informers and is Ready as a standby.
    // It does not wait for the term's work in flight to end before it is a candidate again.
    void (async () => {
      while ((await candidate.run()) === 'lost' && !stopping) {
        leading = false;
        metrics.leader.set(0);
        log.error(
          `lost the leader Lease: stopped writing and the controllers; a candidate again as ${identity}`,
        );
        void stopControllers();
      }
    })();
  } else {
    startControllers();
  }

  return {
    identity,
    ...(serving ? { url: serving.url } : {}),
    metrics,
    done,
    shutdown: (reason) => {
      if (!finishing) log.info(`${reason}: shutting down`);
      return finish(0, true);
    },
    fail: (err) => {
      if (!finishing) {
        const message = err instanceof Error ? err.message : String(err);
        log.error(`unexpected error: ${message.split('\n')[0]}; shutting down`);
      }
      return finish(1, true);
    },
  };

  function configError(err: unknown): never {
    if (err instanceof KubeApiError || err instanceof KubeUnreachableError)
      throw new KubeConfigError((err as Error).message);
    throw err;
  }
}
