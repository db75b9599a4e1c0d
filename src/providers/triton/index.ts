import { encryptedOrLocal } from '../../plain-http.js';
import { InvalidConfigError } from '../errors.js';
import type { Provider, ProviderDefinition, ProviderDeps, ProviderValues } from '../types.js';
import { ANNOTATIONS } from './annotations.js';
import { TritonClient } from './client.js';
import { CmonGroups } from './cmon.js';
import { parseCmonGroups } from './cmon-spec.js';
import { credentials } from './credentials.js';
import { type DatacenterResolver, SCHEME, tritonInstances } from './instances.js';
import { CnsLoadBalancers } from './load-balancers.js';
import { MachineTagWriter } from './machine-tags.js';
import { FabricRoutes } from './routes.js';
import { createKeySigner, createSigner, type KeySigner } from './signer.js';

const DEFAULT_CNS_SUFFIX = 'triton.zone';

/**
 * `ccm run`'s default budget on Triton, from the throttle every Triton DataCenter ships: CloudAPI's
 * userThrottles "all", 10 requests a second and bursts of 30 per account (sdc-cloudapi
 * sapi_manifests/cloudapi/template; docs/admin.md "Throttles"), a token bucket per endpoint group
 * (restify 4.3.3 lib/plugins/throttle.js; the machines and their tags, which are almost all of ccm's
 * requests, share one). A bucket of rate r and size b, full at the start, lets through at most
 * b + r·T requests in any window of T seconds, and CloudAPI's refuses none of those as long as
 *   b + r·T ≤ 30 + 10·T   for every T,   that is   b ≤ 30 and r ≤ 10.
 * 8 and 24 keep a fifth of both free: for requests that arrive closer together than they left, and for
 * the account's other users (sub-users share the account's bucket: `triton`, Terraform, the portal).
 * An operator whose data centre throttles otherwise (or not at all, CLOUDAPI_THROTTLE_WHITELIST) sets
 * --cloud-qps / --cloud-burst.
 */
export const TRITON_REQUEST_BUDGET = {
  qps: 8,
  burst: 24,
} as const;

/**
 * Triton (Joyent CloudAPI): machines as instances, HTTP Signature auth with the account's SSH key,
 * and Service load balancing through CNS tags.
 */
export const triton: ProviderDefinition = {
  name: 'triton',
  annotations: ANNOTATIONS.map(({ key, accepted, description }) => ({ key, accepted, description })),
  providerIdScheme: SCHEME,
  description: 'Triton DataCenter (Joyent CloudAPI): machines, CNS service load balancing',
  credentials,
  // joyent/triton-kubernetes (3c701eb, the last commit, 2021) installs clusters through Terraform and
  // Rancher and ships no cloud controller; the only Triton controller published,
  // cheapRoc/triton-cloud-controller-manager (triton/triton.go), implements Instances and no
  // LoadBalancer. Nothing official builds load balancers on Triton, so there is nothing to take over.
  officialControllers: [],
  noOfficialController:
    'Joyent publishes none (joyent/triton-kubernetes installs clusters with Terraform and Rancher, without a cloud controller), and the one community controller (cheapRoc/triton-cloud-controller-manager) has no load balancers; ccm uses Triton CNS, with nothing of anyone else to adopt',
  apiUrlField: 'url',
  requestBudget: TRITON_REQUEST_BUDGET,
  create(values: ProviderValues, deps: ProviderDeps): Provider {
    const url = required(values.url, 'the CloudAPI URL', 'TRITON_URL (or --cloud-api-url)');
    const account = required(values.account, 'the account', 'TRITON_ACCOUNT');
    checkUrl(url);
    const keyMaterial = value(values.keyMaterial);
    const passphrase = value(values.keyPassphrase);
    const signer = createSigner({
      account,
      user: value(values.user),
      keyId: value(values.keyId),
      keyMaterial,
      passphrase,
      agentSocket: value(values.sshAuthSock),
    });
    const client = new TritonClient({
      url,
      account,
      signer,
      secrets: [keyMaterial, passphrase].filter((s): s is string => s !== undefined),
      onRequest: deps.onCloudCall ? (info) => deps.onCloudCall?.(`${info.method} ${info.path}`) : undefined,
      ...(deps.mayWrite ? { mayWrite: deps.mayWrite } : {}),
      ...(deps.takeToken ? { takeToken: deps.takeToken } : {}),
      ...(deps.rateLimited ? { rateLimited: deps.rateLimited } : {}),
    });
    const datacenter = resolveDatacenter(client, url, value(values.datacenter));
    // CNS entries and CMON groups go on the same machines: one queue per machine for both.
    const tags = new MachineTagWriter(client);
    return {
      name: 'triton',
      providerIdScheme: SCHEME,
      // Each request the client sends takes its token (CloudAPI's throttle counts requests, not operations).
      ...(deps.takeToken ? { requestBudgeted: true } : {}),
      ...routesOf(client, value(values.routeNetwork)),
      ...groupsOf(client, tags, value(values.cmonGroups), deps),
      instances: tritonInstances(client, datacenter),
      loadBalancers: new CnsLoadBalancers(
        client,
        { datacenter, cnsSuffix: (value(values.cnsSuffix) ?? DEFAULT_CNS_SUFFIX).replace(/^\.+|\.+$/g, '') },
        tags,
      ),
      async verifyCredentials(signal) {
        const who = await client.getAccount(signal);
        const user = value(values.user);
        return `Triton account ${who.login} (${who.id})${user ? `, user ${user}` : ''} at ${url}`;
      },
    };
  },
};

