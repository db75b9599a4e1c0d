/**
 * The Cloudlycke inventory file: a YAML description of the machines of a local cloud. It is the cloud's
 * state, so it is read fresh on every list() and get() and never cached.
 *
 *   defaults:              # optional, applied to instances that do not set their own
 *     type: vbox.vm.1g.2cpu
 *     region: virtualbox
 *     zone: virtualbox
 *   loadBalancerPool:      # optional: addresses for LoadBalancer Services, a CIDR, a range
 *     - 192.168.56.240/28  # (first-last) or a list of them
 *   instances:             # required list; `instances: []` is an empty cloud
 *     - id: worker-1       # required, unique, no "/" and no whitespace; provider ID cloudlycke://worker-1
 *       name: worker-1     # optional, defaults to id; unique; matched against Node names
 *       state: running     # running | stopped, default running (a machine that is gone is left out)
 *       type: ...          # optional, falls back to defaults.type, then ""
 *       region: ...        # optional, falls back to defaults.region, then ""
 *       zone: ...          # optional, falls back to defaults.zone, then ""
 *       addresses:         # optional list of {type, address}; type is one of
 *                          # Hostname | InternalIP | ExternalIP | InternalDNS | ExternalDNS;
 *                          # *IP types need an IPv4 or IPv6 address; a Hostname address equal to the
 *                          # name is added when none is given
 *         - { type: InternalIP, address: 192.168.56.11 }
 *       labels: {}         # optional extra Node labels: valid label keys, string values; the
 *                          # kubernetes.io and k8s.io domains are refused (they belong to Kubernetes)
 *
 * Validation is strict (unknown keys are refused, so a typo never silently drops a field). Every problem
 * is an InvalidConfigError of one line: `inventory <file>: <path in the file> <problem>; <fix>`.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
import { load as loadYaml } from 'js-yaml';
import { InvalidConfigError } from '../errors.js';
import type { NodeAddress, NodeAddressType } from '../types.js';

export type InventoryState = 'running' | 'stopped';

export interface InventoryInstance {
  id: string;
  name: string;
  state: InventoryState;
  type: string;
  region: string;
  zone: string;
  addresses: NodeAddress[];
  labels: Record<string, string>;
}

export interface Inventory {
  /** Absolute path of the file the instances were read from. */
  file: string;
  instances: InventoryInstance[];
  /** CIDRs and ranges, as written; AddressPool validates them. */
  loadBalancerPool?: string[];
}

const ADDRESS_TYPES: readonly NodeAddressType[] = [
  'Hostname',
  'InternalIP',
  'ExternalIP',
  'InternalDNS',
  'ExternalDNS',
];
const IP_TYPES: ReadonlySet<NodeAddressType> = new Set(['InternalIP', 'ExternalIP']);
const TOP_KEYS = ['defaults', 'loadBalancerPool', 'instances'];
const DEFAULT_KEYS = ['type', 'region', 'zone'];
const INSTANCE_KEYS = ['id', 'name', 'state', 'type', 'region', 'zone', 'addresses', 'labels'];
const ADDRESS_KEYS = ['type', 'address'];

