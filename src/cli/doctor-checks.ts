/**
 * The checks of `ccm doctor`, one small pure function each: each takes what was read and returns one
 * verdict with, for a failure, the fix. Reading is doctor.ts's job; nothing here calls anything.
 */
import { basename } from 'node:path';
import { getFlag } from '../cluster/flags.js';
import type { RunningProcess } from '../cluster/types.js';
import {
  type BrakeOptions,
  type BrakeVerdict,
  DEFAULT_BRAKE_OPTIONS,
  releaseAnnotation,
  releaseCommand,
} from '../controllers/deletion-brake.js';
import { selectControllers } from '../controllers/manager.js';
import { parseClusterCIDRs, planRoutes } from '../controllers/routes.js';
import type { LeaseInfo, PodInfo, ServerVersion, WorkloadInfo } from '../kube/diagnostics.js';
import type { SlimNode } from '../kube/slim-node.js';
import {
  ANNOTATION_PROVIDED_NODE_IP,
  DEFAULT_LEASE_NAME,
  TAINT_NOT_READY,
  TAINT_UNINITIALIZED,
} from '../kube/well-known.js';
import { InstanceIndex } from '../providers/instance-index.js';
import { parseProviderID } from '../providers/provider-id.js';
import type { CredentialSchema, Instance, Route } from '../providers/types.js';
import { age } from './age.js';
import { parseDuration } from './duration.js';
import { parseBoolean } from './flag-values.js';

export type CheckStatus = 'pass' | 'fail' | 'warn';

export interface CheckResult {
  id: string;
  status: CheckStatus;
  /** What was found, in one line. */
  message: string;
  /** What to do about a failure or a warning. */
  fix?: string;
  /** Every name the message lists (it shows the first five): in -o json / yaml, whole. */
  items?: string[];
}

const pass = (id: string, message: string): CheckResult => ({ id, status: 'pass', message });
const fail = (id: string, message: string, fix: string): CheckResult => ({
  id,
  status: 'fail',
  message,
  fix,
});
const warn = (id: string, message: string, fix?: string): CheckResult => ({
  id,
  status: 'warn',
  message,
  ...(fix ? { fix } : {}),
});

/** A Node tainted uninitialized longer than this is stuck, not just new. */
export const STUCK_AFTER_SECONDS = 120;
const MAX_NAMES = 5;

/** The check, with the whole list its message shortens. */
function withItems(result: CheckResult, list: readonly string[]): CheckResult {
  return { ...result, items: [...list] };
}

function names(list: readonly string[]): string {
  const shown = list.slice(0, MAX_NAMES).join(', ');
  return list.length > MAX_NAMES ? `${shown} and ${list.length - MAX_NAMES} more` : shown;
}

const nameOf = (n: SlimNode) => n.metadata?.name ?? '';
const isTainted = (n: SlimNode) => (n.spec?.taints ?? []).some((t) => t.key === TAINT_UNINITIALIZED);
const ageSeconds = (n: SlimNode, now: Date) => {
  const created = n.metadata?.creationTimestamp;
  return created ? Math.max(0, Math.round((now.getTime() - new Date(created).getTime()) / 1000)) : 0;
};

export function checkApiServer(server: string, version: ServerVersion, insecure?: string): CheckResult {
  const answers = `the API server at ${server} answers: Kubernetes ${version.gitVersion}`;
  if (!insecure) return pass('kubeconfig', answers);
  return warn(
    'kubeconfig',
    `${answers}, but its certificate is not verified (${insecure})`,
    'give the cluster its certificate-authority(-data) instead of insecure-skip-tls-verify, and unset NODE_TLS_REJECT_UNAUTHORIZED',
  );
}

export function checkApiServerUnreachable(message: string, inCluster = false): CheckResult {
  return fail(
    'kubeconfig',
    message,
    inCluster
      ? "from this Pod the API server is the `kubernetes` Service: make kube-proxy (or what replaces it) forward it on this Node, or set KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT in the Pod's env to the API server's own address and port"
      : 'fix --kubeconfig / --context (or $KUBECONFIG); `kubectl version` must work first',
  );
}

export function checkUninitialized(nodes: readonly SlimNode[], now: Date): CheckResult {
  const tainted = nodes.filter(isTainted).map((n) => ({ name: nameOf(n), age: ageSeconds(n, now) }));
  if (tainted.length === 0) return pass('uninitialized', `no Node carries ${TAINT_UNINITIALIZED}`);
  tainted.sort((a, b) => b.age - a.age);
  const oldest = tainted[0] as { name: string; age: number };
  const what = `${tainted.length} Node(s) tainted uninitialized, the oldest for ${age(oldest.age)}: ${names(tainted.map((t) => t.name))}`;
  const all = tainted.map((t) => t.name);
  if (oldest.age < STUCK_AFTER_SECONDS)
    return withItems(
      warn('uninitialized', `${what} (new; a cloud controller should take them shortly)`),
      all,
    );
  return withItems(
    fail(
      'uninitialized',
      what,
      "no cloud controller initialised them: see the checks of the controller below, and `ccm nodes list` for each Node's reason",
    ),
    all,
  );
}

export function checkProviderIDs(nodes: readonly SlimNode[]): CheckResult {
  const missing = nodes.filter((n) => !n.spec?.providerID).map(nameOf);
  if (missing.length === 0) return pass('provider-id', `every Node (${nodes.length}) has a provider ID`);
  return withItems(
    fail(
      'provider-id',
      `${missing.length} Node(s) without a provider ID: ${names(missing)}`,
      'the cloud controller sets it from the instance of the same name (`ccm nodes list` says why it cannot), or start the kubelet with --provider-id',
    ),
    missing,
  );
}

export function checkForeignProviderIDs(nodes: readonly SlimNode[], scheme: string): CheckResult {
  const foreign = nodes.filter((n) => {
    const id = n.spec?.providerID;
    return id !== undefined && id !== '' && parseProviderID(id)?.scheme !== scheme;
  });
  if (foreign.length === 0)
    return pass('foreign-provider-id', `no Node has a provider ID of another cloud than ${scheme}`);
  const examples = foreign.slice(0, 2).map((n) => `${nameOf(n)}=${n.spec?.providerID}`);
  return fail(
    'foreign-provider-id',
    `${foreign.length} Node(s) with a provider ID that is not ${scheme}://: ${examples.join(', ')}${foreign.length > 2 ? ', …' : ''}`,
    'ccm leaves them alone: check --provider, or let the controller of that cloud manage them',
  );
}

function flagValue(pod: PodInfo, flag: string): string | undefined {
  for (const container of pod.spec?.containers ?? []) {
    const found = argValue([...(container.command ?? []), ...(container.args ?? [])], flag);
    if (found !== undefined) return found;
  }
  return undefined;
}

/** A flag's value in a command line: `--flag=value`, `--flag value`, or '' for a bare `--flag`. */
export function argValue(args: readonly string[], flag: string): string | undefined {
  for (const [i, arg] of args.entries()) {
    if (arg.startsWith(`--${flag}=`)) return arg.slice(flag.length + 3);
    if (arg === `--${flag}`) {
      const next = args[i + 1];
      return next !== undefined && !next.startsWith('--') ? next : '';
    }
  }
  return undefined;
}

