import { InvalidConfigError } from '../errors.js';

/**
 * The Service annotations of the official brightbox-cloud-controller-manager (its annotations.go and
 * validation.go), with their accepted values from gobrightbox's enums. Each has a description, so the
 * annotation reference (docs/reference/annotations.md) is generated from this list.
 */

export interface AnnotationSpec {
  key: string;
  /** Other keys read for the same setting (the official controller's spellings). */
  aliases?: string[];
  accepted: string;
  description: string;
}

const PREFIX = 'service.beta.kubernetes.io/brightbox-load-balancer-';

export const POLICIES = ['least-connections', 'round-robin', 'source-address'] as const;
export const LISTENER_PROTOCOLS = ['http', 'tcp', 'https'] as const;
export const PROXY_PROTOCOLS = ['v1', 'v2', 'v2-ssl', 'v2-ssl-cn'] as const;
export const HEALTHCHECK_PROTOCOLS = ['http', 'tcp'] as const;

export type ListenerProtocol = (typeof LISTENER_PROTOCOLS)[number];
export type HealthcheckProtocol = (typeof HEALTHCHECK_PROTOCOLS)[number];

export const ANNOTATIONS = {
  policy: {
    key: `${PREFIX}policy`,
    accepted: POLICIES.join(' | '),
    description:
      'How the load balancer spreads connections over the Nodes (Brightbox default: least-connections).',
  },
  listenerProtocol: {
    key: `${PREFIX}listener-protocol`,
    accepted: LISTENER_PROTOCOLS.join(' | '),
    description:
      'Protocol of every listener (default http, as the official controller). http listeners on the SSL ports become https.',
  },
  listenerIdleTimeout: {
    key: `${PREFIX}listener-idle-timeout`,
    accepted: 'milliseconds, 1-4294967295',
    description: 'Idle timeout of every listener.',
  },
  listenerProxyProtocol: {
    key: `${PREFIX}listener-proxy-protocol`,
    accepted: PROXY_PROTOCOLS.join(' | '),
    description: 'Send the PROXY protocol header of this version to the Nodes.',
  },
  sslPorts: {
    key: `${PREFIX}ssl-ports`,
    accepted: 'comma-separated port numbers or port names',
    description:
      "Ports whose http listener terminates TLS with a Let's Encrypt certificate (443 always does). Needs ssl-domains.",
  },
  sslDomains: {
    key: `${PREFIX}ssl-domains`,
    accepted: 'comma-separated DNS names',
    description:
      "Extra names on the certificate of the https listeners, besides the cloud IP's own; Let's Encrypt checks them, so point them at the cloud IP.",
  },
  cloudIPAllocations: {
    key: `${PREFIX}cloudip-allocations`,
    accepted: 'one cloud IP id, cip-xxxxx',
    description:
      'Map this existing cloud IP instead of allocating one. ccm maps and unmaps it but never deletes it. Replaces spec.loadBalancerIP.',
  },
  healthyThreshold: {
    key: `${PREFIX}healthcheck-healthy-threshold`,
    accepted: 'a count, 1-4294967295',
    description: 'Successful checks in a row before a Node receives traffic.',
  },
  unhealthyThreshold: {
    key: `${PREFIX}healthcheck-unhealthy-threshold`,
    accepted: 'a count, 1-4294967295',
    description: 'Failed checks in a row before a Node stops receiving traffic.',
  },
  healthcheckProtocol: {
    key: `${PREFIX}healthcheck-protocol`,
    accepted: HEALTHCHECK_PROTOCOLS.join(' | '),
    description:
      'Health check type (default: http to /healthz with externalTrafficPolicy Local, else the listener protocol).',
  },
  healthcheckRequest: {
    key: `${PREFIX}healthcheck-request`,
    accepted: 'a URL path, e.g. /healthz',
    description: 'Path an http health check requests (default /healthz).',
  },
  healthcheckTimeout: {
    key: `${PREFIX}healthcheck-timeout`,
    accepted: 'milliseconds, 1-4294967295',
    description: 'How long a health check may take before it counts as failed.',
  },
  healthcheckInterval: {
    key: `${PREFIX}healthcheck-interval`,
    aliases: ['service.beta.kubernetes.io/aws-load-balancer-healthcheck-interval'],
    accepted: 'milliseconds, 1-4294967295',
    description:
      'Time between health checks. The official controller reads the aws-load-balancer-healthcheck-interval key; ccm reads both.',
  },
} as const satisfies Record<string, AnnotationSpec>;

export interface BalancerSettings {
  policy?: (typeof POLICIES)[number];
  listenerProtocol: ListenerProtocol;
  idleTimeout?: number;
  proxyProtocol?: (typeof PROXY_PROTOCOLS)[number];
  /** Port numbers or names; 443 is an SSL port in any case. */
  sslPorts: string[];
  sslDomains: string[];
  cloudIP?: string;
  healthcheck: {
    protocol?: HealthcheckProtocol;
    request?: string;
    timeout?: number;
    interval?: number;
    thresholdUp?: number;
    thresholdDown?: number;
  };
}

