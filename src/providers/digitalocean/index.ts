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
 * DigitalOcean's published limits per token (OpenAPI document, info.description "Rate Limit"): 5,000
 * requests an hour and 250 a minute, each request counted for a whole window after it was made (a
 * sliding window, not a reset on the hour). `ccm run` keeps within both as DigitalOcean counts them,
 * 10 under the minute's and 100 under the hour's for requests that arrive closer together than they
 * left (latency jitter). A token bucket cannot do both: one that may burst 250 and refills at the
 * hourly 1.39 a second lets 333 through in the first minute. The same token used by anything else
 * (DigitalOcean's CSI driver, a person's doctl) shares those limits: give --cloud-qps and
 * --cloud-burst to leave it room.
 */
export const DIGITALOCEAN_RATE_LIMITS = [
  { windowMs: 60_000, max: 250, margin: 10 },
  { windowMs: 3_600_000, max: 5000, margin: 100 },
] as const;

/**
 * Within those windows, the hour is paced: a bucket of r a second holding b lets through at most
 * b + 3,600·r in any hour, so 1 a second and 1,300 keep the hour's 4,900. A burst of up to 1,300
 * requests goes at the minute's pace (5.4 minutes), then 60 a minute for as long as the demand lasts.
 * Without it, a long demand spends the hour's 4,900 in 20 minutes and then sends nothing at all for 40,
 * not even a new Node's initialisation.
 */
export const DIGITALOCEAN_HOURLY_PACE = { qps: 1, burst: 1300 } as const;

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
  rateLimits: DIGITALOCEAN_RATE_LIMITS,
  requestBudget: DIGITALOCEAN_HOURLY_PACE,
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
      { writes: remembered(deps.memory, 'digitalocean/load-balancer-writes') },
    );
  },
};

/** The map under `key` in a run's memory (ProviderDeps.memory), made on first use; a new one without it. */
function remembered<K, V>(memory: Map<string, unknown> | undefined, key: string): Map<K, V> {
  const found = memory?.get(key);
  if (found instanceof Map) return found as Map<K, V>;
  const made = new Map<K, V>();
  memory?.set(key, made);
  return made;
}

/** The provider over a client built from these options (tests pass timer seams here). */
export function createDigitalOcean(
  options: DigitalOceanClientOptions,
  place: LoadBalancerPlacement = {},
  /**
   * How old a shared load balancer listing may answer a Service (default 10 s) and how far apart two
   * start (2 s), for tests; and when each Service's load balancers were last written, kept across reloads.
   */
  tuning: { recentListingMs?: number; listingGapMs?: number; writes?: Map<string, number> } = {},
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
    loadBalancers: doLoadBalancers(client, place, droplets, tuning),
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