const LABEL_NAME = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;
const LABEL_VALUE = /^(([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?)$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Reads and validates the inventory file. Every failure, including an unreadable file, is InvalidConfigError. */
export async function readInventory(file: string, signal?: AbortSignal): Promise<Inventory> {
  const path = resolve(file);
  let text: string;
  try {
    text = await readFile(path, { encoding: 'utf8', signal });
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw new InvalidConfigError(oneLine(`inventory ${path}: ${readProblem(err)}`));
  }
  return parseInventory(text, path);
}

function readProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  const where = 'point --cloud-config or CLOUDLYCKE_INVENTORY at the inventory YAML file';
  switch (code) {
    case 'ENOENT':
      return `file not found; create it or ${where}`;
    case 'EISDIR':
      return `is a folder, not a file; ${where}`;
    case 'EACCES':
    case 'EPERM':
      return 'permission denied; make the file readable by the user running ccm';
    default:
      return `cannot read the file (${code ?? 'unknown error'}); check the path and its permissions`;
  }
}

/**
 * The YAML as plain values. js-yaml builds them directly: on a 5,000-machine inventory it needs about
 * a third of the memory of a `yaml` Document and a fifth of the time. Text it rejects, and text with
 * anchors or aliases (whose expansion `yaml` limits), goes through `yaml`, whose errors carry the line.
 */
function parseYaml(text: string, fail: Fail): unknown {
  if (!/[&*]/.test(text)) {
    try {
      return loadYaml(text);
    } catch {
      // parsed again below for the positioned message
    }
  }
  // `yaml` costs ~14 MB to load: required only when js-yaml could not do the job.
  const { parseDocument } = createRequire(import.meta.url)('yaml') as typeof import('yaml');
  const doc = parseDocument(text);
  const [syntax] = doc.errors;
  if (syntax) {
    const pos = syntax.linePos?.[0];
    const reason = firstLine(syntax.message).replace(/ at line \d+, column \d+:?$/, '');
    fail(`YAML syntax error${pos ? ` at line ${pos.line}, column ${pos.col}` : ''}: ${reason}; fix the YAML`);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    return fail(`YAML error: ${firstLine(err instanceof Error ? err.message : String(err))}; fix the YAML`);
  }
}

/** Validates the text of an inventory file; `file` only names the file in error messages. */
export function parseInventory(text: string, file: string): Inventory {
  const fail: Fail = (problem) => {
    throw new InvalidConfigError(oneLine(`inventory ${file}: ${problem}`));
  };

  const root = parseYaml(text, fail);
  if (root === null || root === undefined) {
    fail('the file is empty; it must be a mapping with an "instances" list');
  }
  if (!isMapping(root)) {
    fail(`the top level must be a mapping with an "instances" list, got ${describe(root)}`);
  }
  rejectUnknownKeys(root, TOP_KEYS, 'the top level', fail);

  const defaults = parseDefaults(root.defaults, fail);

  if (!('instances' in root)) {
    fail('missing "instances" list; add "instances:" with one entry per machine');
  }
  const list = root.instances;
  if (list === null || list === undefined) {
    fail('instances is empty; list the machines under it, or write "instances: []" for an empty cloud');
  }
  if (!Array.isArray(list)) fail(`instances must be a list, got ${describe(list)}`);

  const instances: InventoryInstance[] = [];
  const byId = new Map<string, number>();
  const byName = new Map<string, number>();
  (list as unknown[]).forEach((raw, index) => {
    const instance = parseInstance(raw, `instances[${index}]`, defaults, fail);
    const sameId = byId.get(instance.id);
    if (sameId !== undefined) {
      fail(
        `instances[${index}].id "${instance.id}" is already used by instances[${sameId}]; ids must be unique`,
      );
    }
    const sameName = byName.get(instance.name);
    if (sameName !== undefined) {
      fail(
        `instances[${index}].name "${instance.name}" is already used by instances[${sameName}]; names must be unique`,
      );
    }
    byId.set(instance.id, index);
    byName.set(instance.name, index);
    instances.push(instance);
  });
  const loadBalancerPool = parsePool(root.loadBalancerPool, fail);
  return { file, instances, ...(loadBalancerPool ? { loadBalancerPool } : {}) };
}

function parsePool(raw: unknown, fail: Fail): string[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  const entries = Array.isArray(raw) ? raw : [raw];
  return entries.map((entry, index) =>
    requiredString(entry, Array.isArray(raw) ? `loadBalancerPool[${index}]` : 'loadBalancerPool', fail),
  );
}

type Fail = (problem: string) => never;

interface Defaults {
  type: string;
  region: string;
  zone: string;
}

function parseDefaults(raw: unknown, fail: Fail): Defaults {
  const defaults: Defaults = { type: '', region: '', zone: '' };
  if (raw === null || raw === undefined) return defaults;
  if (!isMapping(raw)) fail(`defaults must be a mapping with type, region and zone, got ${describe(raw)}`);
  rejectUnknownKeys(raw, DEFAULT_KEYS, 'defaults', fail);
  for (const key of DEFAULT_KEYS as (keyof Defaults)[]) {
    const value = optionalString(raw[key], `defaults.${key}`, fail);
    if (value !== undefined) defaults[key] = value;
  }
  return defaults;
}

function parseInstance(raw: unknown, path: string, defaults: Defaults, fail: Fail): InventoryInstance {
  if (!isMapping(raw)) fail(`${path} must be a mapping with at least an id, got ${describe(raw)}`);
  rejectUnknownKeys(raw, INSTANCE_KEYS, path, fail);

  if (raw.id === null || raw.id === undefined) fail(`${path}.id is missing; give every instance a unique id`);
  const id = requiredString(raw.id, `${path}.id`, fail);
  if (id.includes('/')) {
    fail(`${path}.id "${id}" must not contain "/" (it becomes the provider ID cloudlycke://<id>)`);
  }
  if (/\s/.test(id)) fail(`${path}.id ${JSON.stringify(id)} must not contain whitespace`);

  const name =
    raw.name === undefined || raw.name === null ? id : requiredString(raw.name, `${path}.name`, fail);

  let state: InventoryState = 'running';
  if (raw.state !== undefined && raw.state !== null) {
    if (raw.state !== 'running' && raw.state !== 'stopped') {
      fail(`${path}.state must be "running" or "stopped", got ${describe(raw.state)}`);
    }
    state = raw.state;
  }

  const addresses = parseAddresses(raw.addresses, `${path}.addresses`, fail);
  if (!addresses.some((a) => a.type === 'Hostname')) addresses.push({ type: 'Hostname', address: name });

  return {
    id,
    name,
    state,
    type: optionalString(raw.type, `${path}.type`, fail) ?? defaults.type,
    region: optionalString(raw.region, `${path}.region`, fail) ?? defaults.region,
    zone: optionalString(raw.zone, `${path}.zone`, fail) ?? defaults.zone,
    addresses,
    labels: parseLabels(raw.labels, `${path}.labels`, fail),
  };
}

function parseAddresses(raw: unknown, path: string, fail: Fail): NodeAddress[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) fail(`${path} must be a list of {type, address}, got ${describe(raw)}`);
  return (raw as unknown[]).map((entry, index) => {
    const at = `${path}[${index}]`;
    if (!isMapping(entry)) fail(`${at} must be a mapping {type, address}, got ${describe(entry)}`);
    rejectUnknownKeys(entry, ADDRESS_KEYS, at, fail);
    const type = entry.type;
    if (!ADDRESS_TYPES.includes(type as NodeAddressType)) {
      fail(`${at}.type must be one of ${ADDRESS_TYPES.join(', ')}, got ${describe(type)}`);
    }
    if (entry.address === undefined || entry.address === null) fail(`${at}.address is missing`);
    const address = requiredString(entry.address, `${at}.address`, fail);
    if (IP_TYPES.has(type as NodeAddressType) && isIP(address) === 0) {
      fail(`${at}.address must be an IPv4 or IPv6 address for type ${type}, got ${describe(address)}`);
    }
    return { type: type as NodeAddressType, address };
  });
}

