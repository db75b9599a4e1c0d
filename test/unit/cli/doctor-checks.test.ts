import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  checkApiServerFlags,
  checkApiServerUnreachable,
  checkControllerManager,
  checkControllerPods,
  checkKubeletsExternal,
  checkLease,
  checkLocalKubelet,
  checkRoutes,
  checkRoutesOff,
  checkUninitialized,
  leaderElectionOff,
  routesSetting,
} from '../../../src/cli/doctor-checks.js';
import type { PodInfo } from '../../../src/kube/diagnostics.js';
import type { SlimNode } from '../../../src/kube/slim-node.js';

/** kubeadm's own static Pod manifests (test/fixtures/cluster), as the API server shows their mirror Pods. */
function kubeadmPod(version: string, component: string): PodInfo {
  const path = `../../fixtures/cluster/kubeadm-v${version}/etc/kubernetes/manifests/${component}.yaml`;
  return parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as PodInfo;
}

function withArg(pod: PodInfo, arg: string): PodInfo {
  const copy = structuredClone(pod);
  copy.spec?.containers?.[0]?.command?.push(arg);
  return copy;
}

const v136 = { gitVersion: 'v1.36.3', major: '1', minor: '36' };
const now = new Date('2026-11-22T12:00:00Z');

describe('doctor checks on kubeadm manifests', () => {
  it('kube-controller-manager as kubeadm writes it has no --cloud-provider: ✗ with the file to fix', () => {
    const stock = checkControllerManager([kubeadmPod('1.36.3', 'kube-controller-manager')]);
    expect(stock).toMatchObject({ status: 'fail' });
    expect(stock.message).toContain('runs without --cloud-provider');
    expect(stock.fix).toContain('/etc/kubernetes/manifests/kube-controller-manager.yaml');
    const prepared = withArg(kubeadmPod('1.36.3', 'kube-controller-manager'), '--cloud-provider=external');
    expect(checkControllerManager([prepared]).status).toBe('pass');
    expect(checkControllerManager([]).status).toBe('warn');
  });

  it('kube-apiserver: ✗ with the removed --cloud-provider, ! below 1.33', () => {
    const stock = kubeadmPod('1.36.3', 'kube-apiserver');
    expect(checkApiServerFlags(v136, [stock]).status).toBe('pass');
    const old = withArg(stock, '--cloud-provider=external');
    expect(checkApiServerFlags(v136, [old])).toMatchObject({ status: 'fail' });
    expect(checkApiServerFlags({ gitVersion: 'v1.30.14', major: '1', minor: '30' }, []).status).toBe('warn');
  });
});

describe('doctor checks on time', () => {
  const node = (name: string, createdSecondsAgo: number) => ({
    metadata: { name, creationTimestamp: new Date(now.getTime() - createdSecondsAgo * 1000).toISOString() },
    spec: { taints: [{ key: 'node.cloudprovider.kubernetes.io/uninitialized', effect: 'NoSchedule' }] },
  });

  it('a tainted Node is new (!) for two minutes, then stuck (✗), and the oldest age is said', () => {
    expect(checkUninitialized([node('a', 30)], now).status).toBe('warn');
    const stuck = checkUninitialized([node('a', 30), node('b', 600)], now);
    expect(stuck).toMatchObject({ status: 'fail' });
    expect(stuck.message).toContain('2 Node(s) tainted uninitialized, the oldest for 10m: b, a');
  });

  it('a Lease renewed within its duration passes; older fails naming the holder', () => {
    const ref = { namespace: 'kube-system', name: 'cloud-controller-manager' };
    const renewedAgo = (s: number) => new Date(now.getTime() - s * 1000).toISOString();
    const lease = (s: number) => ({
      holderIdentity: 'ccm-1',
      leaseDurationSeconds: 15,
      renewTime: renewedAgo(s),
    });
    expect(checkLease(lease(5), ref, now).status).toBe('pass');
    expect(checkLease(lease(60), ref, now).message).toContain('held by ccm-1 but not renewed for 60s');
    expect(checkLease(undefined, ref, now).message).toContain(
      'no Lease kube-system/cloud-controller-manager',
    );
  });

  it('ccm deployed without leader election (--no-leader-elect, one replica) holds no Lease: that passes', () => {
    const ref = { namespace: 'kube-system', name: 'cloud-controller-manager' };
    const workload = { kind: 'Deployment' as const, namespace: 'kube-system', name: 'ccm' };
    expect(checkLease(undefined, ref, now, workload, true)).toMatchObject({
      status: 'pass',
      message:
        'Deployment kube-system/ccm runs ccm without leader election (--no-leader-elect): no Lease to hold',
    });
    expect(checkLease(undefined, ref, now, workload, false).status).toBe('fail');
    expect(leaderElectionOff(['run', '--provider=digitalocean', '--no-leader-elect'])).toBe(true);
    expect(leaderElectionOff(['run', '--leader-elect=false'])).toBe(true);
    expect(leaderElectionOff(['run', '--no-leader-elect', '--leader-elect'])).toBe(false);
    expect(leaderElectionOff(['run', '--leader-elect', '--leader-elect-resource-name=x'])).toBe(false);
  });
});

