import { monotonicMs } from '../clock.js';
import {
  applyPlans,
  buildReport,
  confirmDeletions,
  type PassOptions,
  type PassReport,
  planPass,
  readState,
} from '../controllers/nodes-pass.js';
import type { NodePlan } from '../controllers/plan.js';
import { loadKubeConfig } from '../kube/config.js';
import { eventRecorder } from '../kube/event-recorder.js';
import { createNodeClient } from '../kube/nodes.js';
import { KubeTransport } from '../kube/transport.js';
import { kubeWaitNotices, transportOptionsFrom, waitNotices } from './kube-flags.js';
import { peakRssBytes } from './peak-rss.js';
import { type ClusterAndCloudFlags, providerWithSecret } from './provider-config.js';
import { screenedTasks } from './task-list.js';
import { keepYoungGenerationSmall } from './young-generation.js';

export interface NodesInitInput extends ClusterAndCloudFlags {
  /** A task list on the terminal while the pass runs (else nothing until the report). */
  progress: boolean;
  pass: PassOptions;
  env: Readonly<Record<string, string | undefined>>;
}

export interface NodesInitResult {
  report: PassReport;
  plans: NodePlan[];
  kubeWrites: number;
  cloudCalls: number;
  durationMs: number;
  /** Peak resident memory of the CLI process. */
  maxRssBytes: number;
  /** Where the cloud credentials came from: "Secret kube-system/digitalocean", "flags and environment". */
  credentials: string;
}

interface Ctx {
  plans?: NodePlan[];
}

/** `ccm nodes init`: one pass, with a task list on a terminal that clears itself when done. */
export async function runNodesInit(input: NodesInitInput): Promise<NodesInitResult> {
  keepYoungGenerationSmall();
  const started = monotonicMs();
  let cloudCalls = 0;
  // Configuration is checked before anything is read or written. The lean kubeconfig reader keeps
  // client-node (~870 modules) out of the start unless the kubeconfig needs an exec plugin.
  const kc = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
  // A slow API server or cloud is said, as in every command; on a terminal only until the task list
  // draws (nothing is awaited then, so no line is left on screen).
  const kubeNotices = kubeWaitNotices(Boolean(input.progress));
  let taskListDraws = false;
  const transport = new KubeTransport(
    kc,
    transportOptionsFrom({
      ...input,
      waitingNoticeMs: kubeNotices.waitingNoticeMs,
      onWaiting: (what) => {
        if (!taskListDraws) kubeNotices.onWaiting(what);
      },
    }),
  );
  const { onCloudWait } = await import('../providers/http.js');
  const stopNotices = onCloudWait(...waitNotices(Boolean(input.progress)));
  const kube = createNodeClient(transport);
  const { pass } = input;
  let configured: Awaited<ReturnType<typeof providerWithSecret>>;
  let state: Awaited<ReturnType<typeof readState>>;
  try {
    configured = await providerWithSecret(input, input.env, transport, () => {
      cloudCalls++;
    });
    // Read before the task list starts: an unreachable API server or a broken inventory is a
    // configuration error and must print one line, not a failed task.
    state = await readState(kube, configured.provider);
  } catch (err) {
    stopNotices();
    throw err;
  }
  if (input.progress) {
    stopNotices();
    taskListDraws = true;
  }
  const { provider, credentials } = configured;

  const { Listr } = await import('listr2');
  const tasks = new Listr<Ctx>(
    screenedTasks([
      {
        title: 'Plan',
        task: async (ctx, task) => {
          ctx.plans = planPass(state, provider, pass);
          const candidates = ctx.plans.filter((p) => p.deletionCandidate).length;
          if (candidates > 0) {
            task.output = `confirming ${candidates} deletion candidate(s) with the cloud`;
            await confirmDeletions(ctx.plans, provider, pass.concurrency);
          }
          const changing = ctx.plans.filter((p) => p.changes.length > 0).length;
          task.title = `Plan: ${changing} of ${state.nodes.length} Nodes to change (${state.index.size} ${provider.name} instances)`;
        },
      },
      {
        title: 'Apply',
        skip: () => pass.dryRun && 'dry run: nothing written',
        task: async (ctx, task) => {
          ctx.plans = await applyPlans(ctx.plans ?? [], state, kube, provider, pass, (done, total) => {
            if (done % 50 === 0 || done === total) task.title = `Apply (${done}/${total})`;
          });
        },
      },
    ]),
    {
      renderer: 'default',
      silentRendererCondition: !input.progress,
      exitOnError: true,
      // The report's summary line replaces the task list.
      rendererOptions: { collapseSubtasks: false, clearOutput: true },
    },
  );
  const ctx = await tasks.run({}).finally(stopNotices);
  const plans = ctx.plans ?? [];
  // Events are sent beside the work (event-recorder.ts); the pass ends when they are, or in 10 s.
  await eventRecorder(transport).flush(10_000);
  return {
    report: buildReport(provider, plans, state, pass.dryRun),
    plans,
    kubeWrites: kube.writes,
    cloudCalls,
    durationMs: Math.round(monotonicMs() - started),
    maxRssBytes: peakRssBytes(),
    credentials,
  };
}
