import { KubeApiError } from './errors.js';
import type { KubeTransport } from './transport.js';
import { FIELD_MANAGER, NODE_DELETIONS_CONFIGMAP, NODE_DELETIONS_NAMESPACE } from './well-known.js';

/**
 * The deletion brake's memory: the Node deletions of the last window, one line each in the data key
 * `deletions` of ConfigMap kube-system/ccm-node-deletions. Every process that deletes Nodes (`ccm
 * run`'s leader, a `ccm nodes init` CronJob or operator) reads it, and writes a deletion into it
 * BEFORE it sends that Node's DELETE, with the ConfigMap's resourceVersion as a precondition: two
 * writers never both take the last deletion the brake allows, and a deletion is never forgotten
 * (a crash between the record and the DELETE counts one deletion too many, the safe side). A record
 * that cannot be read or written deletes nothing.
 *
 * Times are the API server's (the Date header of its answers), never the writer's or the reader's
 * own clock: a process whose clock is off judges the same window as every other.
 *
 * RBAC: `create` on configmaps in kube-system; `get` and `update` on this one by name.
 */

export interface RecordedDeletion {
  uid: string;
  name: string;
  providerID: string;
  /** The API server's clock, ms (the end of the second its Date header named). */
  at: number;
  /** The id of the hold an operator released to allow it. */
  release?: string;
}

export interface DeletionRecord {
  deletions: RecordedDeletion[];
  /** The API server's clock when it answered, ms (whole seconds: its Date header). */
  serverNow: number;
  /** Undefined: no record yet (created by the first deletion). */
  resourceVersion?: string;
}

export const DELETION_RECORD = `ConfigMap ${NODE_DELETIONS_NAMESPACE}/${NODE_DELETIONS_CONFIGMAP}`;
const PATH = `/api/v1/namespaces/${NODE_DELETIONS_NAMESPACE}/configmaps`;
const KEY = 'deletions';
/** A ConfigMap holds 1 MiB: a release of more Nodes than fit is written (and deleted) over several passes. */
export const MAX_RECORD_BYTES = 900_000;
const ATTEMPTS = 8;

interface RawConfigMap {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string>;
}

function serverTimeOf(answer: { serverTime?: number }): number {
  // Every API server sends Date (Go's net/http); a proxy that strips it leaves the local clock.
  return answer.serverTime ?? Date.now();
}

function explain(err: unknown, verb: string): Error {
  if (err instanceof KubeApiError && err.status === 403) {
    return new KubeApiError(
      `not allowed to ${verb} ${DELETION_RECORD}; grant it to ccm's service account (\`ccm manifests\` does)`,
      403,
    );
  }
  return err as Error;
}

export function parseDeletions(text: string | undefined): RecordedDeletion[] {
  const deletions: RecordedDeletion[] = [];
  const lines = (text ?? '').split('\n');
  for (const [i, line] of lines.entries()) {
    if (!line.trim()) continue;
    let entry: { at?: unknown; node?: unknown; uid?: unknown; providerID?: unknown; release?: unknown };
    try {
      entry = JSON.parse(line);
    } catch {
      entry = {};
    }
    const at = typeof entry.at === 'string' ? Date.parse(entry.at) : Number.NaN;
    if (Number.isNaN(at) || typeof entry.uid !== 'string' || typeof entry.node !== 'string') {
      throw new Error(
        `${DELETION_RECORD}: line ${i + 1} of ${KEY} is not a deletion ({"at":…,"node":…,"uid":…}); fix it, or delete the ConfigMap to forget the window's deletions`,
      );
    }
    deletions.push({
      uid: entry.uid,
      name: entry.node,
      providerID: typeof entry.providerID === 'string' ? entry.providerID : '',
      at,
      ...(typeof entry.release === 'string' && entry.release ? { release: entry.release } : {}),
    });
  }
  return deletions;
}

export function formatDeletions(deletions: readonly RecordedDeletion[]): string {
  return deletions
    .map((d) =>
      JSON.stringify({
        at: new Date(d.at).toISOString(),
        node: d.name,
        uid: d.uid,
        providerID: d.providerID,
        ...(d.release ? { release: d.release } : {}),
      }),
    )
    .map((line) => `${line}\n`)
    .join('');
}

