import type { SlimNode, SlimTaint } from '../kube/slim-node.js';
import {
  EVENT_SYNCED,
  LABEL_PAIRS,
  RESERVED_LABEL_DOMAINS,
  SOURCE_NODE_CONTROLLER,
  TAINT_UNINITIALIZED,
} from '../kube/well-known.js';
import type { Instance } from '../providers/types.js';
import { AddressMismatchError, checkProvidedIPs, desiredAddresses, sameAddresses } from './node-addresses.js';

/** The cloud node controller's decision for one Node: labels, provider ID, taints and addresses. */
export interface NodeSync {
  labels: Record<string, string>;
  providerID?: string;
  taints?: SlimTaint[];
  addresses?: Instance['addresses'];
  initialized: boolean;
  changes: string[];
  /** An initialised Node's addresses could not be refreshed (a bad provided node IP): reported, not fatal. */
  addressProblem?: string;
}

export function isUninitialized(node: SlimNode): boolean {
  return (node.spec?.taints ?? []).some((t) => t.key === TAINT_UNINITIALIZED);
}

function isReservedLabel(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash < 0) return false;
  const domain = key.slice(0, slash);
  return RESERVED_LABEL_DOMAINS.some((d) => domain === d || domain.endsWith(`.${d}`));
}

/**
 * Initialises a tainted Node from its instance (reference: syncNode). Throws AddressMismatchError when
 * the kubelet's provided node IP is not an address of the instance; the taint then stays.
 */
export function planInitialization(node: SlimNode, instance: Instance): NodeSync {
  const current = node.metadata?.labels ?? {};
  const labels: Record<string, string> = {};
  const changes: string[] = [];
  const setLabel = (key: string, value: string) => {
    if (value && current[key] !== value) labels[key] = value;
  };
  checkProvidedIPs(node, instance.addresses);
  const addresses = desiredAddresses(node, instance.addresses);

  let providerID: string | undefined;
  if (!node.spec?.providerID && !instance.providerID) {
    throw new Error('neither the Node nor its cloud instance has a provider ID; the Node stays tainted');
  }
  if (!node.spec?.providerID) {
    providerID = instance.providerID;
    changes.push(`set providerID ${providerID}`);
  }
  const values = { instanceType: instance.type, zone: instance.zone, region: instance.region };
  for (const [what, pair] of Object.entries(LABEL_PAIRS)) {
    const value = values[what as keyof typeof values];
    setLabel(pair.ga, value);
    setLabel(pair.beta, value);
  }
  for (const [key, value] of Object.entries(instance.labels)) {
    if (!isReservedLabel(key) && !(key in current)) labels[key] = value;
  }
  if (Object.keys(labels).length > 0)
    changes.push(
      `label ${Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  const taints = (node.spec?.taints ?? []).filter((t) => t.key !== TAINT_UNINITIALIZED);
  changes.push(`remove taint ${TAINT_UNINITIALIZED}`);
  const addressChange =
    addresses && !sameAddresses(node.status?.addresses ?? [], addresses) ? addresses : undefined;
  if (addressChange)
    changes.push(`set addresses ${addressChange.map((a) => `${a.type}=${a.address}`).join(' ')}`);
  return { labels, providerID, taints, addresses: addressChange, initialized: true, changes };
}

/**
 * An initialised Node: copy each beta label to its GA twin when they differ (reference:
 * reconcileNodeLabels), and refresh addresses from the instance when one is known. An address problem
 * (a provided node IP the instance lacks) only skips the addresses, as in the reference, which logs
 * it: the labels are still reconciled.
 */
export function planInitializedNode(node: SlimNode, instance: Instance | undefined): NodeSync {
  const current = node.metadata?.labels ?? {};
  const labels: Record<string, string> = {};
  const changes: string[] = [];
  for (const pair of Object.values(LABEL_PAIRS)) {
    const beta = current[pair.beta];
    if (beta !== undefined && current[pair.ga] !== beta) labels[pair.ga] = beta;
  }
  if (Object.keys(labels).length > 0)
    changes.push(
      `label ${Object.entries(labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`,
    );
  let addresses: Instance['addresses'] | undefined;
  let addressProblem: string | undefined;
  if (instance) {
    try {
      const desired = desiredAddresses(node, instance.addresses);
      if (desired && !sameAddresses(node.status?.addresses ?? [], desired)) {
        addresses = desired;
        changes.push(`set addresses ${desired.map((a) => `${a.type}=${a.address}`).join(' ')}`);
      }
    } catch (err) {
      if (!(err instanceof AddressMismatchError)) throw err;
      addressProblem = `addresses not updated: ${err.message}`;
    }
  }
  return { labels, addresses, initialized: false, changes, ...(addressProblem ? { addressProblem } : {}) };
}

export const syncedEvent = {
  type: 'Normal',
  reason: EVENT_SYNCED,
  message: 'Node synced successfully',
  component: SOURCE_NODE_CONTROLLER,
} as const;

export { AddressMismatchError };
