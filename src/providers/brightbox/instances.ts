import { isIP } from 'node:net';
import { InvalidConfigError, NotFoundError, RetryableError } from '../errors.js';
import { formatProviderID, parseProviderID } from '../provider-id.js';
import type { Instance, InstanceState, Instances, NodeAddress } from '../types.js';
import type { ApiServer, BrightboxClient } from './client.js';

export const SCHEME = 'brightbox';
export const SERVER_ID = /^srv-[0-9a-z]{5}$/;

/**
 * Servers as instances. Brightbox's server listing has no pages: one GET returns every server of the
 * account. Status, as the official controller reads it (brightbox-cloud-controller-manager
 * brightbox/instances.go l.133-144, InstanceExistsByProviderID, and InstanceShutdownByProviderID):
 * creating, active and deleting servers exist and are not shut down; inactive and unavailable are
 * shut down; deleted and failed do not exist. So a lookup by provider ID that answers a deleted or
 * failed server is NotFoundError, the positive "gone" that lets a Node be deleted (its
 * instances_test.go l.238-243 expects srv-goner, answered with status deleted, to "not exist"), as is
 * Brightbox's own 404. A listing leaves deleted and failed servers out, so that no Node is ever
 * initialised from, or matched by name to, a server that does not exist.
 */
export function brightboxInstances(client: BrightboxClient, gone = new GoneServers()): Instances {
  return {
    async list(signal) {
      const servers = await client.get<ApiServer[]>('servers', signal);
      if (!Array.isArray(servers)) {
        throw new InvalidConfigError('GET /1.0/servers did not answer with a list; check the API URL');
      }
      gone.listed(servers.filter((server) => listState(server.status) !== 'gone').map((server) => server.id));
      return servers.flatMap((server) => {
        const state = listState(server.status);
        if (state === 'gone') gone.mark(server.id);
        return state === 'gone' ? [] : [toInstance(server, state)];
      });
    },
    async get(providerID, signal) {
      const id = serverID(providerID);
      let server: ApiServer;
      try {
        server = await client.get<ApiServer>(`servers/${id}`, signal);
      } catch (err) {
        if (err instanceof NotFoundError) gone.mark(id);
        throw err;
      }
      // Another server's record (a proxy or cache mixing answers) says nothing about this one.
      if (server.id !== id) {
        throw new RetryableError(`Brightbox answered the lookup of server ${id} with server ${server.id}`);
      }
      const state = listState(server.status);
      if (state === 'gone') {
        gone.mark(id);
        throw new NotFoundError(`Brightbox reports server ${id} as ${server.status}: it does not exist`);
      }
      return toInstance(server, state);
    },
  };
}

/** Server ids proven gone that are kept, the oldest forgotten first. */
const MAX_GONE = 10_000;

/**
 * The servers this provider has proven gone, for load balancers to leave out of their nodes and
 * server groups: one gone server among a Service's backends (a Node the deletion brake holds, or one
 * the lifecycle controller has not deleted yet) must not fail the balancer of every Service. Proof is
 * a lookup answering 404, `deleted` or `failed`, or a server that one complete listing showed and the
 * next one does not (server ids are never reused, so a server once gone stays gone). A server never
 * listed is not presumed gone: it may be newer than the listing. Built anew with the provider on every
 * credential reload, so a listing of another account proves nothing.
 */
export class GoneServers {
  private previous = new Set<string>();
  private readonly gone = new Set<string>();

  /** The servers that exist, by one complete listing. */
  listed(ids: readonly string[]): void {
    const now = new Set(ids);
    for (const id of this.previous) if (!now.has(id)) this.mark(id);
    this.previous = now;
  }

  mark(id: string): void {
    this.gone.delete(id);
    this.gone.add(id);
    if (this.gone.size > MAX_GONE) this.gone.delete(this.gone.values().next().value as string);
  }

  has(id: string): boolean {
    return this.gone.has(id);
  }
}

/** The server id of a `brightbox://srv-xxxxx` provider ID. */
export function serverID(providerID: string): string {
  const parsed = parseProviderID(providerID);
  if (parsed?.scheme !== SCHEME || parsed.location !== '' || !SERVER_ID.test(parsed.id)) {
    throw new InvalidConfigError(
      `"${providerID}" is not a Brightbox provider ID (brightbox://srv-xxxxx); fix the Node's spec.providerID`,
    );
  }
  return parsed.id;
}

function listState(status: string): InstanceState {
  if (status === 'inactive' || status === 'unavailable') return 'stopped';
  if (status === 'deleted' || status === 'failed') return 'gone';
  // creating, active, deleting; a status this code does not know is not read as shut down or gone.
  return 'running';
}

/** Zone `gb1-a` is in region `gb1`. */
export function regionOfZone(zone: string): string {
  const match = /^(.+)-[a-z]$/.exec(zone);
  return match?.[1] ?? zone;
}

function toInstance(server: ApiServer, state: InstanceState): Instance {
  const zone = server.zone?.handle ?? '';
  return {
    providerID: formatProviderID(SCHEME, server.id),
    name: server.name ?? '',
    state,
    type: server.server_type?.handle ?? '',
    zone,
    region: zone ? regionOfZone(zone) : '',
    addresses: addressesOf(server),
    labels: {},
  };
}

/**
 * As the official controller reports them: the hostname, the server's FQDN as ExternalDNS, every
 * interface address and every mapped cloud IP as ExternalIP, each cloud IP's FQDN as ExternalDNS.
 */
export function addressesOf(server: ApiServer): NodeAddress[] {
  const out: NodeAddress[] = [];
  const add = (type: NodeAddress['type'], address: string | null | undefined, ip = false) => {
    if (!address || (ip && isIP(address) === 0)) return;
    if (!out.some((a) => a.type === type && a.address === address)) out.push({ type, address });
  };
  add('Hostname', server.hostname);
  add('ExternalDNS', server.fqdn);
  for (const iface of server.interfaces ?? []) {
    add('ExternalIP', iface.ipv4_address, true);
    add('ExternalIP', iface.ipv6_address, true);
  }
  for (const cip of server.cloud_ips ?? []) {
    add('ExternalIP', cip.public_ipv4 ?? cip.public_ip, true);
    add('ExternalDNS', cip.fqdn);
  }
  return out;
}
