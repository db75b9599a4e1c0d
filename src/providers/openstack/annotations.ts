import { InvalidConfigError } from '../errors.js';
import type { LoadBalancerConfig } from './config.js';

/**
 * Service annotations the official controller reads (docs/openstack-cloud-controller-manager/
 * expose-applications-using-loadbalancer-type-service.md), the ones ccm supports, each parsed by a
 * typed getter; the ones it does not support are refused by name when set, never silently ignored.
 */

export interface AnnotationDoc {
  key: string;
  accepted: string;
  description: string;
}

const doc = (key: string, accepted: string, description: string): AnnotationDoc => ({
  key,
  accepted,
  description,
});

export const ANNOTATIONS = {
  floatingNetworkId: doc(
    'loadbalancer.openstack.org/floating-network-id',
    'a Neutron network ID',
    'External network of the floating IP; overrides [LoadBalancer] floating-network-id',
  ),
  floatingSubnetId: doc(
    'loadbalancer.openstack.org/floating-subnet-id',
    'a Neutron subnet ID',
    'Subnet of the external network for the floating IP; overrides [LoadBalancer] floating-subnet-id',
  ),
  subnetId: doc(
    'loadbalancer.openstack.org/subnet-id',
    'a Neutron subnet ID',
    'Subnet of the VIP (and of the members); overrides [LoadBalancer] subnet-id',
  ),
  networkId: doc(
    'loadbalancer.openstack.org/network-id',
    'a Neutron network ID',
    'Network of the VIP when no subnet is given; overrides [LoadBalancer] network-id',
  ),
  internal: doc(
    'service.beta.kubernetes.io/openstack-internal-load-balancer',
    'true or false',
    'true: no floating IP, the VIP address is the ingress; default [LoadBalancer] internal-lb',
  ),
  keepFloatingIp: doc(
    'loadbalancer.openstack.org/keep-floatingip',
    'true or false',
    'true: the floating IP ccm created is kept (disassociated) when the load balancer is deleted',
  ),
  connectionLimit: doc(
    'loadbalancer.openstack.org/connection-limit',
    'a whole number, or -1 for no limit',
    'Maximum connections of each listener',
  ),
  timeoutClientData: doc(
    'loadbalancer.openstack.org/timeout-client-data',
    'milliseconds, a whole number',
    'Frontend client inactivity timeout of each listener',
  ),
  timeoutMemberConnect: doc(
    'loadbalancer.openstack.org/timeout-member-connect',
    'milliseconds, a whole number',
    'Backend member connection timeout of each listener',
  ),
  timeoutMemberData: doc(
    'loadbalancer.openstack.org/timeout-member-data',
    'milliseconds, a whole number',
    'Backend member inactivity timeout of each listener',
  ),
  timeoutTcpInspect: doc(
    'loadbalancer.openstack.org/timeout-tcp-inspect',
    'milliseconds, a whole number',
    'Time to wait for more TCP packets for content inspection',
  ),
  enableHealthMonitor: doc(
    'loadbalancer.openstack.org/enable-health-monitor',
    'true or false',
    'A health monitor on each pool; default [LoadBalancer] create-monitor',
  ),
  healthMonitorDelay: doc(
    'loadbalancer.openstack.org/health-monitor-delay',
    'seconds, a whole number from 1',
    'Seconds between health checks; default [LoadBalancer] monitor-delay',
  ),
  healthMonitorTimeout: doc(
    'loadbalancer.openstack.org/health-monitor-timeout',
    'seconds, a whole number from 1',
    'Seconds a health check may take, less than the delay; default [LoadBalancer] monitor-timeout',
  ),
  healthMonitorMaxRetries: doc(
    'loadbalancer.openstack.org/health-monitor-max-retries',
    'a whole number from 1 to 10',
    'Successful checks before a member is ONLINE; default [LoadBalancer] monitor-max-retries',
  ),
  healthMonitorMaxRetriesDown: doc(
    'loadbalancer.openstack.org/health-monitor-max-retries-down',
    'a whole number from 1 to 10',
    'Failed checks before a member is ERROR; default [LoadBalancer] monitor-max-retries-down',
  ),
  flavorId: doc(
    'loadbalancer.openstack.org/flavor-id',
    'an Octavia flavor ID',
    'Flavor of a new load balancer; overrides [LoadBalancer] flavor-id',
  ),
  availabilityZone: doc(
    'loadbalancer.openstack.org/availability-zone',
    'an Octavia availability zone name',
    'Availability zone of a new load balancer; overrides [LoadBalancer] availability-zone',
  ),
} as const;

/** Set by ccm on the Service, as the official controller does. */
export const LOAD_BALANCER_ID = 'loadbalancer.openstack.org/load-balancer-id';

