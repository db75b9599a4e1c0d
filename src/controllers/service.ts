import type { SlimService } from '../kube/services.js';
import {
  ANNOTATION_ADOPTED_LOAD_BALANCER,
  FINALIZER_LOAD_BALANCER_CLEANUP,
  LABEL_EXCLUDE_FROM_LOAD_BALANCERS,
  TAINT_TO_BE_DELETED_BY_AUTOSCALER,
} from '../kube/well-known.js';
import type {
  LoadBalancerIngress,
  LoadBalancerNode,
  LoadBalancerRequest,
  NodeAddress,
} from '../providers/types.js';

/**
 * The service controller's rules (reference: controllers/service/controller.go), as pure functions:
 * which Services it owns, which Nodes are backends, when a change needs the cloud, and what the
 * Service's status should become. service-sync.ts applies them.
 */

/** What the backend rules read of a Node. */
export interface BackendCandidate {
  name: string;
  providerID: string;
  labels: Readonly<Record<string, string>>;
  taintKeys: readonly string[];
  deleting: boolean;
  addresses: readonly NodeAddress[];
}

export interface ServiceRules {
  /** `--load-balancer-class`: the class this controller owns besides Services without one. */
  loadBalancerClass?: string;
  clusterID: string;
  /**
   * `--adopt-official`: a Service without a load balancer of ccm's takes over the one the official
   * controller built for it, found by that controller's naming and tags for this cluster name.
   */
  adoptOfficial?: { clusterName: string };
}

/** A Service of type LoadBalancer that is ours: no class, or the class we were told to own. */
export function wantsLoadBalancer(svc: SlimService, rules: ServiceRules): boolean {
  if (svc.type !== 'LoadBalancer') return false;
  return svc.loadBalancerClass === undefined || svc.loadBalancerClass === rules.loadBalancerClass;
}

export function hasCleanupFinalizer(svc: SlimService): boolean {
  return svc.finalizers.includes(FINALIZER_LOAD_BALANCER_CLEANUP);
}

/** Our finalizer is on a Service that is going away or no longer wants our load balancer. */
export function needsCleanup(svc: SlimService, rules: ServiceRules): boolean {
  return hasCleanupFinalizer(svc) && (svc.deleting || !wantsLoadBalancer(svc, rules));
}

