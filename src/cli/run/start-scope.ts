import type { Logger } from 'pino';

/** What a start ended by a signal rejects with: the command ends with status 0, as after any shutdown. */
export class StartStopped extends Error {
  override name = 'StartStopped';
}

/**
 * A signal (SIGTERM, SIGINT) while `ccm run` starts: the waits at start (the API server, the cloud's
 * credential check) can take minutes, and a Pod rolled meanwhile must end as docs/run.md says of a
 * running one: the signal logged, what is held released, exit 0. The command aborts `stop` with the
 * signal's name; the stages end their waits on `signal`, and what they hold is released here, at once.
 */
export class StartScope {
  private readonly held: (() => unknown)[] = [];
  private over = false;

  constructor(
    private readonly log: Logger,
    private readonly stop?: AbortSignal,
  ) {
    if (stop?.aborted) this.stopped();
    else stop?.addEventListener('abort', this.stopped, { once: true });
  }

  /** Aborted by the signal: the stages' waits take it. */
  get signal(): AbortSignal | undefined {
    return this.stop;
  }

  /** Released at once should a signal come during the start (a port served, connections). */
  hold(release: () => unknown): void {
    this.held.push(release);
  }

  /** Between stages: a start a signal ended goes no further. */
  check(): void {
    if (this.stop?.aborted) throw new StartStopped(`${String(this.stop.reason)} received during the start`);
  }

  /**
   * What the start rejects with, once what it held is released: StartStopped once a signal came,
   * else the stage's own error.
   */
  async failure(err: unknown): Promise<unknown> {
    await this.release();
    return this.stop?.aborted
      ? new StartStopped(`${String(this.stop.reason)} received during the start`)
      : err;
  }

  /** The start is over: from now on the run's own shutdown answers a signal. */
  done(): void {
    this.over = true;
    this.stop?.removeEventListener('abort', this.stopped);
  }

  private readonly stopped = (): void => {
    if (this.over) return;
    this.log.info(`${String(this.stop?.reason)} received: shutting down`);
    void this.release();
  };

  /** Each held thing released once, the last held first; one that fails to is no error of the start's. */
  private async release(): Promise<void> {
    const held = this.held.splice(0).reverse();
    for (const release of held)
      await Promise.resolve()
        .then(release)
        .catch(() => {});
  }
}
