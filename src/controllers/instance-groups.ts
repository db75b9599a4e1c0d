import { clusterIdentity } from '../kube/cluster-identity.js';
import type { SlimNode } from '../kube/slim-node.js';
import { LABEL_CONTROL_PLANE } from '../kube/well-known.js';
import { parseProviderID } from '../providers/provider-id.js';
import type {
  GroupedNode,
  InstanceGroups,
  InstanceGroupsChange,
  InstanceGroupsNote,
  NodeRole,
} from '../providers/types.js';
import { mapLimit } from './concurrency.js';
import type { ControllerContext } from './manager.js';

const LABEL_MASTER = 'node-role.kubernetes.io/master';
const LABEL_WORKER = 'node-role.kubernetes.io/worker';

/**
 * A Node's roles from its well-known labels: control plane when labelled control-plane (or the
 * legacy master); worker when labelled worker, or when it is no control-plane Node (kubeadm labels
 * workers with nothing).
 */
export function nodeRoles(node: SlimNode): NodeRole[] {
  const labels = node.metadata?.labels ?? {};
  const controlPlane = LABEL_CONTROL_PLANE in labels || LABEL_MASTER in labels;
  return [
    ...(controlPlane ? (['control-plane'] as const) : []),
    ...(LABEL_WORKER in labels || !controlPlane ? (['worker'] as const) : []),
  ];
}

/** The Nodes ccm manages, as the groups need them: those with a provider ID of this provider. */
export function groupedNodes(
  nodes: readonly SlimNode[],
  scheme: string,
  providerIDOf: (node: SlimNode) => string | undefined = (n) => n.spec?.providerID,
): GroupedNode[] {
  const grouped: GroupedNode[] = [];
  for (const node of nodes) {
    const providerID = providerIDOf(node);
    if (!providerID || parseProviderID(providerID)?.scheme !== scheme) continue;
    grouped.push({ name: node.metadata?.name ?? '', providerID, roles: nodeRoles(node) });
  }
  return grouped;
}

/** Whether a Node update changes its groups: a new provider ID, or a role label. */
export function groupsInputChanged(a: SlimNode, b: SlimNode): boolean {
  if (a.spec?.providerID !== b.spec?.providerID) return true;
  return nodeRoles(a).join(',') !== nodeRoles(b).join(',');
}

/** Machines whose groups change at once (CloudAPI throttles), as CNS changes are made. */
const PARALLEL = 8;
const MAX_BACKOFF_MS = 60_000;

/**
 * The instance groups in `ccm run`, part of the cloud node controller (it runs only while this
 * replica leads): one sweep (a listing, then a change per instance that needs one) when a Node
 * comes, goes, or changes provider ID or role, and every --node-status-update-frequency; a failed
 * sweep is tried again with backoff. Every call goes through ctx.provider: the shared budget, the
 * metrics and the leader gate.
 */
