/** What the providers' load balancer tests build their requests from. */
import type { LoadBalancerRequest } from '../../src/providers/types.js';

type RequestService = LoadBalancerRequest['service'];

/**
 * A request's Service as a plain `type: LoadBalancer` Service gives it (no annotations, no source
 * ranges, traffic policy Cluster, no session affinity, IPv4 only), with `fields` over it.
 */
export function requestService(
  fields: Pick<RequestService, 'namespace' | 'name' | 'uid'> & Partial<RequestService>,
): RequestService {
  return {
    annotations: {},
    loadBalancerSourceRanges: [],
    externalTrafficPolicy: 'Cluster',
    sessionAffinity: 'None',
    ipFamilies: ['IPv4'],
    ...fields,
  };
}
