import { confirm } from '@inquirer/prompts';
import { Listr } from 'listr2';
import { getFlag } from '../cluster/flags.js';
import { localHost, sshHost } from '../cluster/host.js';
import {
  type ApplyResult,
  applyHost,
  type ClusterPlan,
  needsReadyCheck,
  planCluster,
  rollbackCluster,
  updateKubeadmConfig,
} from '../cluster/prepare.js';
import type { Host } from '../cluster/types.js';
import { loadKubeConfig } from '../kube/config.js';
import { createNodeClient, type NodeClient, type SlimNode } from '../kube/nodes.js';
import { waitUntilReady } from '../kube/readyz.js';
import { KubeTransport } from '../kube/transport.js';
import { TAINT_UNINITIALIZED } from '../kube/well-known.js';
import { loadProvider } from '../providers/registry.js';
import type { ClusterFlags } from '../providers/types.js';
import { order, printPreview } from './cluster-report.js';
import { UsageError } from './errors.js';

export interface ClusterPrepareInput {
  root: string;
  ssh: string[];
  sshFromNodes: boolean;
  sshUser: string;
  sshPort?: number;
  sshIdentity?: string;
  sshOption: string[];
  /** PATH for every ssh host, or TARGET=PATH for one. */
  remoteRoot: string[];
  provider?: string;
  providerId?: string;
  kubeconfig?: string;
  context?: string;
  kubeletVersion?: string;
  apiserverVersion?: string;
  controllerManagerVersion?: string;
  dryRun: boolean;
  yes: boolean;
  restart: boolean;
  rollback: boolean;
  initializeExisting: boolean;
  readyTimeoutMs: number;
  json: boolean;
  interactive: boolean;
  env: Readonly<Record<string, string | undefined>>;
  log: (line: string) => void;
}

export interface ClusterPrepareOutput {
  plan?: ClusterPlan;
  result?: ApplyResult;
  /** Nodes without a provider ID that were (or, with --dry-run, would be) tainted for `nodes init`. */
  initializeExisting?: string[];
  /** Without --initialize-existing: Nodes that no pass will initialise, for the hint in the summary. */
  uninitialisedExisting?: string[];
  dryRun: boolean;
  failed: boolean;
}

/** Nodes the kubelet will not re-taint: no provider ID and no uninitialized taint. */
function existingUninitialised(
  nodes: NodeClient,
  all: SlimNode[],
): { name: string; taint: () => Promise<void> }[] {
  return all
    .filter((n) => !n.spec?.providerID && !(n.spec?.taints ?? []).some((t) => t.key === TAINT_UNINITIALIZED))
    .map((n) => ({
      name: n.metadata?.name ?? '',
      taint: () =>
        nodes.patchNode(n.metadata?.name ?? '', {
          metadata: { resourceVersion: n.metadata?.resourceVersion },
          spec: {
            taints: [
              ...(n.spec?.taints ?? []),
              { key: TAINT_UNINITIALIZED, value: 'true', effect: 'NoSchedule' },
            ],
          },
        }),
    }));
}

