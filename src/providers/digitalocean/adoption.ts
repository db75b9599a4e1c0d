import { InvalidConfigError } from '../errors.js';
import type {
  ForeignLoadBalancer,
  LoadBalancerAdoption,
  LoadBalancerRequest,
  OfficialController,
} from '../types.js';
import { HOSTNAME, LOAD_BALANCER_ID, NAME, text } from './annotations.js';
import type { DigitalOceanClient } from './client.js';
import { listDroplets } from './instances.js';
import type { DoLoadBalancer } from './load-balancers.js';

/**
 * DigitalOcean's own controller, digitalocean/digitalocean-cloud-controller-manager:
 * - releases/digitalocean-cloud-controller-manager/v0.1.68.yml: Deployment
 *   `digitalocean-cloud-controller-manager` in kube-system, image
 *   digitalocean/digitalocean-cloud-controller-manager, `--leader-elect=false`, the token from Secret
 *   `digitalocean` key `access-token` (ccm reads that Secret as it is).
 * - cloud-controller-manager/do/lb_annotations.go: it records the load balancer's id on the Service as
 *   `kubernetes.digitalocean.com/load-balancer-id` (and its type as
 *   `service.beta.kubernetes.io/do-loadbalancer-type`).
 */
export const officialController: OfficialController = {
  id: 'digitalocean-cloud-controller-manager',
  description:
    "DigitalOcean's cloud controller (github.com/digitalocean/digitalocean-cloud-controller-manager)",
  workloads: ['digitalocean-cloud-controller-manager'],
  images: ['digitalocean-cloud-controller-manager'],
  // k8s.io/cloud-provider options/options.go: ResourceName "cloud-controller-manager", kube-system.
  leases: ['cloud-controller-manager'],
  leaderElectOffByDefault: true,
  secrets: ['digitalocean'],
  configMaps: [],
  secretCompatible: true,
  serviceAnnotations: [LOAD_BALANCER_ID, 'service.beta.kubernetes.io/do-loadbalancer-type'],
};

/**
 * How the official controller names and tags a load balancer (cloud-controller-manager/do/loadbalancers.go):
 * - getLoadBalancerName: the `service.beta.kubernetes.io/do-loadbalancer-name` annotation, else
 *   getLoadBalancerLegacyName, k8s.io/cloud-provider cloud.go DefaultLoadBalancerName ("a" + the
 *   Service UID without dashes, cut to 32), which is the request's `name` here too;
 *   findLoadBalancerByName also tries that legacy name.
 * - retrieveLoadBalancer: by the load-balancer-id annotation first, else by one of those names.
 * - buildLoadBalancerRequest: tags `k8s:<DO_CLUSTER_ID>` only when DO_CLUSTER_ID is set (DOKS sets it;
 *   a self-managed cluster usually does not, and its load balancers then carry no tag at all).
 *
 * ccm believes less than upstream: the annotations are the Service owner's to write, so a tenant could
 * name any load balancer of the account by its id or its name (one made by hand or by Terraform in
 * front of the cluster carries no tag either). A load balancer is the official one of a Service only
 * when it has the default name of that very Service (derived from its UID, which no one chooses), or
 * the Service's status, which only a controller writes, already shows its address (officialFor).
 */
