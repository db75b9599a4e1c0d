import { InvalidConfigError, NotFoundError, RetryableError } from '../errors.js';
import { formatProviderID, parseProviderID } from '../provider-id.js';
import type { Instance, Instances, NodeAddress, ProviderDeps } from '../types.js';
import { type InventoryInstance, readInventory } from './inventory.js';
import {
  type GuestNetwork,
  guestIPs,
  internalIPFromSsh,
  mapVagrantState,
  type SshHostConfig,
  type Vagrant,
  type VagrantMachine,
} from './vagrant.js';

export const SCHEME = 'cloudlycke';

/**
 * The instance id of a `cloudlycke://<id>` provider ID. Another scheme or a malformed value is
 * InvalidConfigError: such a Node is not ours, and nothing about it may be read as "gone".
 */
export function instanceIdFromProviderID(providerID: string): string {
  const parsed = parseProviderID(providerID);
  if (!parsed || parsed.scheme !== SCHEME || parsed.location !== '') {
    throw new InvalidConfigError(
      `provider ID ${JSON.stringify(providerID)} is not a Cloudlycke provider ID (${SCHEME}://<id>)`,
    );
  }
  return parsed.id;
}

/** Instances read from the inventory file, fresh on every call (the file is the cloud's state). */
export function inventoryInstances(file: string, deps: ProviderDeps = {}): Instances {
  const read = async (signal?: AbortSignal) => {
    deps.onCloudCall?.('inventory read');
    return readInventory(file, signal);
  };
  return {
    async list(signal) {
      const inventory = await read(signal);
      return inventory.instances.map(fromInventory);
    },
    async get(providerID, signal) {
      const id = instanceIdFromProviderID(providerID);
      const inventory = await read(signal);
      const found = inventory.instances.find((instance) => instance.id === id);
      if (!found) throw new NotFoundError(`instance "${id}" is not in inventory ${inventory.file}`);
      return fromInventory(found);
    },
  };
}

function fromInventory(instance: InventoryInstance): Instance {
  return {
    providerID: formatProviderID(SCHEME, instance.id),
    name: instance.name,
    state: instance.state,
    type: instance.type,
    region: instance.region,
    zone: instance.zone,
    addresses: instance.addresses.map((address) => ({ ...address })),
    labels: { ...instance.labels },
  };
}

/**
 * Instances as the local `vagrant` sees them: one `status` call, one `ssh-config` for the running
 * machines, and each running guest asked for its addresses. A machine vagrant reports `not_created`
 * is no instance; and since vagrant cannot tell a destroyed VM from one this folder never created,
 * `get` never answers NotFoundError: Nodes are not deleted on vagrant's word (docs/providers/cloudlycke.md).
 */
export function vagrantInstances(vagrant: Vagrant): Instances {
  return {
    async list(signal) {
      const machines = (await vagrant.status(undefined, signal)).filter(
        (m) => mapVagrantState(m.state) !== undefined,
      );
      const running = machines.filter((m) => mapVagrantState(m.state) === 'running').map((m) => m.name);
      const ssh = await vagrant.sshConfig(running, signal);
      const guests = await vagrant.guestNetworks(running, signal);
      return machines.map((machine) => fromVagrant(machine, ssh.get(machine.name), guests.get(machine.name)));
    },
    async get(providerID, signal) {
      const id = instanceIdFromProviderID(providerID);
      if (id.startsWith('-') || /\s/.test(id)) {
        throw new InvalidConfigError(
          `provider ID ${JSON.stringify(providerID)} does not name a vagrant machine`,
        );
      }
      const machines = await vagrant.status(id, signal);
      const machine = machines.find((m) => m.name === id);
      if (!machine) {
        throw new RetryableError(`vagrant status ${id} in ${vagrant.folder} did not report machine "${id}"`);
      }
      const state = mapVagrantState(machine.state);
      if (state === undefined) {
        throw new InvalidConfigError(
          `vagrant machine "${id}" in ${vagrant.folder} is not created, but vagrant cannot tell a destroyed VM from one created from another folder, so it is not read as gone; delete the Node with kubectl if its VM is gone`,
        );
      }
      if (state !== 'running') return fromVagrant(machine, undefined, undefined);
      const ssh = await vagrant.sshConfig([id], signal);
      const guests = await vagrant.guestNetworks([id], signal);
      return fromVagrant(machine, ssh.get(id), guests.get(id));
    },
  };
}

function fromVagrant(
  machine: VagrantMachine,
  ssh: SshHostConfig | undefined,
  guest: GuestNetwork | undefined,
): Instance {
  // ssh-config's HostName is a node address only when it is not VirtualBox's loopback port forward;
  // the guest adds its own adapters' addresses (the private_network IPs the kubelets use).
  const sshIP = internalIPFromSsh(ssh);
  const ips = [...new Set([...(sshIP ? [sshIP] : []), ...guestIPs(guest, sshIP === undefined)])];
  const addresses: NodeAddress[] =
    ips.length > 0
      ? [
          ...ips.map((address): NodeAddress => ({ type: 'InternalIP', address })),
          { type: 'Hostname', address: machine.name },
        ]
      : [];
  return {
    providerID: formatProviderID(SCHEME, machine.name),
    name: machine.name,
    state: mapVagrantState(machine.state) ?? 'stopped',
    type: machine.provider === 'virtualbox' ? 'vbox.vm' : `vagrant.${machine.provider}`,
    region: machine.provider,
    zone: machine.provider,
    addresses,
    labels: {},
  };
}
