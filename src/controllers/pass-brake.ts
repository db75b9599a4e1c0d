import type { NodeClient } from '../kube/nodes.js';
import {
  ANNOTATION_DELETION_HOLD,
  EVENT_DELETING_NODE,
  EVENT_NODE_DELETION_HELD,
  SOURCE_LIFECYCLE_CONTROLLER,
} from '../kube/well-known.js';
import type { Provider } from '../providers/types.js';
import {
  type BrakeOptions,
  type BrakeVerdict,
  brakeVerdict,
  DEFAULT_BRAKE_OPTIONS,
  deletionsFromEvents,
  heldEventMessage,
  managedNodes,
  type RecentDeletion,
  releaseCommand,
  waitingReason,
} from './deletion-brake.js';
import type { ClusterState, PassOptions } from './nodes-pass.js';
import { confirmDeletions } from './nodes-pass.js';
import type { NodePlan } from './plan.js';

/**
 * The deletion brake in a one-shot pass (`ccm nodes init`): the recent deletions are read back from
 * the DeletingNode Events, the pass's listing is judged, and only the candidates it lets through are
 * looked up and deleted; the rest are held or wait for the rate, and the pass says which.
 */

/** A held Node is told again after this long, so that its Event outlives the API server's Event TTL (1 h). */
export const HELD_EVENT_REPEAT_MS = 30 * 60_000;

export interface PassHold {
  id: string;
  reason: string;
  /** The held candidates (the hold counts Ready Nodes the listing lost too; they are not deleted anyway). */
  nodes: string[];
  /** Nodes the hold counts: what the id names. */
  count: number;
  release: string;
}

export interface RecentDeletions {
  deletions: RecentDeletion[];
  error?: string;
}

export function brakeOptionsOf(options: PassOptions): BrakeOptions {
  return options.brake ?? DEFAULT_BRAKE_OPTIONS;
}

function nowOf(options: PassOptions): number {
  return (options.now?.() ?? new Date()).getTime();
}

/** The deletions of the window; a failure to read them is kept, and holds every deletion. */
export async function readRecentDeletions(kube: NodeClient, options: PassOptions): Promise<RecentDeletions> {
  const since = nowOf(options) - brakeOptionsOf(options).windowMs;
  try {
    return { deletions: deletionsFromEvents(await kube.listNodeEvents(EVENT_DELETING_NODE, since)) };
  } catch (err) {
    return { deletions: [], error: (err as Error).message };
  }
}

/** The verdict on this pass's listing; `release`: a hold the operator released, by id and its Nodes. */
export function judgePass(
  state: ClusterState,
  provider: Provider,
  recent: RecentDeletions,
  options: PassOptions,
  release?: { id: string; providerIDs: ReadonlySet<string> },
): BrakeVerdict {
  const now = options.now?.() ?? new Date();
  const { managed, missing } = managedNodes(
    state.nodes,
    state,
    provider.providerIdScheme,
    now,
    options.deletionGracePeriodMs,
  );
  return brakeVerdict({
    managed,
    missing,
    deletions: recent.deletions,
    ...(recent.error !== undefined ? { deletionsError: recent.error } : {}),
    now: now.getTime(),
    ...(release ? { release } : {}),
    options: brakeOptionsOf(options),
  });
}

/**
 * Confirms the deletion candidates the verdict lets through: a released hold's at once, otherwise as
 * many as the rate allows now, in name order, looked up until that many are confirmed gone. A held
 * candidate is never looked up, and one the rate does not reach is left for a later pass.
 */
export async function confirmBraked(
  plans: NodePlan[],
  provider: Provider,
  verdict: BrakeVerdict,
  options: PassOptions,
  releaseId?: string,
): Promise<void> {
  const candidates = plans
    .filter((p) => p.deletionCandidate)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const pid = (p: NodePlan) => p.deletionCandidate?.providerID ?? '';
  const released = candidates.filter((p) => verdict.released.has(pid(p)));
  const rest = candidates.filter((p) => !verdict.released.has(pid(p)));
  await confirmDeletions(released, provider, options.concurrency);
  for (const plan of released) if (plan.deletion && releaseId) plan.deletion.release = releaseId;
  if (verdict.held) {
    for (const plan of rest) plan.held = verdict.held;
    return;
  }
  let allowance = verdict.allowedNow;
  const queue = [...rest];
  while (allowance > 0 && queue.length > 0) {
    const batch = queue.splice(0, allowance);
    await confirmDeletions(batch, provider, options.concurrency);
    allowance -= batch.filter((p) => p.deletion).length;
  }
  const deleted = rest.filter((p) => p.deletion).length;
  const reason = waitingReason(verdict, brakeOptionsOf(options), nowOf(options), deleted);
  for (const plan of queue) plan.waiting = reason;
}

/**
 * One Warning Event on each held Node, unless one of the same hold was recorded in the last
 * HELD_EVENT_REPEAT_MS (by this command's earlier runs, or by `ccm run`). Added to the plans, so a
 * dry run shows it and writes nothing.
 */
export async function tellHeld(
  plans: NodePlan[],
  kube: NodeClient,
  verdict: BrakeVerdict,
  nodes: ClusterState['nodes'],
  options: PassOptions,
): Promise<PassHold | undefined> {
  if (!verdict.held) return undefined;
  const held = plans.filter((p) => p.held);
  const release = releaseCommand(verdict.id);
  let told = new Set<string>();
  try {
    const since = nowOf(options) - HELD_EVENT_REPEAT_MS;
    told = new Set(
      (await kube.listNodeEvents(EVENT_NODE_DELETION_HELD, since))
        .filter((e) => e.annotations[ANNOTATION_DELETION_HOLD] === verdict.id)
        .map((e) => e.uid),
    );
  } catch {
    // Unreadable Events (the reason the pass holds, maybe): each held Node is told again.
  }
  const uids = new Map(nodes.map((n) => [n.metadata?.name ?? '', n.metadata?.uid ?? '']));
  for (const plan of held) {
    if (told.has(uids.get(plan.name) ?? '')) continue;
    plan.events.push({
      type: 'Warning',
      reason: EVENT_NODE_DELETION_HELD,
      message: heldEventMessage(verdict, release),
      component: SOURCE_LIFECYCLE_CONTROLLER,
      annotations: { [ANNOTATION_DELETION_HOLD]: verdict.id },
    });
  }
  return {
    id: verdict.id,
    reason: verdict.held,
    nodes: held.map((p) => p.name),
    count: verdict.counted.length,
    release,
  };
}
