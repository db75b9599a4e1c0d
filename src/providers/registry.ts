import { closest } from '../closest.js';
import { InvalidConfigError } from './errors.js';
import type { CredentialSchema, ProviderDefinition } from './types.js';

/**
 * The one file that knows every cloud: its definition and, on its own, its credential schema (which
 * variables carry a secret, asked for without loading every cloud's client). Each is imported only
 * when asked for, so a command that needs one cloud never loads the others.
 */
const clouds: Record<
  string,
  { definition(): Promise<ProviderDefinition>; credentials(): Promise<CredentialSchema> }
> = {
  brightbox: {
    definition: async () => (await import('./brightbox/index.js')).brightbox,
    credentials: async () => (await import('./brightbox/credentials.js')).credentials,
  },
  cloudlycke: {
    definition: async () => (await import('./cloudlycke/index.js')).cloudlycke,
    credentials: async () => (await import('./cloudlycke/credentials.js')).credentials,
  },
  digitalocean: {
    definition: async () => (await import('./digitalocean/index.js')).digitalocean,
    credentials: async () => (await import('./digitalocean/credentials.js')).credentials,
  },
  openstack: {
    definition: async () => (await import('./openstack/index.js')).openstack,
    credentials: async () => (await import('./openstack/credentials.js')).credentials,
  },
  triton: {
    definition: async () => (await import('./triton/index.js')).triton,
    credentials: async () => (await import('./triton/credentials.js')).credentials,
  },
};

export const providerNames: readonly string[] = Object.keys(clouds).sort();

/**
 * A provider name ccm does not have, in the flag style (`--provider: expected one of …, got "…"`),
 * with the closest name; `env` names the variable it came from instead of the flag.
 */
export function unknownProviderText(name: string, env?: string): string {
  const near = closest(name.trim().toLowerCase(), providerNames);
  return `expected one of ${providerNames.join(', ')}, got ${JSON.stringify(name)}${env ? ` (from ${env})` : ''}${near ? `; did you mean ${near}?` : ''}`;
}

export async function loadProvider(name: string): Promise<ProviderDefinition> {
  const cloud = clouds[name];
  if (!cloud) throw new InvalidConfigError(`--provider: ${unknownProviderText(name)}`);
  return cloud.definition();
}

/**
 * The environment variables that carry a credential of some cloud ccm supports: the secret fields of
 * every provider's credential schema (kept from programs that are not ccm's, such as exec plugins).
 */
export async function credentialEnvNames(): Promise<string[]> {
  const schemas = await Promise.all(Object.values(clouds).map((cloud) => cloud.credentials()));
  const names = schemas.flatMap((schema) => schema.fields.filter((f) => f.secret).flatMap((f) => f.env));
  return [...new Set(names)].sort();
}
