import * as Flags from '@oclif/core/flags';
import { CcmCommand } from '../cli/base-command.js';
import { brakeFlags } from '../cli/brake-flags.js';
import { parseDuration } from '../cli/duration.js';
import { endProcess } from '../cli/end-process.js';
import { flagValueError } from '../cli/errors.js';
import { cmonGroupsFlag, secretRefFlag } from '../cli/flag-values.js';
import type { RunHandle, RunInput } from '../cli/run.js';
import { DEFAULT_CONCURRENT_SERVICE_SYNCS } from '../controllers/service-syncs.js';

function duration(flag: string, value: string, min = 1): number {
  const ms = parseDuration(value);
  if (ms === undefined || ms < min) {
    throw flagValueError(flag, `a duration${min > 0 ? ' above 0' : ''} such as 500ms, 5s or 1m`, value);
  }
  return ms;
}

/** The official controller's cluster name: the flag, else that controller's default (DigitalOcean: none). */
async function officialClusterName(provider: string | undefined, flag: string | undefined): Promise<string> {
  if (flag !== undefined) return flag;
  if (!provider) return '';
  const { loadProvider } = await import('../providers/registry.js');
  return (await loadProvider(provider)).officialControllers?.[0]?.defaultClusterName ?? '';
}

export default class Run extends CcmCommand {
  static override summary = 'Run the cloud controller: Node setup and lifecycle, load balancers, Pod routes';
  static override description = [
    'The long-running controller, as the DaemonSet of `ccm manifests` runs it or a person runs it in a terminal. Watches Nodes, initialises tainted ones as they appear, keeps labels and addresses in step with the cloud, taints Nodes whose instance is shut down and deletes Nodes whose instance the cloud positively reports as gone, with the same rules as `ccm nodes init`.',
    'Deletions pass the deletion brake: when the listing lost more than --max-deletion-ratio of the Nodes (counting those deleted in the last 10 minutes), none is deleted; the log, a Warning Event on each held Node, /readyz?verbose and ccm_node_deletions_held say so, and the annotation ccm.io/allow-mass-deletion=<hold id> on the credentials Secret releases that hold. Beyond 3 back to back, deletions go no faster than --node-deletion-rate.',
    'Only the replica holding the leader Lease writes. /healthz, /readyz and /metrics are served on --bind-address:--secure-port. SIGTERM or SIGINT: stop, finish in-flight writes, release the Lease, exit 0.',
    'A lost Lease (an API server outage, a paused process) stops the writes and the controllers, not the process: the replica stays a candidate under the same identity and leads again as soon as it can. It exits 2 for a configuration refused at start, 1 after an unexpected error (logged in one line, the Lease released).',
  ].join('\n\n');
  static override examples = [
    '<%= config.bin %> run --provider cloudlycke --cloud-config inventory.yaml \\\n    --leader-elect=false --plain-http --secure-port 10258',
    '<%= config.bin %> run --provider digitalocean \\\n    --credentials-secret kube-system/digitalocean',
  ];
  static override flags = {
    controllers: Flags.string({
      description:
        'Controllers to run: cloud-node, cloud-node-lifecycle, service, route; * for all, -name to disable one',
      default: '*',
    }),
    concurrency: Flags.integer({ description: 'Workers per controller', default: 8, min: 1, max: 256 }),
    'node-monitor-period': Flags.string({
      description: 'How often the lifecycle controller looks at NotReady Nodes',
      default: '5s',
    }),
    'node-status-update-frequency': Flags.string({
      description: 'How often addresses of initialised Nodes are refreshed',
      default: '5m',
    }),
    'cloud-list-period': Flags.string({
      description:
        'At most one cloud listing per period for the lifecycle controller (default: 1m while a Node is NotReady, 5m otherwise)',
    }),
    'deletion-grace-period': Flags.string({
      description: 'A Node younger than this is never deleted',
      default: '5m',
    }),
    ...brakeFlags,
    'cloud-qps': Flags.string({
      description:
        "Cloud HTTP requests per second (each attempt, each page), shared by all controllers (work waits, never fails); default: within the cloud's published limit (digitalocean 1, triton 8), else 1. On digitalocean its limits (240 a minute, 4,900 an hour) always apply too",
    }),
    'cloud-burst': Flags.integer({
      description:
        "Cloud HTTP requests allowed in a burst; default: within the cloud's published limit (digitalocean 1300, triton 24), else 10",
      min: 1,
    }),
    'leader-elect': Flags.boolean({
      description: 'Run only while holding the leader Lease',
      default: true,
      allowNo: true,
    }),
    'leader-elect-lease-duration': Flags.string({
      default: '15s',
      description: 'How long a standby waits before taking an unrenewed Lease',
    }),
    'leader-elect-renew-deadline': Flags.string({
      default: '10s',
      description: 'How long the leader tries to renew before it gives up',
    }),
    'leader-elect-retry-period': Flags.string({
      default: '2s',
      description: 'Time between tries to acquire or renew',
    }),
    'leader-elect-resource-name': Flags.string({
      default: 'cloud-controller-manager',
      description: 'Name of the Lease',
    }),
    'leader-elect-resource-namespace': Flags.string({
      default: 'kube-system',
      description: 'Namespace of the Lease',
    }),
    'bind-address': Flags.string({
      description:
        'Address to serve /healthz, /readyz and /metrics on (default 0.0.0.0; with --plain-http 127.0.0.1, and only a loopback address is taken)',
    }),
    'secure-port': Flags.integer({
      default: 10258,
      min: -1,
      max: 65535,
      description: 'Port for /healthz, /readyz, /metrics (0: any free port, -1: do not serve)',
    }),
    'plain-http': Flags.boolean({
      default: false,
      description:
        'Serve plain HTTP without authentication instead of HTTPS (local runs; on a loopback address only)',
    }),
    'authorization-always-allow-paths': Flags.string({
      default: '/healthz,/readyz,/livez',
      description:
        'Paths served over HTTPS without a token (comma-separated; a trailing * matches a prefix); every other path needs a bearer token the API server authorises (TokenReview, SubjectAccessReview)',
    }),
    'tls-cert-file': Flags.string({
      description: 'Certificate to serve with (default: a self-signed one)',
      dependsOn: ['tls-private-key-file'],
    }),
    'tls-private-key-file': Flags.string({
      description: 'Key of --tls-cert-file',
      dependsOn: ['tls-cert-file'],
    }),
    'concurrent-service-syncs': Flags.integer({
      description:
        "LoadBalancer Services synced in parallel (upstream's default is 1; here the shared cloud budget paces them, so a Service waits for the budget, not for other Services)",
      default: DEFAULT_CONCURRENT_SERVICE_SYNCS,
      min: 1,
      max: 64,
    }),
    'load-balancer-class': Flags.string({
      description:
        'Also own LoadBalancer Services of this spec.loadBalancerClass (Services without a class are always ours)',
    }),
    'cluster-name': Flags.string({
      description:
        'Identity in the ownership tag of cloud resources ccm creates (default: derived from the kube-system namespace UID, unique per cluster)',
    }),
    'configure-cloud-routes': Flags.boolean({
      description:
        "Create Pod network routes in the cloud for each Node's spec.podCIDRs (route controller; default: true where the provider has routes)",
      allowNo: true,
    }),
    'cluster-cidr': Flags.string({
      description:
        'CIDR range(s) of Pods in the cluster, comma-separated; the route controller runs only with it, and deletes only routes inside it',
    }),
    'route-reconciliation-period': Flags.string({
      default: '10s',
      description: 'How often the route controller compares the cloud routes with the Nodes',
    }),
    'cloudlycke-route-table': Flags.string({
      description:
        "Cloudlycke: the host's routing table for Pod routes, a name or number (default main; env CLOUDLYCKE_ROUTE_TABLE)",
    }),
    'cmon-groups': Flags.string({
      description:
        "Triton: the CMON groups kept in the triton.cmon.groups tag of each Node's machine, merged with others' (cluster, cluster=NAME, role; comma-separated; none takes ccm's off; env TRITON_CMON_GROUPS)",
      parse: async (input) => cmonGroupsFlag(input),
    }),
    'adopt-official': Flags.boolean({
      default: false,
      description:
        "Take over the load balancers the cloud's official controller built for this cluster (found by its naming and tags), in place, instead of building new ones; `ccm migrate` does the same once, with a plan and a way back",
    }),
    'official-cluster-name': Flags.string({
      description:
        "With --adopt-official: the --cluster-name the official controller ran with (its names and tags carry it; default: that controller's own default, e.g. kubernetes)",
    }),
    'credentials-secret': Flags.string({
      description:
        "Read the provider's credentials from this Secret (namespace/name), re-read on change; default: the flags and environment, else the provider's Secret in kube-system (the one `secret create` writes)",
      parse: async (input) => secretRefFlag(input),
    }),
    'config-reload-period': Flags.string({
      default: '30s',
      description: 'How often the credentials Secret and --cloud-config are checked for changes',
    }),
  };