/** Whether a kube-controller-manager holds its Lease and renews it (one with leader election does). */
export function controllerManagerLeads(lease: LeaseInfo | undefined, now: Date): boolean {
  if (!lease?.renewTime) return false;
  const silent = (now.getTime() - Date.parse(lease.renewTime)) / 1000;
  return silent <= Math.max(60, 4 * (lease.leaseDurationSeconds ?? 15));
}

export function checkControllerManager(
  pods: readonly PodInfo[],
  lease?: LeaseInfo,
  now: Date = new Date(),
): CheckResult {
  // A static Pod's status is its kubelet's last word: the controller manager's own Lease is live.
  if (pods.length > 0 && lease?.renewTime) {
    const silent = Math.round((now.getTime() - Date.parse(lease.renewTime)) / 1000);
    if (silent > Math.max(60, 4 * (lease.leaseDurationSeconds ?? 15))) {
      return fail(
        'kube-controller-manager',
        `kube-controller-manager is not running: its Lease kube-system/kube-controller-manager was last renewed ${silent}s ago (its Pod's status may be stale)`,
        'on the control-plane Node: is the kubelet running (`systemctl status kubelet`), and what does the static Pod say (`crictl ps -a --name kube-controller-manager`)?',
      );
    }
  }
  if (pods.length === 0) {
    return warn(
      'kube-controller-manager',
      'no kube-controller-manager static Pod in kube-system (component=kube-controller-manager)',
      'on a cluster without static Pods, check that kube-controller-manager runs with --cloud-provider=external',
    );
  }
  const wrong = pods.filter((p) => flagValue(p, 'cloud-provider') !== 'external');
  if (wrong.length === 0)
    return pass('kube-controller-manager', 'kube-controller-manager runs with --cloud-provider=external');
  const value = flagValue(wrong[0] as PodInfo, 'cloud-provider');
  return fail(
    'kube-controller-manager',
    `kube-controller-manager ${wrong[0]?.metadata?.name} runs ${value === undefined ? 'without --cloud-provider' : `with --cloud-provider=${value}`}`,
    'add --cloud-provider=external to /etc/kubernetes/manifests/kube-controller-manager.yaml (`ccm cluster prepare` does it)',
  );
}

export function checkApiServerFlags(version: ServerVersion, pods: readonly PodInfo[]): CheckResult {
  const minor = Number.parseInt(version.minor, 10);
  const withFlag = pods.find((p) => flagValue(p, 'cloud-provider') !== undefined);
  if (withFlag) {
    return fail(
      'kube-apiserver',
      `kube-apiserver ${withFlag.metadata?.name} has --cloud-provider, removed in Kubernetes 1.33 (it will not start after an upgrade)`,
      'remove --cloud-provider and --cloud-config from /etc/kubernetes/manifests/kube-apiserver.yaml (`ccm cluster prepare` does it)',
    );
  }
  if (Number(version.major) === 1 && minor < 33) {
    return warn(
      'kube-apiserver',
      `kube-apiserver is ${version.gitVersion}, older than 1.33`,
      'ccm is tested against 1.33 and later; upgrade the control plane',
    );
  }
  const seen =
    pods.length > 0 ? 'its static Pod has no --cloud-provider' : 'no static Pod to read its flags from';
  return pass('kube-apiserver', `kube-apiserver ${version.gitVersion} (≥ 1.33); ${seen}`);
}

export function checkKubeletsExternal(nodes: readonly SlimNode[]): CheckResult {
  const notExternal = nodes.filter(
    (n) =>
      !n.spec?.providerID &&
      !isTainted(n) &&
      n.metadata?.annotations?.[ANNOTATION_PROVIDED_NODE_IP] === undefined,
  );
  if (notExternal.length === 0) {
    // The taint may be `cluster prepare --initialize-existing`'s and the provider ID `nodes init`'s:
    // neither shows the flags the kubelet runs with now.
    return pass(
      'kubelet-external',
      "every Node is marked for an external cloud controller (uninitialized taint, provider ID or the kubelet's provided-node-ip); its running kubelet's flags are not on the Node: `ccm cluster prepare --dry-run` compares them on each host",
    );
  }
  return withItems(
    fail(
      'kubelet-external',
      `${notExternal.length} Node(s) whose kubelet is not external (no uninitialized taint, no provider ID, no provided-node-ip: it registered without --cloud-provider=external): ${names(notExternal.map(nameOf))}`,
      'start their kubelets with --cloud-provider=external: `ccm cluster prepare --initialize-existing` does it and taints these Nodes so that `ccm nodes init` initialises them',
    ),
    notExternal.map(nameOf),
  );
}

/**
 * The kubelet running on this host, where doctor runs on a Node: its command line shows the flag the
 * Node object cannot. Undefined where no kubelet runs here (a workstation, a Pod).
 */
export function checkLocalKubelet(
  processes: readonly RunningProcess[],
  kubeletConfigured = false,
): CheckResult | undefined {
  const kubelets = processes.filter((p) => basename(p.argv[0] ?? '') === 'kubelet');
  if (kubelets.length === 0 && kubeletConfigured) {
    return fail(
      'kubelet-local',
      'this host is a kubeadm Node (it has /var/lib/kubelet/kubeadm-flags.env), but no kubelet runs here: its Pods are neither watched nor restarted, and its static Pods (kube-controller-manager among them) show a stale status',
      'start it (`systemctl start kubelet`) and read why it stopped (`journalctl -u kubelet`); after a failed `ccm cluster prepare` or `--rollback`, run the same command again',
    );
  }
  if (kubelets.length !== 1) return undefined;
  const [kubelet] = kubelets as [RunningProcess];
  const value = getFlag(kubelet.argv.slice(1), 'cloud-provider');
  if (value === 'external') {
    return pass(
      'kubelet-local',
      `the kubelet on this host (pid ${kubelet.pid}) runs with --cloud-provider=external`,
    );
  }
  return fail(
    'kubelet-local',
    `the kubelet on this host (pid ${kubelet.pid}) runs ${value === undefined ? 'without --cloud-provider' : `with --cloud-provider=${value}`}: Nodes it registers are never initialised, and it overwrites the addresses ccm sets`,
    '`ccm cluster prepare` on this host (it restarts the kubelet with --cloud-provider=external)',
  );
}

/**
 * Whether `ccm run` with these arguments runs without leader election (`ccm manifests
 * --no-leader-elect`, the chart's leaderElection.enabled false): the last of its leader-elect flags.
 */
export function leaderElectionOff(args: readonly string[]): boolean {
  let off = false;
  for (const arg of args) {
    if (arg === '--no-leader-elect') off = true;
    else if (arg === '--leader-elect') off = false;
    else if (arg.startsWith('--leader-elect='))
      off = parseBoolean(arg.slice('--leader-elect='.length)) === false;
  }
  return off;
}

/**
 * The Lease ccm elects on. `workload` is ccm's DaemonSet (or Deployment), when applied: then the fix
 * is not to deploy it again but what keeps its Pods from leading, which the controller-pods check names.
 */
