/**
 * A de-duplicating work queue with per-key exponential backoff (client-go's workqueue semantics).
 *
 *   const queue = new WorkQueue({ baseDelayMs: 5, maxDelayMs: 1_000_000 });
 *   queue.add('node-a');              // queued once however often it is added while waiting
 *   queue.addAfter('svc/x', 30_000);  // e.g. a cloud's Retry-After
 *   queue.addRateLimited('node-a');   // after base·2^failures, capped at max
 *   queue.forget('node-a');           // success: the key's backoff starts again from base
 *   queue.retryBackoffNow();          // the cause is fixed (new credentials): every key in backoff now
 *   const done = queue.run(4, async (key) => { … });  // 4 workers; a throw means addRateLimited
 *   await queue.shutDown();           // stop intake, let in-flight handlers finish
 *
 * A key is never handled by two workers at once: added while in flight, it is marked dirty and
 * queued again when its handler returns. `length` counts keys waiting (not delayed, not in flight).
 */

export interface WorkQueueOptions {
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Called after each change of the waiting count (metrics). */
  onDepth?: (depth: number) => void;
}

export class WorkQueue<K = string> {
  private readonly queue: K[] = [];
  private readonly queued = new Set<K>();
  private readonly processing = new Set<K>();
  private readonly dirty = new Set<K>();
  private readonly failures = new Map<K, number>();
  /** Keys their handler put back with a delay while it ran: a failure it handled itself. */
  private readonly requeued = new Set<K>();
  /** Keys waiting to be added again; `backoff`: put there by addRateLimited (not a cloud's Retry-After). */
  private readonly timers = new Map<K, { timer: NodeJS.Timeout; readyAt: number; backoff: boolean }>();
  private readonly waiters: ((key: K | undefined) => void)[] = [];
  private shuttingDown = false;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;

  constructor(private readonly options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 5;
    this.maxDelayMs = options.maxDelayMs ?? 1_000_000;
  }

  get length(): number {
    return this.queue.length;
  }

  add(key: K): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) {
      this.dirty.add(key);
      return;
    }
    if (this.queued.has(key)) return;
    const waiter = this.waiters.shift();
    if (waiter) {
      this.processing.add(key);
      waiter(key);
      return;
    }
    this.queued.add(key);
    this.queue.push(key);
    this.options.onDepth?.(this.queue.length);
  }

  /**
   * Adds the key after `ms`. A key already waiting keeps whichever delay ends first: a shorter one
   * replaces it, a longer one is ignored (client-go util/workqueue/delaying_queue.go, `insert`).
   */
  addAfter(key: K, ms: number): void {
    this.delay(key, ms, false);
  }

  private delay(key: K, ms: number, backoff: boolean): void {
    if (this.shuttingDown) return;
    if (this.processing.has(key)) this.requeued.add(key);
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const readyAt = performance.now() + ms;
    const pending = this.timers.get(key);
    if (pending) {
      if (pending.readyAt <= readyAt) return;
      clearTimeout(pending.timer);
    }
    const timer = setTimeout(() => {
      this.timers.delete(key);
      this.add(key);
    }, ms);
    timer.unref?.();
    this.timers.set(key, { timer, readyAt, backoff });
  }

  /** Adds the key after its backoff, which doubles with each call until `forget`. */
  addRateLimited(key: K): void {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    this.delay(key, this.backoffFor(failures), true);
  }

  /**
   * What made the keys fail may be fixed (the credentials were reloaded): every key waiting out its
   * backoff is added now, its backoff forgotten, and a key in flight that has failed before runs once
   * more when it is done. One call is one retry each: failing again, a key waits the base delay, then
   * longer. A key waiting for a delay it was given (addAfter: a cloud's Retry-After, a load balancer
   * still being built) keeps it. Returns how many keys it retries.
   */
  retryBackoffNow(): number {
    if (this.shuttingDown) return 0;
    let retried = 0;
    for (const [key, pending] of [...this.timers]) {
      if (!pending.backoff) continue;
      clearTimeout(pending.timer);
      this.timers.delete(key);
      this.failures.delete(key);
      this.add(key);
      retried++;
    }
    for (const key of this.processing) {
      if (!this.failures.delete(key)) continue;
      this.dirty.add(key);
      retried++;
    }
    return retried;
  }

  backoffFor(failures: number): number {
    return Math.min(this.baseDelayMs * 2 ** failures, this.maxDelayMs);
  }

  /** How often the key has been retried since its last success. */
  retries(key: K): number {
    return this.failures.get(key) ?? 0;
  }

  forget(key: K): void {
    this.failures.delete(key);
  }

  /** The next key, waiting for one; undefined once the queue is shut down. Pair with `done`. */
  get(): Promise<K | undefined> {
    const key = this.queue.shift();
    if (key !== undefined) {
      this.queued.delete(key);
      this.processing.add(key);
      this.options.onDepth?.(this.queue.length);
      return Promise.resolve(key);
    }
    if (this.shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  done(key: K): void {
    this.processing.delete(key);
    if (this.dirty.delete(key)) this.add(key);
  }

  /**
   * Runs `concurrency` workers until shut down. A handler that throws has its key re-added with
   * backoff (and `onError` told); one that returns normally has its backoff forgotten, unless it put
   * the key back itself (addRateLimited, addAfter) while it ran.
   */
  run(
    concurrency: number,
    handler: (key: K) => Promise<void>,
    onError?: (key: K, err: unknown) => void,
  ): Promise<void> {
    const worker = async () => {
      for (;;) {
        const key = await this.get();
        if (key === undefined) return;
        this.requeued.delete(key);
        try {
          await handler(key);
          // A handler that records its own failure and puts the key back with backoff (the service
          // controller) returns normally: forgetting then would restart every retry at the base delay.
          if (!this.requeued.delete(key)) this.forget(key);
        } catch (err) {
          onError?.(key, err);
          this.addRateLimited(key);
        } finally {
          this.done(key);
        }
      }
    };
    return Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker)).then(() => undefined);
  }

  /** Stops intake and wakes idle workers; queued and delayed keys are dropped. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const { timer } of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    this.queue.length = 0;
    this.queued.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }
}