describe('the routes check', () => {
  const node = (n: number, network?: 'True' | 'False'): SlimNode => ({
    metadata: { name: `w${n}` },
    spec: { podCIDRs: [`10.244.${n}.0/24`] },
    status: {
      addresses: [{ type: 'InternalIP', address: `10.0.0.${n}` }],
      ...(network ? { conditions: [{ type: 'NetworkUnavailable', status: network, reason: 'x' }] } : {}),
    },
  });
  const route = (n: number) => ({
    name: `r${n}`,
    destinationCIDR: `10.244.${n}.0/24`,
    nextHop: `10.0.0.${n}`,
  });

  it('a Pod CIDR without its route fails, naming the Node and the CIDR, with the fix', () => {
    const result = checkRoutes([node(1, 'False'), node(2, 'True')], { routes: [route(1)] });
    expect(result).toMatchObject({ id: 'routes', status: 'fail', items: ['w2 10.244.2.0/24'] });
    expect(result.fix).toMatch(/--cluster-cidr/);
  });

  it('every route there but a Node still NetworkUnavailable: a warning', () => {
    const result = checkRoutes([node(1, 'True')], { routes: [route(1)] });
    expect(result).toMatchObject({ status: 'warn', items: ['w1'] });
  });

  it('all routes there: pass; a cloud without routes passes unless a Node waits for one', () => {
    expect(checkRoutes([node(1, 'False')], { routes: [route(1)] }).status).toBe('pass');
    expect(checkRoutes([node(1)], { unsupported: 'no API' }).status).toBe('pass');
    const stuck = checkRoutes([node(1, 'True')], { unsupported: 'no API' });
    expect(stuck).toMatchObject({ status: 'fail', items: ['w1'] });
    expect(checkRoutes([node(1)], { error: 'HTTP 500' })).toMatchObject({ status: 'fail' });
  });

  it('an InternalIP two Nodes report fails, naming the address and the Nodes, though every route they had is listed', () => {
    const copycat: SlimNode = {
      metadata: { name: 'w9' },
      spec: { podCIDRs: ['10.244.9.0/24'] },
      status: { addresses: [{ type: 'InternalIP', address: '10.0.0.1' }] },
    };
    const result = checkRoutes([node(1, 'False'), copycat], { routes: [route(1)] });
    expect(result).toMatchObject({ status: 'fail', items: ['10.0.0.1 (w1, w9)'] });
  });

  it('does not fail a healthy flannel cluster whose Nodes have podCIDRs and no cloud routes (the route controller not in use)', () => {
    const flannel = (name: string, cidr: string): SlimNode => ({
      metadata: { name, uid: `uid-${name}` },
      spec: { providerID: `cloudlycke://${name}`, podCIDRs: [cidr] },
      status: {
        addresses: [{ type: 'InternalIP', address: `192.168.56.${name.slice(2)}` }],
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'NetworkUnavailable', status: 'False', reason: 'FlannelIsUp' },
        ],
      },
    });
    const nodes = [flannel('vm11', '10.244.1.0/24'), flannel('vm12', '10.244.2.0/24')];
    const result = checkRoutes(nodes, { routes: [] });
    expect(result.status).not.toBe('fail');
    expect(result).toMatchObject({
      status: 'pass',
      message: expect.stringMatching(/not in use.*FlannelIsUp/),
    });
    // A host without `ip` (Cloudlycke) cannot list routes: on such a cluster that is no failure either.
    expect(checkRoutes(nodes, { error: 'the ip command (iproute2) is not installed' }).status).toBe('pass');
    // One Node left to the route controller (no CNI reason) keeps the check.
    expect(checkRoutes([...nodes, node(3)], { routes: [] }).status).toBe('fail');
  });
});

