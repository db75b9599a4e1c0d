import { monotonicMs } from '../clock.js';
import { type BrakeVerdict, type RecentDeletion, releaseNamesHold } from '../controllers/deletion-brake.js';
import type { PassGroups } from '../controllers/instance-groups.js';
import {
  applyPlans,
  buildReport,
  type PassOptions,
  type PassReport,
  planPass,
  readState,
} from '../controllers/nodes-pass.js';
import {
  confirmBraked,
  judgePass,
  type PassHold,
  readRecentDeletions,
  recordAhead,
  serverClock,
  tellHeld,
} from '../controllers/pass-brake.js';
import type { NodePlan } from '../controllers/plan.js';
import { clusterIdentity } from '../kube/cluster-identity.js';
import { loadKubeConfig } from '../kube/config.js';
import { eventRecorder } from '../kube/event-recorder.js';
import { createNodeClient } from '../kube/nodes.js';
import { KubeTransport } from '../kube/transport.js';
import { InterruptedError, UsageError } from './errors.js';
import { kubeWaitNotices, transportOptionsFrom, waitNotices } from './kube-flags.js';
import { plural } from './output/text.js';
import { peakRssBytes } from './peak-rss.js';
import { type ClusterAndCloudFlags, providerWithSecret } from './provider-config.js';
import { screenedTasks } from './task-list.js';
import { keepYoungGenerationSmall } from './young-generation.js';

export interface NodesInitInput extends ClusterAndCloudFlags {
  /** A task list on the terminal while the pass runs (else nothing until the report). */
  progress: boolean;
  pass: PassOptions;
  /** --cluster-name: the cluster identity of the instance groups (default: from the kube-system UID). */
  'cluster-name'?: string;
  /** --allow-mass-deletion: the id of the hold this pass releases (it must be the current one). */
  allowMassDeletion?: string;
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
  hold?: PassHold;
  groups?: PassGroups;
}

/**
 * `ccm nodes init`: one pass, with a task list on a terminal that clears itself when done.
 *
 * Ctrl-C is ccm's, not listr2's (which ends the process with 127): no write is sent after it, and the
 * command ends with 130 and one line saying whether anything was written, as `secret create` does.
 * While the pass reads (the API server, the cloud: the waits said above) it ends at once; while the
 * task list runs, once the writes under way are answered (a second Ctrl-C does not wait for them).
 */
export async function runNodesInit(input: NodesInitInput): Promise<NodesInitResult> {
  keepYoungGenerationSmall();
  let ctrlC: number | undefined;
  let writing = false;
  let interrupt: (err: Error) => void = () => {};
  const interrupted = new Promise<never>((_, reject) => {
    interrupt = reject;
  });
  const pass: Pass = {
    mayWrite: () => ctrlC === undefined,
    startWriting: () => {
      writing = true;
    },
  };
  const interruption = () => {
    const writes = pass.kube?.writes ?? 0;
    return new InterruptedError(
      writes === 0
        ? 'cancelled (Ctrl-C); nothing was written'
        : `cancelled (Ctrl-C) after ${plural(writes, 'Kubernetes write')}; the next pass does the rest`,
    );
  };
  const onSigint = () => {
    const first = ctrlC;
    // A terminal's Ctrl-C reaches this process twice under the Node 20 wrapper (bin/run.js): one.
    if (first !== undefined && monotonicMs() - first < 1000) return;
    ctrlC = monotonicMs();
    if (writing && first === undefined) return;
    // The waiting line (and the ^C the terminal echoed after it) is erased, not left half a line.
    if (input.progress && process.stderr.isTTY) process.stderr.write('\r\u001b[K');
    interrupt(interruption());
  };
  process.on('SIGINT', onSigint);
  const work = runPass(input, pass);
  try {
    const result = await Promise.race([work, interrupted]);
    if (ctrlC !== undefined) throw interruption();
    return result;
  } catch (err) {
    throw ctrlC !== undefined ? interruption() : err;
  } finally {
    process.off('SIGINT', onSigint);
    // What the pass still waits for after Ctrl-C sends nothing (the gate) and holds nothing open.
    if (ctrlC !== undefined) {
      work.catch(() => {});
      await pass.transport?.close();
      const { closeCloudConnections } = await import('../providers/http-transport.js');
      closeCloudConnections();
    }
  }
}

