/**
 * A generic informer: list + watch of one resource path, kept in a local store of slim objects.
 *
 *   const nodes = createInformer({ transport, path: '/api/v1/nodes', slim: slimNode, resource: 'nodes' });
 *   const services = createInformer({ transport, path: '/api/v1/services', slim: slimService, resource: 'services' });
 *   nodes.on('add', (obj) => …); nodes.on('update', (old, obj) => …); nodes.on('delete', (obj) => …);
 *   nodes.start();  …  nodes.hasSynced(); nodes.list(); nodes.get('name' | 'namespace/name');  …  await nodes.stop();
 *
 * `slim` turns the API object (plain JSON) into what the store keeps; keep it small, every object
 * of the cluster lives in memory. Keys are `name` for cluster-scoped objects, `namespace/name` else.
 *
 * Semantics (client-go's reflector): a paginated list gives the store and a resourceVersion; a watch
 * from it (bookmarks on, server-side timeoutSeconds of 5–10 min) keeps it current and is re-opened
 * from the last seen resourceVersion when the server ends it. 410 Gone → relist after the backoff
 * (handlers see the difference as add/update/delete, once the whole listing is in: a relist that
 * fails half-way changes nothing). "Too large resource version" → the same watch again, and a relist
 * after a few. Any other failure → the same again after the backoff (0.8 s doubling to 10 s, afresh
 * after a watch that lasted or a wake). wake() (the API server answers again) ends the current or next
 * wait at once. A watch silent for longer than `stallMs` is presumed dead and restarted.
 * Each restart is counted by reason (`onRestart`); failures are logged once per change of state.
 */
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { KubeApiError } from './errors.js';
import { listAll } from './list-all.js';
import type { KubeTransport } from './transport.js';

export type InformerEvent = 'add' | 'update' | 'delete';
export type RestartReason = 'gone' | 'error' | 'stall';

