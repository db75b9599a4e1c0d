import { decode } from 'ini';
import { closest } from '../../closest.js';
import { FileNotRead, readConfigFile } from '../config-files.js';
import { InvalidConfigError } from '../errors.js';
import { cloudsYamlGlobal, defaultCloudsFiles } from './clouds-yaml.js';

/**
 * The official controller's `cloud.conf` (an INI file read by gcfg there): sections and keys are
 * case-insensitive, `#` and `;` start comments, values may be quoted, a key may repeat (lists), an
 * empty value means "not set". Every key is either understood, or refused in one line naming its
 * section and key, so a setting is never silently ignored.
 */

export type EndpointInterface = 'public' | 'internal' | 'admin';

export type KeystoneAuth =
  | {
      method: 'password';
      user: { id: string } | { name: string; domain: { id: string } | { name: string } };
      password: string;
      /** Absent: Keystone scopes the token to the user's default project. */
      project?: { id: string } | { name: string; domain: { id: string } | { name: string } };
    }
  | {
      method: 'application_credential';
      credential:
        | { id: string }
        | {
            name: string;
            user: { id: string } | { name: string; domain: { id: string } | { name: string } };
          };
      secret: string;
    };

export interface GlobalConfig {
  authUrl: string;
  /** Empty: the catalog must then hold exactly one region for each service. */
  region: string;
  endpointInterface: EndpointInterface;
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  tlsInsecure: boolean;
  auth: KeystoneAuth;
}

export type LbMethod = 'ROUND_ROBIN' | 'LEAST_CONNECTIONS' | 'SOURCE_IP' | 'SOURCE_IP_PORT';
export const LB_METHODS: readonly LbMethod[] = [
  'ROUND_ROBIN',
  'LEAST_CONNECTIONS',
  'SOURCE_IP',
  'SOURCE_IP_PORT',
];

export interface LoadBalancerConfig {
  enabled: boolean;
  subnetId?: string;
  networkId?: string;
  floatingNetworkId?: string;
  floatingSubnetId?: string;
  lbMethod: LbMethod;
  lbProvider?: string;
  flavorId?: string;
  availabilityZone?: string;
  createMonitor: boolean;
  monitorDelaySeconds: number;
  monitorTimeoutSeconds: number;
  monitorMaxRetries: number;
  monitorMaxRetriesDown: number;
  internalLb: boolean;
}

export interface NetworkingConfig {
  publicNetworkNames: string[];
  internalNetworkNames: string[];
  ipv6SupportDisabled: boolean;
}

export interface CloudConfig {
  global: GlobalConfig;
  loadBalancer: LoadBalancerConfig;
  networking: NetworkingConfig;
  /** [Route] router-id: the router whose extra routes carry the Pod routes; none, no routes. */
  route: { routerID?: string };
}

type Raw = Record<string, string[]>;

