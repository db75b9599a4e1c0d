import { InvalidConfigError } from '../errors.js';
import type {
  ForeignLoadBalancer,
  LoadBalancerAdoption,
  LoadBalancerRequest,
  OfficialController,
} from '../types.js';
import type { ApiLoadBalancer, BrightboxClient } from './client.js';

/**
 * Brightbox's own controller, brightbox/brightbox-cloud-controller-manager:
 * - config/cloud-controller.yml: DaemonSet kube-system/brightbox-cloud-controller-manager (image
 *   …/brightbox-cloud-controller-manager), its kubeconfig in ConfigMap brightbox-cloud-controller-manager,
 *   the API client in Secret brightbox-credentials (keys controller-client, controller-client-secret,
 *   apiurl: ccm reads it as it is), `--cluster-name=brightbox-k8s`, leader election on
 *   (k8s.io/cloud-provider's Lease cloud-controller-manager).
 * It writes no annotation on the Services: the names are its only record.
 */
export const officialController: OfficialController = {
  id: 'brightbox-cloud-controller-manager',
  description: "Brightbox's cloud controller (github.com/brightbox/brightbox-cloud-controller-manager)",
  workloads: ['brightbox-cloud-controller-manager'],
  images: ['brightbox-cloud-controller-manager'],
  leases: ['cloud-controller-manager'],
  leaderElectOffByDefault: false,
  secrets: ['brightbox-credentials'],
  configMaps: ['brightbox-cloud-controller-manager'],
  secretCompatible: true,
  serviceAnnotations: [],
  defaultClusterName: 'brightbox-k8s',
};

/**
 * brightbox/load_balancer_cloud.go GetLoadBalancerName: `<name>.<namespace>.<cluster name>`; the
 * same name is given to the Service's cloud IP (ensureAllocatedCloudIP), server group and firewall
 * policy (load_balancer_firewall.go ensureServerGroup, ensureFirewallPolicy).
 */
export function officialName(req: LoadBalancerRequest, clusterName: string): string {
  return `${req.service.name}.${req.service.namespace || 'default'}.${clusterName}`;
}

/** Passed over like the official controller does (k8ssdk GetLoadBalancerByName: active or creating). */
const alive = (lb: ApiLoadBalancer) =>
  lb.status !== 'deleted' && lb.status !== 'failed' && lb.status !== 'deleting';

/**
 * The official controller reports the cloud IPs' reverse DNS and fqdn as the ingress
 * (load_balancer.go toLoadBalancerStatus); ccm reports their addresses and fqdn.
 */
const addressesOf = (lb: ApiLoadBalancer) =>
  (lb.cloud_ips ?? []).flatMap((c) =>
    [c.public_ipv4 ?? c.public_ip, c.public_ipv6, c.reverse_dns, c.fqdn].filter((a): a is string =>
      Boolean(a),
    ),
  );

/**
 * The official load balancer of a Service: the one handed over, else the one of its official name.
 * That name is no identity: every cluster run with the default --cluster-name (brightbox-k8s) makes the
 * same one, and anyone with the account may have made one so named. GetLoadBalancerByName upstream
 * (k8ssdk) takes the first alive of the name; of several, ccm takes the one the Service's status shows
 * (a cloud IP's address, reverse DNS or fqdn, which only a controller writes), else none of them: the
 * one found first is returned with that refusal.
 */
export function brightboxAdoption(client: BrightboxClient): LoadBalancerAdoption {
  return {
    async findOfficial(services, officialCluster, signal, options) {
      const all = (await client.get<ApiLoadBalancer[]>('load_balancers', signal)).filter(alive);
      const found = new Map<string, ForeignLoadBalancer>();
      for (const req of services) {
        const name = officialName(req, officialCluster);
        const named = req.adoptedID ? [] : all.filter((x) => x.name === name);
        const own = req.claims?.ownIngress ?? [];
        const shown = named.filter((x) => addressesOf(x).some((a) => own.includes(a)));
        const lb = req.adoptedID
          ? all.find((x) => x.id === req.adoptedID)
          : shown.length === 1
            ? shown[0]
            : named[0];
        if (!lb) continue;
        const refusal =
          named.length > 1 && shown.length !== 1
            ? `${named.length} load balancers are named ${name} (${named.map((x) => x.id).join(', ')}), and the Service's status shows ${shown.length === 0 ? 'none' : 'several'} of them: which one is its own is not known, and ccm leaves them alone`
            : undefined;
        found.set(req.service.uid, {
          id: lb.id,
          name: lb.name ?? '',
          addresses: addressesOf(lb),
          tags: [],
          ...(refusal ? { refusal } : {}),
          ...(options?.withBackends ? { backends: (lb.nodes ?? []).map((n) => `brightbox://${n.id}`) } : {}),
        });
      }
      return found;
    },
    ownershipTags() {
      return {
        add: [],
        note: 'Brightbox resources carry no tags: the load balancer, its cloud IP, server group and firewall policy keep the official name; the adoption is recorded on the Service',
      };
    },
    async setTags(lb, tags) {
      if (tags.length > 0) {
        throw new InvalidConfigError(
          `Brightbox load balancer ${lb.id} cannot carry tags; ccm never asked it to`,
        );
      }
    },
  };
}
