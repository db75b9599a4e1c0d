import { InvalidConfigError } from './errors.js';

/**
 * Provider IDs (Node.spec.providerID) are frozen here: once a Node carries one it is never changed,
 * so the format of every cloud must stay exactly what its official controller writes.
 *
 *   digitalocean://<droplet id>          brightbox://srv-xxxxx
 *   openstack:///<uuid> | openstack://<region>/<uuid>
 *   triton://<machine uuid>              cloudlycke://<id>
 */
export interface ProviderID {
  scheme: string;
  /** The part between `scheme://` and the last `/`, e.g. an OpenStack region; usually empty. */
  location: string;
  id: string;
}

const PROVIDER_ID = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/;

/** Parses `scheme://[location/]id`; returns undefined for anything that is not a provider ID. */
export function parseProviderID(value: string | undefined): ProviderID | undefined {
  if (!value) return undefined;
  const match = PROVIDER_ID.exec(value);
  if (!match) return undefined;
  const [, scheme = '', rest = ''] = match;
  const slash = rest.lastIndexOf('/');
  const location = slash >= 0 ? rest.slice(0, slash) : '';
  const id = slash >= 0 ? rest.slice(slash + 1) : rest;
  if (!id) return undefined;
  return { scheme, location, id };
}

export function formatProviderID(scheme: string, id: string, location?: string): string {
  if (!id || id.includes('/')) throw new InvalidConfigError(`invalid instance id "${id}" for ${scheme}`);
  if (scheme === 'openstack') return `openstack://${location ?? ''}/${id}`;
  return `${scheme}://${id}`;
}

/** The scheme of a provider ID, or undefined when the value is empty or not a provider ID. */
export function providerIDScheme(value: string | undefined): string | undefined {
  return parseProviderID(value)?.scheme;
}