function parseLabels(raw: unknown, path: string, fail: Fail): Record<string, string> {
  if (raw === undefined || raw === null) return {};
  if (!isMapping(raw)) fail(`${path} must be a mapping of label keys to string values, got ${describe(raw)}`);
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    const at = `${path}[${JSON.stringify(key)}]`;
    const problem = labelKeyProblem(key);
    if (problem) fail(`${at}: ${problem}`);
    if (typeof value !== 'string') fail(`${at} must be a string, got ${describe(value)}; quote it`);
    if (value.length > 63 || !LABEL_VALUE.test(value)) {
      fail(
        `${at} value ${describe(value)} is not a valid label value (at most 63 letters, digits, "-", "_", "." starting and ending with a letter or digit)`,
      );
    }
    labels[key] = value;
  }
  return labels;
}

function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : '';
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  if (slash >= 0 && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) {
    return `the prefix "${prefix}" is not a lowercase DNS subdomain; use e.g. example.com/${name}`;
  }
  if (isReservedDomain(prefix)) {
    return `the kubernetes.io and k8s.io domains are reserved for Kubernetes; use a prefix of your own, e.g. example.com/${name}`;
  }
  if (name.length > 63 || !LABEL_NAME.test(name)) {
    return 'not a valid label key; the name part takes at most 63 letters, digits, "-", "_", "." starting and ending with a letter or digit';
  }
  return undefined;
}

function isReservedDomain(prefix: string): boolean {
  return ['kubernetes.io', 'k8s.io'].some((domain) => prefix === domain || prefix.endsWith(`.${domain}`));
}

function requiredString(raw: unknown, path: string, fail: Fail): string {
  if (typeof raw !== 'string') fail(`${path} must be a string, got ${describe(raw)}; quote it`);
  const value = raw as string;
  if (value.trim() === '') fail(`${path} must not be empty`);
  return value;
}

function optionalString(raw: unknown, path: string, fail: Fail): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'string') fail(`${path} must be a string, got ${describe(raw)}; quote it`);
  return raw as string;
}

function rejectUnknownKeys(map: Record<string, unknown>, allowed: string[], where: string, fail: Fail): void {
  for (const key of Object.keys(map)) {
    if (!allowed.includes(key)) {
      fail(`${where} has unknown key ${JSON.stringify(key)}; allowed keys: ${allowed.join(', ')}`);
    }
  }
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A short, one-line description of a value as it appeared in the YAML. */
function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'string') {
    return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  }
  if (typeof value === 'object') return 'a mapping';
  return `${String(value)} (a ${typeof value})`;
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim();
}

function oneLine(text: string): string {
  return text.replace(/[\r\n\t]+/g, ' ');
}
