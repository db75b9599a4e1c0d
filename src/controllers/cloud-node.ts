import { monotonicMs } from '../clock.js';
import { nodeName, type SlimNode } from '../kube/slim-node.js';
import { LABEL_PAIRS } from '../kube/well-known.js';
import type { CloudView } from './cloud-view.js';
import { FirstSeen } from './first-seen.js';
import type { Controller, ControllerContext } from './manager.js';
import { isUninitialized } from './node.js';
import { reconcileNode, reportReconcile } from './node-reconcile.js';
import { findInstance } from './nodes-pass.js';
import { WorkQueue } from './queue.js';

const NAME = 'cloud-node';

function labelsChanged(a: SlimNode, b: SlimNode): boolean {
  const la = a.metadata?.labels ?? {};
  const lb = b.metadata?.labels ?? {};
  return Object.values(LABEL_PAIRS).some((p) => la[p.ga] !== lb[p.ga] || la[p.beta] !== lb[p.beta]);
}

/**
 * Whether the listing may be older than the Node. Then what it shows under the Node's name may be
 * an instance deleted and recreated since (the listing can be minutes old), and initialising from it
 * would give the new Node the old instance's provider ID (never changed afterwards), addresses and
 * labels. A listing started after this process first saw the Node started after the Node was created;
 * both times are this process's own monotonic clock, so no clock skew and no margin enter.
 */
function mayPredate(view: CloudView, seenAt: number): boolean {
  return view.listedAt === undefined || view.listedAt < seenAt;
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
      nodes.on('delete', (n) => {
        seen.forget(n);
        lastErrors.delete(nodeName(n));
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

      workers = q.run(
        ctx.options.concurrency,
        async (key) => {
          const node = nodes.get(key);
          if (!node) return;
          const started = monotonicMs();
          const end = ctx.metrics.reconcileSeconds.startTimer({ controller: NAME });
          try {
            if (!ctx.cloud.hasListed) await ctx.cloud.requestRefresh();
            let view = ctx.cloud.view();
            if (
              isUninitialized(node) &&
              (view.listingError || !findInstance(node, view.index)) &&
              ctx.cloud.listedAt < started
            ) {
              view = await ctx.cloud.requestRefresh();
            } else if (isUninitialized(node) && mayPredate(view, seen.at(node))) {
              view = await ctx.cloud.requestRefresh();
            }
            const current = nodes.get(key) ?? node;
            const { plan, result } = await reconcileNode(ctx, current, view, {
              cloudNode: true,
              lifecycle: false,
            });
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
      await workers;
    },
  };
}
