import type { ServiceClient, SlimService } from '../kube/services.js';
import {
  ANNOTATION_ADOPTED_LOAD_BALANCER,
  EVENT_DELETED_LOAD_BALANCER,
  EVENT_DELETING_LOAD_BALANCER,
  EVENT_ENSURED_LOAD_BALANCER,
  EVENT_ENSURING_LOAD_BALANCER,
  EVENT_UNAVAILABLE_LOAD_BALANCER,
  EVENT_UPDATED_LOAD_BALANCER,
  FINALIZER_LOAD_BALANCER_CLEANUP,
  SOURCE_SERVICE_CONTROLLER,
} from '../kube/well-known.js';
import { InvalidConfigError, ProvisioningError } from '../providers/errors.js';
import { parseProviderID } from '../providers/provider-id.js';
import type {
  ForeignLoadBalancer,
  LoadBalancerClaims,
  LoadBalancerNode,
  LoadBalancerRequest,
  LoadBalancers,
} from '../providers/types.js';
import {
  annotationChanges,
  describeRequest,
  hasCleanupFinalizer,
  loadBalancerName,
  needsCleanup,
  type ServiceRules,
  sameIngress,
  wantsLoadBalancer,
} from './service.js';

/**
 * Applies the service controller's rules to one Service (reference: syncLoadBalancerIfNeeded).
 * Throws on any failure; the caller records SyncLoadBalancerFailed and retries with backoff.
 */

export interface ServiceSyncDeps {
  client: ServiceClient;
  balancers: LoadBalancers;
  rules: ServiceRules;
  signal?: AbortSignal;
  /** Every Service of the cluster as last seen (the informer's store): who else claims a load balancer. */
  services?: () => Iterable<SlimService>;
  /**
   * Every Node of the cluster, backend or not (excluded, draining): what an adopted load balancer may
   * balance to. Without it, the backends of the request.
   */
  nodes?: () => Iterable<{ providerID: string }>;
}

export interface ServiceSyncResult {
  result: 'ensured' | 'deleted' | 'unchanged' | 'ignored';
  /** Annotations the provider keeps on the Service (their changes are our own writes). */
  managedAnnotations: string[];
}

export interface ServiceSyncOptions {
  /**
   * Record EnsuringLoadBalancer / EnsuredLoadBalancer even when nothing changes: true when the sync
   * comes from a change of the Service, false for the start-up pass over Services that already have
   * their load balancer (a restart writes nothing to an unchanged cluster).
   */
  announce: boolean;
  /**
   * Told which annotations the provider keeps on the Service before they are written, so that the
   * watch event of that write is known as our own.
   */
  onManagedAnnotations?: (keys: string[]) => void;
  /** Why no Node is a backend, when the Service has not been told yet (once, not at every retry). */
  noBackends?: string;
}

const event = (type: 'Normal' | 'Warning', reason: string, message: string) => ({
  type,
  reason,
  message,
  component: SOURCE_SERVICE_CONTROLLER,
});

export async function syncService(
  svc: SlimService,
  backends: LoadBalancerNode[],
  deps: ServiceSyncDeps,
  options: ServiceSyncOptions,
): Promise<ServiceSyncResult> {
  if (needsCleanup(svc, deps.rules)) return cleanUp(svc, backends, deps);
  if (!wantsLoadBalancer(svc, deps.rules) || svc.deleting)
    return { result: 'ignored', managedAnnotations: [] };

  const { client, balancers, rules, signal } = deps;
  const { request, refused } = await checkHandOver(describeRequest(svc, backends, rules), deps);
  if (refused) throw new InvalidConfigError(refused);
  // Quiet only for a Service that already has everything: a new one is always announced.
  const announce = options.announce || !hasCleanupFinalizer(svc) || svc.ingress.length === 0;
  if (announce) {
    await client.recordEvent(svc, event('Normal', EVENT_ENSURING_LOAD_BALANCER, 'Ensuring load balancer'));
  }
  if (!hasCleanupFinalizer(svc)) {
    // Before the cloud is asked: a Service can then never be deleted while its load balancer lives on.
    await client.patchStatus(
      svc,
      { metadata: { finalizers: [...svc.finalizers, FINALIZER_LOAD_BALANCER_CLEANUP] } },
      { conditional: true },
    );
  }
  if (options.noBackends) await client.recordEvent(svc, noBackendsEvent(options.noBackends));
  const adopted = await adoptOfficial(request, deps);
  let status: Awaited<ReturnType<LoadBalancers['ensure']>>;
  try {
    status = await balancers.ensure(request, signal);
  } catch (err) {
    // Created but not ready: the Service claims it now, not only once it is active.
    if (err instanceof ProvisioningError)
      await recordClaim(svc, { ...err.annotations, ...adopted }, deps, options);
    throw err;
  }
  const kept = { ...status.annotations, ...adopted };
  options.onManagedAnnotations?.(Object.keys(kept));
  const annotations = annotationChanges(svc, kept);
  const ingressChanged = !sameIngress(svc.ingress, status.ingress);
  if (ingressChanged || Object.keys(annotations).length > 0) {
    await client.patchStatus(
      svc,
      {
        ...(Object.keys(annotations).length > 0 ? { metadata: { annotations } } : {}),
        ...(ingressChanged ? { status: { loadBalancer: { ingress: status.ingress } } } : {}),
      },
      { conditional: false },
    );
  }
  if (announce || ingressChanged) {
    await client.recordEvent(svc, event('Normal', EVENT_ENSURED_LOAD_BALANCER, 'Ensured load balancer'));
  }
  const changed = ingressChanged || Object.keys(annotations).length > 0 || announce;
  return {
    result: changed ? 'ensured' : 'unchanged',
    managedAnnotations: Object.keys(kept),
  };
}

