import { hostname } from 'node:os';
import { nodeCrypto } from '../node-modules.js';
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

  return runLifecycle(input, {
    identity,
    log,
    leadership,
    phase,
    transport,
    informers,
    cloud,
    controllers,
    reloads,
    serving,
    metrics,
  });
}
