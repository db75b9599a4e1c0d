/** Runs `ccm run` in this process (so a test can wrap the provider) and collects its JSON log lines. */
import { type ChildProcess, spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api, V1Node } from '@kubernetes/client-node';
import { type RunDeps, type RunHandle, type RunInput, startRun } from '../../src/cli/run.js';
import { freePort } from '../controlplane/harness.js';

export interface InProcess {
  handle: RunHandle;
  url: string;
  logs: string[];
  stop(): Promise<number>;
}

export { freePort };

/** The controllers' timings of every test run: short periods, no deletion grace. */
export const TEST_CONTROLLER_OPTIONS: RunInput['controllerOptions'] = {
  concurrency: 4,
  deletionGracePeriodMs: 0,
  nodeMonitorPeriodMs: 200,
  nodeStatusUpdateFrequencyMs: 60_000,
  cloudListPeriodMs: 500,
};

/** `ccm run --adopt-official --cluster-name <clusterName>`'s part of a run input. */
export function adoptingOfficial(clusterName: string): Partial<RunInput> {
  return { controllerOptions: { ...TEST_CONTROLLER_OPTIONS, adoptOfficial: { clusterName } } };
}

/** `ccm run --controllers route` with the cluster's name and CIDRs, a route pass every 300 ms. */
export function routeControllerInput(
  clusterName: string,
  clusterCIDR: string | undefined,
): Partial<RunInput> {
  return {
    controllers: 'route',
    controllerOptions: {
      ...TEST_CONTROLLER_OPTIONS,
      clusterName,
      clusterCIDR,
      routeReconciliationPeriodMs: 300,
    },
  };
}

export function runInput(kubeconfig: string, inventory: string, overrides: Partial<RunInput> = {}): RunInput {
  return {
    kubeconfig,
    provider: 'cloudlycke',
    'cloud-config': inventory,
    logLevel: 'debug',
    controllers: '*',
    controllerOptions: { ...TEST_CONTROLLER_OPTIONS },
    cloudQps: 100,
    cloudBurst: 100,
    leaderElect: false,
    lease: {
      durationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2000,
      name: 'ccm-test',
      namespace: 'kube-system',
    },
    bindAddress: '127.0.0.1',
    securePort: 0,
    plainHttp: true,
    alwaysAllowPaths: ['/healthz', '/readyz', '/livez'],
    reloadPeriodMs: 300,
    env: {},
    ...overrides,
  };
}

export function logSink(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      cb();
    },
  });
  return { lines, stream };
}

export interface CcmProcess {
  child: ChildProcess;
  /** Its plain-HTTP health and metrics address. */
  url: string;
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
}

const spawned = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of spawned) c.kill('SIGKILL');
});

/**
 * The built `ccm run` as its own process, as a Deployment runs it (the benchmarks): leader election
 * off, plain-HTTP health and metrics on a free port, stderr passed through. Resolves once /readyz
 * answers 200. `args` name the provider, kubeconfig, cloud and the rest.
 */
export async function spawnCcmRun(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<CcmProcess> {
  const port = await freePort();
  const bin = fileURLToPath(new URL('../../bin/run.js', import.meta.url));
  const child = spawn(
    process.execPath,
    [
      bin,
      'run',
      ...args,
      '--leader-elect=false',
      '--plain-http',
      '--bind-address=127.0.0.1',
      `--secure-port=${port}`,
    ],
    { stdio: ['ignore', 'ignore', 'inherit'], env },
  );
  spawned.add(child);
  child.once('exit', () => spawned.delete(child));
  const url = `http://127.0.0.1:${port}`;
  await until(
    'ccm ready',
    async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200,
    60_000,
  );
  return {
    child,
    url,
    stop: () => terminate(child, 'ccm run'),
  };
}

/**
 * SIGTERM, then the exit within 15 s (ccm's own backstop is 9.5 s); past that, SIGKILL and an error
 * that says so, rather than a test that waits for its own timeout.
 */
export async function terminate(child: ChildProcess, what: string): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<boolean>((r) => child.once('exit', () => r(true)));
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((r) => {
    timer = setTimeout(() => r(false), 15_000);
  });
  const inTime = await Promise.race([exited, late]);
  clearTimeout(timer);
  if (inTime) return;
  child.kill('SIGKILL');
  await exited;
  throw new Error(`${what} (pid ${child.pid}) did not exit within 15 s of SIGTERM`);
}

export async function startInProcess(input: RunInput, deps: RunDeps = {}): Promise<InProcess> {
  const { lines, stream } = logSink();
  const handle = await startRun(input, { logDestination: stream, prettyLogs: false, ...deps });
  return { handle, url: handle.url ?? '', logs: lines, stop: () => handle.shutdown('test done') };
}

