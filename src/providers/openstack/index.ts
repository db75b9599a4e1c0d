import { InvalidConfigError } from '../errors.js';
import type { Provider, ProviderDefinition, ProviderDeps, ProviderValues } from '../types.js';
import { officialController } from './adoption.js';
import { ANNOTATIONS } from './annotations.js';
import { Session, type SessionOptions } from './client.js';
import { defaultCloudsFiles } from './clouds-yaml.js';
import { type CloudConfig, parseCloudConfig, readCloudConfig } from './config.js';
import {
  CLOUD_CONFIG_CONTENT,
  CLOUD_CONFIG_PATH,
  CLOUD_NAME,
  CLOUDS_FILE,
  credentials,
} from './credentials.js';
import { NovaInstances, SCHEME } from './instances.js';
import { OctaviaLoadBalancers } from './load-balancers.js';
import { NeutronRoutes } from './routes.js';

/**
 * OpenStack: Keystone v3 for tokens and the catalog, Nova for instances, Octavia (with Neutron
 * floating IPs) for load balancers — configured by the official controller's cloud.conf.
 */
export const openstack: ProviderDefinition = {
  name: 'openstack',
  annotations: Object.values(ANNOTATIONS),
  providerIdScheme: SCHEME,
  description:
    "OpenStack (Keystone v3, Nova, Octavia, Neutron), configured by the official controller's cloud.conf",
  credentials,
  configFileField: CLOUD_CONFIG_PATH,
  officialControllers: [officialController],
  create(values: ProviderValues, deps: ProviderDeps): Provider {
    return createOpenStack(loadConfig(values), deps);
  },
};

export function loadConfig(values: ProviderValues): CloudConfig {
  const cloudsFile = values[CLOUDS_FILE]?.trim();
  const options = { cloudsFiles: [...(cloudsFile ? [cloudsFile] : []), ...defaultCloudsFiles()] };
  const path = values[CLOUD_CONFIG_PATH]?.trim();
  if (path) return readCloudConfig(path, options);
  const content = values[CLOUD_CONFIG_CONTENT];
  if (content?.trim()) return parseCloudConfig(content, 'cloud.conf', options);
  const cloud = values[CLOUD_NAME]?.trim();
  // OS_CLOUD alone: clouds.yaml is the whole configuration, as for the openstack CLI.
  if (cloud) return parseCloudConfig(`[Global]\nuse-clouds=true\ncloud=${cloud}\n`, 'clouds.yaml', options);
  throw new InvalidConfigError(
    "no cloud.conf given; pass --cloud-config <file> with the official controller's cloud.conf (the cloud.conf key of the Secret kube-system/cloud-config), or set OS_CLOUD to use clouds.yaml",
  );
}

export function createOpenStack(
  config: CloudConfig,
  deps: ProviderDeps,
  options: SessionOptions = {},
): Provider {
  const session = new Session(config.global, deps, options);
  return {
    name: 'openstack',
    providerIdScheme: SCHEME,
    ...(deps.takeToken ? { requestBudgeted: true } : {}),
    instances: new NovaInstances(session, config.networking),
    ...(config.loadBalancer.enabled
      ? { loadBalancers: new OctaviaLoadBalancers(session, config.loadBalancer) }
      : {}),
    ...(config.route.routerID
      ? { routes: new NeutronRoutes(session, config.route.routerID) }
      : { noRoutesReason: 'cloud.conf has no [Route] router-id' }),
    async verifyCredentials(signal?: AbortSignal): Promise<string> {
      const token = await session.keystone.current(signal);
      const who = token.user ? ` as ${token.user.name}` : '';
      const project = token.project ? `project ${token.project.name} (${token.project.id})` : 'no project';
      return `Keystone issued a token${who} for ${project}`;
    },
  };
}