export function checkLease(
  lease: LeaseInfo | undefined,
  ref: { namespace: string; name: string },
  now: Date,
  workload?: Pick<WorkloadInfo, 'kind' | 'namespace' | 'name'>,
  withoutLeaderElection = false,
): CheckResult {
  const where = `Lease ${ref.namespace}/${ref.name}`;
  if (workload && withoutLeaderElection) {
    return pass(
      'controller-lease',
      `${workload.kind} ${workload.namespace}/${workload.name} runs ccm without leader election (--no-leader-elect): no Lease to hold`,
    );
  }
  const fix = workload
    ? `${workload.kind} ${workload.namespace}/${workload.name} is applied, but none of its Pods leads: the controller-pods and rbac checks and their logs (kubectl -n ${workload.namespace} logs -l app.kubernetes.io/name=ccm) say why`
    : 'deploy a cloud controller: `ccm manifests --provider <cloud> --image <registry>/ccm:<version> | kubectl apply --server-side -f -`';
  if (!lease) {
    return fail(
      'controller-lease',
      workload
        ? `no ${where}: no cloud controller has led here yet`
        : `no ${where}: no cloud controller has ever run here`,
      fix,
    );
  }
  if (!lease.holderIdentity)
    return fail('controller-lease', `${where} has no holder: the controller stopped`, fix);
  const duration = lease.leaseDurationSeconds ?? 15;
  const renewed = lease.renewTime
    ? Math.round((now.getTime() - Date.parse(lease.renewTime)) / 1000)
    : undefined;
  if (renewed === undefined || renewed > duration) {
    return fail(
      'controller-lease',
      `${where} is held by ${lease.holderIdentity} but ${renewed === undefined ? 'never renewed' : `not renewed for ${age(renewed)} (lease ${duration}s)`}`,
      `its holder is stuck or gone: check its Pod (kubectl -n ${ref.namespace} logs) and the ccm Pods below`,
    );
  }
  return pass(
    'controller-lease',
    `${where} held by ${lease.holderIdentity}, renewed ${Math.max(0, renewed)}s ago`,
  );
}

/** Why a Pod is not running, in the words an operator needs; undefined when it runs. */
function podProblem(pod: PodInfo): { message: string; fix: string } | undefined {
  const name = pod.metadata?.name ?? '';
  const unschedulable = pod.status?.conditions?.find(
    (c) => c.type === 'PodScheduled' && c.status === 'False',
  );
  if (unschedulable) {
    const text = unschedulable.message ?? unschedulable.reason ?? 'unschedulable';
    if (text.includes(TAINT_UNINITIALIZED)) {
      return {
        message: `ccm Pod ${name} is Pending: it does not tolerate ${TAINT_UNINITIALIZED}, which only a cloud controller removes (it waits for itself)`,
        fix: `tolerate ${TAINT_UNINITIALIZED}:NoSchedule in ccm's DaemonSet (\`ccm manifests\` does)`,
      };
    }
    if (text.includes(TAINT_NOT_READY)) {
      return {
        message: `ccm Pod ${name} is Pending: every Node is NotReady (no CNI yet) and it does not tolerate ${TAINT_NOT_READY} — the CNI in turn waits for initialised Nodes (the CCM↔CNI bootstrap deadlock)`,
        fix: `tolerate ${TAINT_NOT_READY} (NoSchedule and NoExecute) and run with hostNetwork: true (\`ccm manifests\` does both)`,
      };
    }
    return {
      message: `ccm Pod ${name} is Pending: ${text.split('\n')[0]}`,
      fix: 'make a Node schedulable for it (taints, resources, anti-affinity: `kubectl describe pod`)',
    };
  }
  const waiting = pod.status?.containerStatuses?.find((c) => c.state?.waiting)?.state?.waiting;
  if (waiting && /cni|network (plugin )?(is )?not ready|NetworkPluginNotReady/i.test(waiting.message ?? '')) {
    return {
      message: `ccm Pod ${name} cannot start: it waits for the pod network (CNI), which waits for initialised Nodes (the CCM↔CNI bootstrap deadlock)`,
      fix: 'run the ccm Pods with hostNetwork: true (`ccm manifests` does)',
    };
  }
  if (
    waiting?.reason &&
    /^(ErrImageNeverPull|ErrImagePull|ImagePullBackOff|InvalidImageName)$/.test(waiting.reason)
  ) {
    const image = pod.spec?.containers?.[0]?.image ?? 'its image';
    const node = pod.spec?.nodeName ? ` on Node ${pod.spec.nodeName}` : '';
    return {
      message: `ccm Pod ${name} cannot start${node}: ${waiting.reason} for ${image}${waiting.message ? ` (${waiting.message.split('\n')[0]})` : ''}`,
      fix:
        waiting.reason === 'ErrImageNeverPull'
          ? `import the image on that Node (\`ctr -n k8s.io images import <archive>\`, docs/deploy.md) or give \`ccm manifests --image\` the name it has there`
          : `push ${image} to a registry the Nodes can pull from, or give \`ccm manifests --image\` a name they can pull`,
    };
  }
  const crashing = pod.status?.containerStatuses?.find(
    (c) => c.state?.waiting?.reason === 'CrashLoopBackOff',
  );
  if (crashing) {
    const last = crashing.lastState?.terminated;
    const exit = last?.exitCode !== undefined ? `, last exit ${last.exitCode}` : '';
    const said = last?.message?.trim().split('\n').at(-1);
    return {
      message: `ccm Pod ${name} is crash-looping (CrashLoopBackOff, ${crashing.restartCount ?? 0} restarts${exit})${said ? `: ${said}` : ''}`,
      fix: `its last lines say why: \`kubectl -n ${pod.metadata?.namespace} logs ${name} --previous\` (exit 2 is a configuration error: the credentials Secret, its keys, the flags)`,
    };
  }
  if (pod.status?.phase !== 'Running') {
    const detail = waiting?.reason
      ? ` (${waiting.reason}${waiting.message ? `: ${waiting.message.split('\n')[0]}` : ''})`
      : '';
    return {
      message: `ccm Pod ${name} is ${pod.status?.phase ?? 'Unknown'}${detail}`,
      fix: `\`kubectl -n ${pod.metadata?.namespace} describe pod ${name}\` and its logs say why`,
    };
  }
  return undefined;
}

/**
 * A Pending Pod that only the one-Pod-per-Node rule keeps out: every Node it may run on already runs
 * a ccm Pod (the host port; with --any-node also the anti-affinity), and the scheduler names no other
 * reason than Nodes it may not run on anyway.
 */
function heldOutByOnePerNode(pod: PodInfo): boolean {
  const unschedulable = pod.status?.conditions?.find(
    (c) => c.type === 'PodScheduled' && c.status === 'False',
  );
  // "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 2 node(s)
  // didn't match Pod's node affinity/selector. preemption: …" (kube-scheduler's message).
  const summary = (unschedulable?.message ?? '').split(/\.\s*preemption:/)[0] ?? '';
  const reasons = [...summary.matchAll(/\d+ node\(s\) ([^,.]+)/g)].map((m) => m[1] as string);
  const onePerNode = (r: string) => /free ports for the requested pod ports|pod anti-affinity rules/.test(r);
  const elsewhere = (r: string) => /node affinity\/selector/.test(r);
  return reasons.some(onePerNode) && reasons.every((r) => onePerNode(r) || elsewhere(r));
}

