import type { CredentialSchema } from '../types.js';

export const DEFAULT_API_URL = 'https://api.digitalocean.com';
export const DEFAULT_TIMEOUT_SECONDS = 30;

/**
 * As DigitalOcean's own controller reads them: the token from env DO_ACCESS_TOKEN or the Secret
 * kube-system/digitalocean (key access-token), the API base URL from DO_OVERRIDE_URL, the region of
 * load balancers from REGION and their VPC from DO_CLUSTER_VPC_ID. A cluster can switch between that
 * controller and ccm without re-entering anything. Region and VPC may also be Secret keys, so that
 * the pods of `ccm manifests` get them without an edited manifest.
 */
export const credentials: CredentialSchema = {
  secretName: 'digitalocean',
  fields: [
    {
      key: 'token',
      description: 'DigitalOcean API token with read and write scope (Control Panel > API > Tokens)',
      secret: true,
      required: true,
      prompt: 'password',
      env: ['DO_ACCESS_TOKEN'],
      secretKey: 'access-token',
    },
    {
      key: 'apiUrl',
      description: 'DigitalOcean API base URL (to reach the API through a proxy or a test double)',
      secret: false,
      required: false,
      prompt: 'input',
      default: DEFAULT_API_URL,
      env: ['DO_OVERRIDE_URL'],
    },
    {
      key: 'timeoutSeconds',
      description: 'Seconds one DigitalOcean API request may take before it is abandoned and retried',
      secret: false,
      required: false,
      prompt: 'input',
      default: String(DEFAULT_TIMEOUT_SECONDS),
      env: ['DO_API_TIMEOUT_SECONDS'],
    },
    {
      key: 'region',
      description:
        "Region slug (e.g. nyc3) of the cluster's load balancers; default: the region of a backend droplet that exists",
      secret: false,
      required: false,
      prompt: 'input',
      env: ['REGION'],
      secretKey: 'region',
    },
    {
      key: 'vpcId',
      description:
        "VPC id of the cluster's droplets, for its load balancers; default: the VPC of a backend droplet that exists, else the region's default VPC",
      secret: false,
      required: false,
      prompt: 'input',
      env: ['DO_CLUSTER_VPC_ID'],
      secretKey: 'vpc-id',
    },
  ],
};