export async function readDeletionRecord(http: KubeTransport, signal?: AbortSignal): Promise<DeletionRecord> {
  let answer: Awaited<ReturnType<typeof http.requestDated<RawConfigMap>>>;
  try {
    answer = await http.requestDated<RawConfigMap>(
      {
        method: 'GET',
        path: `${PATH}/${NODE_DELETIONS_CONFIGMAP}`,
        timeoutMs: 15_000,
        ...(signal ? { signal } : {}),
      },
      [404],
    );
  } catch (err) {
    throw explain(err, 'get');
  }
  const serverNow = serverTimeOf(answer);
  if (answer.status === 404) return { deletions: [], serverNow };
  const rv = answer.body?.metadata?.resourceVersion;
  return {
    deletions: parseDeletions(answer.body?.data?.[KEY]),
    serverNow,
    ...(rv ? { resourceVersion: rv } : {}),
  };
}

/** What a writer adds, without its time (the record's: the API server's). */
export type NewDeletion = Omit<RecordedDeletion, 'at'>;

export interface WriteAhead {
  /** The deletions written, stamped: each may now be sent. */
  written: RecordedDeletion[];
  /** Those `decide` accepted that did not fit the ConfigMap: not written, not to be deleted now. */
  full: NewDeletion[];
  /** The record the last decision was made on (its deletions before these). */
  record: DeletionRecord;
}

/**
 * Reads the record, asks `decide` which deletions may be added to it (decided on that very record:
 * the brake's share and rate), and writes them, conditional on the record being unchanged; on a
 * conflict (another writer came first) it reads and decides again. Deletions older than `keepMs` are
 * dropped from the record. Resolves once the API server has stored them; throws when it did not.
 */
export async function writeAheadDeletions(
  http: KubeTransport,
  decide: (record: DeletionRecord) => NewDeletion[],
  keepMs: number,
): Promise<WriteAhead> {
  for (let attempt = 1; ; attempt++) {
    const record = await readDeletionRecord(http);
    const accepted = decide(record);
    if (accepted.length === 0) return { written: [], full: [], record };
    // The end of the second the server named: a deletion is never thought older than it is.
    const at = record.serverNow + 999;
    // A Node recorded before whose DELETE then failed is recorded again, once: at its new time.
    const again = new Set(accepted.map((d) => d.uid));
    const kept = record.deletions.filter((d) => d.at > record.serverNow - keepMs && !again.has(d.uid));
    const written: RecordedDeletion[] = [];
    const full: NewDeletion[] = [];
    let size = Buffer.byteLength(formatDeletions(kept));
    for (const d of accepted) {
      const entry = { ...d, at };
      const bytes = Buffer.byteLength(formatDeletions([entry]));
      if (size + bytes > MAX_RECORD_BYTES) full.push(d);
      else {
        written.push(entry);
        size += bytes;
      }
    }
    if (written.length === 0) return { written, full, record };
    const body = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: NODE_DELETIONS_CONFIGMAP,
        namespace: NODE_DELETIONS_NAMESPACE,
        labels: { 'app.kubernetes.io/name': 'ccm' },
        ...(record.resourceVersion ? { resourceVersion: record.resourceVersion } : {}),
      },
      data: { [KEY]: formatDeletions([...kept, ...written]) },
    };
    try {
      await http.request({
        ...(record.resourceVersion
          ? {
              method: 'PUT' as const,
              path: `${PATH}/${NODE_DELETIONS_CONFIGMAP}?fieldManager=${FIELD_MANAGER}`,
            }
          : { method: 'POST' as const, path: `${PATH}?fieldManager=${FIELD_MANAGER}` }),
        body,
        discardResponse: true,
        timeoutMs: 15_000,
      });
      return { written, full, record };
    } catch (err) {
      // 409: changed (or created) by another writer since the read: decide again on its version.
      if (err instanceof KubeApiError && err.status === 409 && attempt < ATTEMPTS) continue;
      throw explain(err, record.resourceVersion ? 'update' : 'create');
    }
  }
}
