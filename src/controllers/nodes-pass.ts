import { monotonicMs } from '../clock.js';
import { KubeApiError } from '../kube/errors.js';
import type { NodeClient } from '../kube/nodes.js';
import type { SlimNode, SlimTaint } from '../kube/slim-node.js';
import {
  ANNOTATION_DELETION_RELEASE,
  EVENT_DELETING_NODE,
  EVENT_DELETING_NODE_FAILED,
  LABEL_PAIRS,
  SOURCE_LIFECYCLE_CONTROLLER,
} from '../kube/well-known.js';
import { isNotFound } from '../providers/errors.js';
import type { InstanceIndex } from '../providers/instance-index.js';
import { parseProviderID } from '../providers/provider-id.js';
import type { Instance, Provider } from '../providers/types.js';
import {
  type CloudView,
  isFatalCloudError,
  type ListingOutcome,
  NOT_COMPARED,
  viewOf,
} from './cloud-view.js';
import { mapLimit } from './concurrency.js';
import type { BrakeOptions } from './deletion-brake.js';
import { isReady as isReadyNode, planLifecycle, shutdownTaint } from './lifecycle.js';
import { isUninitialized, planInitialization, planInitializedNode, syncedEvent } from './node.js';
import {
  confirmBraked,
  judgePass,
  type PassHold,
  readRecentDeletions,
  recordAhead,
  serverClock,
  tellHeld,
} from './pass-brake.js';
import { emptyPlan, hasWrites, type NodePlan, type PlannedEvent } from './plan.js';

/**
 * One reconcile pass over every Node: the cloud node controller and the node lifecycle controller of
 * the reference framework, run once. Four steps, so a UI can show each and `--dry-run` can stop
 * before the last: read → plan → confirm deletions → apply.
 */

export interface PassOptions {
  dryRun: boolean;
  concurrency: number;
  deletionGracePeriodMs: number;
  now?: () => Date;
  /**
   * Which halves of the plan to make (default both): the cloud node controller's (initialisation,
   * labels, addresses) and the lifecycle controller's (shutdown taint, deletion). `ccm run` runs them
   * as separate controllers that can be turned off one by one.
   */
  parts?: { cloudNode: boolean; lifecycle: boolean };
  /** The deletion brake's settings (deletion-brake.ts; default: its defaults). */
  brake?: BrakeOptions;
}

export interface ClusterState extends CloudView {
  nodes: SlimNode[];
}

export type NodeResult =
  | 'initialized'
  | 'updated'
  | 'deleted'
  | 'held'
  | 'waiting'
  | 'unchanged'
  | 'skipped'
  | 'failed';

/**
 * A pass's word for each Node in its report: its result, or `unknown` when the cloud listing failed
 * and the Node needed it (not compared with its instance, so not reconciled), as `nodes list` says
 * it. `failed` is a Node's own failure, with its own reason (docs/output.md).
 */
export type PassResult = NodeResult | 'unknown';

export interface NodeReport {
  name: string;
  result: PassResult;
  changes: string[];
  reason?: string;
  notes?: string[];
  /** The Node's provider ID (the one just set, when initialised). */
  providerID?: string;
  /** From the cloud's instance, else from the Node's labels. */
  instanceType?: string;
  zone?: string;
}

export interface PassReport {
  provider: string;
  dryRun: boolean;
  nodes: NodeReport[];
  summary: Record<PassResult, number> & { total: number };
  cloudInstances: number;
  listingError?: string;
  /** The deletion brake held this pass's deletions (deletion-brake.ts). */
  hold?: PassHold;
  /**
   * Instances no managed Node has any more whose groups ccm takes off (a Node's own change is among
   * its `changes`); absent when the provider keeps none.
   */
  instanceGroups?: { providerID: string; change: string; error?: string }[];
}

/**
 * Reads the Nodes, then the cloud listing. Credential or configuration errors abort the pass. Not in
 * parallel: a tainted Node is initialised only from a listing started after the Node existed, and
 * one listed from the cloud before it may show a deleted instance of the same name.
 */