async function recordClaim(
  svc: SlimService,
  kept: Record<string, string>,
  deps: ServiceSyncDeps,
  options: ServiceSyncOptions,
): Promise<void> {
  const annotations = annotationChanges(svc, kept);
  if (Object.keys(annotations).length === 0) return;
  options.onManagedAnnotations?.(Object.keys(kept));
  await deps.client.patchStatus(svc, { metadata: { annotations } }, { conditional: false });
}

/**
 * The annotation `ccm.io/adopted-load-balancer` alone hands nothing over: anyone who may edit the
 * Service can write it. ccm acts on the load balancer it names only when `ccm migrate --yes` recorded
 * that hand-over for this very Service in kube-system (hand-overs.ts), or, with --adopt-official, when
 * the official controller's naming and this cluster's identity find that same load balancer for it.
 * Otherwise the request goes on without it (ccm then sees only load balancers with its own tag), and
 * `refused` says why in one line.
 */
async function checkHandOver(
  request: LoadBalancerRequest,
  deps: ServiceSyncDeps,
): Promise<{ request: LoadBalancerRequest; refused?: string; recorded?: true }> {
  const handOvers = await deps.client.handOvers();
  request.claims = claimsOf(request, handOvers, deps.services);
  const id = request.adoptedID;
  if (!id) return { request };
  if (handOvers.get(request.service.uid) === id) return { request, recorded: true };
  const { balancers, rules, signal } = deps;
  const { adoptedID: _, ...unadopted } = request;
  if (rules.adoptOfficial && balancers.adoption) {
    const found = await balancers.adoption.findOfficial(
      [unadopted],
      rules.adoptOfficial.clusterName,
      signal,
      {
        withBackends: true,
      },
    );
    const lb = found.get(request.service.uid);
    if (lb?.id === id && adoptable(lb, clusterNodes(request, deps))) return { request };
  }
  return {
    request: unadopted,
    refused: `Service annotation ${ANNOTATION_ADOPTED_LOAD_BALANCER}=${id} names a load balancer that was not handed to ccm for this Service (ccm migrate --yes records each hand-over in kube-system${rules.adoptOfficial ? '; --adopt-official did not find it by the official naming for this cluster' : ''}): ccm neither changes nor deletes it; remove the annotation`,
  };
}

const addresses = (ingress: SlimService['ingress']) =>
  ingress.flatMap((i) => [i.ip, i.hostname].filter((a): a is string => Boolean(a)));

export function claimsOf(
  request: LoadBalancerRequest,
  handOvers: ReadonlyMap<string, string>,
  services: ServiceSyncDeps['services'],
): LoadBalancerClaims {
  const all = [...(services?.() ?? [])];
  const own = all.find((s) => s.uid === request.service.uid);
  return {
    ownIngress: own ? addresses(own.ingress) : [],
    others: all
      .filter((s) => s.uid !== request.service.uid)
      .map((s) => {
        const handedOver = handOvers.get(s.uid);
        return {
          service: `${s.namespace}/${s.name}`,
          uid: s.uid,
          name: loadBalancerName(s.uid),
          annotations: s.annotations,
          ingress: addresses(s.ingress),
          ...(handedOver ? { handedOver } : {}),
        };
      }),
  };
}

const clusterNodes = (request: LoadBalancerRequest, deps: ServiceSyncDeps) =>
  deps.nodes ? [...deps.nodes()] : request.nodes;

/**
 * What --adopt-official may take besides the official naming: an official name is no identity (every
 * cluster run with the official default --cluster-name, "kubernetes" or "brightbox-k8s", makes the
 * same names, and a do-loadbalancer-name is whatever a Service asks), and Brightbox has no tags. So the
 * load balancer must also balance to this cluster only: at least one backend, and every backend one
 * of this cluster's Nodes, by provider ID (OpenStack's members, which are addresses, are first traced
 * to the servers whose ports hold them on the member's subnet). This holds at every sync, not only the
 * first: the annotation that records the adoption is anyone's to write. A backend whose server is gone
 * (`departed`, a Node scaled down) is no one's, so it neither cancels the adoption nor counts for it.
 */
export function adoptable(lb: ForeignLoadBalancer, nodes: readonly { providerID: string }[]): boolean {
  if (lb.refusal || !lb.backends || lb.backends.length === 0) return false;
  const key = (value: string) => {
    const id = parseProviderID(value);
    return id ? `${id.scheme}://${id.id}` : value;
  };
  const ours = new Set(nodes.flatMap((n) => (n.providerID ? [key(n.providerID)] : [])));
  return lb.backends.every((b) => ours.has(key(b)));
}

