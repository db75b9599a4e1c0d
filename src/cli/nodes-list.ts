import { monotonicMs } from '../clock.js';
import { NOT_COMPARED } from '../controllers/cloud-view.js';
import { findInstance, type PassOptions, planNode, readState } from '../controllers/nodes-pass.js';
import type { NodePlan } from '../controllers/plan.js';
import { loadKubeConfig } from '../kube/config.js';
import { createNodeClient } from '../kube/nodes.js';
import type { SlimNode } from '../kube/slim-node.js';
import { KubeTransport, type ListMeta } from '../kube/transport.js';
import { TAINT_UNINITIALIZED } from '../kube/well-known.js';
import { parseProviderID } from '../providers/provider-id.js';
import type { Instance, Provider } from '../providers/types.js';
import { transportOptionsFrom } from './kube-flags.js';
import { type ClusterAndCloudFlags, providerWithSecret } from './provider-config.js';
import { keepYoungGenerationSmall } from './young-generation.js';

/**
 * `ccm nodes list`: every Node beside its cloud instance, and for each Node that is not as it should
 * be, why and what to do. The verdict is `nodes init`'s own plan (planNode), made dry: one rule set.
 */

export type NodeStatus = 'ok' | 'pending' | 'failed' | 'stale' | 'unknown' | 'skipped';

export interface InstanceSummary {
  providerID: string;
  name: string;
  state: string;
  type: string;
  zone: string;
}

export interface NodeRow {
  /** The Node's name (`name`, as in every other report's rows). */
  name: string;
  providerID: string;
  instance?: InstanceSummary;
  initialized: boolean;
  /** Seconds the Node has carried the uninitialized taint (since it registered). */
  taintAgeSeconds?: number;
  status: NodeStatus;
  reason?: string;
  fix?: string;
}

export interface NodesListResult {
  provider: string;
  nodes: NodeRow[];
  /** Cloud instances no Node claims (only with --show-orphans). */
  orphans?: InstanceSummary[];
  cloudInstances: number;
  listingError?: string;
  kubeReads: number;
  cloudCalls: number;
  durationMs: number;
  /** Where the cloud credentials came from: "Secret kube-system/digitalocean", "flags and environment". */
  credentials: string;
}

export interface NodesListInput extends ClusterAndCloudFlags {
  showOrphans: boolean;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
}

/** Counts every read (single GETs and the streamed pages of a listing): `nodes list` promises a bounded number. */
class CountingTransport extends KubeTransport {
  reads = 0;
  override async request<T>(req: Parameters<KubeTransport['request']>[0]): Promise<T> {
    if (req.method === 'GET') this.reads++;
    return super.request<T>(req);
  }
  override async listPage(...args: Parameters<KubeTransport['listPage']>): Promise<ListMeta> {
    this.reads++;
    return super.listPage(...args);
  }
}

export async function runNodesList(input: NodesListInput): Promise<NodesListResult> {
  keepYoungGenerationSmall();
  const started = monotonicMs();
  let cloudCalls = 0;
  const auth = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
  const transport = new CountingTransport(auth, transportOptionsFrom(input));
  try {
    const { provider, credentials } = await providerWithSecret(
      input,
      input.env,
      transport,
      () => cloudCalls++,
    );
    const state = await readState(createNodeClient(transport), provider);
    const now = input.now?.() ?? new Date();
    const options: PassOptions = {
      dryRun: true,
      concurrency: 1,
      deletionGracePeriodMs: 5 * 60_000,
      now: () => now,
    };
    const nodes = state.nodes.map((node) => {
      const instance = planInstance(node, state.index, provider);
      const plan = planNode(node, state, provider, options);
      const listing = state.listingError
        ? 'failed'
        : state.listingKnowsCluster && !instance && node.spec?.providerID && !plan.skipped
          ? 'misses-it'
          : 'has-it';
      return rowOf(node, instance, plan, now, listing);
    });
    return {
      provider: provider.name,
      nodes,
      ...(input.showOrphans ? { orphans: orphansOf(state.nodes, state.index.instances, state.index) } : {}),
      cloudInstances: state.index.size,
      ...(state.listingError ? { listingError: state.listingError } : {}),
      kubeReads: transport.reads,
      cloudCalls,
      durationMs: Math.round(monotonicMs() - started),
      credentials,
    };
  } finally {
    await transport.close();
  }
}

