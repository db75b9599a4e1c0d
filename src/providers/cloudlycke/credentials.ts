import type { CredentialSchema } from '../types.js';

/**
 * Cloudlycke has no API and no secret: its state is either an inventory file or the local `vagrant`
 * tool. Nothing lives in a Kubernetes Secret, so there is no secretName.
 */
export const credentials: CredentialSchema = {
  fields: [
    {
      key: 'inventory',
      description:
        'Path of the inventory YAML file that lists the instances (the cloud state); when unset, ccm asks the local vagrant',
      secret: false,
      required: false,
      prompt: 'file',
      env: ['CLOUDLYCKE_INVENTORY'],
    },
    {
      key: 'vagrantDir',
      description:
        'Folder holding the Vagrantfile, used when no inventory is given (default: the current folder)',
      secret: false,
      required: false,
      prompt: 'input',
      env: ['CLOUDLYCKE_VAGRANT_DIR', 'VAGRANT_CWD'],
    },
    {
      key: 'loadBalancerPool',
      description:
        'Addresses for LoadBalancer Services when no inventory sets loadBalancerPool: CIDRs or ranges, comma-separated (e.g. 192.168.56.240/28)',
      secret: false,
      required: false,
      prompt: 'input',
      env: ['CLOUDLYCKE_LOAD_BALANCER_POOL'],
    },
    {
      key: 'routeTable',
      description:
        "The host's routing table that holds the Pod routes of the route controller (default main)",
      secret: false,
      required: false,
      prompt: 'input',
      default: 'main',
      env: ['CLOUDLYCKE_ROUTE_TABLE'],
      flag: 'cloudlycke-route-table',
    },
  ],
};
