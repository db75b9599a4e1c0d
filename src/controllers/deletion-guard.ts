import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { NodeClient } from '../kube/nodes.js';
import { readSecret } from '../kube/secrets.js';
import type { SlimNode } from '../kube/slim-node.js';
import type { KubeTransport } from '../kube/transport.js';
import {
  ANNOTATION_ALLOW_MASS_DELETION,
  ANNOTATION_DELETION_HOLD,
  EVENT_DELETING_NODE,
  EVENT_NODE_DELETION_HELD,
  SOURCE_LIFECYCLE_CONTROLLER,
} from '../kube/well-known.js';
import type { CloudView } from './cloud-view.js';
import {
  type BrakeNode,
  type BrakeOptions,
  type BrakeVerdict,
  brakeVerdict,
  deletionsFromEvents,
  heldEventMessage,
  managedNodes,
  type RecentDeletion,
  rateAllowance,
  releaseAnnotation,
  releaseCommand,
  waitingReason,
} from './deletion-brake.js';
import type { Metrics } from './metrics.js';
import { HELD_EVENT_REPEAT_MS } from './pass-brake.js';
import type { PlannedEvent } from './plan.js';

/** The hold `ccm run` keeps now, for /readyz (run.ts): one object for the process, set by the leader. */
export interface HoldStatus {
  current?: { id: string; count: number; reason: string; release: string };
}

export type Admission =
  | { kind: 'allowed'; release?: string }
  | { kind: 'held'; reason: string; event?: PlannedEvent }
  | { kind: 'waiting'; reason: string };

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
  /** Wall-clock ms (the Events' clock). */
  now?: () => number;
}

/** The Events are read again when older than this (a deletion of this process is known at once). */
const DELETIONS_MAX_AGE_MS = 5000;
/** The Secret is read at most this often while a hold lasts. */
const SECRET_MAX_AGE_MS = 2000;

/**
 * The deletion brake in `ccm run`'s lifecycle controller, which reconciles Node by Node from a cached
 * listing: every candidate asks `admit` before its confirming lookup, against the same listing's
 * judgement of every managed Node. The recent deletions are those read back from the DeletingNode
 * Events (a replica that led before, a `nodes init` CronJob) and this process's own, including the
 * ones under way, so two workers never both take the last token. A hold is said once in the log, on
 * /readyz and in `ccm_node_deletions_held`, and once on each held Node as a Warning Event.
 */
export class DeletionGuard {
  private read?: { at: number; deletions: RecentDeletion[]; error?: string };
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
  private readonly told = new Map<string, { id: string; at: number }>();
  /** The NodeDeletionHeld Events of a hold read back once (a leader before, `nodes init`): told already. */
  private toldRead?: { id: string; done: Promise<void> };
  private stopped = false;

  constructor(private readonly deps: GuardDeps) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Once each monitor period, before the Nodes are queued: the hold's log line, metric and status. */
  async review(view: CloudView): Promise<void> {
    // A failed listing judges nothing: a hold stays as it was, and no Node is deleted meanwhile.
    if (view.listingError !== undefined) return;
    const snapshot = this.snapshotOf(view, true);
    if (snapshot.missing.length === 0 && !this.holding && !this.released) return;
    await this.freshDeletions();
    const verdict = this.judge();
    if (verdict.held && (await this.checkAnnotation(verdict))) this.judge();
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
    if (verdict.released.has(providerID)) {
      const release = this.released?.id;
      this.reserve(node, release);
      return release ? { kind: 'allowed', release } : { kind: 'allowed' };
    }
    if (verdict.held) {
      await this.readTold(verdict.id);
      const told = this.told.get(uid);
      const now = this.now();
      if (told?.id === verdict.id && now - told.at < HELD_EVENT_REPEAT_MS)
        return { kind: 'held', reason: verdict.held };
      this.told.set(uid, { id: verdict.id, at: now });
      return {
        kind: 'held',
        reason: verdict.held,
        event: {
          type: 'Warning',
          reason: EVENT_NODE_DELETION_HELD,
          message: heldEventMessage(verdict, this.releaseText(verdict.id)),
          component: SOURCE_LIFECYCLE_CONTROLLER,
          annotations: { [ANNOTATION_DELETION_HOLD]: verdict.id },
        },
      };
    }
    if (verdict.allowedNow >= 1) {
      this.reserve(node);
      return { kind: 'allowed' };
    }
    return { kind: 'waiting', reason: waitingReason(verdict, this.deps.options, this.now()) };
  }

  /**
   * Just before the DELETE of an admitted Node. Its cloud lookup, between admission and now, may
   * have waited seconds for the cloud budget while a later admission's did not, so the DELETEs are
   * spaced by the rate again, counting only deletions already sent, from this moment.
   */
  async beforeDelete(node: SlimNode, signal?: AbortSignal): Promise<void> {
    const mine = this.own.get(node.metadata?.uid ?? '');
    if (!mine || mine.release !== undefined) return;
    for (;;) {
      if (signal?.aborted) throw new Error('stopped before the deletion');
      const now = this.now();
      const sent = [
        ...(this.read?.deletions ?? []).filter((d) => !this.own.has(d.uid)),
        ...[...this.own.values()].filter((d) => d.sent),
      ]
        .filter((d) => d.release === undefined)
        .map((d) => d.at);
      const { allowedNow, nextInMs } = rateAllowance(sent, now, this.deps.options);
      if (allowedNow >= 1) {
        mine.at = now;
        mine.sent = true;
        this.version++;
        return;
      }
      await delay(Math.max(nextInMs, 10), undefined, signal ? { signal } : {}).catch(() => {});
    }
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

  /**
   * The Nodes told of this hold in the last HELD_EVENT_REPEAT_MS by any process (the leader before a
   * rollout, a `nodes init` CronJob), read back once per hold as `nodes init` does: a new leader
   * would otherwise give every held Node a second Event. Unreadable Events: each is told again.
   */
  private readTold(id: string): Promise<void> {
    if (this.toldRead?.id === id) return this.toldRead.done;
    const done = (async () => {
      try {
        const since = this.now() - HELD_EVENT_REPEAT_MS;
        for (const event of await this.deps.kube.listNodeEvents(EVENT_NODE_DELETION_HELD, since)) {
          if (event.annotations[ANNOTATION_DELETION_HOLD] !== id) continue;
          const known = this.told.get(event.uid);
          if (known?.id !== id || known.at < event.at) this.told.set(event.uid, { id, at: event.at });
        }
      } catch (err) {
        this.deps.log.debug(`reading the NodeDeletionHeld Events of hold ${id}: ${(err as Error).message}`);
      }
    })();
    this.toldRead = { id, done };
    return done;
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
    if (this.read && this.now() - this.read.at < DELETIONS_MAX_AGE_MS) return Promise.resolve();
    this.reading ??= (async () => {
      const at = this.now();
      try {
        const events = await this.deps.kube.listNodeEvents(
          EVENT_DELETING_NODE,
          at - this.deps.options.windowMs,
        );
        this.read = { at, deletions: deletionsFromEvents(events) };
      } catch (err) {
        this.read = { at, deletions: this.read?.deletions ?? [], error: (err as Error).message };
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
    if (this.stopped) return;
    const { log, metrics, status } = this.deps;
    if (verdict.held) {
      metrics.nodeDeletionsHeld.set(verdict.counted.length);
      const release = this.releaseText(verdict.id);
      status.current = { id: verdict.id, count: verdict.counted.length, reason: verdict.held, release };
      if (this.holding !== verdict.id) {
        this.holding = verdict.id;
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
    if (value !== verdict.id) {
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
