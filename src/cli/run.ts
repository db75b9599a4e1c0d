import { hostname } from 'node:os';
import { eventRecorder } from '../kube/event-recorder.js';
import { LeaderElector } from '../kube/lease.js';
import { readSecret, type SecretData, sameValues } from '../kube/secrets.js';
import { nodeCrypto } from '../node-modules.js';
import { FileNotRead, type FilesRead, filesReadBy, readConfigFileNow } from '../providers/config-files.js';
import { closeCloudConnections } from '../providers/http-transport.js';
import { createLogger } from './log.js';
import { CloudBudget, startCloud } from './run/cloud.js';
import { startControllers } from './run/controllers.js';
import { checkRunFlags } from './run/flags.js';
import { connectKube } from './run/kube.js';
import { Leadership } from './run/leadership.js';
import { resolveProvider } from './run/provider.js';
import { serveHealth } from './run/server.js';
import { announceStart } from './run/start-line.js';
import type { RunDeps, RunHandle, RunInput, RunPhase } from './run/types.js';
import { keepYoungGenerationSmall } from './young-generation.js';

export type { RunDeps, RunHandle, RunInput };

const SHUTDOWN_BUDGET_MS = 8000;
/** How long one re-read of the credentials and the files the provider read may take. */
const RELOAD_DEADLINE_MS = 10_000;
/** Reads of the provider's files a reload may have out at once (see `readNow`). */
const MAX_RELOAD_READS = 2;

/**
 * `ccm run`: validates everything first (one line, exit 2, nothing written), then serves health and
 * metrics, watches Nodes, and runs the selected controllers while leading.
 */
export async function startRun(input: RunInput, deps: RunDeps = {}): Promise<RunHandle> {
  keepYoungGenerationSmall();
  const { selection, definition } = await checkRunFlags(input, deps);
  const log = createLogger(input.logLevel, {
    ...(deps.logDestination ? { destination: deps.logDestination } : {}),
    ...(deps.prettyLogs !== undefined ? { pretty: deps.prettyLogs } : {}),
  });
  const identity = deps.identity ?? `${hostname()}_${nodeCrypto().randomBytes(4).toString('hex')}`;
  const leadership = new Leadership(input.leaderElect);
  const { transport, informers } = await connectKube(input, { identity, log, leadership });
  const phase: RunPhase = { current: 'starting' };
  const budget = new CloudBudget(input.cloudQps, input.cloudBurst);
  const providerConfig = await resolveProvider(input, deps, {
    definition,
    transport,
    providerDeps: { mayWrite: leadership.mayWrite, takeToken: budget.takeToken },
  });
  // prom-client (with @opentelemetry/api, 150 KB) is loaded once the configuration has been accepted.
  const { createMetrics } = await import('../controllers/metrics.js');
  const metrics = createMetrics();
  const cloud = startCloud({
    first: providerConfig.first.value,
    budget,
    metrics,
    mayWrite: leadership.mayWrite,
    informers,
    phase,
    log,
  });

  const serving = await serveHealth(input, { transport, metrics, log, informers, cloud, leadership, phase });
  // The credentials must work: one cheap call (or the first listing) before anything is written.
  await cloud.checkCredentials().catch(async (err: unknown) => {
    await serving?.close();
    throw err;
  });

  announceStart(log, input, {
    provider: definition.name,
    selection,
    identity,
    credentials: providerConfig.credentials.description,
  });
  cloud.reportStartListing();
  phase.current = 'running';

  const controllers = startControllers({
    selection,
    options: input.controllerOptions,
    transport,
    informers,
    cloud,
    metrics,
    log,
  });

  // --- credentials and cloud config, re-read on change --------------------------------------------
  const { secretRef } = providerConfig;
  let secret: SecretData | undefined = providerConfig.credentials.secret;
  let providerFiles: FilesRead = providerConfig.first.files;
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
        return {
          changed,
          fresh,
          built: filesReadBy(() => providerConfig.build((fresh ?? secret)?.data), files),
        };
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
        cloud.holder.current = outcome.built.value;
        providerFiles = outcome.built.files;
        const what = outcome.changed.join(' and ');
        log.info(`${what} changed; using them from now on`);
        // Nothing listed with the old ones (maybe another account) may initialise or keep a Node.
        void cloud.cache.invalidate(`${what} changed; listing the cloud again with them`);
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
      phase.current = 'stopping';
      clearInterval(reloadTimer);
      controllers.abort();
      cloud.stopListing();
      const bounded = <T>(p: Promise<T>, ms: number) =>
        Promise.race([p, new Promise<void>((r) => setTimeout(r, ms).unref())]);
      await bounded(controllers.stopTerm(), SHUTDOWN_BUDGET_MS - 3500);
      // What the controllers recorded is sent while this replica may still write.
      await eventRecorder(transport).flush(1000);
      leadership.elector?.stop();
      if (releaseLease) await bounded(leadership.elector?.release() ?? Promise.resolve(), 2000);
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
    const elector = new LeaderElector({
      transport,
      namespace: input.lease.namespace,
      name: input.lease.name,
      identity,
      leaseDurationMs: input.lease.durationMs,
      renewDeadlineMs: input.lease.renewDeadlineMs,
      retryPeriodMs: input.lease.retryPeriodMs,
      log,
      onStartedLeading: () => {
        leadership.leading = true;
        metrics.leader.set(1);
        controllers.startTerm();
      },
    });
    leadership.elector = elector;
    log.info({ identity }, `waiting for the leader Lease ${input.lease.namespace}/${input.lease.name}`);
    // Losing the Lease (a renewal missed its deadline: an API server outage, a paused process, a
    // stolen Lease) stops every write at once and the controllers, not the process: the replica stays
    // a candidate under the same identity, keeps its informers and is Ready as a standby.
    // It does not wait for the term's work in flight to end before it is a candidate again.
    void (async () => {
      while ((await elector.run()) === 'lost' && phase.current !== 'stopping') {
        leadership.leading = false;
        metrics.leader.set(0);
        log.error(
          `lost the leader Lease: stopped writing and the controllers; a candidate again as ${identity}`,
        );
        void controllers.stopTerm();
      }
    })();
  } else {
    controllers.startTerm();
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
}
