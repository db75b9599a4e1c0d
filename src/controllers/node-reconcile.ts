import { monotonicMs } from '../clock.js';
import type { SlimNode } from '../kube/slim-node.js';
import type { CloudView } from './cloud-view.js';
import type { DeletionGuard } from './deletion-guard.js';
import type { ControllerContext } from './manager.js';
import {
  applyPlans,
  confirmDeletions,
  type NodeResult,
  planNode,
  resultOf,
  withdrawDeletions,
} from './nodes-pass.js';
import type { NodePlan } from './plan.js';

/**
 * One Node through the path `nodes init` takes (planNode → brake → confirmDeletions → applyPlans),
 * for the controllers of `ccm run`: the same plan, on the cached cloud view, limited to the
 * controller's half. The lifecycle half asks the deletion brake before a candidate's lookup.
 */
export async function reconcileNode(
  ctx: ControllerContext,
  node: SlimNode,
  view: CloudView,
  parts:
    | { cloudNode: boolean; lifecycle: false }
    | { cloudNode: boolean; lifecycle: true; brake: DeletionGuard },
  addresses?: WrittenAddresses,
): Promise<{ plan: NodePlan; result: NodeResult }> {
  const pass = {
    dryRun: false,
    concurrency: 1,
    deletionGracePeriodMs: ctx.options.deletionGracePeriodMs,
    parts,
    // The lifecycle half ages Nodes on the API server's clock, as the brake does (deletion-guard.ts).
    ...(parts.lifecycle ? { now: () => new Date(parts.brake.now()) } : {}),
  };
  const state = { nodes: [node], ...view };
  const planned = planNode(node, state, ctx.provider, pass);
  const plans = [planned];
  let admitted = false;
  try {
    if (parts.lifecycle) {
      let release: string | undefined;
      if (planned.deletionCandidate) {
        const admission = await parts.brake.admit(node, view);
        if (admission.kind === 'held') planned.held = admission.reason;
        else if (admission.kind === 'waiting') planned.waiting = admission.reason;
        else if (admission.kind === 'unjudged') {
          // Neither looked up nor held: said as this Node's failure, and tried again next period.
          planned.deletionCandidate = undefined;
          planned.error = admission.reason;
        } else {
          admitted = true;
          release = admission.release;
        }
      }
      await confirmDeletions(plans, ctx.provider, 1);
      if (planned.deletion && release) planned.deletion.release = release;
      // Reloaded credentials or cloud config since the listing: its candidates were confirmed (or not)
      // by a lookup with the new ones. The next monitor period plans again from a listing made with them.
      if (!ctx.cloud.isCurrent(view)) withdrawDeletions(plans);
      // Write-ahead: the deletion is in the record of deletions before its DELETE, or it is not sent.
      if (admitted && planned.deletion) {
        const recorded = await parts.brake.record(node, ctx.signal);
        if (recorded.kind !== 'recorded') {
          planned.deletion = undefined;
          planned.changes = [];
          if (recorded.kind === 'held') planned.held = recorded.reason;
          else if (recorded.kind === 'waiting') planned.waiting = recorded.reason;
          else planned.error = recorded.reason;
        }
      }
    }
    if (addresses) for (const p of plans) addresses.dropRepeat(node, p);
    const [plan] = await applyPlans(plans, state, ctx.kube, ctx.provider, pass);
    if (addresses && plan?.addresses && !plan.error) addresses.wrote(node, plan.addresses);
    const result = resultOf(plan as NodePlan);
    if (admitted && parts.lifecycle) parts.brake.settle(node, result === 'deleted');
    admitted = false;
    return { plan: plan as NodePlan, result };
  } finally {
    if (admitted && parts.lifecycle) parts.brake.settle(node, false);
  }
}

/**
 * The addresses ccm last wrote to each Node, until the watch shows them. The taint's removal reaches
 * the watch before the status write that follows it (the reference's order), and a reconcile of the
 * Node it shows would write the same addresses a second time.
 */
export class WrittenAddresses {
  private readonly written = new Map<string, { uid: string; text: string; at: number }>();

  /** `lagMs`: how long the watch may lag behind a write; a write later than that is never dropped. */
  constructor(
    private readonly lagMs = 10_000,
    private readonly now: () => number = monotonicMs,
  ) {}

  wrote(node: SlimNode, addresses: NonNullable<NodePlan['addresses']>): void {
    this.written.set(node.metadata?.name ?? '', {
      uid: node.metadata?.uid ?? '',
      text: JSON.stringify(addresses),
      at: this.now(),
    });
  }

  /** Drops a plan's address write that repeats the last one, while the watch lags behind it. */
  dropRepeat(node: SlimNode, plan: NodePlan): void {
    const name = node.metadata?.name ?? '';
    const last = this.written.get(name);
    if (!last) return;
    if (
      last.uid !== node.metadata?.uid ||
      JSON.stringify(node.status?.addresses ?? []) === last.text ||
      this.now() - last.at > this.lagMs
    ) {
      this.written.delete(name);
      return;
    }
    if (plan.addresses && JSON.stringify(plan.addresses) === last.text) {
      plan.addresses = undefined;
      plan.changes = plan.changes.filter((c) => !c.startsWith('set addresses '));
    }
  }

  forget(name: string): void {
    this.written.delete(name);
  }
}

/** Logs what a reconcile changed, and a failure once until its reason changes. */
export function reportReconcile(
  ctx: ControllerContext,
  controller: string,
  node: string,
  plan: NodePlan,
  lastErrors: Map<string, string>,
): void {
  const log = ctx.log.child({ controller, node });
  if (plan.error) {
    // An unreachable API server is logged once by the transport, not once per Node; a listing the
    // shutdown aborted is no failure.
    const level = ctx.transport.isReachable && !ctx.signal.aborted ? 'warn' : 'debug';
    if (lastErrors.get(node) !== plan.error) log[level](plan.error);
    lastErrors.set(node, plan.error);
    return;
  }
  if (lastErrors.delete(node)) log.info('reconciled again');
  if (plan.changes.length > 0) log.info(plan.changes.join('; '));
  for (const note of plan.notes) log.debug(note);
}