/** Annotations of the official controller that ccm does not support, with why. */
export const UNSUPPORTED_ANNOTATIONS: Record<string, string> = {
  'loadbalancer.openstack.org/proxy-protocol': 'PROXY protocol pools are not supported',
  'loadbalancer.openstack.org/x-forwarded-for': 'HTTP listeners (X-Forwarded-For) are not supported',
  'loadbalancer.openstack.org/class':
    'load balancer classes are not supported; set floating-network-id instead',
  'loadbalancer.openstack.org/port-id': 'an existing VIP port is not supported; set subnet-id or network-id',
  'loadbalancer.openstack.org/floating-subnet':
    'choosing the floating subnet by name is not supported; use floating-subnet-id',
  'loadbalancer.openstack.org/floating-subnet-tags':
    'choosing the floating subnet by tags is not supported; use floating-subnet-id',
  'loadbalancer.openstack.org/default-tls-container-ref': 'TLS-terminated listeners are not supported',
  'loadbalancer.openstack.org/hostname': 'a hostname in place of the ingress IP is not supported',
  'loadbalancer.openstack.org/node-selector': 'selecting member nodes by label is not supported',
};

export interface ServiceOptions {
  floatingNetworkId?: string;
  floatingSubnetId?: string;
  subnetId?: string;
  networkId?: string;
  internal: boolean;
  keepFloatingIp: boolean;
  connectionLimit?: number;
  timeouts: { clientData?: number; memberConnect?: number; memberData?: number; tcpInspect?: number };
  healthMonitor: boolean;
  monitorDelay: number;
  monitorTimeout: number;
  monitorMaxRetries: number;
  monitorMaxRetriesDown: number;
  flavorId?: string;
  availabilityZone?: string;
}

/** The Service's options: its annotations over cloud.conf [LoadBalancer]. Throws InvalidConfigError. */
export function serviceOptions(
  annotations: Readonly<Record<string, string>>,
  config: LoadBalancerConfig,
): ServiceOptions {
  for (const [key, why] of Object.entries(UNSUPPORTED_ANNOTATIONS)) {
    if (annotations[key] !== undefined && annotations[key] !== '') {
      throw new InvalidConfigError(`annotation ${key}: ${why}; remove it`);
    }
  }
  const text = (a: AnnotationDoc, dflt?: string) => {
    const value = annotations[a.key]?.trim();
    return value ? value : dflt;
  };
  const bool = (a: AnnotationDoc, dflt: boolean) => {
    const value = text(a);
    if (value === undefined) return dflt;
    if (value.toLowerCase() === 'true') return true;
    if (value.toLowerCase() === 'false') return false;
    throw invalid(a, value);
  };
  const int = (a: AnnotationDoc, min: number, max = Number.MAX_SAFE_INTEGER) => {
    const value = text(a);
    if (value === undefined) return undefined;
    if (!/^-?\d+$/.test(value) || Number(value) < min || Number(value) > max) throw invalid(a, value);
    return Number(value);
  };
  const options: ServiceOptions = {
    ...defined('floatingNetworkId', text(ANNOTATIONS.floatingNetworkId, config.floatingNetworkId)),
    ...defined('floatingSubnetId', text(ANNOTATIONS.floatingSubnetId, config.floatingSubnetId)),
    ...defined('subnetId', text(ANNOTATIONS.subnetId, config.subnetId)),
    ...defined('networkId', text(ANNOTATIONS.networkId, config.networkId)),
    internal: bool(ANNOTATIONS.internal, config.internalLb),
    keepFloatingIp: bool(ANNOTATIONS.keepFloatingIp, false),
    ...defined('connectionLimit', int(ANNOTATIONS.connectionLimit, -1)),
    timeouts: {
      ...defined('clientData', int(ANNOTATIONS.timeoutClientData, 0)),
      ...defined('memberConnect', int(ANNOTATIONS.timeoutMemberConnect, 0)),
      ...defined('memberData', int(ANNOTATIONS.timeoutMemberData, 0)),
      ...defined('tcpInspect', int(ANNOTATIONS.timeoutTcpInspect, 0)),
    },
    healthMonitor: bool(ANNOTATIONS.enableHealthMonitor, config.createMonitor),
    monitorDelay: int(ANNOTATIONS.healthMonitorDelay, 1) ?? config.monitorDelaySeconds,
    monitorTimeout: int(ANNOTATIONS.healthMonitorTimeout, 1) ?? config.monitorTimeoutSeconds,
    monitorMaxRetries: int(ANNOTATIONS.healthMonitorMaxRetries, 1, 10) ?? config.monitorMaxRetries,
    monitorMaxRetriesDown:
      int(ANNOTATIONS.healthMonitorMaxRetriesDown, 1, 10) ?? config.monitorMaxRetriesDown,
    ...defined('flavorId', text(ANNOTATIONS.flavorId, config.flavorId)),
    ...defined('availabilityZone', text(ANNOTATIONS.availabilityZone, config.availabilityZone)),
  };
  if (options.healthMonitor && options.monitorTimeout > options.monitorDelay) {
    throw new InvalidConfigError(
      `annotation ${ANNOTATIONS.healthMonitorTimeout.key}: the timeout (${options.monitorTimeout} s) must not exceed the delay (${options.monitorDelay} s)`,
    );
  }
  return options;
}

function invalid(a: AnnotationDoc, value: string): InvalidConfigError {
  return new InvalidConfigError(`annotation ${a.key}: "${value}" is not valid; use ${a.accepted}`);
}

function defined<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
