/**
 * The deletion brake: whether the Nodes whose instances a listing lost may be deleted now. Pure: the
 * callers (`ccm nodes init`, `ccm run`'s lifecycle controller) read the Nodes, the listing and the
 * deletions ccm made lately, and write what it decides.
 *
 * It stands where kube-controller-manager's node lifecycle controller has its zone states
 * (kubernetes/kubernetes pkg/controller/nodelifecycle/node_lifecycle_controller.go, ComputeZoneState
 * and ReducedQPSFunc; the flags in cmd/kube-controller-manager/app/options/nodelifecyclecontroller.go):
 * - a zone is partially disrupted when at least --unhealthy-zone-threshold (0.55) of its Nodes are
 *   NotReady (and more than 2); then it evicts at --secondary-node-eviction-rate (0.01 a second)
 *   above --large-cluster-size-threshold (50) Nodes, and not at all below;
 * - otherwise it evicts at --node-eviction-rate (0.1 a second), burst 1
 *   (pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go, EvictionRateLimiterBurst).
 * Here the share is of Nodes the listing lost, not of NotReady ones, over the whole cluster rather
 * than a zone, and counted over a sliding window: what a lost share means is a wrong account or a
 * broken listing, which no zone boundary contains. Above the share nothing is deleted, at any size.
 */
import type { SlimNode } from '../kube/slim-node.js';
import { ANNOTATION_ALLOW_MASS_DELETION } from '../kube/well-known.js';
import { nodeCrypto } from '../node-modules.js';
import { parseProviderID } from '../providers/provider-id.js';
import type { CloudView } from './cloud-view.js';
import { isExcluded } from './lifecycle.js';

export interface BrakeOptions {
  /** --max-deletion-ratio: above this share of the managed Nodes lost at once, none is deleted. */
  maxRatio: number;
  /** --node-deletion-rate: deletions a second once the burst is spent. */
  rate: number;
  /** Deletions allowed back to back before the rate applies. */
  burst: number;
  /** How far back the deletions ccm made count, towards the share and the rate. */
  windowMs: number;
}

/** Upstream's --unhealthy-zone-threshold. */
export const DEFAULT_MAX_DELETION_RATIO = 0.55;
/** Upstream's --node-eviction-rate, the rate of a healthy zone. */
export const DEFAULT_NODE_DELETION_RATE = 0.1;
/**
 * Three, not upstream's 1: a deletion here is already confirmed by the cloud instance by instance, and
 * a Node or two lost together (a pool scaled down by hand) should not wait 10 s each.
 */
export const DELETION_BURST = 3;
/**
 * Ten minutes: longer than anything between an instance's loss and its Node's deletion (a NotReady
 * Node after 40-50 s, a listing at most every minute while a Node is NotReady, a CronJob every 5
 * minutes), so one outage counts as one, whoever confirms it and in how many passes; well inside the
 * API server's one hour of Events (--event-ttl), which is where the deletions are read back from.
 */
export const DELETION_WINDOW_MS = 10 * 60_000;
/** The rate at which the burst refills within the window: slower would forget deletions it still counts. */
export const MIN_NODE_DELETION_RATE = DELETION_BURST / (DELETION_WINDOW_MS / 1000);
/**
 * A thousand a second: faster is no rate at all (a pass deletes as fast as the API server answers),
 * and an absurd value (Infinity, from 400 digits) made NaN of the waits.
 */
export const MAX_NODE_DELETION_RATE = 1000;

export const DEFAULT_BRAKE_OPTIONS: BrakeOptions = {
  maxRatio: DEFAULT_MAX_DELETION_RATIO,
  rate: DEFAULT_NODE_DELETION_RATE,
  burst: DELETION_BURST,
  windowMs: DELETION_WINDOW_MS,
};

export interface BrakeNode {
  name: string;
  uid: string;
  providerID: string;
}

/** A Node deletion ccm made (read from the record of deletions, or remembered by this process). */
export interface RecentDeletion {
  uid: string;
  name: string;
  /** The Node's provider ID (what a release names). */
  providerID?: string;
  /** The API server's clock, ms. */
  at: number;
  /** The id of the hold an operator released to allow it: such a deletion counts towards nothing. */
  release?: string;
}

export interface BrakeInput {
  /** Nodes of this cloud's provider-ID scheme, not excluded from lifecycle. */
  managed: readonly BrakeNode[];
  /** Of those, the ones whose instance a trusted listing lost (past their grace period), Ready or not. */
  missing: readonly BrakeNode[];
  deletions: readonly RecentDeletion[];
  /** Why the recent deletions could not be read: then nothing is deleted, and nothing is held. */
  deletionsError?: string;
  /** The API server's clock, ms (the deletions' clock). */
  now: number;
  /** A hold the operator released: its Nodes are deleted without the brake. */
  release?: { id: string; providerIDs: ReadonlySet<string> };
  options: BrakeOptions;
}

