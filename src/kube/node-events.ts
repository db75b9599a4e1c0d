import { KubeApiError } from './errors.js';
import { listAll } from './list-all.js';
import type { KubeTransport } from './transport.js';
import { SOURCE_LIFECYCLE_CONTROLLER } from './well-known.js';

/** One Event the lifecycle controller recorded about a Node. */
export interface NodeEventRecord {
  /** The Node's. */
  uid: string;
  name: string;
  /** The API server's clock (the Event's creationTimestamp), ms. */
  at: number;
  annotations: Record<string, string>;
}

interface RawEvent {
  metadata?: { creationTimestamp?: string; annotations?: Record<string, string> };
  involvedObject?: { name?: string; uid?: string };
  lastTimestamp?: string | null;
  eventTime?: string | null;
}

/**
 * The lifecycle controller's Events of this reason about Nodes since `sinceMs`, whichever process
 * recorded them (a replica that led before, a `nodes init` CronJob), from namespace `default`, where
 * a Node's Events go. RBAC: `list` on events.
 */
export async function listNodeEvents(
  http: KubeTransport,
  reason: string,
  sinceMs: number,
  signal?: AbortSignal,
): Promise<NodeEventRecord[]> {
  const records: NodeEventRecord[] = [];
  const selector = `reason=${reason},source=${SOURCE_LIFECYCLE_CONTROLLER}`;
  try {
    await listAll(
      http,
      '/api/v1/namespaces/default/events',
      (item) => {
        const event = item as RawEvent;
        // The API server's clock (it sets creationTimestamp), never the writer's: a writer whose
        // clock is off would move its Events in or out of a window judged on another clock.
        const stamp = event.metadata?.creationTimestamp ?? event.lastTimestamp ?? event.eventTime;
        const parsed = stamp ? Date.parse(stamp) : Number.NaN;
        if (Number.isNaN(parsed)) return;
        // Whole seconds: taken at the end of its second, an Event is never thought older than it is
        // (the deletion brake's rate would let the next deletion come sooner).
        const at = parsed + 999;
        if (at <= sinceMs) return;
        records.push({
          uid: event.involvedObject?.uid ?? '',
          name: event.involvedObject?.name ?? '',
          at,
          annotations: event.metadata?.annotations ?? {},
        });
      },
      {
        pageSize: 500,
        query: [`fieldSelector=${encodeURIComponent(selector)}`],
        timeoutMs: 15_000,
        ...(signal ? { signal } : {}),
      },
    );
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 403) {
      throw new KubeApiError(
        'not allowed to list events in namespace default; grant "list" on events to ccm\'s service account (`ccm manifests` does)',
        403,
      );
    }
    throw err;
  }
  return records;
}
