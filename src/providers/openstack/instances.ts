import { InvalidConfigError, NotFoundError } from '../errors.js';
import { httpStatus } from '../http.js';
import { formatProviderID, parseProviderID } from '../provider-id.js';
import type { Instance, InstanceState, Instances, NodeAddress } from '../types.js';
import type { Session } from './client.js';
import type { NetworkingConfig } from './config.js';

export const SCHEME = 'openstack';

/** Flavor `original_name` in the server body needs 2.47; older clouds answer 406 and get the flavor id. */
export const NOVA_MICROVERSION = '2.47';
/** Nova's default `max_limit`; a larger limit is cut to it anyway. */
export const PAGE_SIZE = 1000;

interface NovaAddress {
  addr: string;
  version: number;
  'OS-EXT-IPS:type'?: 'fixed' | 'floating';
}

export interface NovaServer {
  id: string;
  name: string;
  status: string;
  'OS-EXT-AZ:availability_zone'?: string;
  flavor: { id?: string; original_name?: string };
  addresses: Record<string, NovaAddress[]>;
  accessIPv4?: string;
  accessIPv6?: string;
}

interface ServerList {
  servers: NovaServer[];
  servers_links?: { href: string; rel: string }[];
}

interface NovaFlavor {
  id: string;
  name: string;
}

export class NovaInstances implements Instances {
  /** False once Nova refused the microversion (406): later requests go without it. */
  private microversion = true;
  /** GET flavors/{id}, once per flavor: undefined when Nova has none by that id. */
  private readonly flavors = new Map<string, Promise<NovaFlavor | undefined>>();

  constructor(
    private readonly session: Session,
    private readonly networking: NetworkingConfig,
  ) {}

  async list(signal?: AbortSignal): Promise<Instance[]> {
    const region = await this.session.region(signal);
    const instances: Instance[] = [];
    const seen = new Set<string>();
    let marker: string | undefined;
    for (;;) {
      const query: Record<string, string | number> = { limit: PAGE_SIZE, ...(marker ? { marker } : {}) };
      const page: ServerList = await this.nova<ServerList>('servers/detail', signal, query);
      if (!Array.isArray(page?.servers)) {
        throw new InvalidConfigError(
          'GET servers/detail: Nova answered without a "servers" list; check the compute endpoint',
        );
      }
      for (const server of page.servers) {
        // A marker that goes round in circles would never end; a listing that shifted is not trusted.
        if (seen.has(server.id)) {
          throw new Error(`Nova listed server ${server.id} twice while paging; the listing is not used`);
        }
        seen.add(server.id);
        // A server whose flavor gives no usable instance type is listed without one (its Node gets
        // no instance-type label): one odd server never fails the listing of all the others.
        const type = await this.instanceType(server, signal).catch((err: unknown) => {
          if (err instanceof NoInstanceTypeError) return '';
          throw err;
        });
        instances.push(toInstance(server, region, this.networking, type));
      }
      // The next link says there is more; its marker (the last server) is sent to the configured
      // endpoint, so a cloud whose links name an internal host still pages through.
      const next = page.servers_links?.find((l) => l.rel === 'next')?.href;
      if (!next || page.servers.length === 0) return instances;
      marker = markerOf(next) ?? page.servers.at(-1)?.id;
    }
  }

  async get(providerID: string, signal?: AbortSignal): Promise<Instance> {
    const parsed = parseProviderID(providerID);
    if (!parsed || parsed.scheme !== SCHEME) {
      throw new InvalidConfigError(
        `"${providerID}" is not an OpenStack provider ID (openstack:///<server id>)`,
      );
    }
    const region = await this.session.region(signal);
    if (parsed.location && parsed.location !== region) {
      // Another region's server is not ours to judge: never "not found".
      throw new Error(`server ${parsed.id} is in region ${parsed.location}, ccm talks to region ${region}`);
    }
    const { server } = await this.nova<{ server: NovaServer }>(
      `servers/${encodeURIComponent(parsed.id)}`,
      signal,
    );
    if (server.status === 'DELETED') {
      throw new NotFoundError(`Nova reports server ${parsed.id} as DELETED`);
    }
    return toInstance(server, region, this.networking, await this.instanceType(server, signal));
  }

  /**
   * The instance type as the official controller's srvInstanceType (pkg/openstack/instances.go)
   * finds it: flavor.original_name (microversion 2.47+) when it is a valid label value; else Nova's
   * flavor by that value, then by flavor.id (what Nova before 2.47 shows: the id, never the name),
   * whose name when it is a valid label value, else its id. Each flavor is asked for once.
   */
  private async instanceType(server: NovaServer, signal?: AbortSignal): Promise<string> {
    for (const key of ['original_name', 'id'] as const) {
      const value = server.flavor?.[key];
      if (typeof value !== 'string' || value === '') continue;
      if (key === 'original_name' && isValidLabelValue(value)) return value;
      const flavor = await this.flavor(value, signal);
      if (flavor) return isValidLabelValue(flavor.name) ? flavor.name : flavor.id;
    }
    throw new NoInstanceTypeError(
      `server ${server.id}: Nova names no flavor ccm can use as the instance type (flavor ${JSON.stringify(server.flavor?.original_name ?? server.flavor?.id ?? null)} is not a label value and Nova has no flavor by that id)`,
    );
  }

