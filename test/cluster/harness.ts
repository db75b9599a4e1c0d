/**
 * The real one-Node kubeadm cluster of test/cluster/cluster.sh, for tests: brought up once per run
 * (idempotently), taken down by the cluster project's global teardown, and by a watchdog if the run
 * is killed (Ctrl-C included). Needs root, as kubeadm and containerd do.
 */
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { binDir } from '../controlplane/harness.js';
import { until as pollUntil } from '../helpers/run.js';

const here = fileURLToPath(new URL('.', import.meta.url));
export const CLUSTER_SCRIPT = `${here}cluster.sh`;
/** test/cluster/bin: the `systemctl` that plays kubelet.service, first on PATH for kubeadm and prepare. */
const CLUSTER_BIN = `${here}bin`;
export const STATE = '/run/ccm-cluster';
export const KUBECONFIG = `${STATE}/admin.conf`;
export const NODE_NAME = 'ccm-cp-1';
export const NODE_IP = '10.233.0.1';
/** kubeadm v1.36.3's pause image, built from test/cluster/pause.c: a plain Pod's image with nothing to pull. */
export const REPO_PAUSE_IMAGE = 'localhost/ccm-cluster/pause:3.10.2';

/** PATH for a command that acts on the cluster's host as an operator's shell would: systemctl, kubectl. */
export function hostPath(): string {
  return `${CLUSTER_BIN}:${binDir()}:${process.env.PATH ?? ''}`;
}

export async function clusterScript(args: string[], timeoutMs = 900_000): Promise<string> {
  const run = await execa('bash', [CLUSTER_SCRIPT, ...args], {
    reject: false,
    timeout: timeoutMs,
    all: true,
  });
  if (run.exitCode !== 0)
    throw new Error(`cluster.sh ${args.join(' ')} failed (${run.exitCode}):\n${run.all}`);
  return String(run.all);
}

let watching = false;

/** Brings the cluster up (or keeps a healthy one), and makes sure a killed run still takes it down. */
export async function ensureCluster(): Promise<void> {
  if (process.getuid?.() !== 0)
    throw new Error('the real-cluster tests need root (kubeadm, containerd, iptables)');
  if (!watching && process.env.CCM_CLUSTER_KEEP !== '1') {
    // The vitest main process: when it goes (Ctrl-C, a crash), the watchdog takes the cluster down.
    const watchdog = spawn('bash', [CLUSTER_SCRIPT, 'watch', String(process.ppid)], {
      detached: true,
      stdio: 'ignore',
    });
    watchdog.unref();
    watching = true;
  }
  await clusterScript(['up']);
}

/** A cluster that no earlier test file has changed. */
export async function freshCluster(): Promise<void> {
  await clusterScript(['down']);
  await ensureCluster();
}

