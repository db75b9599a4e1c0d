import type { NodeSpec } from './fixtures.js';

/** The Nodes of `npm run quickstart`, matching templates/cloudlycke/inventory.example.yaml. */
export const QUICKSTART_NODES: NodeSpec[] = [
  { name: 'cp-1', providedNodeIP: '192.168.56.10' },
  { name: 'worker-1', providedNodeIP: '192.168.56.11' },
  { name: 'worker-2' },
];

/** Each machine's private address, in the inventory and in the DigitalOcean simulator's droplets. */
export const QUICKSTART_PRIVATE_IPS: Record<string, string> = {
  'cp-1': '192.168.56.10',
  'worker-1': '192.168.56.11',
  'worker-2': '192.168.56.12',
  'worker-3': '192.168.56.13',
};
