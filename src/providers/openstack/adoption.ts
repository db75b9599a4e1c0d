import { formatProviderID } from '../provider-id.js';
import type {
  ForeignLoadBalancer,
  LoadBalancerAdoption,
  LoadBalancerRequest,
  OfficialController,
} from '../types.js';
import { LOAD_BALANCER_ID } from './annotations.js';
import { SCHEME } from './instances.js';

/**
 * cloud-provider-openstack's openstack-cloud-controller-manager (kubernetes/cloud-provider-openstack):
 * - manifests/controller-manager/openstack-cloud-controller-manager-ds.yaml: DaemonSet
 *   kube-system/openstack-cloud-controller-manager, image
 *   registry.k8s.io/provider-os/openstack-cloud-controller-manager, `--cluster-name=$(CLUSTER_NAME)`
 *   with CLUSTER_NAME "kubernetes", cloud.conf from Secret kube-system/cloud-config (which ccm reads
 *   as it is), leader election on (k8s.io/cloud-provider's Lease cloud-controller-manager).
 * - pkg/openstack/loadbalancer.go: the Service is annotated loadbalancer.openstack.org/load-balancer-id.
 */
export const officialController: OfficialController = {
  id: 'openstack-cloud-controller-manager',
  description:
    "cloud-provider-openstack's controller (github.com/kubernetes/cloud-provider-openstack, openstack-cloud-controller-manager)",
  workloads: ['openstack-cloud-controller-manager'],
  images: ['openstack-cloud-controller-manager'],
  leases: ['cloud-controller-manager'],
  leaderElectOffByDefault: false,
  secrets: ['cloud-config'],
  configMaps: [],
  secretCompatible: true,
  serviceAnnotations: [LOAD_BALANCER_ID],
  defaultClusterName: 'kubernetes',
};

/**
 * pkg/openstack/loadbalancer.go: GetLoadBalancerName is Sprintf255("%s%s_%s_%s", "kube_service_",
 * clusterName, namespace, name) (cut to 255 characters); getLoadbalancerByName also accepts the legacy
 * cloudprovider.DefaultLoadBalancerName ("a" + the UID without dashes, cut to 32).
 */
export function officialName(req: LoadBalancerRequest, clusterName: string): string {
  return `kube_service_${clusterName}_${req.service.namespace}_${req.service.name}`.slice(0, 255);
}

interface OctaviaLb {
  provisioning_status: string;
  id: string;
  name: string;
  vip_address: string;
  vip_port_id: string;
  vip_subnet_id?: string;
  tags?: string[];
}

export interface OctaviaAdoptionDeps {
  list<T extends { id?: string }>(path: string, key: string, signal?: AbortSignal): Promise<T[]>;
  floatingIpOf(lb: OctaviaLb, signal?: AbortSignal): Promise<{ floating_ip_address: string } | undefined>;
  /** The device (a server id) of the one Neutron port holding `address` on subnet `subnetID`. */
  portDevice(address: string, subnetID: string, signal?: AbortSignal): Promise<string | undefined>;
  putTags(id: string, tags: readonly string[], signal?: AbortSignal): Promise<void>;
  ownershipTag(clusterID: string): string;
}

/**
 * The server of every member of every pool of the load balancer, as a provider ID: the owner of the
 * Neutron port holding the member's address on the member's subnet (Octavia takes a member without
 * one on the VIP subnet). An address alone names no server: another network (another cluster's) may
 * use the same private range, so a member at 10.0.0.11 there is not this cluster's Node at 10.0.0.11.
 * A member no port explains is given as `<address> on subnet <subnet>`, which is no Node's.
 */
async function membersOf(deps: OctaviaAdoptionDeps, lb: OctaviaLb, signal?: AbortSignal): Promise<string[]> {
  const pools = await deps.list<{ id: string }>(`pools?loadbalancer_id=${lb.id}`, 'pools', signal);
  const members = await Promise.all(
    pools.map((p) =>
      deps.list<{ id: string; address: string; subnet_id?: string | null }>(
        `pools/${p.id}/members`,
        'members',
        signal,
      ),
    ),
  );
  const servers = new Map<string, Promise<string>>();
  const serverOf = (address: string, subnet: string) => {
    const key = `${address} on subnet ${subnet || '(none)'}`;
    let found = servers.get(key);
    if (!found) {
      found = (subnet ? deps.portDevice(address, subnet, signal) : Promise.resolve(undefined)).then(
        (device) => (device ? formatProviderID(SCHEME, device) : key),
      );
      servers.set(key, found);
    }
    return found;
  };
  return Promise.all(members.flat().map((m) => serverOf(m.address, m.subnet_id || lb.vip_subnet_id || '')));
}

/** pkg/openstack/loadbalancer.go servicePrefix: every name and tag the official controller gives. */
const SERVICE_PREFIX = 'kube_service_';

