import { nodeName } from '../kube/slim-node.js';
import { DEFAULT_BRAKE_OPTIONS } from './deletion-brake.js';
import { DeletionGuard } from './deletion-guard.js';
import { hasShutdownTaint, isReady } from './lifecycle.js';
import type { Controller, ControllerContext } from './manager.js';
import { reconcileNode, reportReconcile } from './node-reconcile.js';
import { WorkQueue } from './queue.js';

const NAME = 'cloud-node-lifecycle';
const LIST_PERIOD_NOT_READY_MS = 60_000;
const LIST_PERIOD_ALL_READY_MS = 300_000;

/**
 * The node lifecycle controller: every --node-monitor-period, Nodes that are NotReady (or Ready and
 * still tainted as shut down) are queued and planned against the cached listing, which is refreshed
 * at most once per --cloud-list-period whatever the number of NotReady Nodes. Only a deletion
 * candidate costs a cloud call (the confirming lookup by its provider ID). A failed reconcile is not
 * retried with backoff: the next monitor period looks again, as the reference does.
 */
export function nodeLifecycleController(): Controller {
  let queue: WorkQueue<string> | undefined;
  let workers: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ticking = false;
  let guard: DeletionGuard | undefined;
  const lastErrors = new Map<string, string>();

  return {
    name: NAME,
    start(ctx: ControllerContext) {
      const q = new WorkQueue<string>({
        onDepth: (depth) => ctx.metrics.queueDepth.set({ controller: NAME }, depth),
      });
      queue = q;
      const nodes = ctx.informers.nodes;
      nodes.on('delete', (n) => lastErrors.delete(nodeName(n)));
      const brake = new DeletionGuard({
        kube: ctx.kube,
        transport: ctx.transport,
        log: ctx.log.child({ controller: NAME }),
        metrics: ctx.metrics,
        options: {
          ...DEFAULT_BRAKE_OPTIONS,
          maxRatio: ctx.options.maxDeletionRatio ?? DEFAULT_BRAKE_OPTIONS.maxRatio,
          rate: ctx.options.nodeDeletionRate ?? DEFAULT_BRAKE_OPTIONS.rate,
        },
        deletionGracePeriodMs: ctx.options.deletionGracePeriodMs,
        scheme: () => ctx.provider.providerIdScheme,
        nodes: () => nodes.list(),
        ...(ctx.credentialsSecret ? { secret: ctx.credentialsSecret } : {}),
        status: ctx.deletionHold ?? {},
      });
      guard = brake;

      const monitor = async () => {
        if (ticking) return;
        ticking = true;
        try {
          const all = nodes.list();
          const someNotReady = all.some((n) => !isReady(n));
          const period =
            ctx.options.cloudListPeriodMs ??
            (someNotReady ? LIST_PERIOD_NOT_READY_MS : LIST_PERIOD_ALL_READY_MS);
          const view = await ctx.cloud.refreshIfOlderThan(period);
          await brake.review(view).catch((err: Error) => {
            ctx.log.warn({ controller: NAME }, `deletion brake: ${err.message}`);
          });
          for (const n of all) {
            if (n.spec?.providerID && (!isReady(n) || hasShutdownTaint(n))) q.add(nodeName(n));
          }
        } finally {
          ticking = false;
        }
      };
      void monitor();
      timer = setInterval(() => void monitor(), ctx.options.nodeMonitorPeriodMs);
      timer.unref?.();

      workers = q.run(ctx.options.concurrency, async (key) => {
        const node = nodes.get(key);
        if (!node) return;
        const end = ctx.metrics.reconcileSeconds.startTimer({ controller: NAME });
        try {
          const { plan, result } = await reconcileNode(ctx, node, ctx.cloud.view(), {
            cloudNode: false,
            lifecycle: true,
            brake,
          });
          reportReconcile(ctx, NAME, key, plan, lastErrors);
          ctx.metrics.reconciles.inc({ controller: NAME, result: result === 'failed' ? 'error' : 'success' });
        } finally {
          end();
        }
      });
    },
    async stop() {
      if (timer) clearInterval(timer);
      queue?.shutDown();
      await workers;
      guard?.stop();
    },
  };
}