describe('the kubelet-external check reads Node objects', () => {
  const node = (name: string, spec: SlimNode['spec'] = {}): SlimNode => ({ metadata: { name }, spec });
  const taint = { key: 'node.cloudprovider.kubernetes.io/uninitialized', effect: 'NoSchedule' };

  it('a taint or a provider ID does not prove the running kubelet is external: it says so, and where to look', () => {
    // `cluster prepare --initialize-existing` taints Nodes whose kubelet may still run without the flag
    const marked = checkKubeletsExternal([
      node('old-1', { taints: [taint] }),
      node('cp-1', { providerID: 'x://1' }),
    ]);
    expect(marked.status).toBe('pass');
    expect(marked.message).not.toContain('every kubelet registered with --cloud-provider=external');
    expect(marked.message).toBe(
      "every Node is marked for an external cloud controller (uninitialized taint, provider ID or the kubelet's provided-node-ip); its running kubelet's flags are not on the Node: `ccm cluster prepare --dry-run` compares them on each host",
    );
  });

  it('a Node with no such mark: its kubelet is not external, and the fix keeps the Node', () => {
    const result = checkKubeletsExternal([node('legacy-1')]);
    expect(result.status).toBe('fail');
    expect(result.message).toBe(
      '1 Node(s) whose kubelet is not external (no uninitialized taint, no provider ID, no provided-node-ip: it registered without --cloud-provider=external): legacy-1',
    );
    expect(result.fix).toContain('`ccm cluster prepare --initialize-existing`');
  });
});

describe('the routes check follows ccm as deployed', () => {
  const deployed = (...args: string[]) => ({
    args: ['run', '--provider=openstack', ...args],
    where: 'DaemonSet kube-system/ccm',
  });

  it('the route controller runs only with --cluster-cidr, `route` in --controllers and routes not turned off', () => {
    expect(routesSetting(deployed('--controllers=*'))).toEqual({
      on: false,
      why: 'DaemonSet kube-system/ccm runs `ccm run` without --cluster-cidr',
    });
    expect(routesSetting(deployed('--cluster-cidr=10.244.0.0/16')).on).toBe(true);
    expect(routesSetting(deployed('--cluster-cidr', '10.244.0.0/16')).on).toBe(true);
    expect(routesSetting(deployed('--cluster-cidr=10.244.0.0/16', '--controllers=*,-route')).on).toBe(false);
    expect(routesSetting(deployed('--cluster-cidr=10.244.0.0/16', '--configure-cloud-routes=false')).on).toBe(
      false,
    );
    expect(routesSetting(deployed('--cluster-cidr=not-a-cidr')).on).toBe(false);
    expect(routesSetting(undefined).on).toBeUndefined();
  });

  it('off: passes, unless a Node is NetworkUnavailable, which nothing would clear; unknown: a warning', () => {
    const node = (name: string, unavailable?: 'True' | 'False'): SlimNode => ({
      metadata: { name, uid: `uid-${name}` },
      spec: { providerID: `openstack:///${name}`, podCIDRs: ['10.244.1.0/24'] },
      status: {
        conditions: unavailable ? [{ type: 'NetworkUnavailable', status: unavailable }] : [],
      },
    });
    const off = routesSetting(deployed());
    // A kubeadm cluster whose CNI never sets the condition, and no --cluster-cidr: nothing to miss.
    expect(checkRoutesOff([node('w1'), node('w2')], off)).toMatchObject({
      status: 'pass',
      message: expect.stringMatching(
        /^the route controller is off \(DaemonSet kube-system\/ccm runs `ccm run` without --cluster-cidr\)/,
      ),
    });
    expect(checkRoutesOff([node('w1', 'True')], off)).toMatchObject({ status: 'fail', items: ['w1'] });
    expect(checkRoutesOff([node('w1')], routesSetting(undefined)).status).toBe('warn');
  });
});