export async function readState(kube: NodeClient, provider: Provider): Promise<ClusterState> {
  const nodes = await kube.listNodes();
  const listing = await provider.instances.list().then(
    (instances): ListingOutcome => ({ instances }),
    (error: unknown): ListingOutcome => ({ error }),
  );
  if ('error' in listing && isFatalCloudError(listing.error)) throw listing.error;
  return { nodes, ...viewOf(listing, nodes) };
}

export function planNode(
  node: SlimNode,
  state: ClusterState,
  provider: Provider,
  options: PassOptions,
): NodePlan {
  const name = node.metadata?.name ?? '';
  const plan = emptyPlan(name);
  const providerID = node.spec?.providerID;
  if (providerID && parseProviderID(providerID)?.scheme !== provider.providerIdScheme) {
    const article = /^[aeiou]/i.test(provider.name) ? 'an' : 'a';
    plan.skipped = `provider ID ${providerID} is not ${article} ${provider.name} instance; Node left alone`;
    return plan;
  }
  const listingOk = state.listingError === undefined;
  const instance = findInstance(node, state.index);

  let labels: Record<string, string> = {};
  const originalTaints: SlimTaint[] = node.spec?.taints ?? [];
  let taints = originalTaints;
  let newProviderID: string | undefined;
  const tainted = isUninitialized(node);
  const parts = options.parts ?? { cloudNode: true, lifecycle: true };
  try {
    if (!parts.cloudNode) {
      // Lifecycle only: nothing of the cloud node controller's half.
    } else if (tainted) {
      if (!listingOk) throw new Error(state.listingError);
      if (!instance) throw new Error(notFoundReason(node, state.index));
      // A deleted instance's record (the listing may show it a while) would lend the Node an
      // identity that is no longer anyone's, and a provider ID is never changed afterwards.
      if (instance.state === 'gone')
        throw new Error(
          `cloud instance ${instance.providerID} (${instance.name}) is gone; the Node stays tainted`,
        );
      const sync = planInitialization(node, instance);
      labels = sync.labels;
      newProviderID = sync.providerID;
      taints = sync.taints ?? taints;
      plan.addresses = sync.addresses;
      plan.changes.push(...sync.changes);
      plan.events.push({ ...syncedEvent });
    } else {
      const sync = planInitializedNode(node, providerID ? instance : undefined);
      labels = sync.labels;
      plan.addresses = sync.addresses;
      plan.changes.push(...sync.changes);
      if (sync.addressProblem) plan.notes.push(sync.addressProblem);
    }
  } catch (err) {
    // Nothing of the initialisation is written: the Node keeps its taint and is retried next pass.
    plan.error = (err as Error).message;
    plan.changes = [];
    plan.events = [];
    plan.addresses = undefined;
    labels = {};
  }

  if (!listingOk && providerID && !plan.error && (parts.cloudNode || !isReadyNode(node))) {
    // Labels were reconciled, but addresses and lifecycle need the cloud: not reconciled this pass.
    plan.error = state.listingError;
  }
  if (providerID && parts.lifecycle) {
    const decision = planLifecycle(node, {
      instance, // looked up by this very provider ID
      listingOk,
      listingSize: state.index.size,
      listingKnowsCluster: state.listingKnowsCluster,
      now: options.now?.() ?? new Date(),
      deletionGracePeriodMs: options.deletionGracePeriodMs,
    });
    if (decision.action === 'add-shutdown-taint') {
      taints = [...taints, shutdownTaint];
      plan.changes.push(`add taint ${shutdownTaint.key}:${shutdownTaint.effect} (instance is shut down)`);
    } else if (decision.action === 'remove-shutdown-taint') {
      taints = taints.filter((t) => t.key !== shutdownTaint.key);
      plan.changes.push(`remove taint ${shutdownTaint.key} (Node is Ready)`);
    } else if (decision.action === 'deletion-candidate') {
      plan.deletionCandidate = { providerID: decision.providerID };
    } else if (decision.note) {
      plan.notes.push(decision.note);
    }
  }

  const taintsChanged = taints !== originalTaints;
  if (Object.keys(labels).length > 0 || newProviderID || taintsChanged) {
    plan.patch = {
      ...(Object.keys(labels).length > 0 ? { labels } : {}),
      ...(newProviderID ? { providerID: newProviderID } : {}),
      ...(taintsChanged ? { taints } : {}),
    };
  }
  return plan;
}

