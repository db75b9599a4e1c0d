import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * Every metric `ccm run` exports, on one registry per process (a test may run several in one).
 * Names follow Prometheus conventions; docs/run.md lists them.
 */
export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'ccm_' });
  const m = {
    registry,
    reconciles: new Counter({
      name: 'ccm_reconcile_total',
      help: 'Reconciles by controller and result (success, error, skipped)',
      labelNames: ['controller', 'result'] as const,
      registers: [registry],
    }),
    reconcileSeconds: new Histogram({
      name: 'ccm_reconcile_duration_seconds',
      help: 'Time to reconcile one key, by controller',
      labelNames: ['controller'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: 'ccm_workqueue_depth',
      help: 'Keys waiting in the work queue, by controller',
      labelNames: ['controller'] as const,
      registers: [registry],
    }),
    queueRetries: new Counter({
      name: 'ccm_workqueue_retries_total',
      help: 'Keys re-queued with backoff after a failure, by controller',
      labelNames: ['controller'] as const,
      registers: [registry],
    }),
    cloudRequests: new Counter({
      name: 'ccm_cloud_requests_total',
      help: 'Cloud requests by provider, operation and outcome (ok, not_found, unauthorized, retryable, invalid_config, error)',
      labelNames: ['provider', 'operation', 'code'] as const,
      registers: [registry],
    }),
    cloudSeconds: new Histogram({
      name: 'ccm_cloud_request_duration_seconds',
      help: 'Cloud request latency by provider and operation',
      labelNames: ['provider', 'operation'] as const,
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    cloudBudgetWaitSeconds: new Counter({
      name: 'ccm_cloud_budget_wait_seconds_total',
      help: 'Time work spent waiting for the cloud request budget (--cloud-qps / --cloud-burst)',
      registers: [registry],
    }),
    cachedNodes: new Gauge({
      name: 'ccm_cached_nodes',
      help: 'Nodes held in the informer cache',
      registers: [registry],
    }),
    cachedInstances: new Gauge({
      name: 'ccm_cloud_cached_instances',
      help: 'Instances in the cached cloud listing',
      registers: [registry],
    }),
    leader: new Gauge({
      name: 'ccm_leader',
      help: '1 while this replica holds the leader Lease (or runs without leader election), else 0',
      registers: [registry],
    }),
    routeOperations: new Counter({
      name: 'ccm_route_operations_total',
      help: 'Cloud routes created or deleted by the route controller, by operation (create, delete) and result (success, error)',
      labelNames: ['operation', 'result'] as const,
      registers: [registry],
    }),
    routes: new Gauge({
      name: 'ccm_routes',
      help: "The cluster's routes in the cloud after the last route pass, by state (ok: in place, missing: not created)",
      labelNames: ['state'] as const,
      registers: [registry],
    }),
    nodeDeletionsHeld: new Gauge({
      name: 'ccm_node_deletions_held',
      help: 'Nodes whose deletion the deletion brake holds now (0: none held); docs/nodes.md, The deletion brake',
      registers: [registry],
    }),
    watchRestarts: new Counter({
      name: 'ccm_watch_restarts_total',
      help: 'Watch restarts by resource and reason (gone: 410 relist, error, stall)',
      labelNames: ['resource', 'reason'] as const,
      registers: [registry],
    }),
  };
  return m;
}

export type Metrics = ReturnType<typeof createMetrics>;
