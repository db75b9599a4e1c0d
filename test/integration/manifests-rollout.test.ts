/**
 * The workload of `ccm manifests` rolls out, as kubectl shows it, on kubeadm-like clusters: the real
 * kube-apiserver, kube-scheduler and kube-controller-manager place and replace its Pods, a kubelet
 * stand-in reports them Running (test/controlplane/workloads.ts), and `kubectl rollout status` must
 * finish, after the first apply and after an upgrade as docs/deploy.md shows it (its "Rolling out a new
 * version" lines, run as written in bash):
 * - one control-plane Node (the case a two-replica Deployment with one replica per Node can never
 *   roll: its second replica stays Pending, and a new Pod cannot be placed beside the old one);
 * - three control-plane Nodes: one Pod on each, and at least two running at every moment of the
 *   rollout, so a standby is there to take the Lease;
 * - --any-node on three workers: the Deployment of two replicas (`kubectl rollout restart`), and on
 *   one, where its second replica stays Pending: `ccm doctor` warns of a missing standby, no failure;
 * - --replicas 2 (the chart's `replicas`) on three control-plane Nodes and a worker: a Deployment whose
 *   two Pods keep to two control-plane Nodes, rolled one at a time.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fixtureApi } from '../controlplane/fixtures.js';
import { binDir, type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import {
  KubeletStandIn,
  schedulableNode,
  startWorkloadControllers,
  type WorkloadControllers,
} from '../controlplane/workloads.js';
import { until } from '../helpers/run.js';

const NS = 'kube-system';
const SELECTOR = 'app.kubernetes.io/name=ccm,app.kubernetes.io/component=controller';
const REGISTRY = 'registry.example.com';
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The lines of docs/deploy.md's "Rolling out a new version" command block. */
const upgradeLines = (
  /```sh\n([\s\S]*?)```/.exec(
    readFileSync(join(root, 'docs', 'deploy.md'), 'utf8').split('\n## Rolling out a new version\n')[1] ?? '',
  )?.[1] ?? ''
)
  .split('\n')
  .filter((l) => l.trim() !== '');

let cp: ControlPlane;
let controllers: WorkloadControllers;
let core: CoreV1Api;
let kubelet: KubeletStandIn;

/** One line in bash as an operator runs it: the built `ccm` and kubectl on PATH, the cluster's kubeconfig. */
async function shell(line: string): Promise<{ code: number; out: string }> {
  const run = await execa(
    'bash',
    ['-c', `set -o pipefail\n${line.replaceAll('<your registry>', REGISTRY)}`],
    {
      reject: false,
      env: {
        PATH: `${join(root, 'bin')}:${binDir()}:${process.env.PATH}`,
        HOME: process.env.HOME as string,
        KUBECONFIG: cp.kubeconfigPath,
        KUBECACHEDIR: join(cp.dir, 'kubectl-cache'),
      },
      extendEnv: false,
      stdin: 'ignore',
      timeout: 150_000,
    },
  );
  return { code: run.exitCode ?? -1, out: `${run.stdout}${run.stderr}` };
}

const kubectl = (...args: string[]) => shell(`kubectl -n ${NS} ${args.join(' ')}`);

/** `ccm manifests … | kubectl apply --server-side -f -` with the first version; the workload's kind/name. */
async function deploy(...flags: string[]): Promise<string> {
  const manifests = `ccm manifests --provider digitalocean --image <your registry>/ccm:0.1.0 ${flags.join(' ')}`;
  const applied = await shell(`${manifests} | kubectl apply --server-side -f -`);
  expect(applied.code, applied.out).toBe(0);
  return /^(daemonset|deployment)\.apps\/ccm /m.exec(applied.out)?.[1] === 'deployment'
    ? 'deployment/ccm'
    : 'daemonset/ccm';
}

async function ccmPods(): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace: NS, labelSelector: SELECTOR })).items;
}