export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? ` (${(last as Error).message})` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** How many reconciles of `controller` failed so far (ccm's own metric). */
export async function reconcileErrors(ccm: InProcess | undefined, controller: string): Promise<number> {
  const metric = await ccm?.handle.metrics.reconciles.get();
  return (
    metric?.values.find((v) => v.labels.controller === controller && v.labels.result === 'error')?.value ?? 0
  );
}

/**
 * How many route passes ccm made so far (its reconcile metric). Counted at once: prom-client hands
 * out its own value objects, which later passes change.
 */
export async function routePasses(ccm: InProcess): Promise<number> {
  return (await ccm.handle.metrics.reconciles.get()).values
    .filter((v) => v.labels.controller === 'route')
    .reduce((s, v) => s + v.value, 0);
}

/** Waits for `n` more route passes: what a pass would do has been done (no waiting on time). */
export async function moreRoutePasses(ccm: InProcess, n: number): Promise<void> {
  const seen = await routePasses(ccm);
  await until(`${n} more passes`, async () => (await routePasses(ccm)) >= seen + n, 20_000);
}

/** The replica's leader-election check on /readyz?verbose: 'leading' or 'standby (leader: …)'. */
export async function leaderElection(replica: InProcess): Promise<string> {
  const text = await (await fetch(`${replica.url}/readyz?verbose`)).text();
  return /leader-election ok: (.*)/.exec(text)?.[1] ?? text;
}

/** Waits until the replica leads (its /readyz says so), by default for 15 s. */
export function untilLeading(replica: InProcess, timeoutMs?: number): Promise<boolean> {
  return until('leading', async () => (await leaderElection(replica)) === 'leading', timeoutMs);
}

/** Sets the Node's Ready condition, as its kubelet would. */
export async function setReady(api: CoreV1Api, name: string, ready: boolean): Promise<void> {
  const node = await api.readNodeStatus({ name });
  const conditions = (node.status?.conditions ?? []).filter((c) => c.type !== 'Ready');
  conditions.push({
    type: 'Ready',
    status: ready ? 'True' : 'False',
    reason: ready ? 'KubeletReady' : 'KubeletNotReady',
    message: 'set by the test',
    lastHeartbeatTime: new Date(),
    lastTransitionTime: new Date(),
  });
  await api.replaceNodeStatus({ name, body: { ...node, status: { ...node.status, conditions } } });
}

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';

/**
 * Waits for a Node to be initialised: the uninitialized taint gone and the cloud's addresses (an
 * address of `type`) in its status. The status patch lands just after the taint goes (the reference
 * order), so reading right after the taint may still show only the kubelet's Hostname.
 */
export function untilInitialised(
  api: CoreV1Api,
  name: string,
  type: 'InternalIP' | 'ExternalIP' = 'InternalIP',
  timeoutMs?: number,
): Promise<V1Node> {
  return until(
    `${name} initialised`,
    async () => {
      const n = await api.readNode({ name });
      const tainted = (n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);
      return tainted || !n.status?.addresses?.some((a) => a.type === type) ? undefined : n;
    },
    timeoutMs,
  );
}

/**
 * Starts two replicas of `ccm run` on one Lease and waits until both, the standby (which never lists)
 * too, answer 200 on /readyz: a Deployment's rolling update and its PodDisruptionBudget count on
 * it. Fails unless both are Ready within 10 s (issue 23, item 2). `input` is each replica's
 * provider part; leader election, the port and the Lease are set here.
 */
export async function expectTwoReadyReplicas(kubeconfig: string, input: Partial<RunInput>): Promise<void> {
  const replicas = await Promise.all(
    ['a', 'b'].map(async (id) => {
      const port = await freePort();
      const started = await startInProcess(
        runInput(kubeconfig, '', {
          ...input,
          leaderElect: true,
          securePort: port,
          lease: {
            durationMs: 15_000,
            renewDeadlineMs: 10_000,
            retryPeriodMs: 2000,
            name: 'ccm-standby',
            namespace: 'kube-system',
          },
        }),
        { identity: `replica-${id}` },
      );
      return { started, url: `http://127.0.0.1:${port}` };
    }),
  );
  let standbyFirst = replicas;
  try {
    const deadline = Date.now() + 10_000;
    for (const { url } of replicas)
      await until(
        `${url}/readyz 200`,
        async () => (await fetch(`${url}/readyz`)).status === 200,
        Math.max(0, deadline - Date.now()),
      );
    // Ready says nothing of the role: a replica is Ready as a standby before the Lease is taken. One
    // leads within the same 10 s.
    let states: string[] = [];
    let roles: (string | undefined)[] = [];
    await until(
      'one leading and one standby replica',
      async () => {
        states = await Promise.all(
          replicas.map(async ({ url }) => (await fetch(`${url}/readyz?verbose`)).text()),
        );
        roles = states.map((s) => /leader-election ok: (leading|standby)/.exec(s)?.[1]);
        return [...roles].sort().join() === 'leading,standby';
      },
      Math.max(0, deadline - Date.now()),
    ).catch(() => {
      throw new Error(`expected one leading and one standby replica, got: ${states.join(' | ')}`);
    });
    standbyFirst = roles[0] === 'standby' ? replicas : [...replicas].reverse();
    // The leader's controllers are all started before the shutdown, so the test ends in a steady state.
    const leader = standbyFirst[1] as (typeof replicas)[number];
    await until('the leader started its controllers', async () =>
      leader.started.logs.some((line) => {
        const entry = JSON.parse(line) as { controller?: string; msg?: string };
        return entry.controller === 'service' && entry.msg === 'started';
      }),
    );
  } finally {
    // One after the other, the standby first: stopped together, the standby may take the Lease the
    // leader releases and start its controllers while it shuts down.
    for (const { started } of standbyFirst) await started.stop();
  }
}

/** Whether `ccm run` has ended on its own so far: the returned function reads it at any time. */
export function exitWatch(ccm: InProcess): () => boolean {
  let exited = false;
  void ccm.handle.done.then(() => {
    exited = true;
  });
  return () => exited;
}

/** A Lease in kube-system with timings short enough for a test to lose and regain it in seconds. */
export function shortLease(name: string, durationMs: number, renewDeadlineMs: number, retryPeriodMs: number) {
  return { durationMs, renewDeadlineMs, retryPeriodMs, name, namespace: 'kube-system' };
}
