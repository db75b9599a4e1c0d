import type { Logger } from 'pino';
import type { HoldStatus } from '../controllers/deletion-guard.js';
import type { Metrics } from '../controllers/metrics.js';
import { createLogger } from './log.js';
import { CloudBudget, startCloud } from './run/cloud.js';
import { startControllers } from './run/controllers.js';
import { checkRunFlags } from './run/flags.js';
import { connectKube } from './run/kube.js';
import { Leadership } from './run/leadership.js';
import { runLifecycle } from './run/lifecycle.js';
import { resolveProvider } from './run/provider.js';
import { watchProviderConfig } from './run/reload.js';
import { serveHealth } from './run/server.js';
import { announceStart } from './run/start-line.js';
import type { RunDeps, RunHandle, RunInput, RunPhase } from './run/types.js';
import { keepYoungGenerationSmall } from './young-generation.js';

export type { RunDeps, RunHandle, RunInput };

/**
 * `ccm run`, stage by stage: validates everything first (one line, exit 2, nothing written), then
 * serves health and metrics, watches Nodes, and runs the selected controllers while leading.
 */
export async function startRun(input: RunInput, deps: RunDeps = {}): Promise<RunHandle> {
  keepYoungGenerationSmall();
  const { selection, definition } = await checkRunFlags(input, deps);
  const log = runLogger(input, deps);
  // Shared by the stages: the write gate (set by the lifecycle stage) and where the run is.
  const leadership = new Leadership(input.leaderElect);
  const phase: RunPhase = { current: 'starting' };
  // Set by the lifecycle controller while this replica leads and holds deletions; /readyz says it.
  const deletionHold: HoldStatus = {};

  const { identity, transport, informers } = await connectKube(input, {
    identity: deps.identity,
    log,
    leadership,
  });

  const budget = new CloudBudget(input.cloudQps, input.cloudBurst);
  const { mayWrite } = leadership;
  const providerConfig = await resolveProvider(input, deps, {
    definition,
    transport,
    providerDeps: { mayWrite, takeToken: budget.takeToken },
  });
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

  const serving = await serveHealth(input, {
    transport,
    metrics,
    informers,
    cloud,
    leadership,
    phase,
    deletionHold,
  });
  // The credentials must work (one cheap call, or the first listing) before anything is written.
  await cloud.checkCredentials().catch(async (err: unknown) => {
    await serving?.close();
    throw err;
  });
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
