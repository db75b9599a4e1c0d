import { InvalidConfigError } from '../errors.js';

/**
 * Service annotations, with the names and meanings of DigitalOcean's own controller
 * (cloud-controller-manager/do/lb_annotations.go, docs/controllers/services/annotations.md), so a
 * Service annotated for it behaves the same under ccm. Each has a description for docs/reference/annotations.md.
 */
const BASE = 'service.beta.kubernetes.io/do-loadbalancer-';

export const LOAD_BALANCER_ID = 'kubernetes.digitalocean.com/load-balancer-id';
export const NAME = `${BASE}name`;
export const PROTOCOL = `${BASE}protocol`;
export const HEALTHCHECK_PATH = `${BASE}healthcheck-path`;
export const HEALTHCHECK_PORT = `${BASE}healthcheck-port`;
export const HEALTHCHECK_PROTOCOL = `${BASE}healthcheck-protocol`;
export const HEALTHCHECK_INTERVAL = `${BASE}healthcheck-check-interval-seconds`;
export const HEALTHCHECK_TIMEOUT = `${BASE}healthcheck-response-timeout-seconds`;
export const HEALTHCHECK_UNHEALTHY = `${BASE}healthcheck-unhealthy-threshold`;
export const HEALTHCHECK_HEALTHY = `${BASE}healthcheck-healthy-threshold`;
export const TLS_PORTS = `${BASE}tls-ports`;
export const CERTIFICATE_ID = `${BASE}certificate-id`;
export const TLS_PASSTHROUGH = `${BASE}tls-passthrough`;
export const HOSTNAME = `${BASE}hostname`;
export const SIZE_UNIT = `${BASE}size-unit`;
export const STICKY_SESSIONS_TYPE = `${BASE}sticky-sessions-type`;
export const STICKY_SESSIONS_COOKIE_NAME = `${BASE}sticky-sessions-cookie-name`;
export const STICKY_SESSIONS_COOKIE_TTL = `${BASE}sticky-sessions-cookie-ttl`;
export const REDIRECT_HTTP_TO_HTTPS = `${BASE}redirect-http-to-https`;
export const ENABLE_PROXY_PROTOCOL = `${BASE}enable-proxy-protocol`;
export const ENABLE_BACKEND_KEEPALIVE = `${BASE}enable-backend-keepalive`;
export const HTTP_IDLE_TIMEOUT_SECONDS = `${BASE}http-idle-timeout-seconds`;
// Not in the beta domain: the official controller's name, kept as it is.
export const DISOWN = 'service.kubernetes.io/do-loadbalancer-disown';

export interface AnnotationDoc {
  name: string;
  values: string;
  default: string;
  description: string;
}