/** The Node's instance in the listing: by provider ID, or by name for a Node that has none yet. */
export function findInstance(node: SlimNode, index: InstanceIndex): Instance | undefined {
  const providerID = node.spec?.providerID;
  return providerID ? index.byProviderID(providerID) : index.byNodeName(node.metadata?.name ?? '');
}

function notFoundReason(node: SlimNode, index: InstanceIndex): string {
  const providerID = node.spec?.providerID;
  const name = node.metadata?.name ?? '';
  if (providerID) return `no cloud instance has provider ID ${providerID}`;
  if (index.nameIsAmbiguous(name))
    return `several cloud instances are named ${name}; set the kubelet's --provider-id`;
  return `no cloud instance is named ${name}; name the instance like the Node or set the kubelet's --provider-id`;
}

export function planPass(state: ClusterState, provider: Provider, options: PassOptions): NodePlan[] {
  return state.nodes.map((node) => planNode(node, state, provider, options));
}

/**
 * Asks the cloud about each deletion candidate by the Node's own provider ID. Only a positive
 * "not found" turns a candidate into a deletion; any error keeps the Node.
 */
export async function confirmDeletions(
  plans: NodePlan[],
  provider: Provider,
  concurrency: number,
): Promise<void> {
  const candidates = plans.filter((p) => p.deletionCandidate && !p.held && !p.waiting);
  await mapLimit(candidates, concurrency, async (plan) => {
    const providerID = plan.deletionCandidate?.providerID ?? '';
    try {
      // The provider contract: only NotFoundError is "gone". An instance returned by the lookup, in
      // whatever state, exists; the Node stays.
      const instance = await provider.instances.get(providerID);
      plan.notes.push(
        `instance ${providerID} missing from the listing but found by lookup (${instance.state}); kept`,
      );
    } catch (err) {
      if (isNotFound(err)) {
        plan.deletion = { reason: `the cloud answered "not found" for instance ${providerID}` };
      } else {
        plan.error = `not deleted: looking up ${providerID} failed: ${(err as Error).message}`;
      }
    }
    if (plan.deletion) {
      // A tainted Node whose instance is gone was "failed: no instance"; deleting it is the answer.
      plan.error = undefined;
      plan.patch = undefined;
      plan.addresses = undefined;
      plan.events = [];
      plan.changes = [`delete Node (${plan.deletion.reason})`];
    }
  });
}

/** Undoes confirmed deletions whose lookup cannot be trusted to confirm the listing; nothing is written. */
export function withdrawDeletions(plans: NodePlan[]): void {
  for (const plan of plans) {
    if (!plan.deletion) continue;
    plan.deletion = undefined;
    plan.changes = [];
    plan.error = `not deleted: the credentials or cloud config changed after the listing that missed ${plan.deletionCandidate?.providerID}; checked again with the new ones`;
  }
}

const MAX_CONFLICT_RETRIES = 3;

