import { eventRecorder } from './event-recorder.js';
import type { EventSpec } from './events.js';
import { readHandOvers } from './hand-overs.js';
import type { KubeTransport } from './transport.js';
import { FIELD_MANAGER } from './well-known.js';

/** What the service controller reads of a Service; the informer keeps only this in memory. */
export interface SlimService {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  deleting: boolean;
  finalizers: string[];
  annotations: Record<string, string>;
  type: string;
  loadBalancerClass?: string;
  loadBalancerIP?: string;
  loadBalancerSourceRanges: string[];
  externalTrafficPolicy: 'Cluster' | 'Local';
  healthCheckNodePort?: number;
  sessionAffinity: 'None' | 'ClientIP';
  ipFamilies: ('IPv4' | 'IPv6')[];
  externalIPs: string[];
  ports: SlimServicePort[];
  ingress: SlimIngress[];
}

export interface SlimServicePort {
  name: string;
  protocol: 'TCP' | 'UDP' | 'SCTP';
  port: number;
  nodePort: number;
  targetPort: string;
  appProtocol?: string;
}

export interface SlimIngress {
  ip?: string;
  hostname?: string;
  ipMode?: 'VIP' | 'Proxy';
}

interface RawService {
  metadata?: {
    namespace?: string;
    name?: string;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: string;
    finalizers?: string[];
    annotations?: Record<string, string>;
  };
  spec?: {
    type?: string;
    loadBalancerClass?: string;
    loadBalancerIP?: string;
    loadBalancerSourceRanges?: string[];
    externalTrafficPolicy?: string;
    healthCheckNodePort?: number;
    sessionAffinity?: string;
    ipFamilies?: string[];
    externalIPs?: string[];
    ports?: {
      name?: string;
      protocol?: string;
      port?: number;
      nodePort?: number;
      targetPort?: number | string;
      appProtocol?: string;
    }[];
  };
  status?: { loadBalancer?: { ingress?: SlimIngress[] } };
}

export function slimService(raw: unknown): SlimService {
  const { metadata: m = {}, spec: s = {}, status } = raw as RawService;
  return {
    namespace: m.namespace ?? '',
    name: m.name ?? '',
    uid: m.uid ?? '',
    resourceVersion: m.resourceVersion ?? '',
    deleting: Boolean(m.deletionTimestamp),
    finalizers: m.finalizers ?? [],
    annotations: m.annotations ?? {},
    type: s.type ?? 'ClusterIP',
    ...(s.loadBalancerClass ? { loadBalancerClass: s.loadBalancerClass } : {}),
    ...(s.loadBalancerIP ? { loadBalancerIP: s.loadBalancerIP } : {}),
    loadBalancerSourceRanges: s.loadBalancerSourceRanges ?? [],
    externalTrafficPolicy: s.externalTrafficPolicy === 'Local' ? 'Local' : 'Cluster',
    ...(s.healthCheckNodePort ? { healthCheckNodePort: s.healthCheckNodePort } : {}),
    sessionAffinity: s.sessionAffinity === 'ClientIP' ? 'ClientIP' : 'None',
    ipFamilies: (s.ipFamilies ?? ['IPv4']) as SlimService['ipFamilies'],
    externalIPs: s.externalIPs ?? [],
    ports: (s.ports ?? []).map((p) => ({
      name: p.name ?? '',
      protocol: (p.protocol ?? 'TCP') as SlimServicePort['protocol'],
      port: p.port ?? 0,
      nodePort: p.nodePort ?? 0,
      targetPort: String(p.targetPort ?? p.port ?? ''),
      ...(p.appProtocol ? { appProtocol: p.appProtocol } : {}),
    })),
    ingress: (status?.loadBalancer?.ingress ?? []).map((i) => ({
      ...(i.ip ? { ip: i.ip } : {}),
      ...(i.hostname ? { hostname: i.hostname } : {}),
      ...(i.ipMode ? { ipMode: i.ipMode } : {}),
    })),
  };
}

export const serviceKey = (s: { namespace: string; name: string }) => `${s.namespace}/${s.name}`;

/**
 * The Service writes of the service controller. Finalizer, annotations and status all go through
 * `services/status` as the reference does, so the controller needs no write access to Services.
 */
export interface ServiceClient {
  /**
   * JSON merge patch of services/status. `conditional`: only if the Service is still at the
   * resourceVersion the decision was made on (needed where a list such as finalizers is replaced).
   */
  patchStatus(
    service: SlimService,
    patch: { metadata?: object; status?: object },
    options: { conditional: boolean },
  ): Promise<void>;
  /** Queued for the process's event recorder (event-recorder.ts): never waits for the API server, never fails. */
  recordEvent(service: SlimService, event: EventSpec): Promise<void>;
  /** Service UID → the load balancer `ccm migrate --yes` handed to ccm for it (hand-overs.ts). */
  handOvers(): Promise<Map<string, string>>;
  /** Write requests sent so far. */
  readonly writes: number;
}

export function createServiceClient(http: KubeTransport): ServiceClient {
  let writes = 0;
  return {
    get writes() {
      return writes;
    },
    async patchStatus(service, patch, { conditional }) {
      writes++;
      const metadata = conditional
        ? { ...patch.metadata, resourceVersion: service.resourceVersion }
        : patch.metadata;
      await http.request({
        method: 'PATCH',
        path: `/api/v1/namespaces/${encodeURIComponent(service.namespace)}/services/${encodeURIComponent(service.name)}/status?fieldManager=${FIELD_MANAGER}`,
        contentType: 'application/merge-patch+json',
        discardResponse: true,
        body: { ...patch, ...(metadata ? { metadata } : {}) },
      });
    },
    async recordEvent(service, event) {
      const about = {
        kind: 'Service',
        apiVersion: 'v1',
        namespace: service.namespace,
        name: service.name,
        uid: service.uid,
      };
      if (eventRecorder(http).record(about, event)) writes++;
    },
    handOvers: () => readHandOvers(http),
  };
}