export const annotationReference: readonly AnnotationDoc[] = [
  {
    name: LOAD_BALANCER_ID,
    values: 'load balancer id',
    default: 'set by ccm',
    description:
      "The id of the Service's load balancer, written by ccm (and by DigitalOcean's controller) after creation and used to find it again; a load balancer it names must carry this cluster's tag",
  },
  {
    name: NAME,
    values: 'text',
    default: '"a" + Service UID',
    description:
      'Name of the load balancer at DigitalOcean; once load-balancer-id is recorded, changing it renames the load balancer',
  },
  {
    name: PROTOCOL,
    values: 'tcp, http, https, http2',
    default: 'tcp',
    description: 'Protocol of the forwarding rules; https and http2 need certificate-id or tls-passthrough',
  },
  {
    name: HEALTHCHECK_PROTOCOL,
    values: 'tcp, http, https',
    default: 'tcp (http with externalTrafficPolicy Local)',
    description: 'Protocol of the health check',
  },
  {
    name: HEALTHCHECK_PATH,
    values: 'path',
    default: '/ (/healthz with externalTrafficPolicy Local)',
    description: 'Path of an http(s) health check',
  },
  {
    name: HEALTHCHECK_PORT,
    values: 'a port of the Service',
    default: 'the first port (the health check node port with externalTrafficPolicy Local)',
    description: 'Service port whose node port is health-checked',
  },
  {
    name: HEALTHCHECK_INTERVAL,
    values: '3-300',
    default: '3',
    description: 'Seconds between two health checks',
  },
  {
    name: HEALTHCHECK_TIMEOUT,
    values: '3-300',
    default: '5',
    description: 'Seconds to wait for a health check answer',
  },
  {
    name: HEALTHCHECK_UNHEALTHY,
    values: '2-10',
    default: '3',
    description: 'Failed checks before a droplet leaves the pool',
  },
  {
    name: HEALTHCHECK_HEALTHY,
    values: '2-10',
    default: '5',
    description: 'Passed checks before a droplet rejoins the pool',
  },
  {
    name: TLS_PORTS,
    values: 'comma-separated Service ports',
    default: '443 when certificate-id or tls-passthrough is set',
    description: 'Ports that use https',
  },
  {
    name: CERTIFICATE_ID,
    values: 'certificate id',
    default: 'none',
    description: 'Certificate for https ports; TLS ends at the load balancer (not with tls-passthrough)',
  },
  {
    name: TLS_PASSTHROUGH,
    values: 'true, false',
    default: 'false',
    description: 'Pass encrypted traffic to the droplets unchanged (not with certificate-id)',
  },
  {
    name: HOSTNAME,
    values: 'host name',
    default: 'none',
    description:
      'Reported in the Service status instead of the IP (so in-cluster traffic goes through the load balancer)',
  },
  {
    name: SIZE_UNIT,
    values: '1-100',
    default: "DigitalOcean's (1)",
    description: 'Number of load balancer nodes',
  },
  {
    name: STICKY_SESSIONS_TYPE,
    values: 'none, cookies',
    default: 'none',
    description: 'Sticky sessions; cookies needs cookie-name and cookie-ttl',
  },
  {
    name: STICKY_SESSIONS_COOKIE_NAME,
    values: 'cookie name',
    default: 'none',
    description: 'Cookie of sticky sessions',
  },
  {
    name: STICKY_SESSIONS_COOKIE_TTL,
    values: 'seconds (1 or more)',
    default: 'none',
    description: 'Lifetime of the sticky-sessions cookie',
  },
  {
    name: REDIRECT_HTTP_TO_HTTPS,
    values: 'true, false',
    default: 'false',
    description: 'Redirect http traffic to https',
  },
  {
    name: ENABLE_PROXY_PROTOCOL,
    values: 'true, false',
    default: 'false',
    description: 'Send the PROXY protocol header to the droplets',
  },
  {
    name: ENABLE_BACKEND_KEEPALIVE,
    values: 'true, false',
    default: 'false',
    description: 'Keep HTTP connections to the droplets open',
  },
  {
    name: HTTP_IDLE_TIMEOUT_SECONDS,
    values: '30-600',
    default: '60',
    description: 'Seconds an idle HTTP connection is kept',
  },
  {
    name: DISOWN,
    values: 'true, false',
    default: 'false',
    description:
      'ccm leaves the load balancer alone: no change, no deletion (e.g. to hand it to another Service through load-balancer-id)',
  },
];

type Annotations = Readonly<Record<string, string>>;

/** The value of an annotation, trimmed; undefined when absent or empty. */
export function text(annotations: Annotations, name: string): string | undefined {
  const value = annotations[name]?.trim();
  return value ? value : undefined;
}

// The official controller parses with Go's strconv.ParseBool; the same spellings are accepted here.
const TRUE = new Set(['1', 't', 'true']);
const FALSE = new Set(['0', 'f', 'false']);

export function bool(annotations: Annotations, name: string, fallback = false): boolean {
  const value = text(annotations, name);
  if (value === undefined) return fallback;
  if (TRUE.has(value.toLowerCase())) return true;
  if (FALSE.has(value.toLowerCase())) return false;
  throw invalid(name, value, 'true or false');
}

export function integer(
  annotations: Annotations,
  name: string,
  min: number,
  max: number,
): number | undefined {
  const value = text(annotations, name);
  if (value === undefined) return undefined;
  const n = /^\d+$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw invalid(name, value, `a whole number from ${min} to ${max}`);
  return n;
}

export function oneOf<T extends string>(
  annotations: Annotations,
  name: string,
  accepted: readonly T[],
): T | undefined {
  const value = text(annotations, name);
  if (value === undefined) return undefined;
  const lower = value.toLowerCase() as T;
  if (!accepted.includes(lower)) throw invalid(name, value, `one of ${accepted.join(', ')}`);
  return lower;
}

/** A comma-separated list of ports, e.g. `443,8443`. */
export function ports(annotations: Annotations, name: string): number[] | undefined {
  const value = text(annotations, name);
  if (value === undefined) return undefined;
  const parts = value.split(',').map((p) => p.trim());
  if (parts.some((p) => !/^\d+$/.test(p) || Number(p) < 1 || Number(p) > 65535)) {
    throw invalid(name, value, 'comma-separated port numbers, e.g. 443,8443');
  }
  return parts.map(Number);
}

export function invalid(name: string, value: string, accepted: string): InvalidConfigError {
  return new InvalidConfigError(
    `Service annotation ${name}=${JSON.stringify(value)} is not valid; use ${accepted}`,
  );
}