export function doAdoption(client: DigitalOceanClient): LoadBalancerAdoption {
  return {
    async findOfficial(services, officialCluster, signal, options) {
      const all = await client.listAll<DoLoadBalancer>(
        'listing load balancers',
        '/v2/load_balancers',
        'load_balancers',
        signal,
      );
      const byId = new Map(all.map((lb) => [lb.id, lb]));
      const found = new Map<string, ForeignLoadBalancer>();
      let droplets: Set<number> | undefined;
      for (const req of services) {
        const official = officialOf(req, all, byId, officialCluster);
        if (official && options?.withBackends && official.lb.droplet_ids?.length)
          droplets ??= new Set((await listDroplets(client, signal)).map((d) => d.id));
        if (official)
          found.set(req.service.uid, {
            ...foreign(official.lb, req, options?.withBackends ? (droplets ?? new Set()) : undefined),
            ...(official.refusal ? { refusal: official.refusal } : {}),
          });
      }
      return found;
    },
    ownershipTags() {
      return {
        add: [],
        note: "DigitalOcean takes a load balancer's tags at creation only (godo's LoadBalancerRequest; the tags API tags droplets, images and volumes): the adoption is recorded on the Service",
      };
    },
    async setTags(lb, tags) {
      if (JSON.stringify(tags) !== JSON.stringify(lb.tags)) {
        throw new InvalidConfigError(
          `DigitalOcean cannot change the tags of load balancer ${lb.name} (${lb.id}) after its creation; ccm never asked it to`,
        );
      }
    },
  };
}

/**
 * With DO_CLUSTER_ID the official controller tags every load balancer `k8s:<it>`; without, it tags
 * none. A load balancer with another `k8s:` tag is another cluster's, or ccm's own (ccm names load
 * balancers by the same rule, and tags them `k8s:<its cluster id>`): never the official one.
 */
function taggedByOfficial(lb: DoLoadBalancer, officialCluster: string): boolean {
  const k8sTags = (lb.tags ?? []).filter((t) => t.startsWith('k8s:'));
  return officialCluster ? k8sTags.includes(`k8s:${officialCluster}`) : k8sTags.length === 0;
}

/**
 * A load balancer named by a Service's id annotation (anyone who may edit the Service can write it) is
 * that Service's only if it is named for it (`a`+UID, the reference's default name, or its
 * do-loadbalancer-name, the name ccm derives too) or `ccm migrate --yes` recorded it for this
 * Service's UID, and no other Service of the cluster claims it: by its ingress showing the address, by
 * a hand-over record, by the name derived from its UID, or by its own id annotation (unless this
 * Service's ingress already shows the address, or the load balancer has the name derived from this
 * Service's UID: a newcomer's annotation does not take away an established load balancer, nor one
 * still being built, whose id annotation its creator records right after the create). Upstream
 * believes the id annotation alone (cloud-controller-manager/do/loadbalancers.go retrieveLoadBalancer).
 * Returns why not, in one line, or undefined.
 */
export function claimRefusal(
  lb: DoLoadBalancer,
  req: LoadBalancerRequest,
  handedOver: boolean,
  /** The annotation by which the Service names it. */
  by: typeof LOAD_BALANCER_ID | typeof NAME = LOAD_BALANCER_ID,
): string | undefined {
  // Only the service controller sees the cluster's Services; `ccm migrate` shows its plan to the
  // operator, who confirms each hand-over.
  const claims = req.claims;
  if (!claims) return undefined;
  const svc = `Service ${req.service.namespace}/${req.service.name}`;
  const addresses = [lb.ip, lb.ipv6].filter((a): a is string => Boolean(a));
  // This Service's ingress already shows it: its own, renamed since by a new do-loadbalancer-name.
  const established = claims.ownIngress.some((a) => addresses.includes(a));
  const namedFor = lb.name === req.name || lb.name === text(req.service.annotations, NAME);
  if (!namedFor && !handedOver && !established) {
    return `${svc} names load balancer ${lb.name} (${lb.id}), which is not named for it (${req.name} or its ${NAME}) nor handed to it by ccm migrate --yes: ccm neither changes nor deletes it; remove the ${LOAD_BALANCER_ID} annotation`;
  }
  const ownName = lb.name === req.name;
  const other = claims.others.find(
    (o) =>
      o.ingress.some((a) => addresses.includes(a)) ||
      o.handedOver === lb.id ||
      o.name === lb.name ||
      (!established && !ownName && text(o.annotations, LOAD_BALANCER_ID) === lb.id),
  );
  if (!other) return undefined;
  return `${svc} names load balancer ${lb.name} (${lb.id}), which Service ${other.service} claims: ccm neither changes nor deletes it; ${by === NAME ? `give ${svc} another ${NAME}` : `remove the ${LOAD_BALANCER_ID} annotation from the Service it is not for`}`;
}