/** Parses like Go's strconv.ParseBool: only these spellings mean false. */
function parsesAsFalse(value: string): boolean {
  return ['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value);
}

/**
 * A load balancer backend (the reference's stable node set): not being deleted, not excluded by label,
 * with a provider ID, not tainted by the cluster autoscaler. Readiness is not used (upstream since 1.32).
 */
export function isBackend(node: BackendCandidate): boolean {
  const exclude = node.labels[LABEL_EXCLUDE_FROM_LOAD_BALANCERS];
  if (exclude !== undefined && !parsesAsFalse(exclude)) return false;
  if (node.deleting || !node.providerID) return false;
  return !node.taintKeys.includes(TAINT_TO_BE_DELETED_BY_AUTOSCALER);
}

/** Why no Node is a backend, in one line: the Nodes each rule of isBackend leaves out. */
export function whyNoBackends(nodes: Iterable<BackendCandidate>): string {
  const left: Record<string, string[]> = {};
  const add = (why: string, name: string) => {
    left[why] = [...(left[why] ?? []), name];
  };
  for (const node of nodes) {
    const exclude = node.labels[LABEL_EXCLUDE_FROM_LOAD_BALANCERS];
    if (exclude !== undefined && !parsesAsFalse(exclude))
      add(`labelled ${LABEL_EXCLUDE_FROM_LOAD_BALANCERS} (kubeadm labels control-plane Nodes so)`, node.name);
    else if (node.deleting) add('being deleted', node.name);
    else if (!node.providerID) add('without a provider ID (not initialised yet)', node.name);
    else if (node.taintKeys.includes(TAINT_TO_BE_DELETED_BY_AUTOSCALER))
      add(`tainted ${TAINT_TO_BE_DELETED_BY_AUTOSCALER}`, node.name);
  }
  const parts = Object.entries(left).map(([why, names]) => {
    const shown = names.slice(0, 5).join(', ') + (names.length > 5 ? ` and ${names.length - 5} more` : '');
    return `${names.length} Node(s) ${why}: ${shown}`;
  });
  return parts.length > 0 ? parts.join('; ') : 'the cluster has no Nodes';
}

export function backendNodes(nodes: Iterable<BackendCandidate>): LoadBalancerNode[] {
  const backends: LoadBalancerNode[] = [];
  for (const node of nodes) {
    if (isBackend(node)) {
      backends.push({ name: node.name, providerID: node.providerID, addresses: [...node.addresses] });
    }
  }
  return backends.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The names of a backend set, as one comparable string. */
export function backendSetKey(nodes: readonly LoadBalancerNode[]): string {
  return nodes.map((n) => `${n.name}=${n.providerID}@${addressKey(n.addresses)}`).join(',');
}

const addressKey = (addresses: readonly NodeAddress[]) =>
  addresses
    .map((a) => `${a.type}/${a.address}`)
    .sort()
    .join(' ');

/**
 * Whether a Node change can change any backend set (reference: shouldSyncUpdatedNode, stable set),
 * or a backend's addresses: clouds that balance to addresses (OpenStack, Brightbox) need them, and a
 * new Node's addresses are written just after its provider ID, which already made it a backend.
 */
export function nodeChangeMatters(
  old: BackendCandidate | undefined,
  now: BackendCandidate | undefined,
): boolean {
  if (!old || !now) return true;
  if (isBackend(old) !== isBackend(now) || old.providerID !== now.providerID) return true;
  return isBackend(now) && addressKey(old.addresses) !== addressKey(now.addresses);
}

/** The reference's default cloud-side name: "a" + the UID without dashes, cut to 32 characters. */
export function loadBalancerName(uid: string): string {
  return `a${uid.replace(/-/g, '')}`.slice(0, 32);
}

export function describeRequest(
  svc: SlimService,
  nodes: LoadBalancerNode[],
  rules: ServiceRules,
): LoadBalancerRequest {
  return {
    name: loadBalancerName(svc.uid),
    clusterID: rules.clusterID,
    service: {
      namespace: svc.namespace,
      name: svc.name,
      uid: svc.uid,
      annotations: svc.annotations,
      ...(svc.loadBalancerIP ? { loadBalancerIP: svc.loadBalancerIP } : {}),
      loadBalancerSourceRanges: svc.loadBalancerSourceRanges,
      externalTrafficPolicy: svc.externalTrafficPolicy,
      ...(svc.healthCheckNodePort ? { healthCheckNodePort: svc.healthCheckNodePort } : {}),
      sessionAffinity: svc.sessionAffinity,
      ipFamilies: svc.ipFamilies,
    },
    ports: svc.ports.map(({ name, protocol, port, nodePort }) => ({ name, protocol, port, nodePort })),
    nodes,
    ...(svc.annotations[ANNOTATION_ADOPTED_LOAD_BALANCER]
      ? { adoptedID: svc.annotations[ANNOTATION_ADOPTED_LOAD_BALANCER] }
      : {}),
  };
}

/**
 * Whether an update of a Service needs the cloud (reference: needsUpdate). A change of status,
 * finalizers or resourceVersion alone (our own writes) does not.
 */
export function needsSync(old: SlimService | undefined, now: SlimService, rules: ServiceRules): boolean {
  if (!old) return wantsLoadBalancer(now, rules) || needsCleanup(now, rules);
  if (now.deleting !== old.deleting) return true;
  const wantedBefore = wantsLoadBalancer(old, rules);
  const wantsNow = wantsLoadBalancer(now, rules);
  if (!wantedBefore && !wantsNow) return needsCleanup(now, rules);
  if (wantedBefore !== wantsNow) return true;
  return (
    old.uid !== now.uid ||
    !sameJson(old.ports, now.ports) ||
    old.sessionAffinity !== now.sessionAffinity ||
    old.loadBalancerIP !== now.loadBalancerIP ||
    !sameJson(old.loadBalancerSourceRanges, now.loadBalancerSourceRanges) ||
    !sameJson(old.externalIPs, now.externalIPs) ||
    !sameJson(sortedEntries(old.annotations), sortedEntries(now.annotations)) ||
    old.externalTrafficPolicy !== now.externalTrafficPolicy ||
    old.healthCheckNodePort !== now.healthCheckNodePort ||
    old.ipFamilies.length !== now.ipFamilies.length
  );
}

export function sameIngress(a: readonly LoadBalancerIngress[], b: readonly LoadBalancerIngress[]): boolean {
  const norm = (list: readonly LoadBalancerIngress[]) =>
    list.map((i) => `${i.ip ?? ''}|${i.hostname ?? ''}|${i.ipMode ?? ''}`).sort();
  return sameJson(norm(a), norm(b));
}

/** Annotations the provider wants that the Service does not carry yet (or carries with another value). */
export function annotationChanges(
  svc: SlimService,
  wanted: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  const changes: Record<string, string> = {};
  for (const [key, value] of Object.entries(wanted ?? {})) {
    if (svc.annotations[key] !== value) changes[key] = value;
  }
  return changes;
}

function sortedEntries(record: Readonly<Record<string, string>>): [string, string][] {
  return Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
