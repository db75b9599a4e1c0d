import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { monotonicMs } from '../clock.js';
import { DELETION_RECORD, type DeletionRecord, type NewDeletion } from '../kube/deletion-record.js';
import type { NodeClient } from '../kube/nodes.js';
import { readSecret } from '../kube/secrets.js';
import type { SlimNode } from '../kube/slim-node.js';
import type { KubeTransport } from '../kube/transport.js';
import {
  ANNOTATION_ALLOW_MASS_DELETION,
  ANNOTATION_DELETION_HOLD,
  EVENT_NODE_DELETION_HELD,
  SOURCE_LIFECYCLE_CONTROLLER,
} from '../kube/well-known.js';
import type { CloudView } from './cloud-view.js';
import { mapLimit } from './concurrency.js';
import {
  type BrakeNode,
  type BrakeOptions,
  type BrakeVerdict,
  brakeVerdict,
  DELETION_WINDOW_MS,
  heldEventMessage,
  managedNodes,
  type RecentDeletion,
  rateAllowance,
  releaseAnnotation,
  releaseCommand,
  releaseNamesHold,
  waitingReason,
} from './deletion-brake.js';
import type { Metrics } from './metrics.js';
import { HELD_EVENT_REPEAT_MS } from './pass-brake.js';

/** The hold `ccm run` keeps now, for /readyz (run.ts): one object for the process, set by the leader. */
export interface HoldStatus {
  current?: { id: string; count: number; reason: string; release: string };
}

export type Admission =
  | { kind: 'allowed'; release?: string }
  | { kind: 'held'; reason: string }
  | { kind: 'waiting'; reason: string }
  /** Not deleted this pass, not held either: the record of deletions could not be read. */
  | { kind: 'unjudged'; reason: string };

/** What became of an admitted deletion at its write-ahead: sent only when `recorded`. */
export type Recorded =
  | { kind: 'recorded' }
  | { kind: 'held'; reason: string }
  | { kind: 'waiting'; reason: string }
  | { kind: 'failed'; reason: string };

type CommitOutcome = Recorded | { kind: 'retry'; inMs: number };

export interface GuardDeps {
  kube: NodeClient;
  /** For the credentials Secret's release annotation. */
  transport: KubeTransport;
  log: Logger;
  metrics: Metrics;
  options: BrakeOptions;
  deletionGracePeriodMs: number;
  scheme: () => string;
  nodes: () => readonly SlimNode[];
  /** The credentials Secret `ccm run` reads: its annotation releases a hold. */
  secret?: { namespace: string; name: string };
  status: HoldStatus;
  /** The API server's clock, ms (the record's). Default: its Date header at the last read, moved on by this process's monotonic clock. */
  now?: () => number;
}

/** Held Events sent at once by a review. */
const TELL_CONCURRENCY = 8;
/** The record is read again when older than this (a deletion of this process is known at once). */
const DELETIONS_MAX_AGE_MS = 5000;
/** The Secret is read at most this often while a hold lasts. */
const SECRET_MAX_AGE_MS = 2000;

/**
 * The deletion brake in `ccm run`'s lifecycle controller, which reconciles Node by Node from a cached
 * listing: every candidate asks `admit` before its confirming lookup, against the same listing's
 * judgement of every managed Node. The recent deletions are those of the record of deletions
 * (deletion-record.ts: a replica that led before, a `nodes init` CronJob) and this process's own,
 * including the ones under way, so two workers never both take the last token. Before its DELETE, an
 * admitted deletion is written into the record (`record`), judged again on the record as it is then;
 * not written, not sent. A hold is said once in the log, on /readyz and in `ccm_node_deletions_held`,
 * and once on each held Node as a Warning Event.
 */