export function checkControllerPods(
  pods: readonly PodInfo[],
  namespace: string,
  leaseHealthy: boolean,
  workload?: WorkloadInfo,
  controllerManagerWorks = true,
): CheckResult {
  if (pods.length === 0) {
    if (leaseHealthy) {
      return warn('controller-pods', `no ccm Pods in ${namespace} (the Lease holder runs elsewhere)`);
    }
    if (workload && workload.replicas === 0) return placedNowhere(workload);
    if (workload) return withoutPods(workload, controllerManagerWorks);
    return fail(
      'controller-pods',
      `no ccm Pods (app.kubernetes.io/name=ccm) in ${namespace}`,
      'deploy them: `ccm manifests --provider <cloud> --image <registry>/ccm:<version> | kubectl apply --server-side -f -`',
    );
  }
  const running = pods.filter((p) => podProblem(p) === undefined);
  const notRunning = pods.filter((p) => podProblem(p) !== undefined);
  // With one running, a Pod that waits only for a Node of its own is a missing standby, not a fault.
  const waiting = running.length > 0 ? notRunning.filter(heldOutByOnePerNode) : [];
  const problems = notRunning.filter((p) => !waiting.includes(p)).map(podProblem);
  const first = problems[0];
  if (first) {
    return fail(
      'controller-pods',
      problems.length > 1
        ? `${first.message} (and ${problems.length - 1} more Pod(s) not running)`
        : first.message,
      first.fix,
    );
  }
  if (waiting.length > 0) {
    const names = waiting.map((p) => p.metadata?.name ?? '');
    return withItems(
      warn(
        'controller-pods',
        `${running.length} ccm Pod(s) running in ${namespace}; ${waiting.length} Pending because every Node it may run on already runs one (one ccm Pod per Node): ${names.join(', ')}`,
        'nothing is broken (a running Pod leads); for a standby, let the Pods run on one more Node (another control-plane Node, or --node-selector naming two Nodes)',
      ),
      names,
    );
  }
  return pass('controller-pods', `${pods.length} ccm Pod(s) running in ${namespace}`);
}

/** ccm is deployed, but its workload asks for no Pod: no Node fits its placement, or it was scaled to 0. */
/** A Deployment or DaemonSet that wants Pods and has none: what keeps them from being made. */
function withoutPods(workload: WorkloadInfo, controllerManagerWorks: boolean): CheckResult {
  const where = `${workload.kind} ${workload.namespace}/${workload.name}`;
  const kind = workload.kind.toLowerCase();
  if (workload.replicaFailure) {
    return fail(
      'controller-pods',
      `${where} makes no Pods: ${workload.replicaFailure}`,
      'fix what refuses them (an admission policy, a quota), then its controller makes them',
    );
  }
  if (!controllerManagerWorks) {
    return fail(
      'controller-pods',
      `${where} has no Pods, and no kube-controller-manager, which makes them, seems to run: its Lease kube-system/kube-controller-manager is missing or not renewed`,
      'start kube-controller-manager (kubeadm: its static Pod in /etc/kubernetes/manifests); the Pods follow',
    );
  }
  return fail(
    'controller-pods',
    `${where} wants ${workload.replicas} Pod(s) and has none yet`,
    `\`kubectl -n ${workload.namespace} describe ${kind} ${workload.name}\` and \`kubectl -n ${workload.namespace} get events\` say why`,
  );
}

function placedNowhere(workload: WorkloadInfo): CheckResult {
  const where = `${workload.kind} ${workload.namespace}/${workload.name}`;
  if (workload.kind === 'Deployment') {
    return fail(
      'controller-pods',
      `${where} is scaled to 0 replicas`,
      `\`kubectl -n ${workload.namespace} scale deployment ${workload.name} --replicas=2\``,
    );
  }
  const { nodeSelector, affinityKeys } = workload.placement;
  const asks = [
    ...(Object.keys(nodeSelector).length > 0
      ? [
          `node selector ${Object.entries(nodeSelector)
            .map(([k, v]) => `${k}=${v}`)
            .join(',')}`,
        ]
      : []),
    ...(affinityKeys.length > 0 ? [`required node affinity on ${affinityKeys.join(', ')}`] : []),
  ];
  return fail(
    'controller-pods',
    `${where} runs on no Node: no Node fits its ${asks.length > 0 ? asks.join(' and ') : 'placement'} (and tolerates nothing more than it does)`,
    `label the Nodes ccm should run on to match, or apply \`ccm manifests\` again with --node-selector naming labels those Nodes have`,
  );
}

export function checkSecret(
  schema: CredentialSchema,
  ref: { namespace: string; name: string },
  secret: Readonly<Record<string, string>> | undefined,
  readError?: string,
): CheckResult {
  const where = `Secret ${ref.namespace}/${ref.name}`;
  const keys = schema.fields.filter((f) => f.secretKey && f.required).map((f) => f.secretKey as string);
  const literal = keys.map((k) => `--from-literal=${k}=…`).join(' ');
  const create = `kubectl -n ${ref.namespace} create secret generic ${ref.name} ${literal}`.trim();
  if (readError) return fail('credentials-secret', readError, create);
  if (!secret) return fail('credentials-secret', `${where} does not exist`, `create it: ${create}`);
  const missing = keys.filter((k) => !secret[k]?.trim());
  if (missing.length > 0) {
    return fail(
      'credentials-secret',
      `${where} lacks the key(s) ${missing.join(', ')}`,
      `add them: kubectl -n ${ref.namespace} patch secret ${ref.name} --type merge -p '{"stringData":{"${missing[0]}":"…"}}'`,
    );
  }
  return pass(
    'credentials-secret',
    `${where} has ${keys.length > 0 ? keys.join(', ') : "the provider's keys"}`,
  );
}

export type CredentialsOutcome = { ok: string } | { error: string; why: 'unreachable' | 'refused' | 'other' };

export function checkCredentials(outcome: CredentialsOutcome, where: string): CheckResult {
  if ('ok' in outcome) return pass('cloud-credentials', `the cloud accepts the credentials: ${outcome.ok}`);
  if (outcome.why === 'unreachable') {
    return fail(
      'cloud-credentials',
      `cannot reach the cloud, so the credentials were not checked: ${outcome.error}`,
      "check the API URL, and this machine's DNS, network and proxy; the credentials may well be good",
    );
  }
  if (outcome.why === 'refused') {
    return fail(
      'cloud-credentials',
      `the cloud refuses the credentials: ${outcome.error}`,
      `put valid credentials in ${where}`,
    );
  }
  return fail(
    'cloud-credentials',
    `checking the credentials failed: ${outcome.error}`,
    `fix what the message names (${where}, or the API URL)`,
  );
}

export interface AccessVerdict {
  /** e.g. "patch nodes/status" or "get secrets digitalocean in kube-system". */
  what: string;
  allowed: boolean;
}

export function checkRbacNeeded(verdicts: readonly AccessVerdict[], serviceAccount: string): CheckResult {
  const denied = verdicts.filter((v) => !v.allowed).map((v) => v.what);
  if (denied.length === 0) {
    return pass('rbac', `ServiceAccount ${serviceAccount} may do all ${verdicts.length} things ccm needs`);
  }
  return withItems(
    fail(
      'rbac',
      `ServiceAccount ${serviceAccount} may not: ${names(denied)}`,
      'apply the RBAC of `ccm manifests --provider <cloud>` (ClusterRole system:ccm, Roles ccm:leader-election and ccm:credentials)',
    ),
    denied,
  );
}

