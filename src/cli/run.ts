import { hostname } from 'node:os';
import { eventRecorder } from '../kube/event-recorder.js';
import { LeaderElector } from '../kube/lease.js';
import { nodeCrypto } from '../node-modules.js';
import { closeCloudConnections } from '../providers/http-transport.js';
import { createLogger } from './log.js';
import { CloudBudget, startCloud } from './run/cloud.js';
import { startControllers } from './run/controllers.js';
import { checkRunFlags } from './run/flags.js';
import { connectKube } from './run/kube.js';
import { Leadership } from './run/leadership.js';
import { resolveProvider } from './run/provider.js';
import { watchProviderConfig } from './run/reload.js';
import { serveHealth } from './run/server.js';
import { announceStart } from './run/start-line.js';
import type { RunDeps, RunHandle, RunInput, RunPhase } from './run/types.js';
import { keepYoungGenerationSmall } from './young-generation.js';

export type { RunDeps, RunHandle, RunInput };

const SHUTDOWN_BUDGET_MS = 8000;

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

  const reloads = watchProviderConfig({
    config: providerConfig,
    cloud,
    transport,
    log,
    periodMs: input.reloadPeriodMs,
  });

  // --- lifecycle ------------------------------------------------------------------------------
  let resolveDone: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    resolveDone = resolve;
  });
  let finishing: Promise<number> | undefined;
  const finish = (code: number, releaseLease: boolean): Promise<number> => {
    finishing ??= (async () => {
      phase.current = 'stopping';
      reloads.stop();
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