/**
 * With --adopt-official, a Service that has no load balancer of ccm's and none handed over yet takes
 * the official controller's (found by its naming and tags): the request then names it, and the
 * Service records it (the annotation `ccm migrate` writes), so it is looked for only once.
 */
async function adoptOfficial(
  request: LoadBalancerRequest,
  deps: ServiceSyncDeps,
): Promise<Record<string, string> | undefined> {
  const { balancers, rules, signal } = deps;
  if (!rules.adoptOfficial || !balancers.adoption || request.adoptedID) return undefined;
  if (await balancers.get(request, signal)) return undefined;
  const found = await balancers.adoption.findOfficial([request], rules.adoptOfficial.clusterName, signal, {
    withBackends: true,
  });
  const lb = found.get(request.service.uid);
  if (!lb || !adoptable(lb, clusterNodes(request, deps))) return undefined;
  request.adoptedID = lb.id;
  return { [ANNOTATION_ADOPTED_LOAD_BALANCER]: lb.id };
}

/**
 * The request a deletion acts on: an adopted load balancer that `ccm migrate --yes` did not record
 * (one --adopt-official found) is left out, so only what ccm built for the Service is deleted. ccm did
 * not create it, and the official naming and backends that found it are no proof that the cluster
 * owns it (a load balancer made by hand in front of the Nodes satisfies both); `left` says which.
 */
async function deletionRequest(
  svc: SlimService,
  backends: LoadBalancerNode[],
  deps: ServiceSyncDeps,
): Promise<{ request: LoadBalancerRequest; left?: string }> {
  // The backends only tell an --adopt-official load balancer apart; the cloud is not asked to change them.
  const { request, recorded } = await checkHandOver(
    { ...describeRequest(svc, backends, deps.rules), deleting: true },
    deps,
  );
  if (!request.adoptedID || recorded) return { request };
  const { adoptedID: left, ...own } = request;
  return { request: own, left };
}

/** The load balancer goes first; only then the finalizer and the status (one write). */
async function cleanUp(
  svc: SlimService,
  backends: LoadBalancerNode[],
  deps: ServiceSyncDeps,
): Promise<ServiceSyncResult> {
  const { client, balancers, signal } = deps;
  const { request, left } = await deletionRequest(svc, backends, deps);
  if (left) {
    await client.recordEvent(
      svc,
      event(
        'Warning',
        EVENT_DELETING_LOAD_BALANCER,
        `load balancer ${left} was taken over with --adopt-official, and no ccm migrate --yes recorded its hand-over: ccm did not create it and does not delete it; delete it yourself if nothing else uses it`,
      ),
    );
  }
  const ignored = balancers.ignoredOnDelete?.(request);
  if (ignored) await client.recordEvent(svc, event('Warning', EVENT_DELETING_LOAD_BALANCER, ignored));
  const existing = await balancers.get(request, signal);
  if (existing) {
    await client.recordEvent(svc, event('Normal', EVENT_DELETING_LOAD_BALANCER, 'Deleting load balancer'));
    await balancers.delete(request, signal);
  }
  await client.patchStatus(
    svc,
    {
      metadata: { finalizers: svc.finalizers.filter((f) => f !== FINALIZER_LOAD_BALANCER_CLEANUP) },
      ...(svc.ingress.length > 0 ? { status: { loadBalancer: { ingress: null } } } : {}),
    },
    { conditional: true },
  );
  await client.recordEvent(svc, event('Normal', EVENT_DELETED_LOAD_BALANCER, 'Deleted load balancer'));
  return { result: 'deleted', managedAnnotations: [] };
}

/** Upstream's Warning with its words, and why. */
function noBackendsEvent(why: string) {
  return event(
    'Warning',
    EVENT_UNAVAILABLE_LOAD_BALANCER,
    `There are no available nodes for LoadBalancer: ${why}`,
  );
}

/** Only the backend set changed (reference: updateLoadBalancerHosts). */
export async function syncBackends(
  svc: SlimService,
  backends: LoadBalancerNode[],
  deps: ServiceSyncDeps,
  noBackends?: string,
): Promise<void> {
  if (noBackends) await deps.client.recordEvent(svc, noBackendsEvent(noBackends));
  const { request } = await checkHandOver(describeRequest(svc, backends, deps.rules), deps);
  await deps.balancers.updateNodes(request, deps.signal);
  await deps.client.recordEvent(
    svc,
    event('Normal', EVENT_UPDATED_LOAD_BALANCER, 'Updated load balancer with new hosts'),
  );
}

/**
 * A Service that vanished without our finalizer (someone removed it by hand): its load balancer is
 * still deleted, from the last state we saw, with nothing to write to Kubernetes.
 */
export async function deleteOrphaned(
  svc: SlimService,
  backends: LoadBalancerNode[],
  deps: ServiceSyncDeps,
): Promise<void> {
  const { request } = await deletionRequest(svc, backends, deps);
  if (await deps.balancers.get(request, deps.signal)) await deps.balancers.delete(request, deps.signal);
}