export function checkRbacSecrets(verdicts: readonly AccessVerdict[], serviceAccount: string): CheckResult {
  const allowed = verdicts.filter((v) => v.allowed).map((v) => v.what);
  if (allowed.length === 0)
    return pass('rbac-secrets', `ServiceAccount ${serviceAccount} reads no Secret but its own`);
  return withItems(
    fail(
      'rbac-secrets',
      `ServiceAccount ${serviceAccount} may ${names(allowed)}: more than its own Secret`,
      'grant it only `get` on its credentials Secret by name (the Role ccm:credentials of `ccm manifests`); remove the broader binding',
    ),
    allowed,
  );
}

export function checkListing(
  nodes: readonly SlimNode[],
  scheme: string,
  listing: { instances: readonly Instance[] } | { error: string },
  account: string,
): CheckResult {
  if ('error' in listing) {
    return fail(
      'cloud-listing',
      `listing the cloud's instances failed: ${listing.error}`,
      'fix the credentials or the API URL',
    );
  }
  const ours = nodes.filter((n) => {
    const id = n.spec?.providerID;
    return !id || parseProviderID(id)?.scheme === scheme;
  });
  const index = new InstanceIndex(listing.instances);
  const found = ours.filter((n) =>
    n.spec?.providerID ? index.byProviderID(n.spec.providerID) : index.byNodeName(nameOf(n)),
  );
  const count = `${listing.instances.length} instance(s)`;
  if (ours.length === 0) return pass('cloud-listing', `the cloud lists ${count}; no Node to match`);
  if (found.length === 0) {
    return fail(
      'cloud-listing',
      `the cloud listing (${count}) contains none of the ${ours.length} Node(s): these credentials see another project, region or account`,
      `use credentials of the cluster's own project / region / account${account ? ` (${account})` : ''}`,
    );
  }
  if (found.length < ours.length) {
    const missing = ours.filter((n) => !found.includes(n)).map(nameOf);
    return withItems(
      warn(
        'cloud-listing',
        `${ours.length - found.length} of ${ours.length} Node(s) not in the cloud listing: ${names(missing)}`,
        '`ccm nodes list` says why for each',
      ),
      missing,
    );
  }
  return pass('cloud-listing', `the cloud listing (${count}) contains all ${ours.length} Node(s)`);
}

/** The deletion brake's settings as `ccm run` is deployed (else its defaults), to judge as it does. */
export function brakeSetting(deployed: { args: readonly string[] } | undefined): {
  options: BrakeOptions;
  deletionGracePeriodMs: number;
} {
  const args = deployed?.args ?? [];
  const number = (flag: string) => {
    const value = Number(argValue(args, flag));
    return Number.isFinite(value) && value > 0 ? value : undefined;
  };
  return {
    options: {
      ...DEFAULT_BRAKE_OPTIONS,
      maxRatio: number('max-deletion-ratio') ?? DEFAULT_BRAKE_OPTIONS.maxRatio,
      rate: number('node-deletion-rate') ?? DEFAULT_BRAKE_OPTIONS.rate,
    },
    deletionGracePeriodMs: parseDuration(argValue(args, 'deletion-grace-period') ?? '5m') ?? 5 * 60_000,
  };
}

/**
 * The deletion brake on this listing, as `ccm run` judges it: a warning while it holds, with the
 * command that releases the hold; the Nodes whose instances are missing either way.
 */
export function checkDeletionBrake(
  verdict: BrakeVerdict,
  options: BrakeOptions,
  secret: { namespace: string; name: string } | undefined,
): CheckResult {
  const missing = verdict.counted.map((n) => n.name);
  if (verdict.held) {
    const annotation = secret ? ` (for \`ccm run\`: ${releaseAnnotation(secret, verdict.id)})` : '';
    return withItems(
      warn(
        'deletion-brake',
        `ccm holds every Node deletion (hold ${verdict.id}): ${verdict.held}; ${missing.length} Node(s): ${names(missing)}`,
        `look at \`ccm nodes list\`: if these Nodes' instances are really gone, release the hold: ${releaseCommand(verdict.id)}${annotation}; if not, fix the credentials, project or region ccm lists with`,
      ),
      missing,
    );
  }
  if (missing.length === 0)
    return pass('deletion-brake', "no Node's instance is missing from the cloud listing: nothing to hold");
  if (verdict.unjudged) {
    return withItems(
      warn(
        'deletion-brake',
        `${missing.length} Node(s)' instances missing from the cloud listing, and their deletion is ${verdict.unjudged.replace(/^not deleted this pass: /, 'not judged: ')}; ccm deletes none of them until it can read it`,
        'check that ccm may get, create and update ConfigMap kube-system/ccm-node-deletions (`ccm manifests` grants it), and that its data is the record ccm wrote',
      ),
      missing,
    );
  }
  return withItems(
    pass(
      'deletion-brake',
      `${missing.length} Node(s)' instances missing from the cloud listing (${verdict.affected} of ${verdict.total} with the deletions of the last 10m, at most --max-deletion-ratio ${options.maxRatio}): their deletion is not held`,
    ),
    missing,
  );
}

/** Whether ccm as deployed runs the route controller, and why (for the check's line). */
export interface RoutesSetting {
  /** undefined: no arguments of a deployed ccm to read. */
  on?: boolean;
  why: string;
}

/**
 * The route controller runs only with a --cluster-cidr, with `route` in --controllers and without
 * --configure-cloud-routes=false (route-controller.ts); read from `ccm run`'s deployed arguments.
 */
export function routesSetting(
  deployed: { args: readonly string[]; where: string } | undefined,
): RoutesSetting {
  if (!deployed) return { why: 'no ccm DaemonSet, Deployment or Pod to read its arguments from' };
  const { args, where } = deployed;
  const controllers = argValue(args, 'controllers') ?? '*';
  if (!selectControllers(controllers).enabled.includes('route'))
    return {
      on: false,
      why: `${where} runs \`ccm run --controllers=${controllers}\`, without the route controller`,
    };
  const configure = argValue(args, 'configure-cloud-routes');
  if (configure === 'false' || args.includes('--no-configure-cloud-routes'))
    return { on: false, why: `${where} runs \`ccm run\` with --configure-cloud-routes=false` };
  let cidrs: ReturnType<typeof parseClusterCIDRs> = [];
  try {
    cidrs = parseClusterCIDRs(argValue(args, 'cluster-cidr') ?? '');
  } catch {
    // ccm refuses to start with it: the Pods' own check says so.
  }
  if (cidrs.length === 0) return { on: false, why: `${where} runs \`ccm run\` without --cluster-cidr` };
  return { on: true, why: `${where} runs \`ccm run\` with --cluster-cidr=${argValue(args, 'cluster-cidr')}` };
}

/**
 * Routes as ccm is deployed without them: nothing to list; only a Node still NetworkUnavailable, which
 * no route controller will clear, is worth a line.
 */