describe('the controller Pods check', () => {
  const pod = (name: string, status: PodInfo['status']): PodInfo => ({
    metadata: { name, namespace: 'kube-system' },
    spec: { containers: [{ name: 'ccm', args: ['run'] }] },
    status,
  });
  const running = pod('ccm-a', { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] });
  const pending = (name: string, message: string) =>
    pod(name, {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message }],
    });
  const anti =
    "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.";
  const ports =
    "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.";

  it('a replica Pending only because every Node it may run on has one already: ! (a standby without a Node)', () => {
    for (const message of [anti, ports]) {
      const result = checkControllerPods([running, pending('ccm-b', message)], 'kube-system', true);
      expect(result).toMatchObject({ status: 'warn', items: ['ccm-b'] });
      expect(result.message).toMatch(
        /^1 ccm Pod\(s\) running in kube-system; 1 Pending because every Node it may run on already runs one/,
      );
    }
  });

  it('still ✗ when none runs, or when another reason (a taint) keeps it from a Node', () => {
    expect(checkControllerPods([pending('ccm-b', anti)], 'kube-system', false).status).toBe('fail');
    const tainted =
      "0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 1 node(s) had untolerated taint {example.com/dedicated: }, 1 node(s) didn't match Pod's node affinity/selector.";
    expect(checkControllerPods([running, pending('ccm-b', tainted)], 'kube-system', true).status).toBe(
      'fail',
    );
  });
});

describe('the kubelet on the host doctor runs on', () => {
  it('is read from its command line: external passes, anything else names the fix; no kubelet, no check', () => {
    const kubelet = (...args: string[]) => [{ pid: 42, argv: ['/usr/bin/kubelet', ...args] }];
    expect(checkLocalKubelet(kubelet('--node-ip=10.0.0.1', '--cloud-provider=external'))?.status).toBe(
      'pass',
    );
    const plain = checkLocalKubelet(kubelet('--node-ip=10.0.0.1'));
    expect(plain?.status).toBe('fail');
    expect(plain?.message).toBe(
      'the kubelet on this host (pid 42) runs without --cloud-provider: Nodes it registers are never initialised, and it overwrites the addresses ccm sets',
    );
    expect(plain?.fix).toContain('ccm cluster prepare');
    expect(checkLocalKubelet([])).toBeUndefined();
  });
});

describe('what a static Pod status or a running phase hides', () => {
  it('a kubeadm Node with no kubelet running: ✗, not a missing row', () => {
    const result = checkLocalKubelet([], true);
    expect(result?.status).toBe('fail');
    expect(result?.message).toMatch(/^this host is a kubeadm Node .* but no kubelet runs here/);
    expect(checkLocalKubelet([], false)).toBeUndefined();
  });

  it('kube-controller-manager whose Lease went silent is not running, whatever its mirror Pod says', () => {
    const pod = {
      metadata: { name: 'kube-controller-manager-cp-1', namespace: 'kube-system' },
      spec: {
        containers: [
          {
            name: 'kube-controller-manager',
            command: ['kube-controller-manager', '--cloud-provider=external'],
          },
        ],
      },
      status: { phase: 'Running' },
    };
    const now = new Date('2026-11-28T08:00:00Z');
    const lease = (ago: number) => ({
      holderIdentity: 'cp-1_x',
      leaseDurationSeconds: 15,
      renewTime: new Date(now.getTime() - ago * 1000).toISOString(),
    });
    expect(checkControllerManager([pod], lease(5), now).status).toBe('pass');
    const silent = checkControllerManager([pod], lease(300), now);
    expect(silent.status).toBe('fail');
    expect(silent.message).toBe(
      "kube-controller-manager is not running: its Lease kube-system/kube-controller-manager was last renewed 300s ago (its Pod's status may be stale)",
    );
  });

  it('a crash-looping ccm Pod is not "running"; its fix is its logs, not a new deployment', () => {
    const result = checkControllerPods(
      [
        {
          metadata: { name: 'ccm-a', namespace: 'kube-system' },
          spec: { containers: [{ name: 'ccm', args: ['run'] }] },
          status: {
            phase: 'Running',
            containerStatuses: [
              {
                name: 'ccm',
                ready: false,
                restartCount: 3,
                state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s' } },
                lastState: { terminated: { exitCode: 2, message: 'ccm: the cloud refused the credentials' } },
              },
            ],
          },
        },
      ],
      'kube-system',
      false,
    );
    expect(result.status).toBe('fail');
    expect(result.message).toBe(
      'ccm Pod ccm-a is crash-looping (CrashLoopBackOff, 3 restarts, last exit 2): ccm: the cloud refused the credentials',
    );
    expect(result.fix).toContain('logs ccm-a --previous');
  });
});