export class DeletionGuard {
  /** The last read of the record: `mono` this process's monotonic clock then, `serverNow` the API server's. */
  private read?: { mono: number; serverNow?: number; deletions: RecentDeletion[]; error?: string };
  private readError?: string;
  private commits: { entry: NewDeletion; resolve: (outcome: CommitOutcome) => void }[] = [];
  private committing?: Promise<void>;
  private reading?: Promise<void>;
  /** This process's deletions, made or under way, by Node UID. */
  /** This process's deletions: admitted (counted from then on), `sent` once the DELETE is on its way. */
  private readonly own = new Map<string, RecentDeletion & { sent?: boolean }>();
  private version = 0;
  private snapshot?: { view: CloudView; at: number; managed: BrakeNode[]; missing: BrakeNode[] };
  private judged?: { key: unknown[]; verdict: BrakeVerdict };
  /** A hold released by the Secret's annotation: its Nodes are deleted without the brake. */
  private released?: { id: string; providerIDs: Set<string>; at: number };
  private annotation?: { value?: string; at: number };
  private ignoredAnnotation?: string;
  private holding?: string;
  /** The held Nodes told, by UID: by this process, or by any other (read from their Events). */
  private readonly told = new Map<string, { id: string; at: number }>();
  /** Whether `told` has what the API server has (read once, and again with each new hold). */
  private toldRead = false;
  private readingTold?: Promise<boolean>;
  private stopped = false;

  constructor(private readonly deps: GuardDeps) {}

  /** The API server's clock (the record's), as well as this process knows it. */
  now(): number {
    if (this.deps.now) return this.deps.now();
    const read = this.read;
    if (read?.serverNow !== undefined) return read.serverNow + (monotonicMs() - read.mono);
    return Date.now();
  }

  /** Once each monitor period, before the Nodes are queued: the hold's log line, metric and status. */
  async review(view: CloudView): Promise<void> {
    // A failed listing judges nothing: a hold stays as it was, and no Node is deleted meanwhile.
    if (view.listingError !== undefined) return;
    const snapshot = this.snapshotOf(view, true);
    if (snapshot.missing.length === 0 && !this.holding && !this.released) return;
    // What was told before this process led (a restart, another leader, the CronJob), read before
    // a hold can need it.
    if (!this.toldRead) await this.readTold();
    await this.freshDeletions();
    const verdict = this.judge();
    if (verdict.held && (await this.checkAnnotation(verdict))) this.judge();
    // Every Node the hold counts is told, a Ready one too (it is counted, never a candidate: no
    // admission tells it), as nodes init reports it.
    const current = this.judge();
    if (current.held) {
      const byUid = new Map(this.deps.nodes().map((n) => [n.metadata?.uid ?? '', n]));
      const nodes = current.counted.map((n) => byUid.get(n.uid)).filter((n) => n !== undefined);
      await mapLimit(nodes, TELL_CONCURRENCY, (node) => this.tell(node, current));
    }
    if (this.released && !snapshot.missing.some((n) => this.released?.providerIDs.has(n.providerID))) {
      this.deps.log.info(`hold ${this.released.id}: every Node it released is deleted`);
      this.released = undefined;
      this.judge();
    }
  }

  /** Whether this candidate may be deleted now; an allowed one is counted until `settle` says otherwise. */
  async admit(node: SlimNode, view: CloudView): Promise<Admission> {
    this.snapshotOf(view, false);
    await this.freshDeletions();
    const verdict = this.judge();
    const providerID = node.spec?.providerID ?? '';
    const uid = node.metadata?.uid ?? '';
    // Deleted by this process a moment ago, still in the informer's cache: not deleted twice.
    if (this.own.get(uid)?.sent) return { kind: 'waiting', reason: 'deleted a moment ago' };
    if (verdict.released.has(providerID)) {
      const release = this.released?.id;
      this.reserve(node, release);
      return release ? { kind: 'allowed', release } : { kind: 'allowed' };
    }
    if (verdict.held) {
      await this.tell(node, verdict);
      return { kind: 'held', reason: verdict.held };
    }
    if (verdict.unjudged) return { kind: 'unjudged', reason: verdict.unjudged };
    if (verdict.allowedNow >= 1) {
      this.reserve(node);
      return { kind: 'allowed' };
    }
    return { kind: 'waiting', reason: waitingReason(verdict, this.deps.options, this.now()) };
  }