/**
 * Why the official controller would never delete this load balancer along with the Service named
 * `ownName`, as pkg/openstack/loadbalancer.go ensureLoadBalancerDeleted decides
 * (needDeleteLB := !isSharedLB && isCreatedByOCCM): it was not created by it (its name does not start
 * with kube_service_: a load balancer someone made and pointed the Service at), or it is shared (another
 * Service's kube_service_ name among its tags; ensureOctaviaLoadBalancer tags a load balancer with the
 * name of every Service that attaches to it, and each manages only its own listeners, checkListenerPorts
 * and deleteOctaviaListeners). ccm manages a load balancer as a whole, so it takes neither.
 */
export function notHandedOver(lb: { name: string; tags?: string[] }, ownName: string): string | undefined {
  if (!lb.name.startsWith(SERVICE_PREFIX)) {
    return `${lb.name} was not created by openstack-cloud-controller-manager (its name does not start with ${SERVICE_PREFIX}), which never deletes it; ccm leaves it alone`;
  }
  const others = (lb.tags ?? []).filter((t) => t.startsWith(SERVICE_PREFIX) && t !== lb.name);
  if (others.length > 0) {
    return `${lb.name} is shared with ${others.join(', ')} (each manages its own listeners); ccm does not share a load balancer between Services, and leaves it alone`;
  }
  if (lb.name !== ownName) {
    return `${lb.name} is named for another Service (this one's would be ${ownName}): it attached to it, and ccm leaves it alone`;
  }
  return undefined;
}

/**
 * The official controller's load balancer of a Service: the one its load-balancer-id annotation (or
 * ccm's hand-over) names, else the one named for it in `clusterName`; by name, only with the tag the
 * official controller gives it (createOctaviaLoadBalancer: Tags = [lbName] where Octavia supports tags,
 * v2.5+), so a load balancer someone named like it by hand is not taken. One found by id that the
 * official controller would not delete with the Service (notHandedOver), or one of several of that
 * name, is returned with its refusal. Its backends are servers (membersOf), so that --adopt-official
 * and ccm migrate compare them with the Nodes' provider IDs, not with addresses another network reuses.
 */
export function octaviaAdoption(deps: OctaviaAdoptionDeps): LoadBalancerAdoption {
  return {
    async findOfficial(services, officialCluster, signal, options) {
      const all = await deps.list<OctaviaLb>('loadbalancers', 'loadbalancers', signal);
      const byId = new Map(all.map((lb) => [lb.id, lb]));
      const found = new Map<string, ForeignLoadBalancer>();
      const addressOf = async (lb: OctaviaLb) =>
        (await deps.floatingIpOf(lb, signal))?.floating_ip_address ?? lb.vip_address;
      for (const req of services) {
        const id = req.adoptedID ?? req.service.annotations[LOAD_BALANCER_ID];
        const name = officialName(req, officialCluster);
        const named = id
          ? []
          : all.filter(
              (x) =>
                ((x.name === name && (x.tags ?? []).includes(name)) || x.name === req.name) &&
                x.provisioning_status !== 'DELETED' &&
                x.provisioning_status !== 'PENDING_DELETE',
            );
        let lb = id ? byId.get(id) : named[0];
        if (!lb) continue;
        let address = await addressOf(lb);
        let several: string | undefined;
        if (named.length > 1) {
          // Every cluster run with the official default --cluster-name makes the same names: several
          // clusters in one project each have a kube_service_kubernetes_default_web. Upstream's
          // getLoadbalancerByName (pkg/openstack/loadbalancer.go) fails on several
          // (ErrMultipleResults); ccm takes the one the Service's status shows, which only a
          // controller writes, else none.
          const own = req.claims?.ownIngress ?? [];
          const shown: { lb: OctaviaLb; address: string }[] = [];
          for (const x of named) {
            const a = await addressOf(x);
            if (own.includes(a)) shown.push({ lb: x, address: a });
          }
          if (shown.length === 1 && shown[0]) ({ lb, address } = shown[0]);
          else
            several = `${named.length} load balancers are named ${lb.name} (${named.map((x) => x.id).join(', ')}), and the Service's status shows ${shown.length === 0 ? 'none' : 'several'} of them: which one is its own is not known, and ccm leaves them alone`;
        }
        const refusal = several ?? notHandedOver(lb, name);
        found.set(req.service.uid, {
          id: lb.id,
          name: lb.name,
          addresses: [address],
          tags: [...(lb.tags ?? [])],
          ...(refusal ? { refusal } : {}),
          ...(options?.withBackends ? { backends: await membersOf(deps, lb, signal) } : {}),
        });
      }
      return found;
    },
    ownershipTags(_lb, clusterID) {
      return { add: [deps.ownershipTag(clusterID)] };
    },
    async setTags(lb, tags, signal) {
      await deps.putTags(lb.id, tags, signal);
    },
  };
}
