import { InvalidConfigError, NotFoundError, RetryableError } from '../errors.js';
import { formatProviderID, parseProviderID } from '../provider-id.js';
import type { Instance, Instances, NodeAddress, ProviderDeps } from '../types.js';
import { type InventoryInstance, readInventory } from './inventory.js';
import {
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

/** Instances as the local `vagrant` sees them: one `status` call, plus one `ssh-config` for the running ones. */
export function vagrantInstances(vagrant: Vagrant): Instances {
  return {
    async list(signal) {
      const machines = await vagrant.status(undefined, signal);
      const running = machines.filter((m) => mapVagrantState(m.state) === 'running').map((m) => m.name);
      const ssh = await vagrant.sshConfig(running, signal);
      return machines.map((machine) => fromVagrant(machine, ssh.get(machine.name)));
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
      if (state === 'gone') {
        throw new NotFoundError(`vagrant machine "${id}" in ${vagrant.folder} is not created`);
      }
      const ssh =
        state === 'running' ? await vagrant.sshConfig([id], signal) : new Map<string, SshHostConfig>();
      return fromVagrant(machine, ssh.get(id));
    },
  };
}

function fromVagrant(machine: VagrantMachine, ssh: SshHostConfig | undefined): Instance {
  // With VirtualBox NAT, vagrant only knows 127.0.0.1. Reporting no addresses at all then keeps the
  // kubelet's own (the node controller leaves a Node's addresses alone when the cloud has none).
  const ip = internalIPFromSsh(ssh);
  const addresses: NodeAddress[] = ip
    ? [
        { type: 'InternalIP', address: ip },
        { type: 'Hostname', address: machine.name },
      ]
    : [];
  return {
    providerID: formatProviderID(SCHEME, machine.name),
    name: machine.name,
    state: mapVagrantState(machine.state),
    type: machine.provider === 'virtualbox' ? 'vbox.vm' : `vagrant.${machine.provider}`,
    region: machine.provider,
    zone: machine.provider,
    addresses,
    labels: {},
  };
}