  /**
   * Just before the DELETE of an admitted Node: its deletion is written into the record first, and
   * only a recorded deletion may be sent. Its cloud lookup, between admission and now, may have
   * waited seconds for the cloud budget while a later admission's did not, so the deletions are
   * spaced by the rate again, counting only deletions already recorded, from this moment; the record
   * itself is judged again as it is when written (another process may have deleted since).
   */
  async record(node: SlimNode, signal?: AbortSignal): Promise<Recorded> {
    const uid = node.metadata?.uid ?? '';
    const mine = this.own.get(uid);
    if (!mine) return { kind: 'failed', reason: 'not deleted: not admitted by the deletion brake' };
    for (;;) {
      if (signal?.aborted) return { kind: 'failed', reason: 'not deleted: stopped before the deletion' };
      if (mine.release === undefined) {
        const { allowedNow, nextInMs } = rateAllowance(this.sentTimes(), this.now(), this.deps.options);
        if (allowedNow < 1) {
          await delay(Math.max(nextInMs, 10), undefined, signal ? { signal } : {}).catch(() => {});
          continue;
        }
      }
      const outcome = await this.commit({
        uid,
        name: mine.name,
        providerID: node.spec?.providerID ?? '',
        ...(mine.release ? { release: mine.release } : {}),
      });
      if (outcome.kind !== 'retry') return outcome;
      await delay(Math.max(outcome.inMs, 10), undefined, signal ? { signal } : {}).catch(() => {});
    }
  }

  /** The times of the recorded deletions that count for the rate (read, and this process's own since). */
  private sentTimes(): number[] {
    return [
      ...(this.read?.deletions ?? []).filter((d) => !this.own.has(d.uid)),
      ...[...this.own.values()].filter((d) => d.sent),
    ]
      .filter((d) => d.release === undefined)
      .map((d) => d.at);
  }

  /** Group commit: the deletions waiting to be recorded are written together, in one conditional write. */
  private commit(entry: NewDeletion): Promise<CommitOutcome> {
    return new Promise((resolve) => {
      this.commits.push({ entry, resolve });
      this.committing ??= this.flushCommits().finally(() => {
        this.committing = undefined;
      });
    });
  }

  private async flushCommits(): Promise<void> {
    while (this.commits.length > 0) {
      const batch = this.commits.splice(0);
      const outcomes = new Map<string, CommitOutcome>();
      try {
        const result = await this.deps.kube.writeAheadDeletions(
          (read) => {
            outcomes.clear();
            return this.decide(batch, read, outcomes);
          },
          Math.max(this.deps.options.windowMs, DELETION_WINDOW_MS),
        );
        for (const d of result.written) {
          const mine = this.own.get(d.uid);
          if (mine) {
            mine.at = d.at;
            mine.sent = true;
          }
          outcomes.set(d.uid, { kind: 'recorded' });
        }
        for (const d of result.full) {
          outcomes.set(d.uid, {
            kind: 'failed',
            reason: `not deleted: the record of Node deletions (${DELETION_RECORD}) is full; it is deleted once older deletions leave the window`,
          });
        }
        const read = result.record;
        this.read = {
          mono: monotonicMs(),
          serverNow: read.serverNow,
          deletions: [...read.deletions, ...result.written],
        };
        this.version++;
      } catch (err) {
        const reason = `not deleted: its deletion could not be written into the record of Node deletions (${DELETION_RECORD}) first: ${(err as Error).message}`;
        this.deps.log.warn(`deletion brake: ${reason}`);
        for (const { entry } of batch) outcomes.set(entry.uid, { kind: 'failed', reason });
      }
      for (const { entry, resolve } of batch)
        resolve(outcomes.get(entry.uid) ?? { kind: 'failed', reason: 'not deleted: not recorded' });
    }
  }

