import { isIP } from 'node:net';
import { InvalidConfigError, NotFoundError } from '../errors.js';
import { formatProviderID, parseProviderID } from '../provider-id.js';
import type { Instance, InstanceState, Instances, NodeAddress } from '../types.js';
import type { ApiServer, BrightboxClient } from './client.js';

export const SCHEME = 'brightbox';
export const SERVER_ID = /^srv-[0-9a-z]{5}$/;

/**
 * Servers as instances. Brightbox's server listing has no pages: one GET returns every server of the
 * account. Status (gobrightbox enums/serverstatus): active is running; deleting and deleted are
 * gone in a listing (a lookup reports deleted as not found); every other status is not serving,
 * as the official controller reads anything but active as shut down.
 */
export function brightboxInstances(client: BrightboxClient): Instances {
  return {
    async list(signal) {
      const servers = await client.get<ApiServer[]>('servers', signal);
      if (!Array.isArray(servers)) {
        throw new InvalidConfigError('GET /1.0/servers did not answer with a list; check the API URL');
      }
      return servers.map((server) => toInstance(server, listState(server.status)));
    },
    async get(providerID, signal) {
      const id = serverID(providerID);
      const server = await client.get<ApiServer>(`servers/${id}`, signal);
      if (server.status === 'deleted') {
        throw new NotFoundError(`Brightbox reports server ${id} as deleted`);
      }
      return toInstance(server, server.status === 'active' ? 'running' : 'stopped');
    },
  };
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
  if (status === 'active') return 'running';
  if (status === 'deleting' || status === 'deleted') return 'gone';
  return 'stopped';
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