describe('ccm deployed, but placed on no Node', () => {
  const daemonSet = (nodeSelector: Record<string, string>, affinityKeys: string[] = []) => ({
    kind: 'DaemonSet' as const,
    namespace: 'kube-system',
    name: 'ccm',
    replicas: 0,
    images: ['registry.example.com/ccm:0.1.0'],
    commandLines: [['run']],
    placement: { nodeSelector, affinityKeys },
  });

  it('a DaemonSet that no Node fits: names its placement, not "deploy them"', () => {
    const result = checkControllerPods([], 'kube-system', false, daemonSet({ 'ccm.test/nowhere': 'true' }));
    expect(result.status).toBe('fail');
    expect(result.message).toBe(
      'DaemonSet kube-system/ccm runs on no Node: no Node fits its node selector ccm.test/nowhere=true (and tolerates nothing more than it does)',
    );
    expect(result.fix).toContain('--node-selector');
    expect(
      checkControllerPods([], 'kube-system', false, daemonSet({}, ['node-role.kubernetes.io/control-plane']))
        .message,
    ).toContain('required node affinity on node-role.kubernetes.io/control-plane');
  });

  it('an image the Node does not have: named, with where it should come from', () => {
    const result = checkControllerPods(
      [
        {
          metadata: { name: 'ccm-x', namespace: 'kube-system' },
          spec: {
            nodeName: 'cp-1',
            containers: [{ name: 'ccm', image: 'localhost/ccm:0.1.0-missing', args: ['run'] }],
          },
          status: {
            phase: 'Pending',
            containerStatuses: [
              {
                name: 'ccm',
                ready: false,
                state: {
                  waiting: {
                    reason: 'ErrImageNeverPull',
                    message:
                      'Container image "localhost/ccm:0.1.0-missing" is not present with pull policy of Never',
                  },
                },
              },
            ],
          },
        },
      ],
      'kube-system',
      false,
    );
    expect(result.message).toMatch(
      /^ccm Pod ccm-x cannot start on Node cp-1: ErrImageNeverPull for localhost\/ccm:0\.1\.0-missing/,
    );
    expect(result.fix).toContain('ctr -n k8s.io images import');
  });

  it('a Deployment with replicas and no Pods: says what keeps them, never "deploy them"', () => {
    const deployment = { ...daemonSet({}), kind: 'Deployment' as const, replicas: 2 };
    const refused = checkControllerPods([], 'kube-system', false, {
      ...deployment,
      replicaFailure: 'pods "ccm-7c9d-" is forbidden: violates PodSecurity "restricted:latest"',
    });
    expect(refused.message).toBe(
      'Deployment kube-system/ccm makes no Pods: pods "ccm-7c9d-" is forbidden: violates PodSecurity "restricted:latest"',
    );
    const noControllerManager = checkControllerPods([], 'kube-system', false, deployment, false);
    expect(noControllerManager.message).toContain(
      'no kube-controller-manager, which makes them, seems to run',
    );
    expect(noControllerManager.fix).toMatch(/^start kube-controller-manager/);
    const otherwise = checkControllerPods([], 'kube-system', false, deployment, true);
    expect(otherwise.message).toBe('Deployment kube-system/ccm wants 2 Pod(s) and has none yet');
    expect(otherwise.fix).toContain('kubectl -n kube-system describe deployment ccm');
    for (const r of [refused, noControllerManager, otherwise]) expect(r.fix).not.toMatch(/deploy them/);
  });

  it('no workload at all: deploy it', () => {
    expect(checkControllerPods([], 'kube-system', false).fix).toMatch(/^deploy them/);
  });
});

describe('an API server that does not answer', () => {
  it('from a Pod, the fix is the `kubernetes` Service and what forwards it, not a kubeconfig flag', () => {
    const inPod = checkApiServerUnreachable('cannot reach …', true);
    expect(inPod.fix).toMatch(
      /`kubernetes` Service: make kube-proxy .* KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT/,
    );
    expect(inPod.fix).not.toContain('--kubeconfig');
    expect(checkApiServerUnreachable('cannot reach …').fix).toMatch(/^fix --kubeconfig \/ --context/);
  });
});