  /** Which of a batch the record takes, judged on the record as read for this very write. */
  private decide(
    batch: readonly { entry: NewDeletion }[],
    read: DeletionRecord,
    outcomes: Map<string, CommitOutcome>,
  ): NewDeletion[] {
    const accepted: NewDeletion[] = [];
    const now = read.serverNow;
    const stamped = () => accepted.map((d) => ({ ...d, at: now + 999 }));
    const snapshot = this.snapshot;
    for (const { entry } of batch) {
      if (entry.release !== undefined) {
        accepted.push(entry);
        continue;
      }
      const byUid = new Map<string, RecentDeletion>();
      for (const d of this.own.values()) byUid.set(d.uid, d);
      for (const d of [...read.deletions, ...stamped()]) byUid.set(d.uid, d);
      const verdict = brakeVerdict({
        managed: snapshot?.managed ?? [],
        missing: snapshot?.missing ?? [],
        deletions: [...byUid.values()],
        now,
        ...(this.released ? { release: this.released } : {}),
        options: this.deps.options,
      });
      if (verdict.held) {
        outcomes.set(entry.uid, { kind: 'held', reason: verdict.held });
        continue;
      }
      const times = [...read.deletions, ...stamped()].filter((d) => d.release === undefined).map((d) => d.at);
      const { allowedNow, nextInMs } = rateAllowance(times, now, this.deps.options);
      if (allowedNow >= 1) accepted.push(entry);
      else outcomes.set(entry.uid, { kind: 'retry', inMs: nextInMs });
    }
    return accepted;
  }

  /**
   * One Warning Event on a held Node, unless it was told of this hold in the last
   * HELD_EVENT_REPEAT_MS, by this process or another (their Events are read: a restarted `ccm run`
   * or a new leader does not tell again). Sent at once and awaited, not queued with the best-effort
   * Events (whose queue keeps 1,000): a Node counts as told only once its Event is stored, so every
   * Node of a hold of any size is told, and one whose Event failed is told at its next reconcile.
   * While the Events cannot be read, no Node is told: a duplicate is worse than a moment's wait.
   */
  private async tell(node: SlimNode, verdict: BrakeVerdict): Promise<void> {
    const uid = node.metadata?.uid ?? '';
    if (!this.toldRead && !(await this.readTold())) return;
    const told = this.told.get(uid);
    const now = this.now();
    if (told?.id === verdict.id && now - told.at < HELD_EVENT_REPEAT_MS) return;
    // Marked before the write: two workers never tell one Node twice; undone if it fails.
    this.told.set(uid, { id: verdict.id, at: now });
    try {
      await this.deps.kube.createEvent({
        node,
        type: 'Warning',
        reason: EVENT_NODE_DELETION_HELD,
        message: heldEventMessage(verdict, this.releaseText(verdict.id)),
        component: SOURCE_LIFECYCLE_CONTROLLER,
        annotations: { [ANNOTATION_DELETION_HOLD]: verdict.id },
        direct: true,
      });
    } catch (err) {
      if (this.told.get(uid)?.at === now) this.told.delete(uid);
      this.deps.log.debug(
        `deletion brake: the held Node ${node.metadata?.name ?? ''} was not told (${(err as Error).message}); told again at its next reconcile`,
      );
    }
  }

  /** The NodeDeletionHeld Events of the last HELD_EVENT_REPEAT_MS into `told`; false when they could not be read. */
  private readTold(): Promise<boolean> {
    this.readingTold ??= (async () => {
      try {
        const since = this.now() - HELD_EVENT_REPEAT_MS;
        for (const e of await this.deps.kube.listNodeEvents(EVENT_NODE_DELETION_HELD, since)) {
          const id = e.annotations[ANNOTATION_DELETION_HOLD];
          const mine = this.told.get(e.uid);
          if (id && (!mine || mine.at < e.at)) this.told.set(e.uid, { id, at: e.at });
        }
        this.toldRead = true;
      } catch (err) {
        this.deps.log.debug(
          `deletion brake: the NodeDeletionHeld Events could not be read: ${(err as Error).message}`,
        );
      }
      return this.toldRead;
    })().finally(() => {
      this.readingTold = undefined;
    });
    return this.readingTold;
  }