  private flavor(id: string, signal?: AbortSignal): Promise<NovaFlavor | undefined> {
    let known = this.flavors.get(id);
    if (!known) {
      known = this.nova<{ flavor: NovaFlavor }>(`flavors/${encodeURIComponent(id)}`, signal).then(
        ({ flavor }) => ({ id: String(flavor.id), name: String(flavor.name) }),
        (err: unknown) => {
          if (err instanceof NotFoundError) return undefined;
          this.flavors.delete(id); // a failure is not remembered: the next call asks again
          throw err;
        },
      );
      this.flavors.set(id, known);
    }
    return known;
  }

  private async nova<T>(
    path: string,
    signal?: AbortSignal,
    query?: Record<string, string | number>,
  ): Promise<T> {
    const send = () =>
      this.session.request<T>('compute', 'GET', path, {
        ...(query ? { query } : {}),
        ...(signal ? { signal } : {}),
        headers: this.microversion
          ? {
              'X-OpenStack-Nova-API-Version': NOVA_MICROVERSION,
              'OpenStack-API-Version': `compute ${NOVA_MICROVERSION}`,
            }
          : {},
      });
    try {
      return (await send()).body;
    } catch (err) {
      if (!this.microversion || httpStatus(err) !== 406) throw err;
      this.microversion = false;
      return (await send()).body;
    }
  }
}

class NoInstanceTypeError extends Error {}

/** Kubernetes' IsValidLabelValue: at most 63 characters, alphanumerics and -_. inside. */
export function isValidLabelValue(value: string): boolean {
  return value.length <= 63 && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(value);
}

/**
 * The availability zone as a label value, as the official controller's util.SanitizeLabel
 * (pkg/util/util.go) makes it: runs of other characters become "-", "-_." are trimmed from both
 * ends, and the result is cut to 63 characters.
 */
export function sanitizeLabel(input: string): string {
  return input
    .replace(/[^-a-zA-Z0-9_.]+/g, '-')
    .replace(/^[-_.]+|[-_.]+$/g, '')
    .slice(0, 63);
}

function markerOf(href: string): string | undefined {
  try {
    return new URL(href, 'http://link.invalid').searchParams.get('marker') ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * Server status → instance state. Only SHUTOFF is "stopped" (the official controller's
 * InstanceShutdown). ERROR, BUILD, and every transitional or paused state are "running": the
 * server exists, and a state that could make its Node a deletion candidate would be a lie — an
 * instance that failed to build or errored is an operator's to repair or delete, not ccm's.
 * DELETED is "gone" (Nova lists deleted servers only to admins asking for them).
 */
export function serverState(status: string): InstanceState {
  if (status === 'SHUTOFF') return 'stopped';
  if (status === 'DELETED') return 'gone';
  return 'running';
}

export function toInstance(
  server: NovaServer,
  region: string,
  networking: NetworkingConfig,
  type: string,
): Instance {
  return {
    providerID: formatProviderID(SCHEME, server.id),
    name: server.name,
    state: serverState(server.status),
    type,
    region,
    zone: sanitizeLabel(server['OS-EXT-AZ:availability_zone'] ?? ''),
    addresses: serverAddresses(server, networking),
    labels: {},
  };
}

/**
 * Node addresses as the official controller derives them from a server (its nodeAddresses, less the
 * per-server port lookups, which would cost a request per Node): accessIPv4/v6 are ExternalIPs; then,
 * per network in name order, a floating address is an ExternalIP, a fixed one an ExternalIP on a
 * network named in public-network-name, else an InternalIP, but only on a network named in
 * internal-network-name when that is set (an address of any other network is dropped). IPv6 is left
 * out with ipv6-support-disabled.
 */
export function serverAddresses(server: NovaServer, networking: NetworkingConfig): NodeAddress[] {
  let addresses: NodeAddress[] = [];
  const add = (type: NodeAddress['type'], address: string) => {
    if (networking.ipv6SupportDisabled && address.includes(':')) return;
    if (!addresses.some((a) => a.type === type && a.address === address)) addresses.push({ type, address });
  };
  // An address of a public or excluded network is never listed as an InternalIP too.
  const remove = (address: string) => {
    addresses = addresses.filter((a) => a.address !== address);
  };
  if (server.accessIPv4) add('ExternalIP', server.accessIPv4);
  if (server.accessIPv6) add('ExternalIP', server.accessIPv6);
  for (const network of Object.keys(server.addresses ?? {}).sort()) {
    for (const entry of server.addresses[network] ?? []) {
      if (entry['OS-EXT-IPS:type'] === 'floating') {
        add('ExternalIP', entry.addr);
      } else if (networking.publicNetworkNames.includes(network)) {
        remove(entry.addr);
        add('ExternalIP', entry.addr);
      } else if (
        networking.internalNetworkNames.length === 0 ||
        networking.internalNetworkNames.includes(network)
      ) {
        add('InternalIP', entry.addr);
      } else {
        remove(entry.addr);
      }
    }
  }
  return addresses;
}