export interface InformerOptions<T> {
  transport: KubeTransport;
  /** Collection path, e.g. `/api/v1/nodes` or `/api/v1/services`. */
  path: string;
  /** Short name for logs and metrics, e.g. `nodes`. */
  resource: string;
  slim: (raw: unknown) => T;
  labelSelector?: string;
  fieldSelector?: string;
  pageSize?: number;
  /** Server-side watch timeout in seconds; default a random 300–600 (client-go's). */
  watchTimeoutSeconds?: () => number;
  /** No byte for this long on an open watch (bookmarks included) → restart. Default 150 s. */
  stallMs?: number;
  backoff?: { initialMs: number; maxMs: number };
  log?: Logger;
  onRestart?: (reason: RestartReason) => void;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface Informer<T> {
  start(): void;
  stop(): Promise<void>;
  /** True once the first list has filled the store. */
  hasSynced(): boolean;
  list(): T[];
  get(key: string): T | undefined;
  readonly size: number;
  /** Subscribes; returns the unsubscribe (a controller that stops while the informer goes on). */
  on(event: 'add', handler: (obj: T) => void): () => void;
  on(event: 'update', handler: (old: T, obj: T) => void): () => void;
  on(event: 'delete', handler: (obj: T) => void): () => void;
  /**
   * The API server answers again: a backoff wait ends now, and an open watch (whose connection a
   * partition may have left dead, unclosed) is started again from its resourceVersion.
   */
  wake(): void;
}

interface RawMeta {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: RawMeta & {
    code?: number;
    message?: string;
    reason?: string;
    details?: { causes?: { type?: string }[] };
  };
}

class GoneError extends Error {}
const WOKEN = Symbol('woken');
class StallError extends Error {}
/** The server does not have the watched resourceVersion yet (e.g. an API server behind the others). */
class TooLargeError extends Error {}

/** Consecutive "too large resource version" answers after which the informer lists again. */
const TOO_LARGE_RELIST_AFTER = 3;

// apiserver pkg/storage/errors.go, NewTooLargeResourceVersionError: a 504 with this cause (and, from
// older servers, only this message).
const tooLargeMessage = /Too large resource version/i;
function isTooLarge(status: WatchEvent['object']): boolean {
  return (
    status.code === 504 &&
    ((status.details?.causes ?? []).some((c) => c.type === 'ResourceVersionTooLarge') ||
      tooLargeMessage.test(status.message ?? ''))
  );
}

function keyOf(raw: RawMeta): string {
  const { name = '', namespace } = raw.metadata ?? {};
  return namespace ? `${namespace}/${name}` : name;
}

/** Waits, or less when stopped, leaving no listener on the long-lived signal (see lease.ts). */
const defaultSleep = (ms: number, signal: AbortSignal) => delay(ms, undefined, { signal }).catch(() => {});

export function createInformer<T>(options: InformerOptions<T>): Informer<T> {
  let store = new Map<string, { obj: T; rv: string }>();
  const handlers = {
    add: [] as ((o: T) => void)[],
    update: [] as ((a: T, b: T) => void)[],
    delete: [] as ((o: T) => void)[],
  };
  const stopper = new AbortController();
  const sleep = options.sleep ?? defaultSleep;
  const backoff = options.backoff ?? { initialMs: 800, maxMs: 10_000 };
  const stallMs = options.stallMs ?? 150_000;
  const pageSize = options.pageSize ?? 500;
  const timeoutSeconds = options.watchTimeoutSeconds ?? (() => 300 + Math.floor(Math.random() * 300));
  const selectors = [
    options.labelSelector ? `labelSelector=${encodeURIComponent(options.labelSelector)}` : '',
    options.fieldSelector ? `fieldSelector=${encodeURIComponent(options.fieldSelector)}` : '',
  ].filter(Boolean);
  let synced = false;
  let running: Promise<void> | undefined;
  let waking = new AbortController();
  let openWatch: AbortController | undefined;
  let failing: string | undefined;

  const emit = {
    add: (o: T) => {
      for (const h of handlers.add) h(o);
    },
    update: (a: T, b: T) => {
      for (const h of handlers.update) h(a, b);
    },
    delete: (o: T) => {
      for (const h of handlers.delete) h(o);
    },
  };

  const upsert = (raw: RawMeta) => {
    const key = keyOf(raw);
    const rv = raw.metadata?.resourceVersion ?? '';
    const old = store.get(key);
    if (old && old.rv === rv) return;
    const obj = options.slim(raw);
    store.set(key, { obj, rv });
    if (old) emit.update(old.obj, obj);
    else emit.add(obj);
  };

  const query = (extra: string[]) => [...selectors, ...extra].join('&');

  /**
   * Lists every page into a new store, then puts it in place and tells the handlers the difference:
   * a listing that fails half-way leaves the store and the handlers as they were.
   */
  async function relist(): Promise<string> {
    let next = new Map<string, { obj: T; rv: string }>();
    // Streamed: each full object is dropped once its slim copy is made, never a whole page of them.
    const rv = await listAll(
      options.transport,
      options.path,
      (raw) => {
        const item = raw as RawMeta;
        const key = keyOf(item);
        const itemRv = item.metadata?.resourceVersion ?? '';
        const old = store.get(key);
        next.set(key, old && old.rv === itemRv ? old : { obj: options.slim(item), rv: itemRv });
      },
      {
        pageSize,
        query: selectors,
        signal: stopper.signal,
        timeoutMs: 60_000,
        onRestart: () => {
          next = new Map();
        },
      },
    );
    const previous = store;
    store = next;
    synced = true;
    for (const [key, entry] of next) {
      const old = previous.get(key);
      if (!old) emit.add(entry.obj);
      else if (old !== entry) emit.update(old.obj, entry.obj);
    }
    for (const [key, entry] of previous) {
      if (!next.has(key)) emit.delete(entry.obj);
    }
    return rv;
  }

  /** One watch from `rv`; returns the last resourceVersion seen when the server ends it. */
  async function watch(from: string): Promise<string> {
    let rv = from;
    const aborter = new AbortController();
    openWatch = aborter;
    const onStop = () => aborter.abort();
    stopper.signal.addEventListener('abort', onStop, { once: true });
    let stalled = false;
    let timer: NodeJS.Timeout | undefined;
    const arm = () => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        stalled = true;
        aborter.abort();
      }, stallMs);
      timer.unref?.();
    };
    arm();
    try {
      await options.transport.stream(
        `${options.path}?${query([
          'watch=1',
          `resourceVersion=${encodeURIComponent(rv)}`,
          'allowWatchBookmarks=true',
          `timeoutSeconds=${timeoutSeconds()}`,
        ])}`,
        aborter.signal,
        (line) => {
          arm();
          const event = JSON.parse(line) as WatchEvent;
          if (event.type === 'ERROR') {
            if (event.object.code === 410)
              throw new GoneError(event.object.message ?? 'resource version too old');
            if (isTooLarge(event.object)) throw new TooLargeError(event.object.message ?? 'too large');
            throw new KubeApiError(
              `watch of ${options.resource}: ${event.object.message ?? 'error'}`,
              event.object.code ?? 0,
            );
          }
          rv = event.object.metadata?.resourceVersion ?? rv;
          if (event.type === 'BOOKMARK') return;
          if (event.type === 'DELETED') {
            const key = keyOf(event.object);
            const old = store.get(key);
            if (old) {
              store.delete(key);
              emit.delete(old.obj);
            }
            return;
          }
          upsert(event.object);
        },
      );
    } catch (err) {
      if (stalled) throw new StallError(`no data for ${Math.round(stallMs / 1000)} s`);
      // wake(): the API server answers again; this watch's connection may be dead. Watch again from here.
      if (aborter.signal.reason === WOKEN) return rv;
      if (err instanceof KubeApiError && err.status === 410) throw new GoneError(err.message);
      if (err instanceof KubeApiError && err.status === 504 && tooLargeMessage.test(err.message))
        throw new TooLargeError(err.message);
      throw err;
    } finally {
      if (openWatch === aborter) openWatch = undefined;
      if (timer) clearTimeout(timer);
      stopper.signal.removeEventListener('abort', onStop);
    }
    return rv;
  }

  const recovered = () => {
    if (failing !== undefined) {
      options.log?.info({ resource: options.resource }, `watching ${options.resource} again`);
      failing = undefined;
    }
  };

  async function loop(): Promise<void> {
    let rv: string | undefined;
    let delay = backoff.initialMs;
    let tooLarge = 0;
    /**
     * The backoff, ended early by stop() or wake() (one controller for both, so no combined signal per
     * wait). A wake that came while a request was out (a watch woken open, then answered 410 by the
     * restarted server) ends the next wait at once: otherwise that wait is the backoff the outage grew,
     * up to maxMs after the server is back. Woken, the backoff starts afresh.
     */
    const wait = async () => {
      await sleep(delay, waking.signal);
      if (waking.signal.aborted && !stopper.signal.aborted) {
        waking = new AbortController();
        delay = backoff.initialMs;
      } else delay = Math.min(delay * 2, backoff.maxMs);
    };
    while (!stopper.signal.aborted) {
      try {
        if (rv === undefined) {
          rv = await relist();
          recovered();
        }
        const started = Date.now();
        rv = await watch(rv);
        recovered();
        tooLarge = 0;
        // A watch that lasted is a healthy one: the next failure starts the backoff afresh.
        if (Date.now() - started > 10_000) delay = backoff.initialMs;
      } catch (err) {
        if (stopper.signal.aborted) break;
        if (err instanceof GoneError) {
          // Not at once: a server that answers 410 to every watch would make a hot loop of lists.
          // client-go's reflector waits its backoff (≥ 800 ms) before each ListAndWatch
          // (tools/cache/reflector.go, RunWithContext).
          options.onRestart?.('gone');
          options.log?.debug(
            { resource: options.resource },
            `${options.resource}: ${err.message}; listing again`,
          );
          rv = undefined;
          await wait();
          continue;
        }
        tooLarge = err instanceof TooLargeError ? tooLarge + 1 : 0;
        if (tooLarge >= TOO_LARGE_RELIST_AFTER) {
          // The resourceVersion may never come (a listing from a server that is no longer there);
          // a fresh list gives one this server has (client-go lists with "" after this error).
          tooLarge = 0;
          rv = undefined;
        }
        if (err instanceof StallError) {
          options.onRestart?.('stall');
          options.log?.warn(
            { resource: options.resource },
            `watch of ${options.resource} stalled (${err.message}); restarting it`,
          );
          continue;
        }
        options.onRestart?.('error');
        const message = (err as Error).message;
        if (failing === undefined) {
          options.log?.warn(
            { resource: options.resource },
            `watching ${options.resource} failed: ${message}; retrying with backoff until it works`,
          );
          failing = message;
        }
        await wait();
      }
    }
  }

  return {
    start() {
      running ??= loop();
    },
    async stop() {
      stopper.abort();
      waking.abort();
      await running;
    },
    hasSynced: () => synced,
    list: () => Array.from(store.values(), (e) => e.obj),
    get: (key) => store.get(key)?.obj,
    get size() {
      return store.size;
    },
    on(event: InformerEvent, handler: (...args: never[]) => void) {
      const list = handlers[event] as unknown[];
      list.push(handler);
      return () => {
        const at = list.indexOf(handler);
        if (at >= 0) list.splice(at, 1);
      };
    },
    wake() {
      waking.abort();
      openWatch?.abort(WOKEN);
    },
  } as Informer<T>;
}