/** Keys of each section: understood, or known to the official controller but not supported here. */
const GLOBAL_KEYS = [
  'auth-url',
  'os-endpoint-type',
  'ca-file',
  'cert-file',
  'key-file',
  'username',
  'user-id',
  'password',
  'region',
  'domain-id',
  'domain-name',
  'tenant-id',
  'tenant-name',
  'tenant-domain-id',
  'tenant-domain-name',
  'user-domain-id',
  'user-domain-name',
  'application-credential-id',
  'application-credential-name',
  'application-credential-secret',
  'tls-insecure',
  'use-clouds',
  'clouds-file',
  'cloud',
];
/** Known [Global] keys that ccm does not support, with what to do instead. */
const GLOBAL_UNSUPPORTED: Record<string, string> = {
  'trust-id': 'Keystone trusts are not supported; use an application credential or a password',
  'trustee-id': 'Keystone trusts are not supported; use an application credential or a password',
  'trustee-password': 'Keystone trusts are not supported; use an application credential or a password',
};
const LB_KEYS = [
  'enabled',
  'use-octavia',
  'lb-version',
  'subnet-id',
  'network-id',
  'floating-network-id',
  'floating-subnet-id',
  'lb-method',
  'lb-provider',
  'flavor-id',
  'availability-zone',
  'create-monitor',
  'monitor-delay',
  'monitor-timeout',
  'monitor-max-retries',
  'monitor-max-retries-down',
  'internal-lb',
  'cascade-delete',
  'manage-security-groups',
];
const LB_UNSUPPORTED: Record<string, string> = {
  'floating-subnet': 'choosing the floating subnet by name pattern is not supported; use floating-subnet-id',
  'floating-subnet-tags': 'choosing the floating subnet by tags is not supported; use floating-subnet-id',
  'enable-ingress-hostname': 'ingress hostnames (nip.io) are not supported',
  'ingress-hostname-suffix': 'ingress hostnames (nip.io) are not supported',
  'max-shared-lb': 'sharing one load balancer between Services is not supported',
  'container-store': 'TLS containers are not supported',
  'default-tls-container-ref': 'TLS containers are not supported',
  'provider-requires-serial-api-calls': 'ccm always creates load balancers fully populated in one call',
  'node-selector': 'a node selector for load balancer members is not supported',
};
const NETWORKING_KEYS = ['public-network-name', 'internal-network-name', 'ipv6-support-disabled'];
const NETWORKING_UNSUPPORTED: Record<string, string> = {
  'address-sort-order': 'sorting node addresses by CIDR is not supported',
};
/** Sections the official controller's neighbours read from the same Secret (Cinder CSI), ignored whole. */
const FOREIGN_SECTIONS = new Set(['blockstorage', 'metadata']);

/** Reads and parses a cloud.conf file. */
export function readCloudConfig(path: string, options: ParseOptions = {}): CloudConfig {
  let text: string;
  try {
    text = readConfigFile(path);
  } catch (err) {
    if (err instanceof FileNotRead) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new InvalidConfigError(
      `cannot read the cloud config ${path} (${code ?? (err as Error).message}); pass the path of the official controller's cloud.conf with --cloud-config`,
    );
  }
  return parseCloudConfig(text, path, options);
}

export interface ParseOptions {
  /** clouds.yaml files tried in order when [Global] use-clouds=true names none (clouds-file). */
  cloudsFiles?: readonly string[];
}