/** Writes the plans. A Node changed by someone else since it was read is re-read and re-planned. */
export async function applyPlans(
  plans: NodePlan[],
  state: ClusterState,
  kube: NodeClient,
  provider: Provider,
  options: PassOptions,
  onNodeDone?: (done: number, total: number) => void,
): Promise<NodePlan[]> {
  const nodesByName = new Map(state.nodes.map((n) => [n.metadata?.name ?? '', n]));
  let done = 0;
  const applied = await mapLimit(plans, options.concurrency, async (initial) => {
    let plan = initial;
    let node = nodesByName.get(plan.name) as SlimNode;
    for (let attempt = 0; ; attempt++) {
      try {
        await applyOne(plan, node, kube);
        break;
      } catch (err) {
        if (!(err instanceof KubeApiError && err.status === 409) || attempt >= MAX_CONFLICT_RETRIES) {
          plan.error = (err as Error).message;
          break;
        }
        let fresh: SlimNode;
        try {
          fresh = await kube.getNode(plan.name);
        } catch (readErr) {
          plan.error = `changed concurrently, then could not be read again: ${(readErr as Error).message}`;
          break;
        }
        // Another Node of the same name (deleted and created again): the listing may predate it and
        // show the deleted one's instance, so it is not planned from this one.
        if (fresh.metadata?.uid !== node.metadata?.uid) {
          plan.error = `replaced by a new Node of the same name (UID ${fresh.metadata?.uid}) while it was written; not planned from a listing that may predate it`;
          break;
        }
        node = fresh;
        plan = replan(plan, node, state, provider, options);
      }
    }
    onNodeDone?.(++done, plans.length);
    return plan;
  });
  return applied;
}

/**
 * A fresh plan for a Node that changed under us. A confirmed deletion stays confirmed (the cloud
 * answered for the provider ID, not for this version of the Node) while the Node still qualifies.
 */
function replan(
  previous: NodePlan,
  node: SlimNode,
  state: ClusterState,
  provider: Provider,
  options: PassOptions,
) {
  const plan = planNode(node, state, provider, options);
  if (previous.deletion && plan.deletionCandidate?.providerID === previous.deletionCandidate?.providerID) {
    return { ...plan, deletion: previous.deletion, error: undefined, changes: previous.changes };
  }
  return plan;
}

async function applyOne(plan: NodePlan, node: SlimNode, kube: NodeClient): Promise<void> {
  if (plan.error && !hasWrites(plan)) return;
  if (plan.deletion) {
    const message = `Deleting node ${plan.name} because it does not exist in the cloud provider`;
    const { release } = plan.deletion;
    await recordEvent(kube, plan, node, {
      type: 'Normal',
      reason: EVENT_DELETING_NODE,
      message,
      component: SOURCE_LIFECYCLE_CONTROLLER,
      ...(release ? { annotations: { [ANNOTATION_DELETION_RELEASE]: release } } : {}),
    });
    try {
      await kube.deleteNode(node);
    } catch (err) {
      if (!(err instanceof KubeApiError && err.status === 409)) {
        await recordEvent(kube, plan, node, {
          type: 'Warning',
          reason: EVENT_DELETING_NODE_FAILED,
          message: `Error deleting node ${plan.name}: ${(err as Error).message}`,
          component: SOURCE_LIFECYCLE_CONTROLLER,
        });
      }
      throw err;
    }
    return;
  }
  // The Node first, conditional on the version the plan was made from, then its addresses (the
  // reference order). Should the status write fail, the next pass refreshes the addresses of the
  // now-initialised Node: a failure in between delays addresses, it never leaves them wrong.
  if (plan.patch) {
    const { labels, providerID, taints } = plan.patch;
    await kube.patchNode(plan.name, {
      metadata: { resourceVersion: node.metadata?.resourceVersion, ...(labels ? { labels } : {}) },
      ...(providerID || taints
        ? { spec: { ...(providerID ? { providerID } : {}), ...(taints ? { taints } : {}) } }
        : {}),
    });
  }
  if (plan.addresses) {
    await kube.patchNodeStatus(plan.name, { status: { addresses: plan.addresses } });
  }
  for (const event of plan.events) await recordEvent(kube, plan, node, event);
}

/**
 * Events are best effort, as with the reference's event recorder: they never block the change itself.
 * The record a deletion needs is not an Event: it was written before (pass-brake.ts recordAhead).
 */
