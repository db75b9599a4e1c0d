import type { SlimNode, SlimTaint } from '../kube/slim-node.js';
import { LABEL_EXCLUDE_FROM_LIFECYCLE, TAINT_SHUTDOWN } from '../kube/well-known.js';
import type { Instance } from '../providers/types.js';

export type LifecycleDecision =
  | { action: 'none'; note?: string }
  | { action: 'add-shutdown-taint' }
  | { action: 'remove-shutdown-taint' }
  | { action: 'deletion-candidate'; providerID: string };

export interface LifecycleInput {
  /** The Node's instance from the listing, looked up by the Node's own provider ID. */
  instance: Instance | undefined;
  /** False when the listing failed: nothing can be concluded from it. */
  listingOk: boolean;
  listingSize: number;
  /**
   * False when the listing holds none of the instances of this cloud's Nodes: the signature of a
   * wrong project, region, account or Vagrantfile, never a reason to delete every Node.
   */
  listingKnowsCluster: boolean;
  now: Date;
  deletionGracePeriodMs: number;
}

export function isReady(node: SlimNode): boolean {
  return (node.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

export function isExcluded(node: SlimNode): boolean {
  const value = node.metadata?.labels?.[LABEL_EXCLUDE_FROM_LIFECYCLE];
  return value !== undefined && value.toLowerCase() !== 'false';
}

export function hasShutdownTaint(node: SlimNode): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === TAINT_SHUTDOWN);
}

export const shutdownTaint: SlimTaint = { key: TAINT_SHUTDOWN, effect: 'NoSchedule' };

/**
 * The node lifecycle controller's decision (reference: MonitorNodes), with ccm's deletion safety:
 * absence from a listing only ever makes a candidate, and only when the listing can be trusted.
 * The caller must have checked that the Node's provider ID is of this cloud's scheme.
 */
export function planLifecycle(node: SlimNode, input: LifecycleInput): LifecycleDecision {
  if (isExcluded(node))
    return { action: 'none', note: `excluded from lifecycle by label ${LABEL_EXCLUDE_FROM_LIFECYCLE}` };
  if (isReady(node)) return hasShutdownTaint(node) ? { action: 'remove-shutdown-taint' } : { action: 'none' };

  const providerID = node.spec?.providerID;
  if (!providerID) return { action: 'none' };
  if (!input.listingOk) return { action: 'none' };
  const { instance } = input;
  if (instance && instance.state === 'stopped') {
    return hasShutdownTaint(node) ? { action: 'none' } : { action: 'add-shutdown-taint' };
  }
  if (instance && instance.state === 'running') return { action: 'none' };

  if (input.listingSize === 0) {
    return {
      action: 'none',
      note: 'the cloud listed no instances at all; no Node is deleted on an empty listing',
    };
  }
  if (!input.listingKnowsCluster) {
    return {
      action: 'none',
      note: "the cloud listing holds none of this cluster's instances (wrong project, region or credentials?); no Node is deleted",
    };
  }
  const created = node.metadata?.creationTimestamp ? new Date(node.metadata.creationTimestamp) : undefined;
  if (!created || input.now.getTime() - created.getTime() < input.deletionGracePeriodMs) {
    const until = created
      ? new Date(created.getTime() + input.deletionGracePeriodMs).toISOString()
      : 'unknown';
    return {
      action: 'none',
      note: `instance not listed, but the Node is inside its deletion grace period (until ${until})`,
    };
  }
  return { action: 'deletion-candidate', providerID };
}