function invalid(spec: AnnotationSpec, key: string, value: string, why = ''): InvalidConfigError {
  return new InvalidConfigError(
    `annotation ${key}="${value}" is not valid${why ? ` (${why})` : ''}; accepted: ${spec.accepted}`,
  );
}

/** The value and the key it was found under, first the main key, then the aliases. */
function read(
  annotations: Readonly<Record<string, string>>,
  spec: AnnotationSpec,
): [string, string] | undefined {
  for (const key of [spec.key, ...(spec.aliases ?? [])]) {
    const value = annotations[key];
    if (value !== undefined) return [key, value.trim()];
  }
  return undefined;
}

function enumValue<T extends string>(
  annotations: Readonly<Record<string, string>>,
  spec: AnnotationSpec,
  allowed: readonly T[],
): T | undefined {
  const found = read(annotations, spec);
  if (!found) return undefined;
  const [key, value] = found;
  if (!(allowed as readonly string[]).includes(value)) throw invalid(spec, key, value);
  return value as T;
}

function uint32(annotations: Readonly<Record<string, string>>, spec: AnnotationSpec): number | undefined {
  const found = read(annotations, spec);
  if (!found) return undefined;
  const [key, value] = found;
  const n = /^\d{1,10}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= 2 ** 32 - 1)) throw invalid(spec, key, value);
  return n;
}

function list(
  annotations: Readonly<Record<string, string>>,
  spec: AnnotationSpec,
): [string, string[]] | undefined {
  const found = read(annotations, spec);
  if (!found) return undefined;
  const [key, value] = found;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw invalid(spec, key, value, 'empty');
  return [key, items];
}

const DNS_NAME = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/i;
const PORT_NAME = /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/;

/** Reads every Brightbox annotation of a Service; throws InvalidConfigError naming the first bad one. */
export function parseAnnotations(annotations: Readonly<Record<string, string>>): BalancerSettings {
  const a = ANNOTATIONS;
  const listenerProtocol = enumValue(annotations, a.listenerProtocol, LISTENER_PROTOCOLS) ?? 'http';

  const sslPorts = list(annotations, a.sslPorts);
  for (const port of sslPorts?.[1] ?? []) {
    const numeric = /^\d+$/.test(port) && Number(port) >= 1 && Number(port) <= 65535;
    if (!numeric && !PORT_NAME.test(port)) throw invalid(a.sslPorts, sslPorts?.[0] ?? '', port);
  }
  const sslDomains = list(annotations, a.sslDomains);
  for (const domain of sslDomains?.[1] ?? []) {
    if (!DNS_NAME.test(domain)) throw invalid(a.sslDomains, sslDomains?.[0] ?? '', domain);
  }
  if (sslPorts && !sslDomains) {
    throw new InvalidConfigError(
      `annotation ${a.sslPorts.key} needs ${a.sslDomains.key}: the names to put on the certificate`,
    );
  }
  if (listenerProtocol === 'tcp' && (sslPorts || sslDomains)) {
    throw new InvalidConfigError(
      `annotations ${a.sslPorts.key} and ${a.sslDomains.key} need listener protocol http or https, not tcp; remove them or change ${a.listenerProtocol.key}`,
    );
  }

  let cloudIP: string | undefined;
  const cip = read(annotations, a.cloudIPAllocations);
  if (cip) {
    if (!/^cip-[0-9a-z]{5,}$/.test(cip[1])) throw invalid(a.cloudIPAllocations, cip[0], cip[1]);
    cloudIP = cip[1];
  }

  let request: string | undefined;
  const req = read(annotations, a.healthcheckRequest);
  if (req) {
    let ok = false;
    try {
      ok = req[1].startsWith('/') && new URL(req[1], 'http://example.com').pathname === req[1];
    } catch {}
    if (!ok) throw invalid(a.healthcheckRequest, req[0], req[1]);
    request = req[1];
  }

  const settings: BalancerSettings = {
    listenerProtocol,
    sslPorts: sslPorts?.[1] ?? [],
    sslDomains: sslDomains?.[1] ?? [],
    healthcheck: {},
  };
  const policy = enumValue(annotations, a.policy, POLICIES);
  if (policy) settings.policy = policy;
  const idle = uint32(annotations, a.listenerIdleTimeout);
  if (idle !== undefined) settings.idleTimeout = idle;
  const proxy = enumValue(annotations, a.listenerProxyProtocol, PROXY_PROTOCOLS);
  if (proxy) settings.proxyProtocol = proxy;
  if (cloudIP) settings.cloudIP = cloudIP;
  const hc = settings.healthcheck;
  const hcProtocol = enumValue(annotations, a.healthcheckProtocol, HEALTHCHECK_PROTOCOLS);
  if (hcProtocol) hc.protocol = hcProtocol;
  if (request) hc.request = request;
  const timeout = uint32(annotations, a.healthcheckTimeout);
  if (timeout !== undefined) hc.timeout = timeout;
  const interval = uint32(annotations, a.healthcheckInterval);
  if (interval !== undefined) hc.interval = interval;
  const up = uint32(annotations, a.healthyThreshold);
  if (up !== undefined) hc.thresholdUp = up;
  const down = uint32(annotations, a.unhealthyThreshold);
  if (down !== undefined) hc.thresholdDown = down;
  return settings;
}
