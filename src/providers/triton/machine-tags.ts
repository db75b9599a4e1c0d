import { setTimeout as delay } from 'node:timers/promises';
import { RetryableError } from '../errors.js';
import type { Tags, TritonClient } from './client.js';

/**
 * One change of a machine's tags, planned from its fresh tags: `add` is written first (one
 * AddMachineTags, which replaces each key it names and leaves the others), then `remove` in order (one
 * DeleteMachineTag each). Writers put ccm's ownership record last among the removals, so that a
 * failure in between leaves a record ccm can clean up from.
 */
export interface MachineTagWrite {
  add?: Tags;
  remove?: readonly string[];
  /** Whether tags read back show the change. */
  settled(after: Tags): boolean;
}

export interface MachineTagOptions {
  /** Read-backs per change before giving up with a RetryableError. */
  attempts?: number;
  /** Pause before reading back again; CloudAPI applies tag writes asynchronously. */
  settleDelayMs?: number;
}

/**
 * The one way ccm changes a machine's tags, for every tag it keeps (CNS services, CMON groups): the
 * changes of one machine are serialised inside this process, whichever writer asked, and each is a
 * read-modify-write of the fresh tags, read back until CloudAPI shows it. If someone else's write
 * dropped ccm's change meanwhile, it is planned again from what is there now. CloudAPI has no
 * compare-and-set for tags (sdc-cloudapi lib/tags.js), so a key another writer changes between ccm's
 * read and its write (one request apart) can still be overwritten; that writer's own read-back is
 * what catches it.
 */
export class MachineTagWriter {
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly client: TritonClient,
    private readonly options: MachineTagOptions = {},
  ) {}

  /**
   * Plans with `plan` from the machine's tags and writes, until a read-back shows the change. `plan`
   * returns undefined when there is nothing (more) to do, and throws to refuse the change.
   */
  change(
    id: string,
    what: string,
    plan: (tags: Tags) => MachineTagWrite | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    const previous = this.queues.get(id) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.write(id, what, plan, signal));
    this.queues.set(id, next);
    return next.finally(() => {
      if (this.queues.get(id) === next) this.queues.delete(id);
    });
  }

  private async write(
    id: string,
    what: string,
    plan: (tags: Tags) => MachineTagWrite | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    const attempts = this.options.attempts ?? 5;
    const pause = this.options.settleDelayMs ?? 500;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      const change = plan(await this.client.listMachineTags(id, signal));
      if (!change) return;
      if (change.add && Object.keys(change.add).length > 0) {
        await this.client.addMachineTags(id, change.add, signal);
      }
      for (const key of change.remove ?? []) await this.client.deleteMachineTag(id, key, signal);
      if (change.settled(await this.client.listMachineTags(id, signal))) return;
      if (attempt < attempts) await delay(pause * attempt, undefined, { signal });
    }
    throw new RetryableError(
      `the ${what} of machine ${id} did not settle after ${attempts} attempts (another writer, or CloudAPI is slow); trying again later`,
      5000,
    );
  }
}