export function startInstanceGroups(
  ctx: ControllerContext,
  groups: InstanceGroups,
): { stop(): Promise<void> } {
  const nodes = ctx.informers.nodes;
  const log = ctx.log.child({ controller: 'cloud-node', part: 'instance-groups' });
  let clusterID: string | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;
  const said = new Map<string, string>();
  /** The note last logged for each Node (nodeLabelProblems). */
  const told = new Map<string, string>();

  const schedule = (delayMs = 100) => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = undefined;
      running = sweep().finally(() => {
        running = undefined;
        if (again) {
          again = false;
          schedule();
        }
      });
    }, delayMs);
    timer.unref?.();
  };

  const sweep = async () => {
    try {
      clusterID ??= await clusterIdentity(ctx.transport, ctx.options.clusterName);
      const id = clusterID;
      const { changes, notes } = await groups.plan(
        id,
        groupedNodes(nodes.list(), ctx.provider.providerIdScheme),
        ctx.signal,
      );
      // Each Node's note once, until it changes or goes (a sweep runs every --node-status-update-frequency).
      const noted = new Set<string>();
      for (const n of notes) {
        noted.add(n.node);
        if (told.get(n.node) !== n.note) log.warn({ providerID: n.providerID }, `Node ${n.node}: ${n.note}`);
        told.set(n.node, n.note);
      }
      for (const node of told.keys()) if (!noted.has(node)) told.delete(node);
      const failed: string[] = [];
      await mapLimit(changes, PARALLEL, async (change) => {
        const subject = change.node ? `Node ${change.node}` : `instance ${change.providerID} (no Node)`;
        if (change.refused) {
          if (said.get(change.providerID) !== change.refused) log.warn(`${subject}: ${change.refused}`);
          said.set(change.providerID, change.refused);
          return;
        }
        try {
          await groups.apply(id, change, ctx.signal);
          said.delete(change.providerID);
          log.info({ providerID: change.providerID }, `${subject}: ${change.change}`);
        } catch (err) {
          failed.push(`${subject}: ${(err as Error).message}`);
        }
      });
      if (failed.length > 0) throw new Error(failed.join('; '));
      failures = 0;
    } catch (err) {
      if (ctx.signal.aborted || stopped) return;
      failures++;
      const message = (err as Error).message;
      if (said.get('') !== message) log.warn(`instance groups not kept: ${message}; trying again`);
      said.set('', message);
      const retryAfter = (err as { retryAfterMs?: number }).retryAfterMs ?? 0;
      schedule(Math.max(retryAfter, Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (failures - 1))));
      return;
    }
    if (said.delete('')) log.info('instance groups kept again');
  };

  nodes.on('add', () => schedule());
  nodes.on('delete', () => schedule());
  nodes.on('update', (old, n) => {
    if (groupsInputChanged(old, n)) schedule();
  });
  const period = setInterval(() => schedule(0), ctx.options.nodeStatusUpdateFrequencyMs);
  period.unref?.();
  schedule(0);

  return {
    async stop() {
      stopped = true;
      clearInterval(period);
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}

export type { InstanceGroupsChange };

/** One instance's change in a one-pass command (`nodes init`): planned, then made or refused. */
export interface PassGroupsChange extends InstanceGroupsChange {
  /** Why it was not made (refused, or the write failed). */
  error?: string;
}

/** `nodes init`'s groups: the changes, and the notes on the Nodes' instances. */
export interface PassGroups {
  changes: PassGroupsChange[];
  notes: InstanceGroupsNote[];
}

/**
 * `nodes init`'s groups plan: the Nodes as the pass leaves them (a Node initialised by it has the
 * provider ID it is given; one it deletes is no longer managed), one listing.
 */
export async function planPassGroups(
  groups: InstanceGroups,
  clusterID: string,
  nodes: readonly SlimNode[],
  plans: readonly { name: string; patch?: { providerID?: string }; deletion?: unknown; skipped?: string }[],
  scheme: string,
  signal?: AbortSignal,
): Promise<PassGroups> {
  const byName = new Map(plans.map((p) => [p.name, p]));
  const managed = groupedNodes(nodes, scheme, (n) => {
    const plan = byName.get(n.metadata?.name ?? '');
    if (plan?.deletion || plan?.skipped) return undefined;
    return plan?.patch?.providerID ?? n.spec?.providerID;
  });
  const { changes, notes }: { changes: PassGroupsChange[]; notes: InstanceGroupsNote[] } = await groups.plan(
    clusterID,
    managed,
    signal,
  );
  for (const c of changes) if (c.refused) c.error = c.refused;
  return { changes, notes };
}

/** Makes the planned changes a few at a time; each failure is kept on its change. */
export async function applyPassGroups(
  groups: InstanceGroups,
  clusterID: string,
  changes: PassGroupsChange[],
  mayWrite: () => boolean,
): Promise<void> {
  await mapLimit(changes, PARALLEL, async (change) => {
    if (change.error || !mayWrite()) return;
    try {
      await groups.apply(clusterID, change);
    } catch (err) {
      change.error = (err as Error).message;
    }
  });
}
