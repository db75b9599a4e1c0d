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

export function brightboxAdoption(client: BrightboxClient): LoadBalancerAdoption {
  return {
    async findOfficial(services, officialCluster, signal, options) {
      const all = (await client.get<ApiLoadBalancer[]>('load_balancers', signal)).filter(alive);
      const found = new Map<string, ForeignLoadBalancer>();
      for (const req of services) {
        const name = officialName(req, officialCluster);
        const lb = req.adoptedID ? all.find((x) => x.id === req.adoptedID) : all.find((x) => x.name === name);
        if (!lb) continue;
        found.set(req.service.uid, {
          id: lb.id,
          name: lb.name ?? '',
          // The official controller reports the cloud IPs' reverse DNS and fqdn as the ingress
          // (load_balancer.go toLoadBalancerStatus); ccm reports their addresses and fqdn.
          addresses: (lb.cloud_ips ?? []).flatMap((c) =>
            [c.public_ipv4 ?? c.public_ip, c.public_ipv6, c.reverse_dns, c.fqdn].filter((a): a is string =>
              Boolean(a),
            ),
          ),
          tags: [],
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