  async run(): Promise<void> {
    // `--leader-elect=false` (the Kubernetes spelling) is mapped by CcmCommand.init().
    const { flags } = await this.parse(Run);
    const qpsFlag = flags['cloud-qps'];
    const qps = qpsFlag === undefined ? undefined : Number(qpsFlag);
    // Below one request in 1,000 s a token's wait would overflow Node's timers (2^31 ms), which then fire at once.
    if (qpsFlag !== undefined && !(Number(qpsFlag) >= 0.001))
      throw flagValueError('cloud-qps', 'a number of at least 0.001 such as 0.5 or 2', qpsFlag);
    const { startRun } = await import('../cli/run.js');
    // One shutdown, whatever comes after: a terminal's Ctrl-C reaches both this process and the
    // Node 20 wrapper of bin/run.js, which passes it on, and the second must not end the process
    // before the Lease is released. The shutdown bounds each step; this is the backstop for the
    // 10 s a kubelet grants. A signal during the start (its waits for the API server and the cloud
    // can take minutes) ends it the same way: logged, what it holds released, exit 0.
    let stopping = false;
    let handle: RunHandle | undefined;
    const starting = new AbortController();
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      setTimeout(() => process.exit(1), 9500).unref();
      if (handle) void handle.shutdown(`${signal} received`);
      else starting.abort(signal);
    };
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => onSignal(signal));
    const input: RunInput = {
      ...flags,
      logLevel: flags['log-level'],
      version: this.config.version,
      controllers: flags.controllers,
      controllerOptions: {
        concurrency: flags.concurrency,
        deletionGracePeriodMs: duration('deletion-grace-period', flags['deletion-grace-period'], 0),
        nodeMonitorPeriodMs: duration('node-monitor-period', flags['node-monitor-period']),
        nodeStatusUpdateFrequencyMs: duration(
          'node-status-update-frequency',
          flags['node-status-update-frequency'],
        ),
        ...(flags['cloud-list-period']
          ? { cloudListPeriodMs: duration('cloud-list-period', flags['cloud-list-period']) }
          : {}),
        concurrentServiceSyncs: flags['concurrent-service-syncs'],
        ...(flags['load-balancer-class'] ? { loadBalancerClass: flags['load-balancer-class'] } : {}),
        ...(flags['cluster-name'] ? { clusterName: flags['cluster-name'] } : {}),
        ...(flags['configure-cloud-routes'] !== undefined
          ? { configureCloudRoutes: flags['configure-cloud-routes'] }
          : {}),
        ...(flags['cluster-cidr'] ? { clusterCIDR: flags['cluster-cidr'] } : {}),
        maxDeletionRatio: flags['max-deletion-ratio'],
        nodeDeletionRate: flags['node-deletion-rate'],
        routeReconciliationPeriodMs: duration(
          'route-reconciliation-period',
          flags['route-reconciliation-period'],
        ),
        ...(flags['adopt-official']
          ? {
              adoptOfficial: {
                clusterName: await officialClusterName(flags.provider, flags['official-cluster-name']),
              },
            }
          : {}),
      },
      ...(qps !== undefined ? { cloudQps: qps } : {}),
      ...(flags['cloud-burst'] !== undefined ? { cloudBurst: flags['cloud-burst'] } : {}),
      leaderElect: flags['leader-elect'],
      lease: {
        durationMs: duration('leader-elect-lease-duration', flags['leader-elect-lease-duration']),
        renewDeadlineMs: duration('leader-elect-renew-deadline', flags['leader-elect-renew-deadline']),
        retryPeriodMs: duration('leader-elect-retry-period', flags['leader-elect-retry-period']),
        name: flags['leader-elect-resource-name'],
        namespace: flags['leader-elect-resource-namespace'],
      },
      bindAddress: flags['bind-address'] ?? (flags['plain-http'] ? '127.0.0.1' : '0.0.0.0'),
      alwaysAllowPaths: flags['authorization-always-allow-paths']
        .split(',')
        .map((p) => p.trim())
        .filter(Boolean),
      securePort: flags['secure-port'],
      plainHttp: flags['plain-http'],
      ...(flags['tls-cert-file'] && flags['tls-private-key-file']
        ? { tls: { certFile: flags['tls-cert-file'], keyFile: flags['tls-private-key-file'] } }
        : {}),
      ...(flags['credentials-secret'] ? { credentialsSecret: flags['credentials-secret'] } : {}),
      reloadPeriodMs: duration('config-reload-period', flags['config-reload-period']),
      env: process.env,
    };
    try {
      handle = await startRun(input, {}, starting.signal);
    } catch (err) {
      // Ended by a signal during the start: logged, released; the loop runs dry.
      if (starting.signal.aborted) return endProcess(0);
      throw err;
    }
    // A bug that escapes every handler is one logged line and the same orderly exit (status 1, the
    // Lease released), never a stack trace and a replica that leaves its Lease to expire.
    const running = handle;
    const onUnexpected = (err: unknown) => {
      if (!stopping) setTimeout(() => process.exit(1), 9500).unref();
      stopping = true;
      void running.fail(err);
    };
    process.on('unhandledRejection', onUnexpected);
    process.on('uncaughtException', onUnexpected);
    endProcess(await handle.done);
  }
}