  /** After an allowed candidate's reconcile: a Node that was not deleted after all does not count. */
  settle(node: SlimNode, deleted: boolean): void {
    if (deleted) return;
    this.own.delete(node.metadata?.uid ?? '');
    this.version++;
  }

  stop(): void {
    this.stopped = true;
    this.deps.metrics.nodeDeletionsHeld.set(0);
    this.deps.status.current = undefined;
  }

  private reserve(node: SlimNode, release?: string): void {
    const uid = node.metadata?.uid ?? '';
    this.own.set(uid, {
      uid,
      name: node.metadata?.name ?? '',
      at: this.now(),
      ...(release ? { release } : {}),
    });
    this.version++;
  }

  private releaseText(id: string): string {
    return this.deps.secret ? releaseAnnotation(this.deps.secret, id) : releaseCommand(id);
  }

  /** Managed and missing Nodes of this listing; at most a second old, so a candidate's pass costs no sweep. */
  private snapshotOf(view: CloudView, fresh: boolean) {
    const now = this.now();
    if (!fresh && this.snapshot?.view === view && now - this.snapshot.at < 1000) return this.snapshot;
    const { managed, missing } = managedNodes(
      this.deps.nodes(),
      view,
      this.deps.scheme(),
      new Date(now),
      this.deps.deletionGracePeriodMs,
    );
    this.snapshot = { view, at: now, managed, missing };
    return this.snapshot;
  }

