import { monotonicMs } from '../clock.js';
import { nodeCrypto } from '../node-modules.js';
import { createEvent, type EventSpec, type InvolvedObject } from './events.js';
import type { KubeTransport } from './transport.js';

/**
 * Events as the reference's recorder sends them (client-go tools/record: a broadcaster with its own
 * queue, a per-object spam filter and aggregation): `record()` never waits and never throws, so an
 * Event the API server refuses (a Terminating namespace's NamespaceLifecycle, EventRateLimit, an
 * events quota) or a slow server never holds up or fails the work it describes.
 *
 * - the same Event (object, type, reason, message) again within 10 minutes is not sent again;
 * - each object may have 25 Events at once, then one per 5 minutes (client-go's spam filter);
 * - at most 1,000 wait to be sent (the oldest is dropped), one at a time; a failed one is dropped.
 */
export class EventRecorder {
  private readonly queue: { about: InvolvedObject; spec: EventSpec }[] = [];
  private readonly sent = new Map<string, number>();
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private sending?: Promise<void>;
  /** Events not sent: repeats, over the spam limit, dropped from a full queue, refused. */
  dropped = 0;

  constructor(
    private readonly http: KubeTransport,
    private readonly options: {
      onError?: (message: string) => void;
      now?: () => number;
    } = {},
  ) {}

  private now(): number {
    return this.options.now?.() ?? monotonicMs();
  }

  /** Queues the Event; false when it is not sent (a repeat, or over the object's limit). */
  record(about: InvolvedObject, spec: EventSpec): boolean {
    const now = this.now();
    this.forgetOld(now);
    const objectText = `${about.kind}/${about.namespace ?? ''}/${about.name}/${about.uid ?? ''}`;
    const object = digest(objectText);
    const key = digest(`${objectText}/${spec.type}/${spec.reason}/${spec.message}`);
    const last = this.sent.get(key);
    if (last !== undefined && now - last < REPEAT_MS) {
      this.dropped++;
      return false;
    }
    const bucket = this.buckets.get(object) ?? { tokens: BURST, at: now };
    bucket.tokens = Math.min(BURST, bucket.tokens + (now - bucket.at) / REFILL_MS);
    bucket.at = now;
    moveToEnd(this.buckets, object, bucket);
    if (bucket.tokens < 1) {
      this.dropped++;
      return false;
    }
    bucket.tokens -= 1;
    moveToEnd(this.sent, key, now);
    if (this.queue.length >= MAX_QUEUED) {
      this.queue.shift();
      this.dropped++;
    }
    this.queue.push({ about, spec });
    this.sending ??= this.send().finally(() => {
      this.sending = undefined;
    });
    return true;
  }

  /** Waits until what was recorded has been sent, at most `timeoutMs` (a one-pass command's end, a shutdown). */
  async flush(timeoutMs: number): Promise<void> {
    const deadline = this.now() + timeoutMs;
    while (this.sending && this.now() < deadline) {
      await Promise.race([
        this.sending,
        new Promise((r) => setTimeout(r, Math.max(1, deadline - this.now())).unref()),
      ]);
    }
  }

  private async send(): Promise<void> {
    for (let next = this.queue.shift(); next; next = this.queue.shift()) {
      try {
        await createEvent(this.http, next.about, next.spec);
      } catch (err) {
        this.dropped++;
        this.options.onError?.(
          `event ${next.spec.reason} about ${next.about.kind} ${next.about.name} not recorded: ${(err as Error).message}`,
        );
      }
    }
  }

  /**
   * Keeps the maps to what the windows still need: they would otherwise grow with every object ever
   * seen. Both maps are in time order (moveToEnd), so only their expired heads are visited: a sweep
   * of every entry on each Event made 5,000 Events a quadratic 2 s of CPU (docs/performance.md).
   */
  private forgetOld(now: number): void {
    for (const [key, at] of this.sent) {
      if (now - at < REPEAT_MS) break;
      this.sent.delete(key);
    }
    for (const [key, b] of this.buckets) {
      if (now - b.at < REFILL_MS * BURST) break;
      this.buckets.delete(key);
    }
  }
}

/**
 * The maps hold a 28-character digest of each key, not the key: its text (object, reason, a message
 * naming the Node) was ~490 bytes of heap per Node (145 now), kept for 10 minutes after a 5,000-Node burst.
 */
function digest(text: string): string {
  return nodeCrypto().hash('sha1', text, 'base64');
}

/** Sets `key` as the map's newest entry: a Map iterates in the order its keys were first set. */
function moveToEnd<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
}

const REPEAT_MS = 10 * 60_000;
const BURST = 25;
const REFILL_MS = 5 * 60_000;
const MAX_QUEUED = 1000;

const recorders = new WeakMap<KubeTransport, EventRecorder>();

/** The one recorder of a transport (a process has one per API server it talks to). */
export function eventRecorder(http: KubeTransport): EventRecorder {
  let recorder = recorders.get(http);
  if (!recorder) {
    recorder = new EventRecorder(http);
    recorders.set(http, recorder);
  }
  return recorder;
}
