import { isIP } from 'node:net';
import type { TaintRecord } from '../cluster/backup.js';
import { disableCoreDumps } from '../cluster/core-dumps.js';
import { getFlag } from '../cluster/flags.js';
import { localHost, sshHost } from '../cluster/host.js';
import {
  type ApplyResult,
  applyHost,
  type ClusterPlan,
  hostRestarts,
  keeperFailure,
  needsReadyCheck,
  planCluster,
  updateKubeadmConfig,
} from '../cluster/prepare.js';
import { applyRollback, planRollback, type RollbackPlan } from '../cluster/rollback.js';
import type { Host } from '../cluster/types.js';
import { canonicalIP } from '../controllers/node-addresses.js';
import { loadKubeConfig } from '../kube/config.js';
import { KubeApiError } from '../kube/errors.js';
import { createNodeClient, type NodeClient, type SlimNode } from '../kube/nodes.js';
import { waitUntilReady } from '../kube/readyz.js';
import { KubeTransport } from '../kube/transport.js';
import { TAINT_UNINITIALIZED } from '../kube/well-known.js';
import { printable } from '../printable.js';
import { InstanceIndex } from '../providers/instance-index.js';
import { loadProvider } from '../providers/registry.js';
import type { ClusterFlags, Instance } from '../providers/types.js';
import { order, printPreview, printRollbackPreview } from './cluster-report.js';
import { UsageError } from './errors.js';
import { transportOptionsFrom } from './kube-flags.js';
import { plural } from './output/text.js';
import { providerFromFlags } from './provider-config.js';
import { screenedTasks } from './task-list.js';

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
  /** The provider's --cloud-config (Cloudlycke: the inventory), to find each host's instance. */
  cloudConfig?: string;
  providerId?: string;
  kubeconfig?: string;
  context?: string;
  requestTimeoutMs?: number;
  kubeletVersion?: string;
  apiserverVersion?: string;
  controllerManagerVersion?: string;
  dryRun: boolean;
  yes: boolean;
  restart: boolean;
  rollback: boolean;
  initializeExisting: boolean;
  readyTimeoutMs: number;
  /** Show the diffs before anything is written (human views; a prompt shows them regardless). */
  preview: boolean;
  /** A task list on the terminal while writing. */
  progress: boolean;
  interactive: boolean;
  env: Readonly<Record<string, string | undefined>>;
  log: (line: string) => void;
  /** Where the diffs go when they were not shown but a person is asked to confirm them. */
  logToStderr: (line: string) => void;
}

export interface ClusterPrepareOutput {
  plan?: ClusterPlan;
  rollbackPlan?: RollbackPlan;
  result?: ApplyResult;
  /** Nodes without a provider ID that were (or, with --dry-run, would be) tainted for `nodes init`. */
  initializeExisting?: string[];
  /** Without --initialize-existing: Nodes that no pass will initialise, for the hint in the summary. */
  uninitialisedExisting?: string[];
  dryRun: boolean;
  /** False with --no-restart: units running without their files' flags are left so. */
  restart?: boolean;
  failed: boolean;
}

/** Nodes the kubelet will not re-taint: no provider ID and no uninitialized taint. */
const needsTaint = (n: SlimNode) =>
  !n.spec?.providerID && !(n.spec?.taints ?? []).some((t) => t.key === TAINT_UNINITIALIZED);

/** Tries of one taint patch that meets a newer Node (client-go retry.DefaultRetry's 5 steps). */
const CONFLICT_TRIES = 5;

export function existingUninitialised(
  nodes: NodeClient,
  all: SlimNode[],
): { name: string; record: TaintRecord; taint: () => Promise<boolean> }[] {
  const taint = { key: TAINT_UNINITIALIZED, value: 'true', effect: 'NoSchedule' };
  return all.filter(needsTaint).map((listed) => {
    const name = listed.metadata?.name ?? '';
    const uid = listed.metadata?.uid ?? '';
    return {
      name,
      record: { node: name, uid, ...taint },
      // The taints are replaced whole, so the patch is made on the Node as last read
      // (resourceVersion). The restarted kubelet updates its Node meanwhile: on a conflict the Node is
      // read again and still tainted only while it is the same Node and still needs it. False: it
      // no longer does.
      async taint() {
        let node = listed;
        for (let attempt = 1; ; attempt++) {
          if (node.metadata?.uid !== uid || !needsTaint(node)) return false;
          try {
            await nodes.patchNode(name, {
              metadata: { resourceVersion: node.metadata?.resourceVersion },
              spec: { taints: [...(node.spec?.taints ?? []), taint] },
            });
            return true;
          } catch (err) {
            if (!(err instanceof KubeApiError && err.status === 409) || attempt >= CONFLICT_TRIES) throw err;
          }
          node = await nodes.getNode(name);
        }
      },
    };
  });
}

