import { expect } from 'vitest';
import { InvalidConfigError } from '../../../src/providers/errors.js';
import type { Instances } from '../../../src/providers/types.js';

/** `instances.get` refuses each of `ids` (another cloud's, or malformed) as bad configuration. */
export async function expectRefusedProviderIDs(instances: Instances, ids: readonly string[]): Promise<void> {
  for (const id of ids) await expect(instances.get(id)).rejects.toBeInstanceOf(InvalidConfigError);
}
