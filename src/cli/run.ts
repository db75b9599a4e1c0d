import type { Logger } from 'pino';
import type { HoldStatus } from '../controllers/deletion-guard.js';
import type { Metrics } from '../controllers/metrics.js';
import { closeCloudConnections } from '../providers/http-transport.js';
import { createLogger } from './log.js';
import { CloudBudget, startCloud } from './run/cloud.js';
import { startControllers } from './run/controllers.js';
import { checkRunFlags, type RunFlags } from './run/flags.js';
import { connectKube } from './run/kube.js';
import { Leadership } from './run/leadership.js';
import { runLifecycle } from './run/lifecycle.js';
import { resolveProvider } from './run/provider.js';
import { watchProviderConfig } from './run/reload.js';
import { serveHealth } from './run/server.js';
import { announceStart } from './run/start-line.js';
import { StartScope } from './run/start-scope.js';
import type { RunDeps, RunHandle, RunInput, RunPhase } from './run/types.js';
import { keepYoungGenerationSmall } from './young-generation.js';

export { StartStopped } from './run/start-scope.js';
export type { RunDeps, RunHandle, RunInput };

/**
 * `ccm run`, stage by stage: validates everything first (one line, exit 2, nothing written), then
 * serves health and metrics, watches Nodes, and runs the selected controllers while leading.
 * `stop` is aborted (with the signal's name) by a signal during the start: the start's waits end,
 * what it holds is released, and it rejects with StartStopped.
 */
export async function startRun(input: RunInput, deps: RunDeps = {}, stop?: AbortSignal): Promise<RunHandle> {
  keepYoungGenerationSmall();
  const { selection, definition } = await checkRunFlags(input, deps);
  const log = runLogger(input, deps);
  const start = new StartScope(log, stop);
  try {
    start.check();
    const handle = await startStages(input, deps, { selection, definition, log, start });
    start.done();
    return handle;
  } catch (err) {
    throw await start.failure(err);
  }
}

async function startStages(
  input: RunInput,
  deps: RunDeps,
  { selection, definition, log, start }: RunFlags & { log: Logger; start: StartScope },
): Promise<RunHandle> {
  const { signal } = start;
  // Shared by the stages: the write gate (set by the lifecycle stage) and where the run is.
  const leadership = new Leadership(input.leaderElect);
  const phase: RunPhase = { current: 'starting' };
  // Set by the lifecycle controller while this replica leads and holds deletions; /readyz says it.
  const deletionHold: HoldStatus = {};

  const { identity, transport, informers } = await connectKube(input, {
    identity: deps.identity,
    log,
    leadership,
    ...(signal ? { signal } : {}),
  });
  start.hold(() => transport.close());
  start.check();

  const budget = new CloudBudget({
    ...(input.cloudQps !== undefined ? { qps: input.cloudQps } : {}),
    ...(input.cloudBurst !== undefined ? { burst: input.cloudBurst } : {}),
    ...(definition.requestBudget ? { requestBudget: definition.requestBudget } : {}),
    ...(definition.rateLimits ? { rateLimits: definition.rateLimits } : {}),
  });
  const { mayWrite } = leadership;
  const providerConfig = await resolveProvider(input, deps, {
    definition,
    transport,
    providerDeps: {
      mayWrite,
      takeToken: budget.takeToken,
      rateLimited: budget.rateLimited,
      memory: new Map(),
    },
  });
  start.hold(closeCloudConnections);
  start.check();
  // A --cluster-name that cannot name the instance groups (Triton's CMON groups) is a configuration
  // error: refused here in one line (exit 2), as `nodes init` refuses it, not retried by every sweep.
  const clusterName = input.controllerOptions.clusterName;
  if (clusterName !== undefined) providerConfig.first.value.instanceGroups?.checkCluster?.(clusterName);
  const metrics = await loadMetrics();
  const cloud = startCloud({
    first: providerConfig.first.value,
    budget,
    metrics,
    mayWrite,
    informers,
    phase,
    log,
  });
  start.hold(() => cloud.stopListing());

  const serving = await serveHealth(input, {
    transport,
    metrics,
    informers,
    cloud,
    leadership,
    phase,
    deletionHold,
  });
  start.hold(() => serving?.close());
  start.check();
  // The credentials must work (one cheap call, or the first listing) before anything is written.
  // Refused credentials end the start, unless they come from a Secret the reload stage re-reads.
  const watched = providerConfig.secretRef;
  await cloud.checkCredentials(signal, watched && `${watched.namespace}/${watched.name}`);
  start.check();
  const credentials = providerConfig.credentials.description;
  announceStart(log, input, {
    provider: definition.name,
    selection,
    identity,
    credentials,
    serving: serving?.url,
  });
  cloud.reportStartListing();
  phase.current = 'running';

  const { controllerOptions: options, reloadPeriodMs: periodMs } = input;
  const controllers = startControllers({
    selection,
    options,
    transport,
    informers,
    cloud,
    metrics,
    log,
    ...(providerConfig.secretRef ? { credentialsSecret: providerConfig.secretRef } : {}),
    deletionHold,
  });
  const reloads = watchProviderConfig({ config: providerConfig, cloud, transport, log, periodMs });

  return runLifecycle(input, {
    identity,
    log,
    leadership,
    phase,
    transport,
    informers,
    metrics,
    cloud,
    controllers,
    reloads,
    serving,
  });
}

function runLogger(input: RunInput, deps: RunDeps): Logger {
  return createLogger(input.logLevel, {
    ...(deps.logDestination ? { destination: deps.logDestination } : {}),
    ...(deps.prettyLogs !== undefined ? { pretty: deps.prettyLogs } : {}),
  });
}

/** prom-client (with @opentelemetry/api, 150 KB) is loaded once the configuration has been accepted. */
async function loadMetrics(): Promise<Metrics> {
  const { createMetrics } = await import('../controllers/metrics.js');
  return createMetrics();
}
