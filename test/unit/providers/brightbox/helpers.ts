import { BrightboxClient, type BrightboxClientOptions } from '../../../../src/providers/brightbox/client.js';
import { createBrightbox } from '../../../../src/providers/brightbox/index.js';
import type { LoadBalancerRequest, Provider } from '../../../../src/providers/types.js';
import type { BrightboxSimulator } from '../../../clouds/brightbox/simulator.js';
import { SIM_CLIENT } from '../../../clouds/brightbox/simulator.js';
import { requestService } from '../../../helpers/lb-request.js';

/** Options for a client of the simulator: no retries or sleeps, so each fault is seen once. */
export function options(
  sim: BrightboxSimulator,
  extra: Partial<BrightboxClientOptions> = {},
): BrightboxClientOptions {
  return {
    apiUrl: sim.url,
    clientId: SIM_CLIENT.id,
    clientSecret: SIM_CLIENT.secret,
    http: { retries: 0, sleep: async () => {} },
    ...extra,
  };
}

export function provider(sim: BrightboxSimulator, extra: Partial<BrightboxClientOptions> = {}): Provider {
  return createBrightbox(options(sim, extra));
}

export function client(
  sim: BrightboxSimulator,
  extra: Partial<BrightboxClientOptions> = {},
): BrightboxClient {
  return new BrightboxClient(options(sim, extra));
}

export const CLUSTER = '5d3f0a2e-4b1c-4e8a-9f6d-2c7b8a9e0f11';

export function lbRequest(
  nodes: string[],
  overrides: Partial<Omit<LoadBalancerRequest, 'service'>> & {
    service?: Partial<LoadBalancerRequest['service']>;
  } = {},
): LoadBalancerRequest {
  const { service, ...rest } = overrides;
  return {
    name: 'a6f1c1e7c2b3d4e5f60718293a4b5c6d',
    clusterID: CLUSTER,
    ports: [{ name: 'http', protocol: 'TCP', port: 80, nodePort: 30080 }],
    nodes: nodes.map((id) => ({ name: id, providerID: `brightbox://${id}`, addresses: [] })),
    ...rest,
    service: requestService({
      namespace: 'shop',
      name: 'web',
      uid: '6f1c1e7c-2b3d-4e5f-6071-8293a4b5c6d7',
      ...service,
    }),
  };
}