async function recordEvent(
  kube: NodeClient,
  plan: NodePlan,
  node: SlimNode,
  event: PlannedEvent,
): Promise<void> {
  try {
    await kube.createEvent({ node, ...event });
  } catch (err) {
    plan.notes.push(`event ${event.reason} not recorded: ${(err as Error).message}`);
  }
}

export function resultOf(plan: NodePlan): NodeResult {
  if (plan.skipped) return 'skipped';
  if (plan.deletion && !plan.error) return 'deleted';
  // Before a failure: a held Node's news is the hold (a tainted one also "has no instance").
  if (plan.held) return 'held';
  if (plan.error) return 'failed';
  if (plan.waiting) return 'waiting';
  if (plan.events.some((e) => e.reason === syncedEvent.reason)) return 'initialized';
  if (plan.patch || plan.addresses || plan.instanceGroups) return 'updated';
  return 'unchanged';
}

export function buildReport(
  provider: Provider,
  plans: NodePlan[],
  state: ClusterState,
  dryRun: boolean,
  hold?: PassHold,
): PassReport {
  const summary = {
    total: plans.length,
    initialized: 0,
    updated: 0,
    deleted: 0,
    held: 0,
    waiting: 0,
    unchanged: 0,
    skipped: 0,
    unknown: 0,
    failed: 0,
  };
  const nodesByName = new Map(state.nodes.map((n) => [n.metadata?.name ?? '', n]));
  const nodes = plans.map((plan): NodeReport => {
    const unknown = state.listingError !== undefined && plan.error === state.listingError;
    const result: PassResult = unknown ? 'unknown' : resultOf(plan);
    summary[result]++;
    const node = nodesByName.get(plan.name);
    const instance = node && !plan.skipped ? findInstance(node, state.index) : undefined;
    const labels = node?.metadata?.labels ?? {};
    return {
      name: plan.name,
      result,
      changes: plan.changes,
      ...(unknown
        ? { reason: NOT_COMPARED }
        : reasonOf(plan, result as NodeResult)
          ? { reason: reasonOf(plan, result as NodeResult) }
          : {}),
      ...(plan.notes.length > 0 ? { notes: plan.notes } : {}),
      providerID: plan.patch?.providerID ?? node?.spec?.providerID,
      instanceType: instance?.type ?? labels[LABEL_PAIRS.instanceType.ga],
      zone: instance?.zone ?? labels[LABEL_PAIRS.zone.ga],
    };
  });
  return {
    provider: provider.name,
    dryRun,
    nodes,
    summary,
    cloudInstances: state.index.size,
    ...(state.listingError ? { listingError: state.listingError } : {}),
    ...(hold ? { hold } : {}),
  };
}

function reasonOf(plan: NodePlan, result: NodeResult): string | undefined {
  if (result === 'held') return `deletion held: ${plan.held}`;
  if (result === 'waiting') return plan.waiting;
  return plan.error ?? plan.skipped;
}

/**
 * read → plan → brake → confirm → apply (unless dry-run), for callers that need no progress display.
 */
export async function runNodesPass(
  kube: NodeClient,
  provider: Provider,
  options: PassOptions,
): Promise<PassReport> {
  const state = await readState(kube, provider);
  const recent = await readRecentDeletions(kube);
  const clock = options.now ? undefined : serverClock(recent, monotonicMs);
  const pass = clock ? { ...options, now: clock } : options;
  let plans = planPass(state, provider, pass);
  let verdict = judgePass(state, provider, recent, pass);
  await confirmBraked(plans, provider, verdict, pass);
  if (!pass.dryRun) verdict = (await recordAhead(plans, kube, state, provider, pass)) ?? verdict;
  const hold = await tellHeld(plans, kube, verdict, state.nodes, pass);
  if (!pass.dryRun) plans = await applyPlans(plans, state, kube, provider, pass);
  return buildReport(provider, plans, state, options.dryRun, hold);
}