/**
 * What `secret create --cmon` and `doctor` need for CMON, from the same values as the provider: the
 * account, CloudAPI's ListServices (where CMON is), and the account's key as a certificate signer
 * (the key file, else the ssh-agent), built only when asked for.
 */
export interface CmonAccess {
  account: string;
  listServices(signal?: AbortSignal): Promise<Record<string, string>>;
  keySigner(): KeySigner;
}

/**
 * The values a CMON certificate is made with (cmonAccess): CloudAPI, the account and its key. `secret
 * create --cmon` asks only these on a terminal; the rest (CMON groups, …) belongs to the credentials.
 */
export const CMON_SIGNER_FIELDS: ReadonlySet<string> = new Set([
  'url',
  'account',
  'user',
  'keyId',
  'keyMaterial',
  'keyPassphrase',
  'sshAuthSock',
]);

export function cmonAccess(values: ProviderValues, deps: Pick<ProviderDeps, 'onCloudCall'> = {}): CmonAccess {
  const url = required(values.url, 'the CloudAPI URL', 'TRITON_URL (or --cloud-api-url)');
  const account = required(values.account, 'the account', 'TRITON_ACCOUNT');
  checkUrl(url);
  const options = {
    account,
    user: value(values.user),
    keyId: value(values.keyId),
    keyMaterial: value(values.keyMaterial),
    passphrase: value(values.keyPassphrase),
    agentSocket: value(values.sshAuthSock),
  };
  const client = new TritonClient({
    url,
    account,
    signer: createSigner(options),
    secrets: [options.keyMaterial, options.passphrase].filter((s): s is string => s !== undefined),
    onRequest: deps.onCloudCall ? (info) => deps.onCloudCall?.(`${info.method} ${info.path}`) : undefined,
  });
  return {
    account,
    listServices: (signal) => client.listServices(signal),
    keySigner: () => createKeySigner(options),
  };
}

/** TRITON_ROUTE_NETWORK, VLAN/NETWORK-UUID: the fabric network of the Pod routes, else none. */
function routesOf(
  client: TritonClient,
  spec: string | undefined,
): Pick<Provider, 'routes' | 'noRoutesReason'> {
  if (!spec) return { noRoutesReason: 'TRITON_ROUTE_NETWORK names no fabric network' };
  const m = /^(\d{1,4})\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.exec(spec.trim());
  if (!m || Number(m[1]) > 4095) {
    throw new InvalidConfigError(
      `TRITON_ROUTE_NETWORK "${spec}" is not VLAN/NETWORK-UUID (e.g. 2/7ed4b4b8-62e2-4a31-9d4f-0bbd2a6ce2b1); \`triton network list\` and \`triton vlan list\` show them`,
    );
  }
  return { routes: new FabricRoutes(client, Number(m[1]), (m[2] as string).toLowerCase()) };
}

/** TRITON_CMON_GROUPS (--cmon-groups, Secret key cmon-groups): the CMON groups ccm keeps, else none. */
function groupsOf(
  client: TritonClient,
  tags: MachineTagWriter,
  text: string | undefined,
  deps: ProviderDeps,
): Pick<Provider, 'instanceGroups'> {
  if (text === undefined) return {};
  try {
    return { instanceGroups: new CmonGroups(client, parseCmonGroups(text.trim()), {}, tags) };
  } catch (err) {
    const where = deps.origin?.('cmonGroups') ?? 'TRITON_CMON_GROUPS';
    throw new InvalidConfigError(`${where}: ${(err as Error).message}`);
  }
}

function value(v: string | undefined): string | undefined {
  return v?.trim() ? v : undefined;
}

function required(v: string | undefined, what: string, where: string): string {
  const found = value(v)?.trim();
  if (!found) throw new InvalidConfigError(`${what} is not set; set ${where}`);
  return found;
}

/** CloudAPI is HTTPS only; plain HTTP only to this machine (a local proxy, tests). */
function checkUrl(url: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidConfigError(
      `the CloudAPI URL "${url}" is not a URL; e.g. https://us-east-1.api.example.com`,
    );
  }
  if (!encryptedOrLocal(parsed)) {
    throw new InvalidConfigError(`the CloudAPI URL ${parsed.origin} must use https`);
  }
}

/**
 * The data centre name: configured (TRITON_DATACENTER), else the ListDatacenters entry whose URL
 * has the configured URL's origin, asked once and kept.
 */
function resolveDatacenter(client: TritonClient, url: string, configured?: string): DatacenterResolver {
  if (configured) return async () => configured.trim();
  let found: Promise<string> | undefined;
  const origin = new URL(url).origin;
  return (signal) => {
    found ??= client.listDatacenters(signal).then((dcs) => {
      const name = Object.entries(dcs ?? {}).find(([, u]) => sameOrigin(u, origin))?.[0];
      if (!name) {
        throw new InvalidConfigError(
          `none of the data centres CloudAPI lists (${Object.keys(dcs ?? {}).join(', ') || 'none'}) has the URL ${origin}; set TRITON_DATACENTER`,
        );
      }
      return name;
    });
    found.catch(() => {
      found = undefined;
    });
    return found;
  };
}

function sameOrigin(candidate: string, origin: string): boolean {
  try {
    return new URL(candidate).origin === origin;
  } catch {
    return false;
  }
}
