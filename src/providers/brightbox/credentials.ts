import type { CredentialSchema } from '../types.js';
import { DEFAULT_API_URL } from './client.js';

/**
 * As the official brightbox-cloud-controller-manager reads them: the API client id and secret and
 * the API URL, from BRIGHTBOX_* variables or the kube-system/brightbox-credentials Secret.
 */
export const credentials: CredentialSchema = {
  secretName: 'brightbox-credentials',
  fields: [
    {
      key: 'client',
      description: 'Brightbox API client id (cli-xxxxx), created in the Brightbox Manager under API access',
      secret: false,
      required: true,
      prompt: 'input',
      env: ['BRIGHTBOX_CLIENT'],
      secretKey: 'controller-client',
    },
    {
      key: 'clientSecret',
      description: 'Secret of that API client',
      secret: true,
      required: true,
      prompt: 'password',
      env: ['BRIGHTBOX_CLIENT_SECRET'],
      secretKey: 'controller-client-secret',
    },
    {
      key: 'apiUrl',
      description: 'Brightbox API URL (the region the cluster runs in)',
      secret: false,
      required: false,
      prompt: 'input',
      default: DEFAULT_API_URL,
      env: ['BRIGHTBOX_API_URL'],
      secretKey: 'apiurl',
    },
    {
      key: 'account',
      description:
        'Account id (acc-xxxxx) to act in, for API clients with access to several accounts; ccm sends it as account_id',
      secret: false,
      required: false,
      prompt: 'input',
      env: ['BRIGHTBOX_ACCOUNT'],
    },
  ],
};