  private freshDeletions(): Promise<void> {
    if (this.read && monotonicMs() - this.read.mono < DELETIONS_MAX_AGE_MS) return Promise.resolve();
    this.reading ??= (async () => {
      try {
        const record = await this.deps.kube.readDeletionRecord();
        this.read = { mono: monotonicMs(), serverNow: record.serverNow, deletions: record.deletions };
        if (this.readError !== undefined) {
          this.deps.log.info(
            `deletion brake: the record of Node deletions (${DELETION_RECORD}) is read again`,
          );
          this.readError = undefined;
        }
      } catch (err) {
        const error = (err as Error).message;
        this.read = {
          mono: monotonicMs(),
          ...(this.read?.serverNow !== undefined ? { serverNow: this.now() } : {}),
          deletions: this.read?.deletions ?? [],
          error,
        };
        if (this.readError !== error) {
          this.readError = error;
          this.deps.log.warn(
            `deletion brake: no Node is deleted until the record of Node deletions (${DELETION_RECORD}) can be read: ${error}`,
          );
        }
      }
      this.version++;
    })().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /** The verdict on the current snapshot; the hold's log line, metric and status follow it. */
  private judge(): BrakeVerdict {
    const snapshot = this.snapshot;
    if (!snapshot) throw new Error('deletion guard: no listing judged yet');
    const now = this.now();
    const windowStart = now - this.deps.options.windowMs;
    for (const [uid, d] of this.own) if (d.at <= windowStart) this.own.delete(uid);
    for (const [uid, t] of this.told) if (now - t.at >= HELD_EVENT_REPEAT_MS) this.told.delete(uid);
    if (this.released && this.released.at <= windowStart) this.released = undefined;
    // A second's clock in the key: the window and the rate move with time.
    const key = [snapshot, this.version, this.released, Math.floor(now / 1000)];
    if (this.judged && key.every((k, i) => k === this.judged?.key[i])) return this.judged.verdict;
    const byUid = new Map<string, RecentDeletion>();
    for (const d of this.read?.deletions ?? []) byUid.set(d.uid, d);
    for (const d of this.own.values()) byUid.set(d.uid, d);
    const error = this.read?.error;
    const verdict = brakeVerdict({
      managed: snapshot.managed,
      missing: snapshot.missing,
      deletions: [...byUid.values()],
      ...(error !== undefined ? { deletionsError: error } : {}),
      now,
      ...(this.released ? { release: this.released } : {}),
      options: this.deps.options,
    });
    this.judged = { key, verdict };
    this.publish(verdict);
    return verdict;
  }

  private publish(verdict: BrakeVerdict): void {
    // An unread record judges nothing: a hold stays as it was (said), and nothing is deleted meanwhile.
    if (this.stopped || verdict.unjudged) return;
    const { log, metrics, status } = this.deps;
    if (verdict.held) {
      metrics.nodeDeletionsHeld.set(verdict.counted.length);
      const release = this.releaseText(verdict.id);
      status.current = { id: verdict.id, count: verdict.counted.length, reason: verdict.held, release };
      if (this.holding !== verdict.id) {
        this.holding = verdict.id;
        // Another process (the CronJob) may have told this hold's Nodes since `told` was read.
        this.toldRead = false;
        log.warn(
          { hold: verdict.id, nodes: verdict.counted.length },
          `holding every Node deletion (hold ${verdict.id}): ${verdict.held}. If \`ccm nodes list\` shows these Nodes' instances are really gone, release it: ${release}`,
        );
      }
      return;
    }
    metrics.nodeDeletionsHeld.set(0);
    status.current = undefined;
    if (this.holding) {
      const why =
        verdict.released.size > 0
          ? 'released'
          : verdict.counted.length === 0
            ? 'no Node is missing from the cloud listing now'
            : `the share is at most --max-deletion-ratio ${this.deps.options.maxRatio} now`;
      log.info({ hold: this.holding }, `hold ${this.holding} ended (${why}): Node deletions go ahead`);
      this.holding = undefined;
    }
  }

  /**
   * The release for `ccm run`: the credentials Secret annotated with the current hold's id. Only
   * while it names the current hold: a later outage has another id, and is held again.
   */
  private async checkAnnotation(verdict: BrakeVerdict): Promise<boolean> {
    const { secret, transport, log } = this.deps;
    if (!secret) return false;
    const now = this.now();
    if (!this.annotation || now - this.annotation.at >= SECRET_MAX_AGE_MS) {
      try {
        const read = await readSecret(transport, secret.namespace, secret.name);
        this.annotation = { value: read.annotations?.[ANNOTATION_ALLOW_MASS_DELETION], at: now };
      } catch (err) {
        log.debug(
          `reading Secret ${secret.namespace}/${secret.name} for a release: ${(err as Error).message}`,
        );
        this.annotation = { at: now };
      }
    }
    const value = this.annotation.value;
    if (!value) return false;
    // The id names this hold, or the hold it was before some of its Nodes were deleted under it
    // (a restart mid-release: the same set of Nodes, told apart from a new outage by the record).
    const deletions = [...(this.read?.deletions ?? []), ...this.own.values()];
    if (!releaseNamesHold(value, verdict, deletions)) {
      if (this.ignoredAnnotation !== `${value}/${verdict.id}`) {
        this.ignoredAnnotation = `${value}/${verdict.id}`;
        log.warn(
          `Secret ${secret.namespace}/${secret.name} has ${ANNOTATION_ALLOW_MASS_DELETION}=${value}, but the current hold is ${verdict.id}: nothing released`,
        );
      }
      return false;
    }
    const providerIDs = new Set(verdict.counted.map((n) => n.providerID));
    for (const id of this.released?.providerIDs ?? []) providerIDs.add(id);
    this.released = { id: value, providerIDs, at: now };
    log.warn(
      { hold: value, nodes: verdict.counted.length },
      `hold ${value} released by ${ANNOTATION_ALLOW_MASS_DELETION} on Secret ${secret.namespace}/${secret.name}: its ${verdict.counted.length} Nodes are deleted once the cloud confirms each is gone`,
    );
    return true;
  }
}