/** What runNodesInit's Ctrl-C needs of the pass: the write gate, and how far it got. */
interface Pass {
  mayWrite: () => boolean;
  startWriting: () => void;
  transport?: KubeTransport;
  kube?: { writes: number };
}

async function runPass(input: NodesInitInput, control: Pass): Promise<NodesInitResult> {
  const started = monotonicMs();
  let cloudCalls = 0;
  // Configuration is checked before anything is read or written. The lean kubeconfig reader keeps
  // client-node (~870 modules) out of the start unless the kubeconfig needs an exec plugin.
  const kc = loadKubeConfig({ kubeconfig: input.kubeconfig, context: input.context, env: input.env });
  // A slow API server or cloud is said, as in every command; on a terminal only until the task list
  // draws (nothing is awaited then, so no line is left on screen).
  const kubeNotices = kubeWaitNotices(Boolean(input.progress));
  let taskListDraws = false;
  const transport = new KubeTransport(kc, {
    ...transportOptionsFrom({
      ...input,
      waitingNoticeMs: kubeNotices.waitingNoticeMs,
      onWaiting: (what) => {
        if (!taskListDraws) kubeNotices.onWaiting(what);
      },
    }),
    mayWrite: control.mayWrite,
  });
  control.transport = transport;
  const { onCloudWait } = await import('../providers/http.js');
  const stopNotices = onCloudWait(...waitNotices(Boolean(input.progress)));
  const kube = createNodeClient(transport);
  control.kube = kube;
  let { pass } = input;
  let releaseSet: { id: string; providerIDs: ReadonlySet<string> } | undefined;
  let configured: Awaited<ReturnType<typeof providerWithSecret>>;
  let state: Awaited<ReturnType<typeof readState>>;
  let verdict: BrakeVerdict;
  let release: string | undefined;
  let clusterID: string | undefined;
  try {
    configured = await providerWithSecret(input, input.env, transport, () => {
      cloudCalls++;
    });
    // Read before the task list starts: an unreachable API server or a broken inventory is a
    // configuration error and must print one line, not a failed task.
    state = await readState(kube, configured.provider);
    // The instance groups' owner: the identity `ccm run` uses (its --cluster-name, else the UID's).
    if (configured.provider.instanceGroups)
      clusterID = await clusterIdentity(transport, input['cluster-name']);
    const recent = await readRecentDeletions(kube);
    // The API server's clock from here on: the record's times are its, and so are the Nodes' ages.
    const clock = pass.now ? undefined : serverClock(recent, monotonicMs);
    if (clock) pass = { ...pass, now: clock };
    verdict = judgePass(state, configured.provider, recent, pass);
    if (input.allowMassDeletion !== undefined) {
      release = checkRelease(input.allowMassDeletion, verdict, recent.deletions);
      const providerIDs = new Set(verdict.counted.map((n) => n.providerID));
      releaseSet = { id: release, providerIDs };
      verdict = judgePass(state, configured.provider, recent, pass, releaseSet);
    }
  } catch (err) {
    stopNotices();
    throw err;
  }
  if (input.progress) {
    stopNotices();
    taskListDraws = true;
  }
  control.startWriting();
  const { provider, credentials } = configured;
  const { Listr } = await import('listr2');
  const tasks = new Listr<Ctx>(
    screenedTasks([
      {
        title: 'Plan',
        task: async (ctx, task) => {
          ctx.plans = planPass(state, provider, pass);
          const candidates = ctx.plans.filter((p) => p.deletionCandidate).length;
          // A hold of Ready Nodes has no candidate, and is reported all the same.
          if (candidates > 0 || verdict.held) {
            task.output = `confirming ${candidates} deletion candidate(s) with the cloud`;
            await confirmBraked(ctx.plans, provider, verdict, pass, release);
            // Each deletion in the record before its DELETE: judged again there, or not deleted.
            if (!pass.dryRun)
              verdict = (await recordAhead(ctx.plans, kube, state, provider, pass, releaseSet)) ?? verdict;
            ctx.hold = await tellHeld(ctx.plans, kube, verdict, state.nodes, pass);
          }
          if (provider.instanceGroups && clusterID !== undefined) {
            const { planPassGroups } = await import('../controllers/instance-groups.js');
            ctx.groups = await planPassGroups(
              provider.instanceGroups,
              clusterID,
              state.nodes,
              ctx.plans,
              provider.providerIdScheme,
            );
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
          // The instances' groups after the Nodes: a Node initialised now has its provider ID.
          if (provider.instanceGroups && clusterID !== undefined && ctx.groups) {
            const { applyPassGroups } = await import('../controllers/instance-groups.js');
            await applyPassGroups(provider.instanceGroups, clusterID, ctx.groups.changes, control.mayWrite);
          }
        },
      },
    ]),
    {
      renderer: 'default',
      silentRendererCondition: !input.progress,
      exitOnError: true,
      registerSignalListeners: false,
      // The report's summary line replaces the task list.
      rendererOptions: { collapseSubtasks: false, clearOutput: true },
    },
  );
  const ctx = await tasks.run({}).finally(stopNotices);
  // Ctrl-C during the writes: the writes after it were refused, and no Event is waited for.
  if (!control.mayWrite()) throw new InterruptedError('cancelled');
  const plans = ctx.plans ?? [];
  const leaving = ctx.groups ? withGroups(plans, ctx.groups) : undefined;
  // Events are sent beside the work (event-recorder.ts); the pass ends when they are, or in 10 s. The
  // brake's memory is not among them: each deletion was recorded before its DELETE (recordAhead).
  await eventRecorder(transport).flush(10_000);
  return {
    report: {
      ...buildReport(provider, plans, state, pass.dryRun, ctx.hold),
      ...(leaving ? { instanceGroups: leaving } : {}),
    },
    plans,
    kubeWrites: kube.writes,
    cloudCalls,
    durationMs: Math.round(monotonicMs() - started),
    maxRssBytes: peakRssBytes(),
    credentials,
  };
}

/**
 * The id an operator passed must name the hold of this very listing: a pass never deletes more than
 * the Nodes it was shown, and an id from an earlier look (another outage) releases nothing.
 */
function checkRelease(id: string, verdict: BrakeVerdict, deletions: readonly RecentDeletion[]): string {
  if (!verdict.held) {
    throw new UsageError(
      `--allow-mass-deletion ${id}: no deletion is held now (${verdict.counted.length} Node(s) missing from the cloud listing); nothing was written`,
    );
  }
  // A release some of whose Nodes were deleted already (by `ccm run`, by a pass cut short) still
  // names the rest: the same set, with those deleted under it.
  if (!releaseNamesHold(id, verdict, deletions)) {
    throw new UsageError(
      `--allow-mass-deletion ${id}: the current hold is ${verdict.id} (${verdict.counted.length} Nodes); look at \`ccm nodes list\` again and pass that id; nothing was written`,
    );
  }
  return id;
}

/**
 * The groups changes in the report: a Node's among its changes (a refused or failed one is the Node's
 * failure), those of instances no managed Node has on their own.
 */
function withGroups(plans: NodePlan[], groups: PassGroups): NonNullable<PassReport['instanceGroups']> {
  const { changes, notes } = groups;
  const byName = new Map(plans.map((p) => [p.name, p]));
  // A Node whose CMON series will carry another name (its machine's): said with the Node.
  for (const n of notes) byName.get(n.node)?.notes.push(n.note);
  const leaving: NonNullable<PassReport['instanceGroups']> = [];
  for (const c of changes) {
    const plan = c.node === undefined ? undefined : byName.get(c.node);
    if (!plan) {
      leaving.push({ providerID: c.providerID, change: c.change, ...(c.error ? { error: c.error } : {}) });
      continue;
    }
    if (c.error) {
      plan.error = plan.error ? `${plan.error}; ${c.error}` : c.error;
      continue;
    }
    plan.instanceGroups = c.change;
    plan.changes.push(c.change);
  }
  return leaving;
}