export interface BrakeVerdict {
  /** The hold's id: `<count>-<hash>` of the counted missing Nodes' provider IDs (what a release names). */
  id: string;
  /** The counted missing Nodes (those a release does not cover). */
  counted: BrakeNode[];
  /** Missing Nodes plus deletions in the window, against managed Nodes plus those deletions. */
  affected: number;
  total: number;
  /** Why nothing is deleted; undefined when deletions may go ahead. */
  held?: string;
  /**
   * Why nothing is deleted this pass though nothing is held: the record of the window's deletions
   * could not be read, so no share can be judged. No hold, no Event: the next pass reads again.
   */
  unjudged?: string;
  /** Deletions the rate allows now (outside a hold). */
  allowedNow: number;
  /** When the next one is allowed, from now (0: now). */
  nextInMs: number;
  /** Missing Nodes a release covers, by provider ID: deleted without the brake. */
  released: ReadonlySet<string>;
  /** The times of the window's deletions that counted (not released ones), for the rate. */
  recent: number[];
}

/** `<count>-<8 hex digits>`: the same set of provider IDs always gives the same id, another set another. */
export function holdId(providerIDs: readonly string[]): string {
  const text = [...providerIDs].sort().join('\n');
  return `${providerIDs.length}-${nodeCrypto().hash('sha256', text, 'hex').slice(0, 8)}`;
}

function percent(share: number): string {
  return `${Math.round(share * 100)}%`;
}

function minutes(ms: number): string {
  return ms % 60_000 === 0 ? `${ms / 60_000}m` : `${Math.round(ms / 1000)}s`;
}

export function brakeVerdict(input: BrakeInput): BrakeVerdict {
  const { options, now } = input;
  // A deletion whose time lies ahead of `now` is inside the window: no clock can push one out early.
  const recent = input.deletions.filter((d) => d.at > now - options.windowMs);
  const counting = recent.filter((d) => d.release === undefined);
  // A Node deleted a moment ago may still be in the caller's list: counted once, as a deletion.
  const deleted = new Set(recent.map((d) => d.uid));
  const released = new Set(
    input.release
      ? input.missing.filter((n) => input.release?.providerIDs.has(n.providerID)).map((n) => n.providerID)
      : [],
  );
  const counted = input.missing.filter((n) => !deleted.has(n.uid) && !released.has(n.providerID));
  const managed = input.managed.filter((n) => !deleted.has(n.uid) && !released.has(n.providerID)).length;
  const affected = counted.length + counting.length;
  const total = managed + counting.length;
  const { allowedNow, nextInMs } = rateAllowance(
    counting.map((d) => d.at),
    now,
    options,
  );
  const verdict: BrakeVerdict = {
    id: holdId(counted.map((n) => n.providerID)),
    counted,
    affected,
    total,
    allowedNow,
    nextInMs,
    released,
    recent: counting.map((d) => d.at),
  };
  if (counted.length === 0) return verdict;
  const share = total > 0 ? affected / total : 1;
  const window = minutes(options.windowMs);
  if (input.deletionsError !== undefined) {
    verdict.unjudged = `not deleted this pass: the record of the last ${window}'s Node deletions could not be read (${input.deletionsError}), and without it no share can be judged`;
  } else if (affected > 1 && share > options.maxRatio) {
    const deletedNote = counting.length > 0 ? `, with ${counting.length} deleted in the last ${window}` : '';
    verdict.held = `the instances of ${affected} of ${total} Nodes (${percent(share)}${deletedNote}) are missing from the cloud listing, above --max-deletion-ratio ${options.maxRatio}`;
  }
  return verdict;
}

/**
 * A token bucket replayed from the deletions' times: `burst` tokens at the start of the window, one
 * back every 1/rate seconds. Derived from the times alone, so any process (a new leader, the next
 * CronJob run) reaches the same answer from the same Events.
 */
export function rateAllowance(
  times: readonly number[],
  now: number,
  options: Pick<BrakeOptions, 'rate' | 'burst' | 'windowMs'>,
): { allowedNow: number; nextInMs: number } {
  const { rate, burst, windowMs } = options;
  let tokens = burst;
  let last = now - windowMs;
  for (const at of [...times].sort((a, b) => a - b)) {
    const t = Math.min(Math.max(at, last), now);
    tokens = Math.min(burst, tokens + ((t - last) / 1000) * rate) - 1;
    last = t;
  }
  tokens = Math.min(burst, tokens + ((now - last) / 1000) * rate);
  // A rounding error must not hold back a token that is due.
  const whole = Math.floor(tokens + 1e-9);
  return {
    allowedNow: Math.max(0, whole),
    nextInMs: whole >= 1 ? 0 : Math.ceil(((1 - tokens) / rate) * 1000),
  };
}

