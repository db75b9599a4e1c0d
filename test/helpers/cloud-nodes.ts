/**
 * The worker machines the `nodes init` and `ccm run` tests of a cloud both start from, and the one
 * check of what a Node learns from its cloud.
 */
import type { V1Node, V1NodeAddress } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { BrightboxSimulator } from '../clouds/brightbox/simulator.js';

/** Brightbox: srv-aaaaa ("k8s worker", 2gb.ssd, gb1-a, 10.241.0.10) and srv-bbbbb ("worker-b", 4gb.ssd, gb1-b). */
export function addBrightboxWorkers(sim: BrightboxSimulator) {
  return [
    sim.addServer({
      id: 'srv-aaaaa',
      name: 'k8s worker',
      zone: 'gb1-a',
      serverType: '2gb.ssd',
      ipv4: '10.241.0.10',
    }),
    sim.addServer({
      id: 'srv-bbbbb',
      name: 'worker-b',
      zone: 'gb1-b',
      serverType: '4gb.ssd',
      ipv4: '10.241.0.11',
    }),
  ] as const;
}

/** DigitalOcean: worker-1, an s-4vcpu-8gb droplet in fra1 with a private and a public address. */
export const DIGITALOCEAN_WORKER_1 = {
  name: 'worker-1',
  size: 's-4vcpu-8gb',
  region: 'fra1',
  privateIP: '10.114.0.2',
  publicIP: '203.0.113.21',
};

/** Triton: a k8s-8g machine at 10.10.0.11, its primary address the public 165.225.130.11. */
export function tritonWorker(name: string, tags?: Record<string, string>) {
  return {
    name,
    package: 'k8s-8g',
    ips: ['10.10.0.11', '165.225.130.11'],
    primaryIp: '165.225.130.11',
    ...(tags ? { tags } : {}),
  };
}

/**
 * Expects what the Node got from its cloud: the provider ID, at least these labels and exactly these
 * addresses (each when given).
 */
export function expectCloudNode(
  node: V1Node,
  want: { providerID?: string; labels?: Record<string, string>; addresses?: V1NodeAddress[] },
): void {
  if (want.providerID !== undefined) expect(node.spec?.providerID).toBe(want.providerID);
  if (want.labels) expect(node.metadata?.labels).toMatchObject(want.labels);
  if (want.addresses) expect(node.status?.addresses).toEqual(want.addresses);
}
