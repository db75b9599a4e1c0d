import type { SlimNode } from '../kube/slim-node.js';
import type { CloudView } from './cloud-view.js';
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
 * One Node through the path `nodes init` takes (planNode → confirmDeletions → applyPlans), for the
 * controllers of `ccm run`: the same plan, on the cached cloud view, limited to the controller's half.
 */
export async function reconcileNode(
  ctx: ControllerContext,
  node: SlimNode,
  view: CloudView,
  parts: { cloudNode: boolean; lifecycle: boolean },
): Promise<{ plan: NodePlan; result: NodeResult }> {
  const pass = {
    dryRun: false,
    concurrency: 1,
    deletionGracePeriodMs: ctx.options.deletionGracePeriodMs,
    parts,
  };
  const state = { nodes: [node], ...view };
  const plans = [planNode(node, state, ctx.provider, pass)];
  if (parts.lifecycle) {
    await confirmDeletions(plans, ctx.provider, 1);
    // Reloaded credentials or cloud config since the listing: its candidates were confirmed (or not)
    // by a lookup with the new ones. The next monitor period plans again from a listing made with them.
    if (!ctx.cloud.isCurrent(view)) withdrawDeletions(plans);
  }
  const [plan] = await applyPlans(plans, state, ctx.kube, ctx.provider, pass);
  return { plan: plan as NodePlan, result: resultOf(plan as NodePlan) };
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
