import { monotonicMs } from '../clock.js';
import { nodeName, type SlimNode } from '../kube/slim-node.js';
import { LABEL_PAIRS } from '../kube/well-known.js';
import type { CloudView } from './cloud-view.js';
import { FirstSeen } from './first-seen.js';
import { startInstanceGroups } from './instance-groups.js';
import type { Controller, ControllerContext } from './manager.js';
import { isUninitialized } from './node.js';
import { reconcileNode, reportReconcile, WrittenAddresses } from './node-reconcile.js';
import { findInstance } from './nodes-pass.js';
import { WorkQueue } from './queue.js';

const NAME = 'cloud-node';

function labelsChanged(a: SlimNode, b: SlimNode): boolean {
  const la = a.metadata?.labels ?? {};
  const lb = b.metadata?.labels ?? {};
  return Object.values(LABEL_PAIRS).some((p) => la[p.ga] !== lb[p.ga] || la[p.beta] !== lb[p.beta]);
}

/**
 * When the listing a tainted Node is initialised from must have started, if `view`'s will not do.
 * - A listing older than the Node may show, under its name, an instance deleted and recreated since
 *   (the listing can be minutes old): the new Node would get the old instance's provider ID (never
 *   changed afterwards), addresses and labels. A listing started after this process first saw the
 *   Node started after the Node was created; both times are this process's own monotonic clock, so
 *   no clock skew and no margin enter.
 * - A Node the listing does not show (or a failed listing) is worth one listing started after this
 *   attempt, not more: a missing instance is then retried with backoff.
 */
function listingNeededSince(
  node: SlimNode,
  view: CloudView,
  seen: FirstSeen,
  started: number,
): number | undefined {
  if (!isUninitialized(node)) return undefined;
  const listedAt = view.listedAt ?? Number.NEGATIVE_INFINITY;
  const seenAt = seen.at(node);
  if (listedAt < seenAt) return seenAt;
  if ((view.listingError || !findInstance(node, view.index)) && listedAt < started) return started;
  return undefined;
}

/**
 * The cloud node controller: a tainted Node is initialised as soon as the watch shows it; label
 * changes are reconciled on update; every --node-status-update-frequency the cached listing is
 * refreshed (if older) and every initialised Node's addresses are checked against it. A tainted
 * Node the cache does not know, or whose listing may predate it, asks for a (coalesced) refresh
 * before it is planned; one that still fails is retried with backoff.
 */
export function cloudNodeController(): Controller {
  let queue: WorkQueue<string> | undefined;
  let workers: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let groups: { stop(): Promise<void> } | undefined;
  const lastErrors = new Map<string, string>();

  return {
    name: NAME,
    start(ctx: ControllerContext) {
      const q = new WorkQueue<string>({
        baseDelayMs: 5,
        maxDelayMs: 1_000_000,
        onDepth: (depth) => ctx.metrics.queueDepth.set({ controller: NAME }, depth),
      });
      queue = q;
      // New credentials may be what a failing Node waited for (a 401): each one in backoff (up to
      // 1,000 s) is tried once now, from the listing made with them, its backoff started over.
      ctx.onReload?.(() => {
        const retried = q.retryBackoffNow();
        if (retried > 0)
          ctx.log.info(
            { controller: NAME },
            `credentials or cloud config reloaded: retrying ${retried} Node(s) waiting out their backoff now`,
          );
      });
      const nodes = ctx.informers.nodes;
      const seen = new FirstSeen();
      const note = (n: SlimNode) => (isUninitialized(n) ? seen.at(n) : seen.forget(n));
      nodes.on('add', (n) => {
        note(n);
        q.add(nodeName(n));
      });
      nodes.on('update', (old, n) => {
        note(n);
        if (isUninitialized(n) || labelsChanged(old, n) || old.spec?.providerID !== n.spec?.providerID)
          q.add(nodeName(n));
      });
      const written = new WrittenAddresses();
      nodes.on('delete', (n) => {
        seen.forget(n);
        lastErrors.delete(nodeName(n));
        written.forget(nodeName(n));
      });
      for (const n of nodes.list()) {
        note(n);
        q.add(nodeName(n));
      }

      const refreshAddresses = async () => {
        await ctx.cloud.refreshIfOlderThan(ctx.options.nodeStatusUpdateFrequencyMs);
        for (const n of nodes.list()) if (!isUninitialized(n)) q.add(nodeName(n));
      };
      timer = setInterval(() => void refreshAddresses(), ctx.options.nodeStatusUpdateFrequencyMs);
      timer.unref?.();
      // The groups the provider keeps on each managed Node's instance (Triton's CMON groups), if any.
      const instanceGroups = ctx.provider.instanceGroups;
      if (instanceGroups) groups = startInstanceGroups(ctx, instanceGroups);

      workers = q.run(
        ctx.options.concurrency,
        async (key) => {
          let node = nodes.get(key);
          if (!node) {
            lastErrors.delete(key);
            return;
          }
          const started = monotonicMs();
          const end = ctx.metrics.reconcileSeconds.startTimer({ controller: NAME });
          try {
            let view = ctx.cloud.hasListed ? ctx.cloud.view() : await ctx.cloud.requestRefresh();
            // The Node is read again after every wait: it may have been replaced by a namesake (a new
            // UID, first seen later) while the listing was out, and then needs a listing of its own.
            for (;;) {
              const current = nodes.get(key);
              if (!current) {
                lastErrors.delete(key);
                return;
              }
              node = current;
              const since = listingNeededSince(node, view, seen, started);
              if (since === undefined) break;
              view = await ctx.cloud.viewSince(since);
            }
            const { plan, result } = await reconcileNode(
              ctx,
              node,
              view,
              { cloudNode: true, lifecycle: false },
              written,
            );
            reportReconcile(ctx, NAME, key, plan, lastErrors);
            ctx.metrics.reconciles.inc({
              controller: NAME,
              result: result === 'failed' ? 'error' : 'success',
            });
            if (plan.error) throw new Error(plan.error);
          } finally {
            end();
          }
        },
        () => ctx.metrics.queueRetries.inc({ controller: NAME }),
      );
    },
    async stop() {
      if (timer) clearInterval(timer);
      queue?.shutDown();
      await Promise.all([workers, groups?.stop()]);
    },
  };
}