export interface ManagedNodes {
  managed: BrakeNode[];
  missing: BrakeNode[];
}

function brakeNode(node: SlimNode): BrakeNode {
  return {
    name: node.metadata?.name ?? '',
    uid: node.metadata?.uid ?? '',
    providerID: node.spec?.providerID ?? '',
  };
}

/**
 * The Nodes the brake counts, from one listing: every Node of this cloud's scheme not excluded from
 * lifecycle, and of those the ones the listing lost, Ready or not. Only NotReady ones are ever
 * deleted (lifecycle.ts planLifecycle, as upstream's cloud node lifecycle controller, MonitorNodes,
 * skips every Node whose Ready condition is True), but Ready ones count towards the share, and both
 * commands report them as held: the kubelets of an outage turn NotReady over tens of seconds, and a
 * share of NotReady Nodes alone would let the burst delete the first 3 before it is reached. Nothing
 * is missing from a listing that cannot be trusted (failed, empty, or of another account): no Node
 * is deleted from one anyway.
 */
export function managedNodes(
  nodes: readonly SlimNode[],
  view: CloudView,
  scheme: string,
  now: Date,
  deletionGracePeriodMs: number,
): ManagedNodes {
  const managed: BrakeNode[] = [];
  const missing: BrakeNode[] = [];
  const trusted = view.listingError === undefined && view.index.size > 0 && view.listingKnowsCluster;
  for (const node of nodes) {
    const providerID = node.spec?.providerID;
    if (!providerID || parseProviderID(providerID)?.scheme !== scheme || isExcluded(node)) continue;
    const entry = brakeNode(node);
    managed.push(entry);
    if (!trusted) continue;
    const created = node.metadata?.creationTimestamp;
    if (!created || now.getTime() - Date.parse(created) < deletionGracePeriodMs) continue;
    const instance = view.index.byProviderID(providerID);
    if (!instance || instance.state === 'gone') missing.push(entry);
  }
  return { managed, missing };
}

/** The one command that releases a hold from anywhere: a `nodes init` pass that deletes exactly its Nodes. */
export function releaseCommand(id: string): string {
  return `ccm nodes init --allow-mass-deletion ${id}`;
}

/** What releases a hold for `ccm run`: the annotation on its credentials Secret. */
export function releaseAnnotation(secret: { namespace: string; name: string }, id: string): string {
  return `kubectl -n ${secret.namespace} annotate secret ${secret.name} ${ANNOTATION_ALLOW_MASS_DELETION}=${id} --overwrite`;
}

/** The message of the Warning Event on each held Node. */
export function heldEventMessage(verdict: BrakeVerdict, release: string): string {
  return `Deletion held (hold ${verdict.id}): ${verdict.held}. If these Nodes' instances are really gone (\`ccm nodes list\`), release it: ${release}`;
}

/**
 * Why a candidate waits, with when the rate lets the next deletion through: `deleted`, the deletions
 * since the verdict (a pass's own), are counted too.
 */
export function waitingReason(
  verdict: BrakeVerdict,
  options: BrakeOptions,
  now: number,
  deleted = 0,
): string {
  const times = [...verdict.recent, ...Array<number>(deleted).fill(now)];
  const next = Math.max(1, Math.ceil(rateAllowance(times, now, options).nextInMs / 1000));
  return `deletion waits for --node-deletion-rate ${options.rate}/s (${times.length} deleted in the last ${minutes(options.windowMs)}, ${options.burst} at most at once); the next in ${next}s`;
}

/**
 * Whether an operator's release id names this hold: the hold's id itself, or, once some of its Nodes
 * were deleted under that release (a restart of `ccm run` mid-release, a `nodes init` pass after the
 * annotation), the id of the Nodes still held together with those deleted under it: the same set.
 */
export function releaseNamesHold(
  id: string,
  verdict: BrakeVerdict,
  deletions: readonly RecentDeletion[],
): boolean {
  if (id === verdict.id) return true;
  const deletedUnder = deletions
    .filter((d) => d.release === id && d.providerID)
    .map((d) => d.providerID ?? '');
  if (deletedUnder.length === 0) return false;
  const set = new Set([...verdict.counted.map((n) => n.providerID), ...deletedUnder]);
  return holdId([...set]) === id;
}