/** ccm's Pods' logs into ~/.cache/ccm-cluster/last-logs/<name>.log, for a look after a failed run. */
export async function saveCcmLogs(name: string): Promise<void> {
  const logs = await kubectl(
    [
      '-n',
      'kube-system',
      'logs',
      '-l',
      'app.kubernetes.io/name=ccm',
      '--prefix',
      '--tail=-1',
      '--all-containers',
    ],
    { reject: false },
  );
  const dir = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'ccm-cluster', 'last-logs');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${name}.log`), logs.stdout + logs.stderr);
}

/** Takes the cluster down, unless CCM_CLUSTER_KEEP=1 asks to keep it for a look (`cluster.sh down` then). */
export async function leaveCluster(): Promise<void> {
  if (process.env.CCM_CLUSTER_KEEP === '1') return;
  await clusterScript(['down']);
}

export async function kubectl(
  args: string[],
  options: { input?: string; timeoutMs?: number; reject?: boolean } = {},
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  const run = await execa(`${binDir()}/kubectl`, ['--kubeconfig', KUBECONFIG, ...args], {
    reject: false,
    input: options.input,
    timeout: options.timeoutMs ?? 120_000,
  });
  const result = { exitCode: run.exitCode ?? -1, stdout: String(run.stdout), stderr: String(run.stderr) };
  if (options.reject !== false && result.exitCode !== 0) {
    throw new Error(`kubectl ${args.join(' ')} failed: ${result.stderr || result.stdout}`);
  }
  return result;
}

export async function kubectlJson<T = Record<string, unknown>>(args: string[]): Promise<T> {
  return JSON.parse((await kubectl([...args, '-o', 'json'])).stdout) as T;
}

/** helpers/run.ts's `until`, with the minutes a real cluster may take. */
export function until<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  timeoutMs = 120_000,
): Promise<T> {
  return pollUntil(what, check, timeoutMs);
}

/** The Ready condition of a Node: 'True', 'False' or 'Unknown'. */
export async function nodeReady(name = NODE_NAME): Promise<string> {
  return (
    await kubectl(['get', 'node', name, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}'])
  ).stdout;
}

/** Who leads kube-controller-manager (its Lease's holder): a restarted one leads under a new identity. */
export async function controllerManagerLeader(): Promise<string | undefined> {
  const lease = await kubectl(
    ['-n', 'kube-system', 'get', 'lease', 'kube-controller-manager', '-o', 'jsonpath={.spec.holderIdentity}'],
    { reject: false },
  );
  return lease.exitCode === 0 && lease.stdout !== '' ? lease.stdout : undefined;
}

/** ccm's workload as kubectl names it (`daemonset.apps/ccm`, or with --any-node a Deployment). */
export async function ccmWorkload(): Promise<string> {
  const names = await kubectl([
    '-n',
    'kube-system',
    'get',
    'deployment,daemonset',
    '-l',
    'app.kubernetes.io/name=ccm',
    '-o',
    'name',
  ]);
  return names.stdout.split('\n').filter(Boolean)[0] ?? '';
}

/** A Job from ccm's CronJob now (as `kubectl create job --from` does), and its final status. */
export async function runCronJobNow(job: string): Promise<{ succeeded?: number; failed?: number }> {
  await kubectl(['-n', 'kube-system', 'create', 'job', job, '--from=cronjob/ccm-nodes-init']);
  return until(
    `the Job ${job} to finish`,
    async () => {
      const { status } = await kubectlJson<{ status: { succeeded?: number; failed?: number } }>([
        '-n',
        'kube-system',
        'get',
        'job',
        job,
      ]);
      return status.succeeded || status.failed ? status : undefined;
    },
    180_000,
  );
}

/** The argv of every running process whose executable is `name` (the kubelet, a static Pod's binary). */
export function runningArgs(name: string): string[][] {
  const found: string[][] = [];
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (readFileSync(`/proc/${pid}/comm`, 'utf8').trim() !== name.slice(0, 15)) continue;
      found.push(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const root = fileURLToPath(new URL('../..', import.meta.url));
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
/** The image `npm run image` builds, as containerd knows it once imported (docs/deploy.md, no registry). */
export const CCM_IMAGE = `localhost/ccm:${version}`;
const IMAGE_ARCHIVE = join(root, `dist/image/ccm-${version}.oci.tar`);

/** `npm run image` when its archive is missing or older than the build, then the archive into containerd. */
export async function ensureImage(): Promise<void> {
  const bundle = join(root, 'dist/bundle/entry.js');
  if (!existsSync(IMAGE_ARCHIVE) || statSync(IMAGE_ARCHIVE).mtimeMs < statSync(bundle).mtimeMs) {
    const built = await execa('bash', [join(root, '.ci/image')], {
      cwd: root,
      reject: false,
      all: true,
      timeout: 900_000,
    });
    if (built.exitCode !== 0) throw new Error(`npm run image failed:\n${built.all}`);
  }
  await clusterScript(['import', IMAGE_ARCHIVE]);
}

/** systemctl on the cluster's host (test/cluster/bin/systemctl plays the kubelet's unit). */
export async function hostSystemctl(...args: string[]): Promise<void> {
  const run = await execa('systemctl', args, { env: { PATH: hostPath() }, reject: false, all: true });
  if (run.exitCode !== 0) throw new Error(`systemctl ${args.join(' ')} failed: ${run.all}`);
}

const FIGURES = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'ccm-cluster', 'figures.jsonl');

/** A measured figure (seconds): printed, and kept in ~/.cache/ccm-cluster/figures.jsonl for docs/deploy.md. */
export function recordFigure(what: string, seconds: Record<string, number>): void {
  const line = { at: new Date().toISOString(), what, seconds };
  console.log(`figure: ${what}: ${JSON.stringify(seconds)}`);
  mkdirSync(join(FIGURES, '..'), { recursive: true });
  appendFileSync(FIGURES, `${JSON.stringify(line)}\n`);
}