export async function runClusterPrepare(input: ClusterPrepareInput): Promise<ClusterPrepareOutput> {
  const needsKube =
    input.sshFromNodes || input.initializeExisting || input.kubeconfig || input.env.KUBECONFIG;
  const kc = needsKube
    ? loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env })
    : undefined;
  const coreDumps = await disableCoreDumps();
  if (coreDumps) input.logToStderr(`ccm: warning: ${coreDumps}`);
  const kube = kc
    ? new KubeTransport(kc, transportOptionsFrom({ 'request-timeout': input.requestTimeoutMs }))
    : undefined;
  const nodes = kc ? createNodeClient(kc) : undefined;
  const clusterFlags: ClusterFlags | undefined = input.provider
    ? (await loadProvider(input.provider)).clusterFlags
    : undefined;

  // One listing serves --ssh-from-nodes and the existing-Node check.
  const clusterNodes = nodes && (input.sshFromNodes || !input.rollback) ? await nodes.listNodes() : [];
  const { hosts, fromNodes } = buildHosts(input, clusterNodes);
  // Addresses a kubelet may have written itself: the person sees where root's ssh went before saying yes.
  const hostList = (log: (line: string) => void) => {
    if (fromNodes.length > 0)
      log(`hosts from the Nodes' InternalIP (--ssh-from-nodes): ${fromNodes.join(', ')}`);
  };
  if (input.rollback) return rollback(input, hosts, kube, hostList);

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
    throw new UsageError(hostErrors(plan.hosts));
  }
  const existing = nodes ? existingUninitialised(nodes, clusterNodes) : [];
  const candidates = input.initializeExisting ? existing : [];
  const hint = input.initializeExisting ? undefined : existing.map((c) => c.name);
  const preview = (log: (line: string) => void) => {
    hostList(log);
    printPreview(
      plan,
      candidates.map((c) => c.name),
      log,
      input.restart,
    );
  };
  if (input.preview) preview(input.log);

  const changes =
    plan.hosts.some((h) => h.edits.length > 0 || (input.restart && hostRestarts(h).length > 0)) ||
    plan.kubeadmConfig !== undefined ||
    candidates.length > 0;
  if (input.dryRun || !changes) {
    return {
      plan,
      dryRun: input.dryRun,
      restart: input.restart,
      initializeExisting: candidates.map((c) => c.name),
      uninitialisedExisting: hint,
      failed: plan.hosts.some((h) => h.error),
    };
  }
  await confirmChanges(input, 'Apply these changes?', preview);

  // Recorded in the backup before any is tainted, so that --rollback takes back exactly these.
  if (candidates.length > 0) plan.taints = candidates.map((c) => c.record);
  const applied: ApplyResult = { hosts: [] };
  const tainted: string[] = [];
  const { Listr } = await import('listr2');
  await new Listr(
    screenedTasks([
      {
        title: `Back up and write files on ${plural(plan.hosts.length, ['host', 'hosts'])}${input.restart ? ', restart what changed' : ''}`,
        task: (_ctx, task) =>
          task.newListr(
            plan.hosts.map((h) => ({
              title: h.host.name,
              task: async (_c: unknown, sub: { title: string }) => {
                const report = await applyHost(plan, h, input.restart);
                applied.hosts.push(report);
                sub.title = `${h.host.name}: ${report.result}${report.error ? ` (${report.error})` : ''}${report.restarted ? `, restarted ${report.restartedUnits.join(', ')}` : ''}`;
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
        title: `Taint ${plural(candidates.length, ['existing Node', 'existing Nodes'])} without a provider ID for \`ccm nodes init\``,
        enabled: () => candidates.length > 0,
        task: async (_ctx, task) => {
          // Their record lives in the backup of the host that keeps kubeadm-config's: not without it.
          const failed = keeperFailure(plan, applied.hosts, 'taints them (pass --initialize-existing again)');
          if (failed) {
            applied.taints = `not tainted: ${failed}`;
            task.title = `Existing Nodes ${applied.taints}`;
            return;
          }
          for (const c of candidates) {
            if (await c.taint()) tainted.push(c.name);
          }
        },
      },
    ]),
    {
      renderer: 'default',
      silentRendererCondition: !input.progress,
      exitOnError: true,
      // The report's summary line and table replace the task list.
      rendererOptions: { clearOutput: true },
    },
  ).run();
  // Rows in the order hosts were given, not the order they finished.
  applied.hosts.sort((a, b) => order(plan, a.host) - order(plan, b.host));
  return {
    plan,
    result: applied,
    dryRun: false,
    restart: input.restart,
    initializeExisting: tainted,
    uninitialisedExisting: hint,
    failed: applied.hosts.some((h) => h.result === 'failed') || applied.readyError !== undefined,
  };
}

/**
 * Asks before writing, unless --yes; without a terminal to ask in, refuses. A person asked to confirm
 * sees the diffs: when the chosen view did not show them (-o json/yaml/name, --quiet), they go to stderr.
 */
async function confirmChanges(
  input: ClusterPrepareInput,
  question: string,
  preview: (log: (line: string) => void) => void,
): Promise<void> {
  if (input.yes) return;
  if (!input.interactive)
    throw new UsageError(
      'changes need confirmation: review the preview, then pass --yes (or run in a terminal)',
    );
  if (!input.preview) preview(input.logToStderr);
  const { confirm } = await import('@inquirer/prompts');
  // Ctrl-C at the prompt ends ccm as at any prompt (base-command.ts): one line, exit 130.
  const confirmed = await confirm({ message: question, default: false });
  if (!confirmed) throw new UsageError('nothing changed: the changes were not confirmed');
}

/** --rollback: preview like prepare, stop at --dry-run, ask unless --yes, then write. */
async function rollback(
  input: ClusterPrepareInput,
  hosts: Host[],
  kube: KubeTransport | undefined,
  hostList: (log: (line: string) => void) => void,
): Promise<ClusterPrepareOutput> {
  const plan = await planRollback(hosts, kube);
  const preview = (log: (line: string) => void) => {
    hostList(log);
    printRollbackPreview(plan, log, input.restart);
  };
  if (input.preview) preview(input.log);
  const failedPlans = plan.hosts.some((h) => h.error);
  const changes =
    plan.hosts.some((h) => h.files.length > 0 || (input.restart && h.stale.length > 0)) ||
    plan.kubeadmConfig !== undefined ||
    plan.untaint.length > 0;
  if (input.dryRun || !changes) {
    if (failedPlans && plan.hosts.every((h) => h.error)) {
      throw new UsageError(hostErrors(plan.hosts));
    }
    return { rollbackPlan: plan, restart: input.restart, dryRun: input.dryRun, failed: failedPlans };
  }
  await confirmChanges(input, 'Roll back these changes?', preview);
  const result = await applyRollback(plan, {
    restart: input.restart,
    kube,
    readyTimeoutMs: input.readyTimeoutMs,
  });
  return {
    rollbackPlan: plan,
    restart: input.restart,
    result,
    dryRun: false,
    failed:
      result.hosts.some((h) => h.result === 'failed') ||
      result.readyError !== undefined ||
      result.taints !== undefined,
  };
}

function buildHosts(
  input: ClusterPrepareInput,
  clusterNodes: SlimNode[],
): { hosts: Host[]; fromNodes: string[] } {
  const sshArgs = [
    ...(input.sshPort ? ['-p', String(input.sshPort)] : []),
    ...(input.sshIdentity ? ['-i', input.sshIdentity] : []),
    ...input.sshOption.flatMap((o) => ['-o', o]),
  ];
  const targets = [...input.ssh];
  const fromNodes: string[] = [];
  if (input.sshFromNodes) {
    for (const node of clusterNodes) {
      const ip = node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
      if (ip === undefined) continue;
      // A kubelet may write its own Node's addresses: only an IP address becomes an ssh target.
      if (!isIP(ip)) {
        throw new UsageError(
          `Node ${printable(node.metadata?.name ?? '')} reports InternalIP ${JSON.stringify(ip)}, which is no IP address; fix its status or name the hosts with --ssh`,
        );
      }
      targets.push(`${input.sshUser}@${ip}`);
      fromNodes.push(`${printable(node.metadata?.name ?? '')} ${input.sshUser}@${ip}`);
    }
  }
  if (targets.length === 0) return { hosts: [localHost(input.root)], fromNodes };
  const rootFor = (target: string) => {
    const own = input.remoteRoot.find((r) => r.startsWith(`${target}=`));
    return own ? own.slice(target.length + 1) : (input.remoteRoot.find((r) => !r.includes('=')) ?? '/');
  };
  return { hosts: targets.map((target) => sshHost(target, { root: rootFor(target), sshArgs })), fromNodes };
}

function providerIDFor(input: ClusterPrepareInput, flags: ClusterFlags | undefined, hostCount: number) {
  if (input.providerId) {
    if (hostCount > 1)
      throw new UsageError('--provider-id names one node; with several hosts use --provider to derive each');
    const value = input.providerId;
    return async () => value;
  }
  if (!flags?.kubeletProviderID || !input.provider) return undefined;
  const provider = input.provider;
  // One listing for every host, read on first use.
  let listing: Promise<Instance[]> | undefined;
  const instances = () => {
    listing ??= providerFromFlags({ provider, 'cloud-config': input.cloudConfig }, input.env).then((p) =>
      p.instances.list(),
    );
    return listing;
  };
  return async (host: Host, kubeletFlags: string[]) => {
    // The Node is named after --hostname-override when the kubelet has one, else the hostname.
    let name = getFlag(kubeletFlags, 'hostname-override')?.toLowerCase();
    if (!name) {
      const run = await host.run(['hostname']);
      name = run.exitCode === 0 ? run.stdout.trim().toLowerCase() : undefined;
    }
    const nodeIPs = (getFlag(kubeletFlags, 'node-ip') ?? '').split(',').filter(Boolean);
    return instanceProviderID(await instances(), provider, name, nodeIPs);
  };
}

/**
 * The provider ID of the instance a host runs as, found the way `nodes init` finds a Node's instance:
 * the one live instance of the Node's name, else the one holding the kubelet's --node-ip. Throws
 * (the host is refused, nothing written) when neither tells.
 */
export function instanceProviderID(
  instances: readonly Instance[],
  provider: string,
  nodeName: string | undefined,
  nodeIPs: readonly string[],
): string {
  const live = new InstanceIndex(instances.filter((i) => i.state !== 'gone'));
  const byName = nodeName ? live.byNodeName(nodeName) : undefined;
  if (byName?.providerID) return byName.providerID;
  const wanted = new Set(nodeIPs.map(canonicalIP).filter((ip) => ip !== undefined));
  const byIP = live.instances.filter((i) =>
    i.addresses.some((a) => a.type !== 'Hostname' && wanted.has(canonicalIP(a.address) ?? '')),
  );
  if (byIP.length === 1 && byIP[0]?.providerID) return byIP[0].providerID;
  const tried = [
    nodeName
      ? live.nameIsAmbiguous(nodeName)
        ? `several instances are named "${nodeName}"`
        : `no instance is named "${nodeName}"`
      : 'the hostname could not be read',
    wanted.size === 0
      ? 'the kubelet has no --node-ip'
      : byIP.length > 1
        ? `several instances have --node-ip ${[...wanted].join(',')}`
        : `no instance has --node-ip ${[...wanted].join(',')}`,
  ];
  throw new Error(
    `cannot tell which ${provider} instance this host is (${tried.join('; ')} among ${live.size} listed); pass --provider-id`,
  );
}

/**
 * Every host's error, each after its host's name: "local: no kubeadm files (…)". An error that ends
 * by naming its host ("… on local") does not name it twice.
 */
function hostErrors(hosts: readonly { host: { name: string }; error?: string }[]): string {
  return hosts
    .map(({ host, error = '' }) => {
      const own = ` on ${host.name}`;
      return `${host.name}: ${error.endsWith(own) ? error.slice(0, -own.length) : error}`;
    })
    .join('; ');
}
