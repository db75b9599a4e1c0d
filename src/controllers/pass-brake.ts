import { DELETION_RECORD, type NewDeletion } from '../kube/deletion-record.js';
import type { NodeClient } from '../kube/nodes.js';
import {
  ANNOTATION_DELETION_HOLD,
  EVENT_NODE_DELETION_HELD,
  SOURCE_LIFECYCLE_CONTROLLER,
} from '../kube/well-known.js';
import type { Provider } from '../providers/types.js';
import {
  type BrakeOptions,
  type BrakeVerdict,
  brakeVerdict,
  DEFAULT_BRAKE_OPTIONS,
  DELETION_WINDOW_MS,
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
 * The deletion brake in a one-shot pass (`ccm nodes init`): the recent deletions are read from their
 * record (deletion-record.ts), the pass's listing is judged, and only the candidates it lets through
 * are looked up; those confirmed gone are written into the record, judged again on it, before any
 * DELETE is sent. The rest are held or wait for the rate, and the pass says which.
 */

/** A held Node is told again after this long, so that its Event outlives the API server's Event TTL (1 h). */
export const HELD_EVENT_REPEAT_MS = 30 * 60_000;

export interface PassHold {
  id: string;
  reason: string;
  /** The held Nodes: every Node the hold counts, candidates or (Ready) not, as `ccm run` reports them. */
  nodes: string[];
  /** Nodes the hold counts: what the id names. */
  count: number;
  release: string;
}

export interface RecentDeletions {
  deletions: RecentDeletion[];
  /** The API server's clock when the record was read (ms), and this process's monotonic clock then. */
  serverNow?: number;
  error?: string;
}

export function brakeOptionsOf(options: PassOptions): BrakeOptions {
  return options.brake ?? DEFAULT_BRAKE_OPTIONS;
}

function nowOf(options: PassOptions): number {
  return (options.now?.() ?? new Date()).getTime();
}

/** The deletions of the window; a failure to read them is kept, and deletes nothing this pass. */
export async function readRecentDeletions(kube: NodeClient): Promise<RecentDeletions> {
  try {
    const record = await kube.readDeletionRecord();
    return { deletions: record.deletions, serverNow: record.serverNow };
  } catch (err) {
    return { deletions: [], error: (err as Error).message };
  }
}

/**
 * The pass's clock from the record's read: the API server's, moved on by this process's elapsed time
 * (never its wall clock, which may be off or jump). Without a read, this process's own.
 */
export function serverClock(recent: RecentDeletions, monotonic: () => number): (() => Date) | undefined {
  if (recent.serverNow === undefined) return undefined;
  const base = recent.serverNow;
  const start = monotonic();
  return () => new Date(base + (monotonic() - start));
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
  if (verdict.unjudged) {
    for (const plan of rest) plan.error = verdict.unjudged;
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

/** A confirmed deletion that will not be sent this pass: it is not a deletion, with what it is instead. */
function unconfirm(plan: NodePlan, to: { held?: string; waiting?: string; error?: string }): void {
  plan.deletion = undefined;
  plan.changes = [];
  if (to.held) plan.held = to.held;
  if (to.waiting) plan.waiting = to.waiting;
  if (to.error) plan.error = to.error;
}

/**
 * Write-ahead: the pass's confirmed deletions are written into the record of deletions before any
 * DELETE is sent, judged again on the record as it is then (another pass, `ccm run`'s leader, may
 * have deleted since this pass read it): a share now above the limit holds them, a rate now spent
 * leaves them waiting. A record that cannot be written deletes none of them, and says so. Returns
 * the verdict the record was written on, when it holds what the first did not.
 */
export async function recordAhead(
  plans: NodePlan[],
  kube: NodeClient,
  state: ClusterState,
  provider: Provider,
  options: PassOptions,
  release?: { id: string; providerIDs: ReadonlySet<string> },
): Promise<BrakeVerdict | undefined> {
  const confirmed = plans
    .filter((p) => p.deletion)
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (confirmed.length === 0) return undefined;
  const nodes = new Map(state.nodes.map((n) => [n.metadata?.name ?? '', n]));
  const entry = (p: NodePlan): NewDeletion => ({
    uid: nodes.get(p.name)?.metadata?.uid ?? '',
    name: p.name,
    providerID: p.deletionCandidate?.providerID ?? '',
    ...(p.deletion?.release ? { release: p.deletion.release } : {}),
  });
  let last: { verdict: BrakeVerdict; now: number } | undefined;
  let result: Awaited<ReturnType<NodeClient['writeAheadDeletions']>>;
  const brake = brakeOptionsOf(options);
  try {
    result = await kube.writeAheadDeletions(
      (record) => {
        const now = new Date(record.serverNow);
        const verdict = judgePass(
          state,
          provider,
          { deletions: record.deletions },
          { ...options, now: () => now },
          release,
        );
        last = { verdict, now: record.serverNow };
        const released = confirmed.filter((p) => verdict.released.has(p.deletionCandidate?.providerID ?? ''));
        if (verdict.held) return released.map(entry);
        const rest = confirmed.filter((p) => !released.includes(p));
        return [...released, ...rest.slice(0, verdict.allowedNow)].map(entry);
      },
      Math.max(brake.windowMs, DELETION_WINDOW_MS),
    );
  } catch (err) {
    const reason = `not deleted this pass: its deletion could not be written into the record of Node deletions (${DELETION_RECORD}) first: ${(err as Error).message}`;
    for (const plan of confirmed) unconfirm(plan, { error: reason });
    return undefined;
  }
  const written = new Set(result.written.map((d) => d.name));
  const full = new Set(result.full.map((d) => d.name));
  const verdict = last?.verdict;
  for (const plan of confirmed) {
    if (written.has(plan.name)) continue;
    if (full.has(plan.name)) {
      unconfirm(plan, {
        error: `not deleted this pass: the record of Node deletions (${DELETION_RECORD}) is full; the next pass deletes it once older deletions leave the window`,
      });
    } else if (verdict?.held) unconfirm(plan, { held: verdict.held });
    else if (verdict) {
      unconfirm(plan, {
        waiting: waitingReason(verdict, brake, last?.now ?? nowOf(options), result.written.length),
      });
    }
  }
  return verdict?.held ? verdict : undefined;
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
  // Every Node the hold counts is held, a Ready one too (never a candidate, but counted in the
  // share): the report, the exit code and the Events say what ccm run's metric and /readyz say.
  const counted = new Set(verdict.counted.map((n) => n.uid));
  const uidOf = new Map(nodes.map((n) => [n.metadata?.name ?? '', n.metadata?.uid ?? '']));
  for (const plan of plans) {
    if (!plan.held && !plan.deletion && !plan.skipped && counted.has(uidOf.get(plan.name) ?? ''))
      plan.held = verdict.held;
  }
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
      // At once and awaited: a hold of more than the recorder's 1,000 queued Events tells each Node.
      direct: true,
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
