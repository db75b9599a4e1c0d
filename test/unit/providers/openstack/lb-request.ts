import type { LoadBalancerRequest } from '../../../../src/providers/types.js';
import { requestService } from '../../../helpers/lb-request.js';

/** A Node of a load balancer request, by name and InternalIP. */
export const node = (name: string, ip: string) => ({
  name,
  providerID: '',
  addresses: [{ type: 'InternalIP' as const, address: ip }],
});

/** The request for Service default/web, port 80 to node port 30080, on two Nodes; change what a test needs. */
export function request(
  overrides: Partial<LoadBalancerRequest> = {},
  service: Partial<LoadBalancerRequest['service']> = {},
): LoadBalancerRequest {
  return {
    name: 'a1b2c3d4e5f60718293a4b5c6d7e8f90',
    clusterID: 'c0ffee00-1111-2222-3333-444455556666',
    service: requestService({
      namespace: 'default',
      name: 'web',
      uid: '1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901',
      ...service,
    }),
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: [node('w1', '10.0.0.11'), node('w2', '10.0.0.12')],
    ...overrides,
  };
}
