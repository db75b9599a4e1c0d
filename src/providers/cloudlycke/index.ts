import type { Provider, ProviderDefinition, ProviderDeps, ProviderValues } from '../types.js';
import { AddressPool } from './address-pool.js';
import { annotations } from './annotations.js';
import { credentials } from './credentials.js';
import { inventoryInstances, SCHEME, vagrantInstances } from './instances.js';
import { readInventory } from './inventory.js';
import { CloudlyckeLoadBalancers } from './load-balancers.js';
import { HostRoutes } from './routes.js';
import { Vagrant } from './vagrant.js';

/**
 * Cloudlycke: a local Vagrant/VirtualBox cloud. With an inventory file (`values.inventory`, filled by
 * `--cloud-config`) the file is the cloud; without one, the local `vagrant` in `values.vagrantDir` is.
 */
export const cloudlycke: ProviderDefinition = {
  name: 'cloudlycke',
  annotations: annotations.map(({ key, description, managed }) => ({
    key,
    accepted: managed ? 'set by ccm' : 'an address of the pool',
    description,
  })),
  providerIdScheme: SCHEME,
  description:
    'Cloudlycke, a local Vagrant/VirtualBox cloud: instances from an inventory file or from vagrant',
  credentials,
  configFileField: 'inventory',
  // Vagrant machines have no metadata service: the kubelet is told its provider ID (the seeds' way).
  clusterFlags: { kubeletProviderID: true },
  officialControllers: [],
  noOfficialController:
    "Cloudlycke is a local Vagrant cloud that only ccm serves; its load balancers are ccm's own from the start",
  create(values: ProviderValues, deps: ProviderDeps): Provider {
    const inventory = nonEmpty(values.inventory);
    const instances = inventory
      ? inventoryInstances(inventory, deps)
      : vagrantInstances(
          new Vagrant({
            cwd: nonEmpty(values.vagrantDir),
            ...(deps.onCloudCall ? { onCall: deps.onCloudCall } : {}),
          }),
        );
    const poolValue = nonEmpty(values.loadBalancerPool);
    const loadBalancers = new CloudlyckeLoadBalancers({
      async pool(signal) {
        const fromInventory = inventory
          ? (await readInventory(inventory, signal)).loadBalancerPool
          : undefined;
        if (fromInventory)
          return AddressPool.parse(fromInventory, `inventory ${inventory}: loadBalancerPool`);
        return poolValue
          ? AddressPool.parse(poolValue.split(','), 'CLOUDLYCKE_LOAD_BALANCER_POOL')
          : undefined;
      },
    });
    const routes = new HostRoutes(nonEmpty(values.routeTable)?.trim() ?? 'main');
    return { name: 'cloudlycke', providerIdScheme: SCHEME, instances, loadBalancers, routes };
  },
};

function nonEmpty(value: string | undefined): string | undefined {
  return value?.trim() ? value : undefined;
}
