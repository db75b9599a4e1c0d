import type { ControllerOptions } from '../../controllers/manager.js';
import type { Metrics } from '../../controllers/metrics.js';
import type { Provider, ProviderDefinition } from '../../providers/types.js';
import type { LogLevel } from '../log.js';

export interface RunInput {
  kubeconfig?: string;
  /** --request-timeout in ms (0: none). */
  'request-timeout'?: number;
  context?: string;
  provider?: string;
  'cloud-config'?: string;
  'cloudlycke-route-table'?: string;
  'cmon-groups'?: string;
  logLevel: LogLevel;
  /** ccm's version, for the start line. */
  version?: string;
  controllers: string;
  controllerOptions: ControllerOptions;
  /** The shared request budget; absent: the provider's (ProviderDefinition.requestBudget), else 1 and 10. */
  cloudQps?: number;
  cloudBurst?: number;
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

/**
 * Where the run is, shared by the stages that act differently while it starts or stops (the cloud's
 * listing reports, readiness, the Lease): `running` once the start line is said, `stopping` from the
 * shutdown on.
 */
export interface RunPhase {
  current: 'starting' | 'running' | 'stopping';
}
