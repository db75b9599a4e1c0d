import { isObject, unexpectedAnswer } from '../answer.js';
import { InvalidConfigError } from '../errors.js';
import type { Provider, ProviderDefinition, ProviderDeps, ProviderValues } from '../types.js';
import { officialController } from './adoption.js';
import { annotationReference } from './annotations.js';
import { DigitalOceanClient, type DigitalOceanClientOptions } from './client.js';
import { credentials, DEFAULT_TIMEOUT_SECONDS } from './credentials.js';
import { DropletMemo, dropletInstances, SCHEME } from './instances.js';
import { doLoadBalancers, type LoadBalancerPlacement } from './load-balancers.js';

/**
 * `ccm run`'s default budget on DigitalOcean, from its published limits per token: 5,000 requests an
 * hour and 250 a minute (OpenAPI document, info.description "Rate Limit"; each request counts for a
 * sliding hour). A token bucket of rate r and size b, full at the start, lets through at most
 * b + r·T requests in any window of T seconds. So both limits hold when
 *   b + 60·r ≤ 250    (the minute)    and    b + 3600·r ≤ 5000    (the hour).
 * The sustained rate can only be 5000/3600 = 1.389 a second with no burst at all; r = 1.34 leaves
 * b ≤ 176 for the hour and b ≤ 169 for the minute. b = 150 keeps a margin on both for requests that
 * arrive closer together than they left (latency jitter): at most 230 in any minute (20 under the
 * limit), 4,974 in any hour (26 under). The same token used by anything else (DigitalOcean's CSI
 * driver, a person's doctl) shares those limits: lower --cloud-qps / --cloud-burst for it.
 */
export const DIGITALOCEAN_REQUEST_BUDGET = {
  qps: 1.34,
  burst: 150,
} as const;

/** DigitalOcean: droplets as instances, load balancers, token credentials as its own controller reads them. */
export const digitalocean: ProviderDefinition = {
  name: 'digitalocean',
  annotations: annotationReference.map((a) => ({
    key: a.name,
    accepted: a.default ? `${a.values} (default: ${a.default})` : a.values,
    description: a.description,
  })),
  providerIdScheme: SCHEME,
  description: 'DigitalOcean: droplets and load balancers through the DigitalOcean API (v2)',
  credentials,
  apiUrlField: 'apiUrl',
  // Droplet names do not resolve in DNS: the API server reaches kubelets by IP.
  clusterFlags: { kubeApiserver: { 'kubelet-preferred-address-types': 'InternalIP,ExternalIP,Hostname' } },
  officialControllers: [officialController],
  requestBudget: DIGITALOCEAN_REQUEST_BUDGET,
  create(values: ProviderValues, deps: ProviderDeps): Provider {
    return createDigitalOcean(
      {
        token: values.token ?? '',
        ...(values.apiUrl ? { baseUrl: values.apiUrl } : {}),
        timeoutMs: timeoutSeconds(values.timeoutSeconds) * 1000,
        ...(deps.onCloudCall ? { onCloudCall: deps.onCloudCall } : {}),
        ...(deps.mayWrite ? { mayWrite: deps.mayWrite } : {}),
        ...(deps.takeToken ? { takeToken: deps.takeToken } : {}),
        ...(deps.rateLimited ? { rateLimited: deps.rateLimited } : {}),
        ...(deps.origin?.('token') ? { tokenFrom: deps.origin('token') } : {}),
      },
      placement(values.region, values.vpcId, deps.origin),
    );
  },
};

/** The provider over a client built from these options (tests pass timer seams here). */
export function createDigitalOcean(
  options: DigitalOceanClientOptions,
  place: LoadBalancerPlacement = {},
): Provider {
  const client = new DigitalOceanClient(options);
  // The droplets the instance listing showed: load balancers are placed by them without a call.
  const droplets = new DropletMemo();
  return {
    name: 'digitalocean',
    providerIdScheme: SCHEME,
    // PUT/PATCH /v2/vpcs/{vpc_id} takes only these (OpenAPI components.schemas.vpc_updatable). The
    // reason is in every start log and in doctor: an operator's words, no document's internals.
    noRoutesReason:
      "DigitalOcean's API has no routes: a VPC takes only a name, a description and whether it is the default",
    // Each request the client sends takes its token (the API's limits count requests, not operations).
    ...(options.takeToken ? { requestBudgeted: true } : {}),
    instances: dropletInstances(client, droplets),
    loadBalancers: doLoadBalancers(client, place, droplets),
    async verifyCredentials(signal) {
      const body = await client.get<{
        account?: { email: string; status: string; team?: { name?: string } };
      }>('checking the token (GET /v2/account)', '/v2/account', signal);
      const account = body?.account;
      if (!isObject(account) || typeof account.email !== 'string')
        throw unexpectedAnswer(
          'GET /v2/account',
          'an object with "account" (its email, status and team)',
          body,
        );
      const team = account.team?.name ? `, team ${account.team.name}` : '';
      return `DigitalOcean account ${account.email}${team} (status ${account.status})`;
    },
  };
}

/**
 * REGION and DO_CLUSTER_VPC_ID, checked for their shape before any call. A bad value's line names
 * where it was given (`origin`: a flag, the operator's Secret), else where ccm reads it by default.
 */
function placement(
  region: string | undefined,
  vpcId: string | undefined,
  origin?: (field: string) => string | undefined,
): LoadBalancerPlacement {
  const r = region?.trim();
  const v = vpcId?.trim();
  const regionFrom = origin?.('region');
  if (r && !/^[a-z]+[0-9]+$/.test(r)) {
    throw new InvalidConfigError(
      regionFrom
        ? `DigitalOcean region "${r}" (from ${regionFrom}) is not a region slug; give one such as nyc3`
        : `DigitalOcean region "${r}" is not a region slug; set REGION (or key region of Secret kube-system/digitalocean) to e.g. nyc3`,
    );
  }
  const vpcFrom = origin?.('vpcId');
  if (v && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v)) {
    throw new InvalidConfigError(
      vpcFrom
        ? `DigitalOcean VPC id "${v}" (from ${vpcFrom}) is not a VPC id (a UUID); give the id of the cluster's VPC`
        : `DigitalOcean VPC id "${v}" is not a VPC id (a UUID); set DO_CLUSTER_VPC_ID (or key vpc-id of Secret kube-system/digitalocean) to the cluster's VPC`,
    );
  }
  return {
    ...(r ? { region: r } : {}),
    ...(v ? { vpcId: v } : {}),
    ...(regionFrom ? { regionFrom } : {}),
  };
}

function timeoutSeconds(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return DEFAULT_TIMEOUT_SECONDS;
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value.trim()) || !(n > 0) || n > 600) {
    throw new InvalidConfigError(
      `DO_API_TIMEOUT_SECONDS "${value}" is not a number of seconds from 0 to 600; use e.g. 30`,
    );
  }
  return n;
}
