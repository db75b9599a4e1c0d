/**
 * What turns workloads into placed Pods beside a test control plane: the real kube-scheduler and
 * kube-controller-manager (its deployment, replicaset, daemonset and garbage collector controllers,
 * built by build.sh), and, as there is no container runtime, a kubelet stand-in that does what a
 * kubelet does with a Pod bound to its Node: reports it Running and Ready once its containers would
 * have started, and removes it once a deletion has waited its shutdown out.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api, V1Node, V1Pod } from '@kubernetes/client-node';
import { binDir, type ControlPlane, killHard, startProcess } from './harness.js';

export interface WorkloadControllers {
  /** The end of each component's log, for a failure message. */
  logs(): string;
  stop(): Promise<void>;
}

/** kube-scheduler and kube-controller-manager as the fixtures admin, without leader election or HTTPS. */
export function startWorkloadControllers(cp: ControlPlane): WorkloadControllers {
  const bins = binDir();
  for (const b of ['kube-scheduler', 'kube-controller-manager']) {
    if (!existsSync(join(bins, b))) {
      throw new Error(
        `${join(bins, b)} is missing: run "bash test/controlplane/build.sh kube-scheduler kube-controller-manager"`,
      );
    }
  }
  const kubeconfig = join(cp.dir, 'kubeconfig-fixtures');
  writeFileSync(
    kubeconfig,
    readFileSync(cp.kubeconfigPath, 'utf8').replace('current-context: ccm', 'current-context: fixtures'),
    { mode: 0o600 },
  );
  const common = [`--kubeconfig=${kubeconfig}`, '--leader-elect=false', '--secure-port=0', '--v=1'];
  const children: ChildProcess[] = [
    startProcess('kube-scheduler', join(bins, 'kube-scheduler'), common, join(cp.dir, 'kube-scheduler.log')),
    startProcess(
      'kube-controller-manager',
      join(bins, 'kube-controller-manager'),
      [
        ...common,
        '--controllers=deployment,replicaset,daemonset,garbagecollector',
        '--use-service-account-credentials=false',
        '--kube-api-qps=100',
        '--kube-api-burst=200',
      ],
      join(cp.dir, 'kube-controller-manager.log'),
    ),
  ];
  return {
    logs: () =>
      children
        .map((c) => (c as unknown as { logTail?: string }).logTail ?? '')
        .join('\n---\n')
        .slice(-6000),
    async stop() {
      for (const child of children) await killHard(child);
    },
  };
}

/**
 * A Node as a kubelet registers it, with room for a few Pods: Ready, or `fresh` as kubeadm leaves it
 * before a cloud controller and a CNI ran (tainted uninitialized and not-ready, NotReady).
 */
export function schedulableNode(
  name: string,
  labels: Record<string, string>,
  controlPlane: boolean,
  fresh = false,
): V1Node {
  const taints = [
    ...(controlPlane ? [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }] : []),
    ...(fresh
      ? [
          { key: 'node.cloudprovider.kubernetes.io/uninitialized', value: 'true', effect: 'NoSchedule' },
          { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' },
          { key: 'node.kubernetes.io/not-ready', effect: 'NoExecute' },
        ]
      : []),
  ];
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        ...(controlPlane
          ? {
              'node-role.kubernetes.io/control-plane': '',
              'node.kubernetes.io/exclude-from-external-load-balancers': '',
            }
          : {}),
        ...labels,
      },
    },
    spec: taints.length > 0 ? { taints } : {},
    status: {
      capacity: { cpu: '2', memory: '4Gi', pods: '110' },
      allocatable: { cpu: '2', memory: '4Gi', pods: '110' },
      conditions: [
        {
          type: 'Ready',
          status: fresh ? 'False' : 'True',
          reason: fresh ? 'KubeletNotReady' : 'KubeletReady',
          message: 'set by the test',
          lastHeartbeatTime: new Date(),
          lastTransitionTime: new Date(),
        },
      ],
    },
  };
}

/**
 * Every `everyMs`: a Pod bound to a Node becomes Running and Ready (its containers started), and a
 * Pod being deleted is removed once `shutdownMs` have passed since its deletion was seen, as its
 * kubelet removes it after the containers stopped.
 */
export class KubeletStandIn {
  private timer: NodeJS.Timeout | undefined;
  private readonly deleting = new Map<string, number>();
  private busy = false;

  constructor(
    private readonly core: CoreV1Api,
    private readonly namespace: string,
    private readonly options: { everyMs?: number; shutdownMs?: number } = {},
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.tick(), this.options.everyMs ?? 150);
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async tick(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const pods = (await this.core.listNamespacedPod({ namespace: this.namespace })).items;
      // A conflict or a Pod gone meanwhile: the next tick looks again.
      for (const pod of pods) await this.handle(pod).catch(() => undefined);
    } catch {
      // the next tick tries again
    } finally {
      this.busy = false;
    }
  }

  private async handle(pod: V1Pod): Promise<void> {
    const name = pod.metadata?.name as string;
    const uid = pod.metadata?.uid as string;
    if (pod.metadata?.deletionTimestamp) {
      const seen = this.deleting.get(uid) ?? Date.now();
      this.deleting.set(uid, seen);
      if (Date.now() - seen >= (this.options.shutdownMs ?? 500)) {
        // With a body the API server reads the options from it alone, never from the query.
        await this.core.deleteNamespacedPod({
          name,
          namespace: this.namespace,
          body: { gracePeriodSeconds: 0, preconditions: { uid } },
        });
        this.deleting.delete(uid);
      }
      return;
    }
    if (!pod.spec?.nodeName || pod.status?.phase === 'Running') return;
    const now = new Date();
    const condition = (type: string) => ({ type, status: 'True', lastTransitionTime: now });
    await this.core.replaceNamespacedPodStatus({
      name,
      namespace: this.namespace,
      body: {
        ...pod,
        status: {
          ...pod.status,
          phase: 'Running',
          startTime: now,
          conditions: [
            condition('PodScheduled'),
            condition('Initialized'),
            condition('ContainersReady'),
            condition('Ready'),
          ],
          containerStatuses: (pod.spec.containers ?? []).map((c) => ({
            name: c.name,
            image: c.image ?? '',
            imageID: '',
            ready: true,
            started: true,
            restartCount: 0,
            state: { running: { startedAt: now } },
          })),
        },
      },
    });
  }
}
