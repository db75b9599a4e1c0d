import type { NodeSpec } from './fixtures.js';

/** The Nodes of `npm run quickstart`, matching templates/cloudlycke/inventory.example.yaml. */
export const QUICKSTART_NODES: NodeSpec[] = [
  { name: 'cp-1', providedNodeIP: '192.168.56.10' },
  { name: 'worker-1', providedNodeIP: '192.168.56.11' },
  { name: 'worker-2' },
];
