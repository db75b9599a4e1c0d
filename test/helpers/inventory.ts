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

/** Writes a Cloudlycke inventory file and returns its path. */
export function writeInventory(instances: InventoryInstance[], defaults?: Record<string, string>): string {
  const dir = tempDir('ccm-inventory-');
  const path = join(dir, 'inventory.yaml');
  writeFileSync(path, stringify({ ...(defaults ? { defaults } : {}), instances }));
  return path;
}
