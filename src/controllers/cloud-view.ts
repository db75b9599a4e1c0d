import type { SlimNode } from '../kube/slim-node.js';
import { InvalidConfigError, isProviderError, UnauthorizedError } from '../providers/errors.js';
import { InstanceIndex } from '../providers/instance-index.js';
import type { Instance } from '../providers/types.js';

/**
 * What the plans know of the cloud: an index over one listing, or why there is none. `nodes init`
 * builds it from one listing per pass, `ccm run` from its cached listing (instance-cache.ts).
 */
export interface CloudView {
  index: InstanceIndex;
  /** Set when the listing failed: cloud-dependent work is skipped, and nothing is ever deleted. */
  listingError?: string;
  /** Whether any Node's provider ID appears in the listing (see LifecycleInput.listingKnowsCluster). */
  listingKnowsCluster: boolean;
  /** When the listing was started (monotonicMs() time), where a cache keeps it (instance-cache.ts). */
  listedAt?: number;
}

export type ListingOutcome = { instances: Instance[] } | { error: unknown };

export function isFatalCloudError(error: unknown): boolean {
  return error instanceof UnauthorizedError || error instanceof InvalidConfigError;
}

/** Why a Node has no verdict when the cloud listing failed: `unknown` in `nodes list` and `nodes init`. */
export const NOT_COMPARED = 'the cloud listing failed, so this Node was not compared with its instance';

export function listingErrorText(error: unknown): string {
  const message = isProviderError(error) || error instanceof Error ? error.message : String(error);
  return `cloud listing failed: ${message}`;
}

/**
 * Only a live instance (running or stopped) shows that the listing is this cluster's cloud: a record
 * of a deleted one, or a machine some copy of a Vagrantfile defines, proves nothing.
 */
export function knowsCluster(index: InstanceIndex, nodes: readonly SlimNode[]): boolean {
  return nodes.some((n) => {
    const instance = n.spec?.providerID ? index.byProviderID(n.spec.providerID) : undefined;
    return instance !== undefined && instance.state !== 'gone';
  });
}

/** The view of a listing's outcome. A failed listing is an empty index: nothing is read from it. */
export function viewOf(outcome: ListingOutcome, nodes: readonly SlimNode[]): CloudView {
  if ('error' in outcome) {
    return {
      index: new InstanceIndex([]),
      listingError: listingErrorText(outcome.error),
      listingKnowsCluster: false,
    };
  }
  const index = new InstanceIndex(outcome.instances);
  return { index, listingKnowsCluster: knowsCluster(index, nodes) };
}
