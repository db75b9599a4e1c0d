import type { CredentialSchema } from '../types.js';

export const DEFAULT_API_URL = 'https://api.digitalocean.com';
export const DEFAULT_TIMEOUT_SECONDS = 30;

/**
 * As DigitalOcean's own controller reads them: the token from env DO_ACCESS_TOKEN or the Secret
 * kube-system/digitalocean (key access-token), the API base URL from DO_OVERRIDE_URL. A cluster can
 * switch between that controller and ccm without re-entering anything.
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
  ],
};