export function checkRoutesOff(nodes: readonly SlimNode[], setting: RoutesSetting): CheckResult {
  if (setting.on === undefined)
    return warn(
      'routes',
      `routes not checked: ${setting.why} in its namespace (whether it makes routes is in its --cluster-cidr)`,
      'check --namespace; a `ccm run` outside the cluster is not seen',
    );
  const unavailable = nodes
    .filter((n) => n.status?.conditions?.some((c) => c.type === 'NetworkUnavailable' && c.status === 'True'))
    .map(nameOf);
  if (unavailable.length === 0)
    return pass('routes', `the route controller is off (${setting.why}): no cloud routes to check`);
  return withItems(
    fail(
      'routes',
      `${unavailable.length} Node(s) are NetworkUnavailable: ${names(unavailable)}, and the route controller that would clear it is off (${setting.why})`,
      "give the cluster's Pod CIDR to `ccm manifests --cluster-cidr` for routes in the cloud, or use a CNI that routes Pod traffic itself (it clears the condition)",
    ),
    unavailable,
  );
}

/** What `doctor` learned of the cluster's routes: the listing, its failure, or why the cloud has none. */
export type RoutesOutcome = { routes: readonly Route[] } | { error: string } | { unsupported: string };

/**
 * Nodes with podCIDRs whose route is missing from the cloud, or whose NetworkUnavailable is still
 * True (the route controller's verdicts, upstream's condition).
 */
export function checkRoutes(nodes: readonly SlimNode[], outcome: RoutesOutcome): CheckResult {
  const withCIDRs = nodes.filter((n) => n.spec?.podCIDRs?.length);
  const unavailable = withCIDRs
    .filter((n) => n.status?.conditions?.some((c) => c.type === 'NetworkUnavailable' && c.status === 'True'))
    .map(nameOf);
  if ('unsupported' in outcome) {
    if (unavailable.length === 0) return pass('routes', `the cloud has no routes (${outcome.unsupported})`);
    return withItems(
      fail(
        'routes',
        `${unavailable.length} Node(s) are NetworkUnavailable: ${names(unavailable)}, and this cloud has no routes`,
        'use a CNI that routes Pod traffic itself (an overlay, or BGP), which clears the condition',
      ),
      unavailable,
    );
  }
  // A cluster whose CNI routes Pod traffic itself (an overlay, BGP) has Nodes with podCIDRs too: its
  // CNI sets NetworkUnavailable=False with a reason of its own (FlannelIsUp, CalicoIsUp). With no route
  // of this cluster in the cloud, the route controller is not in use there, and nothing is missing.
  const cniReasons = [
    ...new Set(
      withCIDRs.map(
        (n) =>
          n.status?.conditions?.find(
            (c) => c.type === 'NetworkUnavailable' && c.status === 'False' && c.reason !== 'RouteCreated',
          )?.reason,
      ),
    ),
  ];
  const cniManaged = withCIDRs.length > 0 && cniReasons.every((r) => r !== undefined);
  if (cniManaged && ('error' in outcome || outcome.routes.length === 0)) {
    return pass(
      'routes',
      `the route controller is not in use: no route of this cluster in the cloud, and the CNI sets up every Node's Pod network (${cniReasons.join(', ')})`,
    );
  }
  if ('error' in outcome) {
    return fail(
      'routes',
      `listing the cloud's routes failed: ${outcome.error}`,
      'fix the credentials, or [Route] router-id / the route table',
    );
  }
  if (withCIDRs.length === 0)
    return pass(
      'routes',
      `no Node has podCIDRs; the cloud holds ${outcome.routes.length} route(s) of this cluster`,
    );
  const plan = planRoutes(withCIDRs, outcome.routes, []);
  const missing = plan.create.map((c) => `${c.node} ${c.destinationCIDR}`);
  const ambiguous = plan.ambiguous.map((a) => `${a.address} (${a.nodes.join(', ')})`);
  if (missing.length) {
    return withItems(
      fail(
        'routes',
        `${missing.length} Pod CIDR(s) have no route in the cloud: ${names(missing)}`,
        "run `ccm run` with the route controller and --cluster-cidr <the cluster's Pod CIDR>; its log and the Nodes' FailedToCreateRoute events say why a route is not created",
      ),
      missing,
    );
  }
  if (ambiguous.length) {
    return withItems(
      fail(
        'routes',
        `${ambiguous.length} InternalIP(s) are reported by several Nodes, so ccm creates no route via them and cannot tell whose their routes are: ${names(ambiguous)}`,
        "correct the Nodes' addresses: delete the Node that is not the machine with that address",
      ),
      ambiguous,
    );
  }
  if (unavailable.length) {
    return withItems(
      warn(
        'routes',
        `every route exists, but ${unavailable.length} Node(s) are still NetworkUnavailable: ${names(unavailable)}`,
        'the route controller sets it False on its next pass (--route-reconciliation-period); check that `ccm run` is running and leading',
      ),
      unavailable,
    );
  }
  return pass('routes', `all ${withCIDRs.length} Node(s) with podCIDRs have their routes`);
}

/** An official controller's workload as doctor found it. */
export interface OfficialWorkload {
  controller: string;
  kind: string;
  namespace: string;
  name: string;
  replicas: number;
}

/** A Lease that is held and renewed within its duration. */
function alive(lease: LeaseInfo | undefined, now: Date): boolean {
  if (!lease?.holderIdentity || !lease.renewTime) return false;
  return (now.getTime() - Date.parse(lease.renewTime)) / 1000 <= (lease.leaseDurationSeconds ?? 15);
}

/**
 * Two cloud controllers at once: ccm (its Pods, or its Lease held) beside an official controller whose
 * Deployment or DaemonSet still has replicas, or two Leases held at once (each controller electing on
 * its own name). k8s.io/cloud-provider (options/options.go) names every controller's Lease
 * `cloud-controller-manager` in kube-system, ccm's too: with the same name they take turns, never run
 * together, unless one runs with --leader-elect=false (DigitalOcean's published manifest does).
 */