function planInstance(
  node: SlimNode,
  index: Parameters<typeof findInstance>[1],
  provider: Provider,
): Instance | undefined {
  const providerID = node.spec?.providerID;
  if (providerID && parseProviderID(providerID)?.scheme !== provider.providerIdScheme) return undefined;
  return findInstance(node, index);
}

export function summary(instance: Instance): InstanceSummary {
  return {
    providerID: instance.providerID,
    name: instance.name,
    state: instance.state,
    type: instance.type,
    zone: instance.zone,
  };
}

function isTainted(node: SlimNode): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === TAINT_UNINITIALIZED);
}

/** The reason and the fix of a plan's error; the plans write "what is wrong; what to do". */
function splitFix(message: string): { reason: string; fix?: string } {
  const at = message.indexOf('; ');
  return at < 0 ? { reason: message } : { reason: message.slice(0, at), fix: message.slice(at + 2) };
}

/**
 * What the pass's cloud listing says of the Node's instance: it failed (no verdict), it misses an
 * instance the Node names by provider ID (a listing that knows the cluster), or neither.
 */
export type ListingVerdict = 'failed' | 'misses-it' | 'has-it';

export function rowOf(
  node: SlimNode,
  instance: Instance | undefined,
  plan: NodePlan,
  now: Date,
  listing: ListingVerdict = 'has-it',
): NodeRow {
  const tainted = isTainted(node);
  const created = node.metadata?.creationTimestamp;
  const row: NodeRow = {
    name: node.metadata?.name ?? '',
    providerID: node.spec?.providerID ?? '',
    ...(instance ? { instance: summary(instance) } : {}),
    initialized: !tainted,
    ...(tainted && created
      ? { taintAgeSeconds: Math.max(0, Math.round((now.getTime() - new Date(created).getTime()) / 1000)) }
      : {}),
    status: 'ok',
  };
  if (plan.skipped) {
    return {
      ...row,
      status: 'skipped',
      reason: plan.skipped,
      fix: "that cloud's controller initialises it; if it is this cloud's, check --provider",
    };
  }
  if (listing === 'failed') {
    return {
      ...row,
      status: 'unknown',
      reason: NOT_COMPARED,
      fix: 'see the listing error below; run again once the cloud answers',
    };
  }
  if (plan.error) {
    const { reason, fix } = splitFix(plan.error);
    return {
      ...row,
      status: 'failed',
      reason,
      fix: fix ?? 'fix the cause above; `ccm nodes init --dry-run` shows whether it is solved',
    };
  }
  if (plan.deletionCandidate) {
    return {
      ...row,
      status: 'stale',
      reason: `instance ${plan.deletionCandidate.providerID} is not in the cloud listing`,
      fix: 'the cloud controller deletes the Node once the cloud confirms the instance is gone; if it still exists, check the project / region of the credentials',
    };
  }
  if (listing === 'misses-it') {
    return {
      ...row,
      status: 'stale',
      reason: `instance ${row.providerID} is not in the cloud listing`,
      fix: 'the lifecycle controller deletes the Node once it is NotReady for --deletion-grace-period and the cloud confirms the instance is gone; if it still exists, check the project / region of the credentials',
    };
  }
  if (plan.changes.length > 0) {
    return {
      ...row,
      status: 'pending',
      reason: `not reconciled: would ${plan.changes.join('; ')}`,
      fix: 'no cloud controller has done it: check `ccm doctor`, or run `ccm nodes init` once',
    };
  }
  return row;
}

/** Live instances that no Node claims, by provider ID or (for a Node without one) by name. */
export function orphansOf(
  nodes: readonly SlimNode[],
  instances: readonly Instance[],
  index: Parameters<typeof findInstance>[1],
): InstanceSummary[] {
  const claimed = new Set<string>();
  for (const node of nodes) {
    const instance = findInstance(node, index);
    if (instance) claimed.add(instance.providerID);
  }
  return instances.filter((i) => i.state !== 'gone' && !claimed.has(i.providerID)).map(summary);
}