/** The Service's status shows one of the load balancer's IP addresses (never a hostname: see below). */
function establishedFor(lb: DoLoadBalancer, req: LoadBalancerRequest): boolean {
  const addresses = [lb.ip, lb.ipv6].filter((a): a is string => Boolean(a));
  return (req.claims?.ownIngress ?? []).some((a) => addresses.includes(a));
}

/**
 * Whether the load balancer is the official controller's for this Service: handed over (checked
 * against ccm migrate's record before), named by the default name of this Service's UID, or shown in
 * its status. A name from do-loadbalancer-name alone is no proof: anyone who may edit the Service
 * writes it. Neither is an ingress hostname: with do-loadbalancer-hostname the status shows the
 * annotation's own value, which ccm writes too for a load balancer of its own.
 */
function officialFor(lb: DoLoadBalancer, req: LoadBalancerRequest, handedOver: boolean): boolean {
  return handedOver || lb.name === req.name || establishedFor(lb, req);
}

function officialOf(
  req: LoadBalancerRequest,
  all: readonly DoLoadBalancer[],
  byId: ReadonlyMap<string, DoLoadBalancer>,
  officialCluster: string,
): { lb: DoLoadBalancer; refusal?: string } | undefined {
  const id = req.adoptedID ?? text(req.service.annotations, LOAD_BALANCER_ID);
  const handedOver = req.adoptedID !== undefined;
  if (id) {
    const lb = byId.get(id);
    // A hand-over was checked against the record before (service-sync.ts checkHandOver).
    return lb &&
      taggedByOfficial(lb, officialCluster) &&
      officialFor(lb, req, handedOver) &&
      !claimRefusal(lb, req, handedOver)
      ? { lb }
      : undefined;
  }
  const chosen = text(req.service.annotations, NAME);
  const candidates = all.filter(
    (lb) =>
      taggedByOfficial(lb, officialCluster) &&
      (lb.name === req.name ||
        (lb.name === chosen && establishedFor(lb, req) && !claimRefusal(lb, req, false, NAME))),
  );
  // Upstream's findLoadBalancerByName takes the first of the listing; of several, ccm takes the one the
  // Service's status shows, else none.
  const [first, ...more] = candidates;
  if (!first) return undefined;
  if (more.length === 0) return { lb: first };
  const shown = candidates.filter((lb) => establishedFor(lb, req));
  if (shown.length === 1 && shown[0]) return { lb: shown[0] };
  return {
    lb: first,
    refusal: `${candidates.length} load balancers are named ${first.name} (${candidates.map((lb) => lb.id).join(', ')}), and the Service's status shows ${shown.length === 0 ? 'none' : 'several'} of them: which one is its own is not known, and ccm leaves them alone`,
  };
}

/**
 * Its addresses include the Service's do-loadbalancer-hostname: the official controller then reports
 * that hostname as the ingress in place of the IP (cloud-controller-manager/do/loadbalancers.go
 * EnsureLoadBalancer, getHostname), and so does ccm.
 */
function foreign(
  lb: DoLoadBalancer,
  req: LoadBalancerRequest,
  /** With backends: the droplets the account has. */
  droplets?: ReadonlySet<number>,
): ForeignLoadBalancer {
  const ids = lb.droplet_ids ?? [];
  return {
    id: lb.id,
    name: lb.name,
    addresses: [lb.ip, lb.ipv6, text(req.service.annotations, HOSTNAME)].filter((a): a is string =>
      Boolean(a),
    ),
    tags: [...(lb.tags ?? [])],
    ...(droplets
      ? {
          backends: ids.filter((id) => droplets.has(id)).map((id) => `digitalocean://${id}`),
          departed: ids.filter((id) => !droplets.has(id)).map((id) => `digitalocean://${id}`),
        }
      : {}),
  };
}
