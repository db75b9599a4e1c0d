import { isIP } from 'node:net';
import { InvalidConfigError, NotFoundError } from '../errors.js';
import { formatProviderID, parseProviderID } from '../provider-id.js';
import type { Instance, InstanceState, Instances, NodeAddress } from '../types.js';
import type { Machine, TritonClient } from './client.js';

export const SCHEME = 'triton';

/** The data centre name, resolved once (configured, or looked up in ListDatacenters). */
export type DatacenterResolver = (signal?: AbortSignal) => Promise<string>;

export function tritonInstances(client: TritonClient, datacenter: DatacenterResolver): Instances {
  return {
    async list(signal) {
      const [machines, region] = await Promise.all([client.listMachines(signal), datacenter(signal)]);
      return machines.map((m) => toInstance(m, region));
    },
    async get(providerID, signal) {
      const id = machineID(providerID);
      const [machine, region] = await Promise.all([client.getMachine(id, signal), datacenter(signal)]);
      // GetMachine still answers for a destroyed machine whose history is kept: that is "gone".
      if (machine.state === 'deleted') throw new NotFoundError(`machine ${id} was destroyed`);
      return toInstance(machine, region);
    },
  };
}

/** Machine ids are UUIDs (sdc-cloudapi lib/endpoints/disks.js and lib/nics.js refuse any other vm uuid). */
const MACHINE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function machineID(providerID: string): string {
  const parsed = parseProviderID(providerID);
  if (parsed?.scheme !== SCHEME || parsed.location !== '' || !MACHINE_ID.test(parsed.id)) {
    throw new InvalidConfigError(`provider ID "${providerID}" is not a Triton one (triton://<machine uuid>)`);
  }
  return parsed.id;
}

/**
 * CloudAPI states: running, stopped, and transitions (provisioning, stopping, offline, ready…) that
 * are neither shut down nor gone; `failed` never ran; `deleted` only appears for kept history.
 */
function state(value: string): InstanceState {
  if (value === 'deleted') return 'gone';
  if (value === 'stopped' || value === 'failed') return 'stopped';
  return 'running';
}

export function toInstance(machine: Machine, region: string): Instance {
  return {
    providerID: formatProviderID(SCHEME, machine.id),
    name: machine.name,
    state: state(machine.state),
    type: machine.package ?? '',
    region,
    zone: '',
    addresses: addresses(machine),
    labels: {},
  };
}

/**
 * Machine objects list bare IPs (`ips`; machines made outside CloudAPI may say "dhcp"). Private and
 * shared address space is InternalIP, everything else ExternalIP; the primary IP leads its kind.
 */
export function addresses(machine: Machine): NodeAddress[] {
  const ips = [...new Set((machine.ips ?? []).filter((ip) => isIP(ip) !== 0))];
  const primary = machine.primaryIp;
  ips.sort((a, b) => Number(b === primary) - Number(a === primary));
  const internal = ips.filter(isPrivate).map((address) => ({ type: 'InternalIP' as const, address }));
  const external = ips
    .filter((ip) => !isPrivate(ip))
    .map((address) => ({ type: 'ExternalIP' as const, address }));
  return [...internal, ...external];
}

/** RFC 1918, RFC 6598 shared space, link-local, loopback; IPv6 unique-local and link-local. */
export function isPrivate(ip: string): boolean {
  if (isIP(ip) === 6) return /^(f[cd]|fe[89ab])/i.test(ip) || ip === '::1';
  const [a = 0, b = 0] = ip.split('.').map(Number);
  return (
    a === 10 ||
    a === 127 ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254)
  );
}
