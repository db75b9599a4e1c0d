import type { SlimTaint } from '../kube/slim-node.js';
import type { NodeAddress } from '../providers/types.js';

/** What one pass intends to do to one Node. Computed purely; applied by nodes-pass.ts. */
export interface NodePlan {
  name: string;
  /** Merge patch of the Node object; applied with the resourceVersion it was planned from. */
  patch?: { labels?: Record<string, string>; providerID?: string; taints?: SlimTaint[] };
  /** New status.addresses, replacing the list whole. */
  addresses?: NodeAddress[];
  events: PlannedEvent[];
  /** The listing no longer has the instance; a lookup by provider ID must confirm before deletion. */
  deletionCandidate?: { providerID: string };
  /**
   * Confirmed: the cloud answered "not found" for the Node's own provider ID. `release`: the id of the
   * hold an operator released that allowed it (deletion-brake.ts).
   */
  deletion?: { reason: string; release?: string };
  /** Why the deletion brake keeps this candidate (a share lost at once): no lookup, no deletion. */
  held?: string;
  /** Why this candidate waits for the deletion rate: no lookup, no deletion this pass. */
  waiting?: string;
  /** Human-readable list of what changes (or would change). */
  changes: string[];
  /** Why the Node is left alone entirely. */
  skipped?: string;
  /** Why the Node could not be reconciled this pass (it is retried next pass). */
  error?: string;
  /** Things worth telling the operator that are not failures. */
  notes: string[];
  /** The instance's groups change (Triton's CMON groups; a cloud write, made after the Node's). */
  instanceGroups?: string;
}

export interface PlannedEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  component: string;
  annotations?: Record<string, string>;
  /** Sent at once and awaited, not queued with the best-effort ones (nodes.ts NodeEventSpec.direct). */
  direct?: boolean;
}

export function emptyPlan(name: string): NodePlan {
  return { name, events: [], changes: [], notes: [] };
}

export function hasWrites(plan: NodePlan): boolean {
  return Boolean(plan.patch || plan.addresses || plan.deletion || plan.events.length > 0);
}