const ready = (p: V1Pod) =>
  !p.metadata?.deletionTimestamp &&
  (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** `kubectl rollout status` to the end, within the time a healthy rollout of a few Pods takes here. */
async function rolledOut(workload: string): Promise<void> {
  const status = await kubectl('rollout', 'status', workload, '--timeout=90s');
  const pods = (await ccmPods()).map(
    (p) => `${p.metadata?.name} on ${p.spec?.nodeName ?? '(none)'}: ${p.status?.phase}`,
  );
  expect(status.code, `${status.out}\nccm Pods: ${pods.join('; ')}`).toBe(0);
}

/** docs/deploy.md's upgrade lines, as written. */
async function upgradeAsDocumented(): Promise<void> {
  expect(upgradeLines).toHaveLength(2);
  for (const line of upgradeLines) {
    const run = await shell(line);
    const pods = (await ccmPods()).map(
      (p) => `${p.metadata?.name} on ${p.spec?.nodeName ?? '(none)'}: ${p.status?.phase}`,
    );
    expect(run.code, `${line}\n${run.out}\nccm Pods: ${pods.join('; ')}`).toBe(0);
  }
}

/** Rolls out a change (`change` does it and waits), sampling the Pods meanwhile; the Pods after. */
async function rollOut(change: () => Promise<void>, during?: () => Promise<void>): Promise<V1Pod[]> {
  const before = new Set((await ccmPods()).map((p) => p.metadata?.uid as string));
  let done = false;
  const watching = (async () => {
    while (!done) {
      await during?.();
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    await change();
  } finally {
    done = true;
    await watching;
  }
  // Old Pods may still be shutting down for a moment after the status says done.
  return until(
    'only new ccm Pods left',
    async () => {
      const pods = await ccmPods();
      return pods.every((p) => !before.has(p.metadata?.uid as string)) && pods;
    },
    30_000,
  );
}

beforeAll(async () => {
  cp = await startControlPlane();
  controllers = startWorkloadControllers(cp);
  core = fixtureApi(cp.kubeconfigPath);
  kubelet = new KubeletStandIn(core, NS);
  kubelet.start();
}, 120_000);
afterAll(async () => {
  kubelet?.stop();
  await controllers?.stop();
  await cp?.stop();
});
afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail') console.error(controllers.logs());
  // The workload goes with its Pods (the garbage collector), then the Nodes.
  await kubectl('delete', 'daemonset,deployment', 'ccm', '--ignore-not-found');
  await until('no ccm Pods', async () => (await ccmPods()).length === 0, 60_000);
  await core.deleteCollectionNode({});
});

/** Control-plane Nodes (`fresh`: as kubeadm leaves them before ccm and the CNI) and workers. */
async function nodes(controlPlanes: number, workers: number, fresh = false): Promise<void> {
  for (let i = 1; i <= controlPlanes; i++)
    await core.createNode({ body: schedulableNode(`cp-${i}`, {}, true, fresh) });
  for (let i = 1; i <= workers; i++)
    await core.createNode({ body: schedulableNode(`worker-${i}`, {}, false) });
}

describe('ccm manifests rolls out', () => {
  it('on one control-plane Node fresh from kubeadm (uninitialized, NotReady): the Pod runs there, and the documented upgrade replaces it', async () => {
    await nodes(1, 1, true);
    const workload = await deploy();
    await rolledOut(workload);
    const first = await ccmPods();
    expect(first.map((p) => p.spec?.nodeName)).toEqual(['cp-1']);

    const after = await rollOut(upgradeAsDocumented);
    expect(after.map((p) => p.spec?.nodeName)).toEqual(['cp-1']);
    expect(after.every(ready)).toBe(true);
    expect(after.map((p) => p.spec?.containers[0]?.image)).toEqual([`${REGISTRY}/ccm:0.2.0`]);
  }, 300_000);

  it('on three control-plane Nodes: one Pod on each, at least two running throughout the rollout', async () => {
    await nodes(3, 1);
    const workload = await deploy();
    await rolledOut(workload);
    expect((await ccmPods()).map((p) => p.spec?.nodeName).sort()).toEqual(['cp-1', 'cp-2', 'cp-3']);

    let fewest = Number.POSITIVE_INFINITY;
    const after = await rollOut(upgradeAsDocumented, async () => {
      fewest = Math.min(fewest, (await ccmPods()).filter(ready).length);
    });
    // A standby (or two) is running while each Pod is replaced: the Lease always has a taker.
    expect(fewest).toBeGreaterThanOrEqual(2);
    expect(after.map((p) => p.spec?.nodeName).sort()).toEqual(['cp-1', 'cp-2', 'cp-3']);
    expect(new Set(after.map((p) => p.spec?.containers[0]?.image))).toEqual(
      new Set([`${REGISTRY}/ccm:0.2.0`]),
    );
  }, 300_000);

  it('--any-node on three workers: two replicas on two Nodes, rolled one at a time', async () => {
    await nodes(0, 3);
    const workload = await deploy('--any-node');
    expect(workload).toBe('deployment/ccm');
    await rolledOut(workload);
    let fewest = Number.POSITIVE_INFINITY;
    const restart = async () => {
      const restarted = await kubectl('rollout', 'restart', workload);
      expect(restarted.code, restarted.out).toBe(0);
      await rolledOut(workload);
    };
    const after = await rollOut(restart, async () => {
      fewest = Math.min(fewest, (await ccmPods()).filter(ready).length);
    });
    expect(fewest).toBeGreaterThanOrEqual(1);
    expect(after).toHaveLength(2);
    expect(new Set(after.map((p) => p.spec?.nodeName)).size).toBe(2);
  }, 300_000);

  it('--replicas 2 on three control-plane Nodes and a worker: two Pods on two control-plane Nodes, rolled one at a time', async () => {
    await nodes(3, 1);
    const workload = await deploy('--replicas', '2');
    expect(workload).toBe('deployment/ccm');
    await rolledOut(workload);
    const placed = (pods: V1Pod[]) => pods.map((p) => p.spec?.nodeName ?? '');
    const first = await ccmPods();
    expect(first).toHaveLength(2);
    expect(new Set(placed(first)).size).toBe(2);
    expect(placed(first).every((n) => n.startsWith('cp-'))).toBe(true);
    let fewest = Number.POSITIVE_INFINITY;
    const restart = async () => {
      const restarted = await kubectl('rollout', 'restart', workload);
      expect(restarted.code, restarted.out).toBe(0);
      await rolledOut(workload);
    };
    const after = await rollOut(restart, async () => {
      fewest = Math.min(fewest, (await ccmPods()).filter(ready).length);
    });
    expect(fewest).toBeGreaterThanOrEqual(1);
    expect(after).toHaveLength(2);
    expect(placed(after).every((n) => n.startsWith('cp-'))).toBe(true);
    expect(new Set(placed(after)).size).toBe(2);
  }, 300_000);

  it('--any-node on a single Node: the second replica stays Pending, which `ccm doctor` calls a missing standby, not a failure', async () => {
    await nodes(0, 1);
    await deploy('--any-node');
    const unschedulable = (p: V1Pod) =>
      p.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False');
    await until(
      'one ccm Pod running, one left Pending by the scheduler',
      async () => {
        const pods = await ccmPods();
        return pods.filter(ready).length === 1 && pods.filter(unschedulable).length === 1;
      },
      60_000,
    );
    const doctor = await shell('ccm doctor -o json');
    const checks = JSON.parse(doctor.out.slice(doctor.out.indexOf('{'))).checks as {
      id: string;
      status: string;
      message: string;
    }[];
    const pods = checks.find((c) => c.id === 'controller-pods');
    expect(pods, doctor.out).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(
        /^1 ccm Pod\(s\) running in kube-system; 1 Pending because every Node it may run on already runs one/,
      ),
    });
  }, 300_000);
});
