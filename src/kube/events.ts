import type { KubeTransport } from './transport.js';
import { FIELD_MANAGER } from './well-known.js';

export interface InvolvedObject {
  kind: string;
  apiVersion: string;
  namespace?: string;
  name: string;
  uid?: string;
}

export interface EventSpec {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  component: string;
  /** On the Event object itself (ccm's own marks, e.g. the release that allowed a deletion). */
  annotations?: Record<string, string>;
}

/**
 * Records a core/v1 Event about any object, in the object's namespace (cluster-scoped objects such
 * as Nodes: `default`, as the reference's recorder does).
 */
export async function createEvent(
  http: KubeTransport,
  about: InvolvedObject,
  { type, reason, message, component, annotations }: EventSpec,
): Promise<void> {
  const now = new Date().toISOString();
  const namespace = about.namespace ?? 'default';
  await http.request({
    method: 'POST',
    path: `/api/v1/namespaces/${encodeURIComponent(namespace)}/events?fieldManager=${FIELD_MANAGER}`,
    discardResponse: true,
    body: {
      metadata: { generateName: `${about.name}.`, namespace, ...(annotations ? { annotations } : {}) },
      involvedObject: about,
      type,
      reason,
      message,
      source: { component },
      reportingComponent: component,
      reportingInstance: component,
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    },
  });
}
