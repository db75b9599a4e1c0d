import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { tempDir } from './tmp.js';

export interface InventoryInstance {
  id: string;
  name?: string;
  state?: 'running' | 'stopped';
  type?: string;
  region?: string;
  zone?: string;
  addresses?: { type: string; address: string }[];
  labels?: Record<string, string>;
}

/**
 * Writes at `path` the inventory of a fleet for the benchmarks: the machines `ids` of one type
 * (vbox.vm.1g.2cpu in virtualbox), the i-th at InternalIP `ip(i)`. Returns `path`.
 */
export function writeFleetInventory(path: string, ids: string[], ip: (i: number) => string): string {
  const defaults = { type: 'vbox.vm.1g.2cpu', region: 'virtualbox', zone: 'virtualbox' };
  const instances = ids.map((id, i) => ({ id, addresses: [{ type: 'InternalIP', address: ip(i) }] }));
  writeFileSync(path, stringify({ defaults, instances }));
  return path;
}

/** Writes a Cloudlycke inventory file and returns its path. */
export function writeInventory(instances: InventoryInstance[], defaults?: Record<string, string>): string {
  const dir = tempDir('ccm-inventory-');
  const path = join(dir, 'inventory.yaml');
  writeFileSync(path, stringify({ ...(defaults ? { defaults } : {}), instances }));
  return path;
}
