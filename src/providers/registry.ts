import { InvalidConfigError } from './errors.js';
import type { ProviderDefinition } from './types.js';

/**
 * The one file that knows every cloud. Providers are imported only when chosen, so a command that
 * needs one cloud never loads the others.
 */
const loaders: Record<string, () => Promise<ProviderDefinition>> = {
  brightbox: async () => (await import('./brightbox/index.js')).brightbox,
  cloudlycke: async () => (await import('./cloudlycke/index.js')).cloudlycke,
  digitalocean: async () => (await import('./digitalocean/index.js')).digitalocean,
  openstack: async () => (await import('./openstack/index.js')).openstack,
  triton: async () => (await import('./triton/index.js')).triton,
};

export const providerNames: readonly string[] = Object.keys(loaders).sort();

export async function loadProvider(name: string): Promise<ProviderDefinition> {
  const load = loaders[name];
  if (!load) {
    throw new InvalidConfigError(`unknown provider "${name}"; use one of: ${providerNames.join(', ')}`);
  }
  return load();
}
