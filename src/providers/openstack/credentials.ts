import type { CredentialSchema } from '../types.js';
import { cloudConfBuilder } from './cloud-conf-builder.js';

/**
 * The official controller keeps its whole configuration in one INI file, `cloud.conf`, stored in
 * the Secret kube-system/cloud-config under the key `cloud.conf`. ccm reads the same file: either
 * its path (`--cloud-config`, e.g. the Secret mounted as a volume) or its content (the Secret's key).
 */
export const CLOUD_CONFIG_PATH = 'cloudConfigPath';
export const CLOUD_CONFIG_CONTENT = 'cloudConf';
export const CLOUD_NAME = 'cloud';
export const CLOUDS_FILE = 'cloudsFile';

export const credentials: CredentialSchema = {
  secretName: 'cloud-config',
  fields: [
    {
      key: CLOUD_CONFIG_PATH,
      description:
        "Path of the official controller's cloud.conf (INI: [Global] auth-url, region, credentials; [LoadBalancer]; [Networking]); wins over the content",
      secret: false,
      required: false,
      prompt: 'file',
      env: [],
    },
    {
      key: CLOUD_CONFIG_CONTENT,
      description: 'Content of cloud.conf (it holds the password or application credential secret)',
      secret: true,
      required: false,
      prompt: 'editor',
      env: [],
      secretKey: 'cloud.conf',
      builder: cloudConfBuilder,
    },
    {
      key: CLOUD_NAME,
      description:
        'Without a cloud.conf: the named cloud of clouds.yaml to use (as the openstack CLI); with one, [Global] use-clouds=true and cloud= do this',
      secret: false,
      required: false,
      prompt: 'input',
      env: ['OS_CLOUD'],
    },
    {
      key: CLOUDS_FILE,
      description:
        'Path of clouds.yaml (default ~/.config/openstack/clouds.yaml, then /etc/openstack/clouds.yaml)',
      secret: false,
      required: false,
      prompt: 'file',
      env: ['OS_CLIENT_CONFIG_FILE'],
    },
  ],
};