export function checkOfficialController(
  workloads: readonly OfficialWorkload[],
  leases: readonly { name: string; info: LeaseInfo | undefined }[],
  ccm: { lease: string; running: boolean },
  now: Date,
): CheckResult {
  const running = workloads.filter((w) => w.replicas > 0);
  const held = leases.filter((l) => alive(l.info, now)).map((l) => l.name);
  const shared = ccm.lease === DEFAULT_LEASE_NAME;
  // On the shared Lease, with no ccm Pod and an official controller running, the holder is that
  // controller (both write hostname_uuid identities, so the holder cannot tell): not a sign of ccm.
  const ccmLeaseHeld = held.includes(ccm.lease) && !(shared && !ccm.running && running.length > 0);
  const otherLeases = held.filter((n) => n !== ccm.lease);
  const leaseNote = shared
    ? `ccm and the official controllers elect their leader on the same Lease, kube-system/${DEFAULT_LEASE_NAME} (k8s.io/cloud-provider's default): with leader election on, only its holder runs and the other waits, so they take turns unpredictably; an official controller run with --leader-elect=false (DigitalOcean's manifest) holds no Lease and runs regardless`
    : `ccm elects on Lease ${ccm.lease}, the official controllers on their own (${DEFAULT_LEASE_NAME} by default): each would lead its own election and both would run`;
  const switchOver =
    'scale the official controller to 0 (kubectl -n <namespace> scale deployment/<name> --replicas=0), then `ccm migrate --provider <cloud>` hands its load balancers to ccm';
  if (running.length > 0 && (ccm.running || ccmLeaseHeld)) {
    return withItems(
      warn(
        'official-controller',
        `ccm runs beside ${names(running.map((w) => `${w.controller} (${w.kind} ${w.namespace}/${w.name}, ${w.replicas} replica${w.replicas === 1 ? '' : 's'})`))}: two controllers manage the same Nodes and load balancers. ${leaseNote}`,
        switchOver,
      ),
      running.map((w) => `${w.namespace}/${w.name}`),
    );
  }
  if (ccmLeaseHeld && otherLeases.length > 0) {
    return warn(
      'official-controller',
      `two controller Leases are held at once: ${ccm.lease} (ccm) and ${otherLeases.join(', ')}: two controllers run. ${leaseNote}`,
      switchOver,
    );
  }
  if (running.length > 0) {
    return pass(
      'official-controller',
      `the official controller runs (${names(running.map((w) => `${w.namespace}/${w.name}`))}) and ccm does not: \`ccm migrate\` is the way over`,
    );
  }
  return pass('official-controller', 'no official cloud controller runs beside ccm');
}

/** How long before its expiry a CMON certificate is warned about. */
export const CMON_WARN_DAYS = 14;
const DAY_MS = 86_400_000;

/** The CMON client certificate's Secret as read: its certificate's dates, or why there is none. */
export type CmonSecretOutcome =
  | { absent: true; required: boolean }
  | { error: string }
  | { account: string; validFrom: Date; validUntil: Date };

const CMON_CREATE = 'ccm secret create --provider triton --cmon';

/**
 * The certificate `ccm secret create --cmon` wrote: expired (or not yet valid) fails, since CMON
 * refuses it (triton-cmon lib/common.js: a joyentCmon certificate's expiry is checked); within 14 days
 * of its expiry warns. Prometheus' Triton discovery ignores CMON's refusal, so nobody else says it.
 */
export function checkCmonCertificate(
  ref: { namespace: string; name: string },
  outcome: CmonSecretOutcome,
  now: Date,
  /** The Triton account ccm is configured with (its credentials), when known. */
  account?: string,
): CheckResult | undefined {
  const where = `Secret ${ref.namespace}/${ref.name}`;
  const create = `${CMON_CREATE} --namespace ${ref.namespace} --name ${ref.name}`;
  if ('absent' in outcome)
    return outcome.required
      ? fail('cmon-certificate', `${where} does not exist`, `make the CMON certificate: ${create}`)
      : undefined;
  if ('error' in outcome)
    return fail('cmon-certificate', `${where}: ${outcome.error}`, `make it again: ${create}`);
  // CMON takes the account from the certificate's CN (triton-cmon lib/common.js authenticationHandler)
  // and lists that account's machines: another account's certificate is accepted, and finds none of
  // this cluster's.
  if (account !== undefined && outcome.account !== account)
    return fail(
      'cmon-certificate',
      `the CMON certificate in ${where} is account ${outcome.account || '(none)'}'s, and ccm's Triton account is ${account}: CMON lists ${outcome.account || 'no'} account's machines to it, none of this cluster's`,
      `make one with the credentials of account ${account}: ${create}`,
    );
  const until = outcome.validUntil.toISOString();
  const what = `the CMON certificate in ${where} (account ${outcome.account})`;
  if (outcome.validFrom.getTime() > now.getTime())
    return fail(
      'cmon-certificate',
      `${what} is not valid before ${outcome.validFrom.toISOString()}, and CMON refuses it until then`,
      `check this machine's clock, or make a new one: ${create}`,
    );
  const left = outcome.validUntil.getTime() - now.getTime();
  if (left <= 0)
    return fail(
      'cmon-certificate',
      `${what} expired ${until}: CMON refuses it, and Prometheus scrapes nothing`,
      `make a new one: ${create}`,
    );
  const days = Math.floor(left / DAY_MS);
  if (left < CMON_WARN_DAYS * DAY_MS)
    return warn(
      'cmon-certificate',
      `${what} expires ${until}, in ${days === 0 ? 'less than a day' : `${days} day(s)`}`,
      `make a new one before then: ${create}`,
    );
  return pass('cmon-certificate', `${what} expires ${until}, in ${days} days`);
}

/**
 * CMON's own server certificate as Prometheus (Go) will judge it: ccm's Node accepted a name that is
 * only in the CN, which Go refuses, so the scrape job finds nothing (warn, with the flag it needs).
 */
export function checkCmonServerCertificate(problem: string | undefined): CheckResult | undefined {
  if (!problem) return undefined;
  const [what, fix] = problem.split('; print the job with ');
  return warn(
    'cmon-server-certificate',
    what ?? problem,
    fix ? `print the job with ${fix}` : 'ccm manifests --cmon --cmon-insecure-skip-verify',
  );
}

export type CmonAccessOutcome =
  | { instances: number; where: string; serverNameProblem?: string }
  | { error: string; why: 'unreachable' | 'refused' | 'other' };

/** Whether CMON's /v1/discover accepts the certificate (200 with the account's instances). */
export function checkCmonAccess(
  outcome: CmonAccessOutcome,
  ref: { namespace: string; name: string },
): CheckResult {
  if ('instances' in outcome)
    return pass(
      'cmon-access',
      `${outcome.where} accepts the certificate of Secret ${ref.namespace}/${ref.name}`,
    );
  if (outcome.why === 'refused')
    return fail(
      'cmon-access',
      `CMON refuses the certificate of Secret ${ref.namespace}/${ref.name}: ${outcome.error}`,
      `make a new one with a key the account has (or a sub-user's in the account's administrator role): ${CMON_CREATE} --namespace ${ref.namespace} --name ${ref.name}`,
    );
  if (outcome.why === 'unreachable')
    return fail(
      'cmon-access',
      `cannot reach CMON, so the certificate was not checked: ${outcome.error}`,
      "check --cmon-url (default: CloudAPI's cmon service), --cmon-ca, and this machine's DNS, network and proxy",
    );
  return fail(
    'cmon-access',
    `CMON could not be checked: ${outcome.error}`,
    'see the message; --cmon-url names CMON',
  );
}

/**
 * No CMON certificate Secret of the default name in any namespace. Said, not silent: with the CMON
 * groups kept (the Nodes' machines are tagged for Prometheus) nothing can scrape them, a warning; else
 * CMON metrics are simply not set up, and the row says how to.
 */
export function checkCmonNoSecret(name: string, groups: CmonClusterGroups | undefined): CheckResult {
  const none = `no CMON certificate: no kubernetes.io/tls Secret ${name} in any namespace (--cmon-secret names one of another name)`;
  const make = `make it in Prometheus' namespace, where its Pod can mount it: ${CMON_CREATE} --namespace <Prometheus' namespace>`;
  if (groups)
    return warn(
      'cmon-certificate',
      `${none}, while ccm keeps the CMON ${groups.names.length === 1 ? 'group' : 'groups'} ${groups.names.join(', ')} on the Nodes' machines (${groups.spec}, ${groups.from}): Prometheus cannot scrape them without one`,
      make,
    );
  return pass('cmon-certificate', `${none}: CMON metrics are not set up; to set them up, ${make}`);
}