export function parseCloudConfig(
  text: string,
  source = 'cloud.conf',
  options: ParseOptions = {},
): CloudConfig {
  const sections = readSections(text, source);
  const fail = (section: string, key: string, what: string) =>
    new InvalidConfigError(`${source}: [${section}] ${key}: ${what}`);

  for (const name of Object.keys(sections)) {
    const lower = name.toLowerCase();
    if (['global', 'loadbalancer', 'networking', 'route'].includes(lower) || FOREIGN_SECTIONS.has(lower))
      continue;
    if (lower.startsWith('loadbalancerclass')) {
      throw new InvalidConfigError(
        `${source}: [${name}] load balancer classes are not supported; remove the section and set the floating network with the loadbalancer.openstack.org/floating-network-id annotation`,
      );
    }
    throw new InvalidConfigError(
      `${source}: unknown section [${name}]; the sections are [Global], [LoadBalancer], [Networking] (and [BlockStorage], [Metadata], which ccm ignores)`,
    );
  }

  const global = withClouds(
    section(sections, 'Global', GLOBAL_KEYS, GLOBAL_UNSUPPORTED, source, text),
    source,
    options,
  );
  const lb = section(sections, 'LoadBalancer', LB_KEYS, LB_UNSUPPORTED, source, text);
  const networking = section(sections, 'Networking', NETWORKING_KEYS, NETWORKING_UNSUPPORTED, source, text);
  const route = section(sections, 'Route', ['router-id'], {}, source, text);
  const routerID = one(route, 'router-id', (what) => fail('Route', 'router-id', what));

  const get = (raw: Raw, key: string) => one(raw, key, (what) => fail('Global', key, what));
  const bool = (raw: Raw, sectionName: string, key: string, dflt: boolean) =>
    parseBool(one(raw, key), dflt, (what) => fail(sectionName, key, what));

  const authUrl = get(global, 'auth-url');
  if (!authUrl)
    throw fail(
      'Global',
      'auth-url',
      'required; set it to the Keystone URL, e.g. https://keystone.example.com:5000/v3',
    );
  try {
    const url = new URL(authUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http');
  } catch {
    throw fail('Global', 'auth-url', `"${authUrl}" is not an http(s) URL`);
  }

  const endpointType = (get(global, 'os-endpoint-type') ?? 'public').toLowerCase().replace(/url$/, '');
  if (!['public', 'internal', 'admin'].includes(endpointType)) {
    throw fail('Global', 'os-endpoint-type', `"${endpointType}" is not one of public, internal, admin`);
  }

  const lbMethod = (one(lb, 'lb-method') ?? 'ROUND_ROBIN').toUpperCase() as LbMethod;
  if (!LB_METHODS.includes(lbMethod)) {
    throw fail('LoadBalancer', 'lb-method', `"${lbMethod}" is not one of ${LB_METHODS.join(', ')}`);
  }
  if (!bool(lb, 'LoadBalancer', 'use-octavia', true)) {
    throw fail(
      'LoadBalancer',
      'use-octavia',
      'Neutron-LBaaS is not supported, only Octavia; remove the key or set it to true',
    );
  }
  const lbVersion = one(lb, 'lb-version');
  if (lbVersion && lbVersion !== 'v2') throw fail('LoadBalancer', 'lb-version', 'only "v2" is supported');
  if (bool(lb, 'LoadBalancer', 'manage-security-groups', false)) {
    throw fail(
      'LoadBalancer',
      'manage-security-groups',
      'managing security groups is not supported (nor by the official controller with Octavia); open the node port range to the VIP subnet yourself and set it to false',
    );
  }

  if (!bool(lb, 'LoadBalancer', 'cascade-delete', true)) {
    throw fail(
      'LoadBalancer',
      'cascade-delete',
      'ccm deletes load balancers with cascade (exactly the ones it created); remove the key or set it to true',
    );
  }

  const seconds = (key: string, dflt: number) =>
    parseSeconds(one(lb, key), dflt, (what) => fail('LoadBalancer', key, what));
  const count = (key: string, dflt: number, min: number, max: number) =>
    parseInteger(one(lb, key), dflt, min, max, (what) => fail('LoadBalancer', key, what));

  const loadBalancer: LoadBalancerConfig = {
    enabled: bool(lb, 'LoadBalancer', 'enabled', true),
    ...optional('subnetId', one(lb, 'subnet-id')),
    ...optional('networkId', one(lb, 'network-id')),
    ...optional('floatingNetworkId', one(lb, 'floating-network-id')),
    ...optional('floatingSubnetId', one(lb, 'floating-subnet-id')),
    lbMethod,
    ...optional('lbProvider', one(lb, 'lb-provider')),
    ...optional('flavorId', one(lb, 'flavor-id')),
    ...optional('availabilityZone', one(lb, 'availability-zone')),
    createMonitor: bool(lb, 'LoadBalancer', 'create-monitor', false),
    monitorDelaySeconds: seconds('monitor-delay', 5),
    monitorTimeoutSeconds: seconds('monitor-timeout', 3),
    monitorMaxRetries: count('monitor-max-retries', 1, 1, 10),
    monitorMaxRetriesDown: count('monitor-max-retries-down', 3, 1, 10),
    internalLb: bool(lb, 'LoadBalancer', 'internal-lb', false),
  };

  return {
    global: {
      authUrl,
      region: get(global, 'region') ?? '',
      endpointInterface: endpointType as EndpointInterface,
      ...optional('caFile', get(global, 'ca-file')),
      ...optional('certFile', get(global, 'cert-file')),
      ...optional('keyFile', get(global, 'key-file')),
      tlsInsecure: bool(global, 'Global', 'tls-insecure', false),
      auth: keystoneAuth(global, fail),
    },
    loadBalancer,
    networking: {
      publicNetworkNames: all(networking, 'public-network-name'),
      internalNetworkNames: all(networking, 'internal-network-name'),
      ipv6SupportDisabled: bool(networking, 'Networking', 'ipv6-support-disabled', false),
    },
    route: routerID ? { routerID } : {},
  };
}

/** With use-clouds=true, the named cloud of clouds.yaml fills the [Global] keys cloud.conf leaves unset. */
function withClouds(global: Raw, source: string, options: ParseOptions): Raw {
  const use = parseBool(
    one(global, 'use-clouds'),
    false,
    (what) => new InvalidConfigError(`${source}: [Global] use-clouds: ${what}`),
  );
  if (!use) return global;
  const file = one(global, 'clouds-file');
  const files = file ? [file] : (options.cloudsFiles ?? defaultCloudsFiles());
  const fromYaml = cloudsYamlGlobal(files, one(global, 'cloud'));
  const merged: Raw = { ...global };
  for (const [key, value] of Object.entries(fromYaml)) {
    if (one(global, key) === undefined) merged[key] = [value];
  }
  return merged;
}

function keystoneAuth(
  global: Raw,
  fail: (section: string, key: string, what: string) => InvalidConfigError,
): KeystoneAuth {
  const get = (key: string) => one(global, key);
  const domain = (id?: string, name?: string) => (id ? { id } : name ? { name } : undefined);
  const userDomain = domain(
    get('user-domain-id') ?? get('domain-id'),
    get('user-domain-name') ?? get('domain-name'),
  );
  // Keystone's own default domain, for a user name given without any domain (the official
  // controller's example cloud.conf leaves domain-id empty).
  const user = (() => {
    const id = get('user-id');
    if (id) return { id };
    const name = get('username');
    return name ? { name, domain: userDomain ?? { id: 'default' } } : undefined;
  })();

  const appId = get('application-credential-id');
  const appName = get('application-credential-name');
  if (appId || appName) {
    const secret = get('application-credential-secret');
    if (!secret) {
      throw fail(
        'Global',
        'application-credential-secret',
        'required with an application credential; set the secret Keystone showed when it was created',
      );
    }
    if (appId) return { method: 'application_credential', credential: { id: appId }, secret };
    if (!user) {
      throw fail(
        'Global',
        'application-credential-name',
        'a credential given by name needs its user: set user-id, or username and user-domain-name',
      );
    }
    return { method: 'application_credential', credential: { name: appName as string, user }, secret };
  }
  if (get('application-credential-secret')) {
    throw fail('Global', 'application-credential-secret', 'set application-credential-id (or -name) with it');
  }

  const password = get('password');
  if (!user)
    throw fail(
      'Global',
      'username',
      'required: set username and password, or application-credential-id and -secret',
    );
  if (!password)
    throw fail(
      'Global',
      'password',
      `required with ${'id' in user ? 'user-id' : 'username'}; or use an application credential`,
    );
  const projectDomain = domain(
    get('tenant-domain-id') ?? get('domain-id'),
    get('tenant-domain-name') ?? get('domain-name'),
  );
  const tenantId = get('tenant-id');
  const tenantName = get('tenant-name');
  const project = tenantId
    ? { id: tenantId }
    : tenantName
      ? { name: tenantName, domain: projectDomain ?? { id: 'default' } }
      : undefined;
  return { method: 'password', user, password, ...(project ? { project } : {}) };
}

/**
 * `key = "quoted value"  ; comment`: gcfg ends the value at the closing quote, the ini library would
 * read up to the `;` inside the quotes. The trailing comment is dropped first.
 */
const QUOTED_THEN_COMMENT = /^(\s*[^=\s;#[][^=]*=\s*"(?:[^"\\]|\\.)*")\s*[;#].*$/gm;

/** Sections by their name as written; each key lower-cased, every value a list of strings. */
function readSections(text: string, source: string): Record<string, Raw> {
  let parsed: Record<string, unknown>;
  try {
    parsed = decode(text.replace(QUOTED_THEN_COMMENT, '$1'), { bracketedArray: false }) as Record<
      string,
      unknown
    >;
  } catch (err) {
    throw new InvalidConfigError(`${source}: not an INI file (${(err as Error).message})`);
  }
  const sections: Record<string, Raw> = {};
  for (const [name, body] of Object.entries(parsed)) {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) {
      throw new InvalidConfigError(
        `${source}: a key is outside any section; put it under [Global], [LoadBalancer] or [Networking]`,
      );
    }
    const raw: Raw = {};
    for (const [key, value] of Object.entries(body as Record<string, unknown>)) {
      const values = (Array.isArray(value) ? value : [value]).map((v) => (v === null ? '' : String(v)));
      const lower = key.toLowerCase();
      raw[lower] = [...(raw[lower] ?? []), ...values];
    }
    // gcfg compares section names case-insensitively: [global] and [Global] are the same section.
    const existing = Object.keys(sections).find((n) => n.toLowerCase() === name.toLowerCase());
    const merged = existing ? sections[existing] : undefined;
    if (merged) {
      for (const [k, v] of Object.entries(raw)) merged[k] = [...(merged[k] ?? []), ...v];
    } else {
      sections[name] = raw;
    }
  }
  return sections;
}

function section(
  sections: Record<string, Raw>,
  name: string,
  known: readonly string[],
  unsupported: Record<string, string>,
  source: string,
  text: string,
): Raw {
  const found = Object.entries(sections).find(([n]) => n.toLowerCase() === name.toLowerCase());
  const raw = found?.[1] ?? {};
  for (const [key, values] of Object.entries(raw)) {
    const set = values.some((v) => v.trim() !== '');
    if (unsupported[key] !== undefined) {
      if (set) throw new InvalidConfigError(`${source}: [${name}] ${key}: ${unsupported[key]}`);
      continue;
    }
    if (!known.includes(key)) {
      // A line without `=` is not repeated: it may be a password written on a line of its own, or
      // after `:` instead of `=`. A `key = value` line's key is named, and any line by its number.
      const line = lineOf(text, key);
      const near = closest(key, known);
      const what = line?.assigns ? `key ${key} is not one ccm knows` : 'a line is not key = value';
      throw new InvalidConfigError(
        `${source}${line ? ` line ${line.number}` : ''}: [${name}] ${what}${near ? ` (did you mean ${near}?)` : ''}; the keys of [${name}] are ${known.join(', ')}; write each as key = value`,
      );
    }
  }
  return raw;
}

/** The first line (1-based) whose key is `key`, and whether it assigns it a value (`key = …`). */
function lineOf(text: string, key: string): { number: number; assigns: boolean } | undefined {
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    const eq = line.indexOf('=');
    const name = (eq < 0 ? line : line.slice(0, eq)).trim().toLowerCase();
    if (name === key) return { number: i + 1, assigns: eq >= 0 };
  }
  return undefined;
}

/** The one value of a key, undefined when absent or empty; a repeated single-valued key is refused. */
function one(raw: Raw, key: string, fail?: (what: string) => Error): string | undefined {
  // Not trimmed: the INI reader already trims a plain value, and a quoted one keeps its spaces in gcfg.
  const values = (raw[key] ?? []).filter((v) => v !== '');
  if (values.length > 1) {
    const error = fail?.(`set ${values.length} times; keep one`);
    if (error) throw error;
  }
  return values.at(-1);
}

function all(raw: Raw, key: string): string[] {
  return (raw[key] ?? []).filter((v) => v !== '');
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

function parseBool(value: string | undefined, dflt: boolean, fail: (what: string) => Error): boolean {
  if (value === undefined) return dflt;
  const v = value.toLowerCase();
  if (['true', 'yes', 'on', '1'].includes(v)) return true;
  if (['false', 'no', 'off', '0'].includes(v)) return false;
  throw fail(`"${value}" is not a boolean (true or false)`);
}

function parseInteger(
  value: string | undefined,
  dflt: number,
  min: number,
  max: number,
  fail: (what: string) => Error,
): number {
  if (value === undefined) return dflt;
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw fail(`"${value}" is not a whole number from ${min} to ${max}`);
  }
  return Number(value);
}

const DURATION_UNITS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };

/** Whole seconds from a Go duration ("60s", "1m30s", the official controller's type) or a bare number. */
function parseSeconds(value: string | undefined, dflt: number, fail: (what: string) => Error): number {
  if (value === undefined) return dflt;
  if (/^\d+$/.test(value)) return Number(value);
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== value) {
    throw fail(`"${value}" is not a duration (e.g. 5s, 1m30s, or seconds)`);
  }
  const total = parts.reduce((sum, p) => sum + Number(p[1]) * (DURATION_UNITS[p[2] as string] ?? 0), 0);
  if (total < 1 || !Number.isInteger(total))
    throw fail(`"${value}" must be a whole number of seconds, at least 1`);
  return total;
}
