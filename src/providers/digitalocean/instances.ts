import { InvalidConfigError } from '../errors.js';
import { formatProviderID, parseProviderID } from '../provider-id.js';
import type { Instance, InstanceState, Instances, NodeAddress } from '../types.js';
import type { DigitalOceanClient } from './client.js';

export const SCHEME = 'digitalocean';

/** The fields of components/schemas/droplet that ccm reads. */
export interface Droplet {
  id: number;
  name: string;
  status: 'new' | 'active' | 'off' | 'archive';
  size_slug: string;
  region: { slug: string };
  networks: {
    v4?: { ip_address: string; type: 'public' | 'private' }[];
    v6?: { ip_address: string; type: 'public' }[];
  };
  vpc_uuid?: string;
}

/** The droplet id of a `digitalocean://<id>` provider ID; anything else is not ours to read as gone. */
export function dropletIdFromProviderID(providerID: string): number {
  const parsed = parseProviderID(providerID);
  if (!parsed || parsed.scheme !== SCHEME || parsed.location !== '' || !/^[1-9]\d{0,15}$/.test(parsed.id)) {
    throw new InvalidConfigError(
      `provider ID ${JSON.stringify(providerID)} is not a DigitalOcean provider ID (${SCHEME}://<droplet id>)`,
    );
  }
  return Number(parsed.id);
}

const STATES: Record<Droplet['status'], InstanceState> = {
  new: 'running',
  active: 'running',
  off: 'stopped',
  // As DigitalOcean's controller reads it (cloud-controller-manager/do/droplets.go: only "off" is
  // shut down): an archived droplet is not shut down, and it still exists; only a 404 is "gone".
  archive: 'running',
};

export function fromDroplet(droplet: Droplet): Instance {
  const v4 = droplet.networks?.v4 ?? [];
  const v6 = droplet.networks?.v6 ?? [];
  const addresses: NodeAddress[] = [
    ...v4.filter((n) => n.type === 'private').map((n) => internal(n.ip_address)),
    ...v4.filter((n) => n.type === 'public').map((n) => external(n.ip_address)),
    ...v6.filter((n) => n.type === 'public').map((n) => external(n.ip_address)),
    { type: 'Hostname', address: droplet.name },
  ];
  return {
    providerID: formatProviderID(SCHEME, String(droplet.id)),
    name: droplet.name,
    state: STATES[droplet.status] ?? 'running',
    type: droplet.size_slug ?? '',
    region: droplet.region?.slug ?? '',
    zone: '',
    addresses,
    labels: {},
  };
}

function internal(address: string): NodeAddress {
  return { type: 'InternalIP', address };
}
function external(address: string): NodeAddress {
  return { type: 'ExternalIP', address };
}

/** Where a droplet is: what a new load balancer over it is placed by. */
export interface DropletPlace {
  region: string;
  vpc?: string;
}

/** Droplet ids proven gone (a 404) that are kept, the oldest forgotten first. */
const MAX_GONE = 10_000;

/**
 * What this provider last learnt of droplets, for load balancers to use without a call of their own:
 * the region and VPC of each droplet of its last complete listing (the instance listing `ccm run`
 * shares between controllers, or a load balancer's own by-name listing), and of each it read since;
 * and the droplets a read answered 404 for. Droplet ids are never reused, so a droplet once gone stays
 * gone. A provider is built anew on every credential reload, and with it this memo: a 404 seen with
 * other credentials (another account) never counts.
 */
export class DropletMemo {
  private places = new Map<number, DropletPlace>();
  private readonly gone = new Set<number>();

  /** A complete listing: it replaces what the last one said. */
  listed(droplets: readonly Droplet[]): void {
    this.places = new Map();
    for (const droplet of droplets) this.seen(droplet);
  }

  /** One droplet read (or listed): it exists, here. */
  seen(droplet: Droplet): void {
    if (!droplet.region?.slug) return;
    this.places.set(droplet.id, {
      region: droplet.region.slug,
      ...(droplet.vpc_uuid ? { vpc: droplet.vpc_uuid } : {}),
    });
    this.gone.delete(droplet.id);
  }

  markGone(id: number): void {
    this.places.delete(id);
    this.gone.add(id);
    if (this.gone.size > MAX_GONE) this.gone.delete(this.gone.values().next().value as number);
  }

  isGone(id: number): boolean {
    return this.gone.has(id);
  }

  placeOf(id: number): DropletPlace | undefined {
    return this.places.get(id);
  }
}

/** Droplets: one paginated listing per pass; `get` reads one droplet, 404 (not_found) is gone. */
export function dropletInstances(client: DigitalOceanClient, memo?: DropletMemo): Instances {
  return {
    async list(signal) {
      const droplets = await listDroplets(client, signal, memo);
      return droplets.map(fromDroplet);
    },
    async get(providerID, signal) {
      const droplet = await getDroplet(client, dropletIdFromProviderID(providerID), signal);
      return fromDroplet(droplet);
    },
  };
}

export async function listDroplets(
  client: DigitalOceanClient,
  signal?: AbortSignal,
  memo?: DropletMemo,
): Promise<Droplet[]> {
  const droplets = await client.listAll<Droplet>(
    'listing droplets',
    '/v2/droplets',
    'droplets',
    signal,
    slimDroplet,
  );
  memo?.listed(droplets);
  return droplets;
}

/**
 * Only the fields of a droplet that ccm reads. A droplet of the API's own example is ~1.7 KB of JSON
 * (image, size, kernel, features, backups…); 5,000 of them parsed and held until the last page were
 * most of a listing's memory.
 */
export function slimDroplet(droplet: Droplet): Droplet {
  const { v4, v6 } = droplet.networks ?? {};
  return {
    id: droplet.id,
    name: droplet.name,
    status: droplet.status,
    size_slug: droplet.size_slug,
    // As read: an answer without a region stays without one (fromDroplet tells).
    region: droplet.region && { slug: droplet.region.slug },
    networks: {
      ...(v4 ? { v4: v4.map((n) => ({ ip_address: n.ip_address, type: n.type })) } : {}),
      ...(v6 ? { v6: v6.map((n) => ({ ip_address: n.ip_address, type: n.type })) } : {}),
    },
    ...(droplet.vpc_uuid !== undefined ? { vpc_uuid: droplet.vpc_uuid } : {}),
  };
}

export async function getDroplet(
  client: DigitalOceanClient,
  id: number,
  signal?: AbortSignal,
): Promise<Droplet> {
  const body = await client.get<{ droplet?: Droplet }>(`reading droplet ${id}`, `/v2/droplets/${id}`, signal);
  if (!body?.droplet || body.droplet.id !== id) {
    throw new InvalidConfigError(
      `DigitalOcean reading droplet ${id}: the answer holds no such droplet; check that the API URL is DigitalOcean's`,
    );
  }
  return body.droplet;
}