/** The Secrets of all namespaces could not be listed (RBAC): only the default one was read. */
export function checkCmonSecretsUnlisted(
  error: string,
  fallback: { namespace: string; name: string },
): CheckResult {
  return warn(
    'cmon-certificate',
    `cannot list Secrets in all namespaces to find the CMON certificate (${error}): only Secret ${fallback.namespace}/${fallback.name} was looked at`,
    `pass --cmon-secret <Prometheus' namespace>/${fallback.name}, or run doctor as a user who may list Secrets`,
  );
}

/**
 * Whether Prometheus will label each Node's CMON series with the Node's name: the job makes `node` of
 * the machine's name, lowercased (src/providers/triton/cmon.ts nodeLabelProblems says when not).
 */
export function checkCmonNodeNames(
  problems: readonly { node: string; note: string }[],
  total: number,
): CheckResult {
  if (problems.length === 0)
    return pass(
      'cmon-node-names',
      `each of the ${total} Node(s) is named as its machine (lowercased): Prometheus' CMON series carry node="<the Node's name>"`,
    );
  const shown = problems.slice(0, 3).map((p) => `${p.node}: ${p.note}`);
  const more = problems.length > 3 ? `; and ${problems.length - 3} more` : '';
  return withItems(
    warn(
      'cmon-node-names',
      `${problems.length} of ${total} Node(s) will not be node="<their name>" in Prometheus' CMON series. ${shown.join('; ')}${more}`,
      "rename the machines to their Nodes' names (CloudAPI RenameMachine), names that differ beyond case; until then, query these Nodes by instance (the machine UUID)",
    ),
    problems.map((p) => p.node),
  );
}

/** The cluster's CMON groups as ccm keeps them (its --cmon-groups), and where that was read. */
export interface CmonClusterGroups {
  /** The groups ccm keeps on the Nodes' machines: the cluster's, and/or its role groups. */
  names: string[];
  /** The --cmon-groups value, and where it was found ("--cmon-groups of DaemonSet kube-system/ccm"). */
  spec: string;
  from: string;
}

/** Which of the cluster's Nodes' machines CMON's /v1/discover lists to the certificate. */
export interface CmonTargetsOutcome {
  account: string;
  /** The certificate's Secret. */
  secret: { namespace: string; name: string };
  /** The Nodes with a Triton provider ID, with their machine UUIDs (lower case). */
  nodes: readonly { name: string; machine: string }[];
  /** The cluster's groups, asked for; absent: ccm keeps none (no --cmon-groups), so none was asked. */
  groups?: CmonClusterGroups;
  /** The machine UUIDs (lower case) /v1/discover lists, with `groups` when known. */
  listed: ReadonlySet<string>;
  /** With groups, when some Node's machine was not listed: the account's whole list, without groups. */
  listedWithoutGroups?: ReadonlySet<string>;
}

/**
 * What Prometheus' job will find, as CMON answers it: the job of `ccm manifests --cmon` asks
 * /v1/discover for the cluster's group, so a Node whose machine CMON does not list there is no
 * target. None of them: fail (the job scrapes nothing). Some: warn, naming them. Without a group that
 * ccm keeps, the job cannot find them even when CMON lists them: warn (the machines are reachable,
 * and a job of another's making may not ask for a group), and fail only when CMON lists none at all.
 */
export function checkCmonTargets(outcome: CmonTargetsOutcome): CheckResult {
  const { nodes, groups, listed, account } = outcome;
  const to = `to the certificate of Secret ${outcome.secret.namespace}/${outcome.secret.name}`;
  const asked = `${
    groups
      ? `${groups.names.length === 1 ? 'group' : 'groups'} ${groups.names.join(', ')} (${groups.spec}, ${groups.from})`
      : `account ${account}`
  } ${to}`;
  if (nodes.length === 0)
    return pass(
      'cmon-targets',
      `CMON lists ${listed.size} instance(s) in ${asked}; no Node has a Triton provider ID yet to look for among them`,
    );
  const missing = nodes.filter((n) => !listed.has(n.machine));
  const found = nodes.length - missing.length;
  if (!groups) {
    if (found === 0)
      return withItems(
        fail(
          'cmon-targets',
          `CMON lists none of the ${nodes.length} Node(s)' machines of account ${account} ${to} (${listed.size} instance(s) in all): it discovers only running machines of the certificate's account, so Prometheus scrapes none of them`,
          'check that the machines run and are account ' +
            `${account}'s: \`ccm nodes list --provider triton\` shows each Node's machine and its state`,
        ),
        missing.map((n) => n.name),
      );
    return withItems(
      warn(
        'cmon-targets',
        `ccm keeps no CMON group on the Nodes' machines (no --cmon-groups given here, on ccm's DaemonSet, in its credentials Secret or TRITON_CMON_GROUPS): CMON lists ${found} of ${nodes.length} Node(s)' machines of the account ${to}, but the job of \`ccm manifests --cmon\` asks for the cluster's group, which ccm does not keep on them, so it finds none unless another puts it there`,
        'run ccm with --cmon-groups cluster (or the key cmon-groups of its credentials Secret), then check again; when ccm runs outside the cluster, give doctor the same --cmon-groups',
      ),
      missing.map((n) => n.name),
    );
  }
  if (missing.length === 0)
    return pass(
      'cmon-targets',
      `CMON lists all ${nodes.length} Node(s)' machines in ${asked}: the job of \`ccm manifests --cmon\` finds them`,
    );
  const all = outcome.listedWithoutGroups;
  const untagged = all ? missing.filter((n) => all.has(n.machine)).map((n) => n.name) : [];
  const unlisted = missing.filter((n) => !untagged.includes(n.name)).map((n) => n.name);
  const why = [
    ...(untagged.length > 0
      ? [
          `${names(untagged)}: listed without the group, so their machines lack it in triton.cmon.groups (ccm run adds it within a sweep after the Node has its provider ID, when it runs with the same --cmon-groups)`,
        ]
      : []),
    ...(unlisted.length > 0
      ? [`${names(unlisted)}: not listed at all (CMON lists only running machines of account ${account})`]
      : []),
  ].join('; ');
  const fix = `ccm run (or \`ccm nodes init --provider triton --cmon-groups ${groups.spec}\`) keeps the groups on the machines of the Nodes it manages: look for "instance groups" in its log, and \`ccm nodes init --provider triton --cmon-groups ${groups.spec} --dry-run\` shows what it would write; a stopped machine is no target until it runs`;
  const list = missing.map((n) => n.name);
  if (found === 0)
    return withItems(
      fail(
        'cmon-targets',
        `CMON lists none of the ${nodes.length} Node(s)' machines in ${asked}: Prometheus' job finds no target. ${why}`,
        fix,
      ),
      list,
    );
  return withItems(
    warn(
      'cmon-targets',
      `CMON lists ${found} of ${nodes.length} Node(s)' machines in ${asked}: Prometheus' job does not find the others. ${why}`,
      fix,
    ),
    list,
  );
}