export async function runClusterPrepare(input: ClusterPrepareInput): Promise<ClusterPrepareOutput> {
  const needsKube =
    input.sshFromNodes || input.initializeExisting || input.kubeconfig || input.env.KUBECONFIG;
  const kc = needsKube
    ? loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env })
    : undefined;
  const kube = kc ? new KubeTransport(kc) : undefined;
  const nodes = kc ? createNodeClient(kc) : undefined;
  const clusterFlags: ClusterFlags | undefined = input.provider
    ? (await loadProvider(input.provider)).clusterFlags
    : undefined;

  // One listing serves --ssh-from-nodes and the existing-Node check.
  const clusterNodes = nodes && (input.sshFromNodes || !input.rollback) ? await nodes.listNodes() : [];
  const hosts = buildHosts(input, clusterNodes);
  if (input.rollback) {
    const result = await rollbackCluster(hosts, {
      restart: input.restart,
      kube,
      readyTimeoutMs: input.readyTimeoutMs,
    });
    return { result, dryRun: false, failed: result.hosts.some((h) => h.result === 'failed') };
  }

  const plan = await planCluster(
    hosts,
    {
      versions: {
        kubelet: input.kubeletVersion,
        apiserver: input.apiserverVersion,
        controllerManager: input.controllerManagerVersion,
      },
      extra: clusterFlags?.kubeApiserver ? { 'kube-apiserver': clusterFlags.kubeApiserver } : undefined,
      providerIDFor: providerIDFor(input, clusterFlags, hosts.length),
    },
    kube,
  );
  if (plan.hosts.every((h) => h.error)) {
    throw new UsageError(plan.hosts.map((h) => `${h.host.name}: ${h.error}`).join('; '));
  }
  const existing = nodes ? existingUninitialised(nodes, clusterNodes) : [];
  const candidates = input.initializeExisting ? existing : [];
  const hint = input.initializeExisting ? undefined : existing.map((c) => c.name);
  if (!input.json)
    printPreview(
      plan,
      candidates.map((c) => c.name),
      input.log,
    );

  const changes =
    plan.hosts.some((h) => h.edits.length > 0) || plan.kubeadmConfig !== undefined || candidates.length > 0;
  if (input.dryRun || !changes) {
    return {
      plan,
      dryRun: input.dryRun,
      initializeExisting: candidates.map((c) => c.name),
      uninitialisedExisting: hint,
      failed: plan.hosts.some((h) => h.error),
    };
  }
  if (!input.yes) {
    if (!input.interactive)
      throw new UsageError(
        'changes need confirmation: review the preview, then pass --yes (or run in a terminal)',
      );
    const confirmed = await confirm({ message: 'Apply these changes?', default: false }).catch(
      (err: Error) => {
        // Ctrl-C at the prompt: the same as answering no.
        if (err.name === 'ExitPromptError') return false;
        throw err;
      },
    );
    if (!confirmed) {
      throw new UsageError('nothing changed: the changes were not confirmed');
    }
  }

  const applied: ApplyResult = { hosts: [] };
  await new Listr(
    [
      {
        title: `Back up and write files on ${plan.hosts.length} host(s)${input.restart ? ', restart changed kubelets' : ''}`,
        task: (_ctx, task) =>
          task.newListr(
            plan.hosts.map((h) => ({
              title: h.host.name,
              task: async (_c: unknown, sub: { title: string }) => {
                const report = await applyHost(plan, h, input.restart);
                applied.hosts.push(report);
                sub.title = `${h.host.name}: ${report.result}${report.error ? ` (${report.error})` : ''}${report.restarted ? ', kubelet restarted' : ''}`;
              },
            })),
            { concurrent: true, exitOnError: false },
          ),
      },
      {
        title: 'Update kube-system/kubeadm-config',
        enabled: () => plan.kubeadmConfig !== undefined && kube !== undefined,
        task: async (_ctx, task) => {
          applied.kubeadmConfig = await updateKubeadmConfig(plan, applied.hosts, kube as KubeTransport);
          task.title = `kube-system/kubeadm-config: ${applied.kubeadmConfig}`;
        },
      },
      {
        title: 'Wait for the API server to answer /readyz',
        enabled: () => kube !== undefined && needsReadyCheck(plan, applied.hosts),
        task: async (_ctx, task) => {
          try {
            applied.readyAfterMs = await waitUntilReady(kube as KubeTransport, {
              timeoutMs: input.readyTimeoutMs,
            });
            task.title = `API server ready after ${(applied.readyAfterMs / 1000).toFixed(1)}s`;
          } catch (err) {
            applied.readyError = (err as Error).message;
            task.title = `API server not ready: ${applied.readyError}`;
          }
        },
      },
      {
        title: `Taint ${candidates.length} existing Node(s) without a provider ID for \`ccm nodes init\``,
        enabled: () => candidates.length > 0,
        task: async () => {
          for (const c of candidates) await c.taint();
        },
      },
    ],
    {
      renderer: 'default',
      fallbackRenderer: 'simple',
      silentRendererCondition: input.json,
      exitOnError: true,
    },
  ).run();
  // Rows in the order hosts were given, not the order they finished.
  applied.hosts.sort((a, b) => order(plan, a.host) - order(plan, b.host));
  return {
    plan,
    result: applied,
    dryRun: false,
    initializeExisting: candidates.map((c) => c.name),
    uninitialisedExisting: hint,
    failed: applied.hosts.some((h) => h.result === 'failed') || applied.readyError !== undefined,
  };
}

function buildHosts(input: ClusterPrepareInput, clusterNodes: SlimNode[]): Host[] {
  const sshArgs = [
    ...(input.sshPort ? ['-p', String(input.sshPort)] : []),
    ...(input.sshIdentity ? ['-i', input.sshIdentity] : []),
    ...input.sshOption.flatMap((o) => ['-o', o]),
  ];
  const targets = [...input.ssh];
  if (input.sshFromNodes) {
    for (const node of clusterNodes) {
      const ip = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
      if (ip) targets.push(`${input.sshUser}@${ip}`);
    }
  }
  if (targets.length === 0) return [localHost(input.root)];
  const rootFor = (target: string) => {
    const own = input.remoteRoot.find((r) => r.startsWith(`${target}=`));
    return own ? own.slice(target.length + 1) : (input.remoteRoot.find((r) => !r.includes('=')) ?? '/');
  };
  return targets.map((target) => sshHost(target, { root: rootFor(target), sshArgs }));
}

function providerIDFor(input: ClusterPrepareInput, flags: ClusterFlags | undefined, hostCount: number) {
  if (input.providerId) {
    if (hostCount > 1)
      throw new UsageError('--provider-id names one node; with several hosts use --provider to derive each');
    const value = input.providerId;
    return async () => value;
  }
  const derive = flags?.kubeletProviderID;
  if (!derive) return undefined;
  return async (host: Host, kubeletFlags: string[]) => {
    // The Node is named after --hostname-override when the kubelet has one, else the hostname.
    const override = getFlag(kubeletFlags, 'hostname-override');
    if (override) return derive(override.toLowerCase());
    const run = await host.run(['hostname']);
    const name = run.stdout.trim().toLowerCase();
    return run.exitCode === 0 && name ? derive(name) : undefined;
  };
}
