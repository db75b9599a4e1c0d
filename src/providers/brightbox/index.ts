import { encryptedOrLocal } from '../../plain-http.js';
import { InvalidConfigError } from '../errors.js';
import type { Provider, ProviderDefinition, ProviderDeps, ProviderValues } from '../types.js';
import { officialController } from './adoption.js';
import { ANNOTATIONS, type AnnotationSpec } from './annotations.js';
import { BrightboxClient, type BrightboxClientOptions, DEFAULT_API_URL } from './client.js';
import { credentials } from './credentials.js';
import { brightboxInstances, GoneServers, SCHEME } from './instances.js';
import { brightboxLoadBalancers } from './load-balancers.js';

export const brightbox: ProviderDefinition = {
  name: 'brightbox',
  annotations: Object.values(ANNOTATIONS as Record<string, AnnotationSpec>).map(
    ({ key, aliases, accepted, description }) => ({
      key,
      accepted,
      description: aliases?.length ? `${description} (also read as ${aliases.join(', ')})` : description,
    }),
  ),
  providerIdScheme: SCHEME,
  description:
    'Brightbox Cloud: servers, and load balancers with cloud IPs, server groups and firewall policies',
  credentials,
  officialControllers: [officialController],
  apiUrlField: 'apiUrl',
  create(values: ProviderValues, deps: ProviderDeps): Provider {
    return createBrightbox(clientOptions(values, deps));
  },
};

/** Builds the provider from checked options; tests hand in the HTTP seams here. */
export function createBrightbox(options: BrightboxClientOptions): Provider {
  const client = new BrightboxClient(options);
  // What the instance lookups proved gone: load balancers leave those servers out without a call.
  const gone = new GoneServers();
  return {
    name: 'brightbox',
    providerIdScheme: SCHEME,
    // gobrightbox interfaces.go and cloud_ips.go. Said in every start log: an operator's words.
    noRoutesReason:
      "Brightbox's API has no routes: a server interface is only a MAC address and its IP addresses, and a cloud IP maps one address, not a range",
    // Each request the client sends takes its token (token requests and retries too), not each operation.
    ...(options.takeToken ? { requestBudgeted: true } : {}),
    instances: brightboxInstances(client, gone),
    loadBalancers: brightboxLoadBalancers(client, gone),
    verifyCredentials: (signal) => client.verify(signal),
  };
}

export function clientOptions(values: ProviderValues, deps: ProviderDeps): BrightboxClientOptions {
  const clientId = values.client?.trim();
  const clientSecret = values.clientSecret;
  if (!clientId) {
    throw new InvalidConfigError(
      'no Brightbox API client id; set BRIGHTBOX_CLIENT (Secret key controller-client)',
    );
  }
  if (!clientSecret) {
    throw new InvalidConfigError(
      'no Brightbox API client secret; set BRIGHTBOX_CLIENT_SECRET (Secret key controller-client-secret)',
    );
  }
  const apiUrl = checkApiUrl(values.apiUrl?.trim() || DEFAULT_API_URL);
  const account = values.account?.trim();
  if (account && !/^acc-[0-9a-z]{5}$/.test(account)) {
    throw new InvalidConfigError(`BRIGHTBOX_ACCOUNT "${account}" is not an account id (acc-xxxxx)`);
  }
  return {
    apiUrl,
    clientId,
    clientSecret,
    ...(account ? { accountId: account } : {}),
    ...(deps.onCloudCall ? { onCloudCall: deps.onCloudCall } : {}),
    ...(deps.mayWrite ? { mayWrite: deps.mayWrite } : {}),
    ...(deps.takeToken ? { takeToken: deps.takeToken } : {}),
    ...(deps.rateLimited ? { rateLimited: deps.rateLimited } : {}),
    ...credentialsFrom(deps),
  };
}

/** "the id from X and the secret from Y", when the edge says where each came from. */
function credentialsFrom(deps: ProviderDeps): { credentialsFrom?: string } {
  const id = deps.origin?.('client');
  const secret = deps.origin?.('clientSecret');
  if (!id || !secret) return {};
  return { credentialsFrom: `the client id (${id}) and its secret (${secret})` };
}

/** https, or http to a loopback address only: the client secret travels in every token request. */
function checkApiUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidConfigError(
      `BRIGHTBOX_API_URL "${value}" is not a URL; use e.g. ${DEFAULT_API_URL} (or --cloud-api-url)`,
    );
  }
  if (!encryptedOrLocal(url) || url.username || url.password || url.search || url.hash) {
    throw new InvalidConfigError(
      `BRIGHTBOX_API_URL "${url.origin}" must be an https URL without credentials or query (http only on loopback)`,
    );
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
