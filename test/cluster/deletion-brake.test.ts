/**
 * The deletion brake (issue 45, part 1) in the real kubeadm cluster, with ccm deployed as
 * docs/deploy.md says (its DaemonSet and the `nodes init` CronJob from `ccm manifests --cronjob`) and
 * the DigitalOcean simulator as the cloud: nine Nodes registered by hand beside the real one, each
 * with its droplet; six of the ten droplets vanish at once. The deployed ccm deletes none, says so on
 * each held Node, on /readyz?verbose (its Pod stays Ready) and in its metric; the CronJob's Job fails
 * with exit code 3 at once (podFailurePolicy); `ccm doctor` warns; a rollout keeps the hold; the
 * Secret's annotation releases exactly the held Nodes. The real Node keeps its droplet throughout.
 * The bare API server's version of the same: test/integration/deletion-brake-digitalocean.test.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import {
  ccmEndpoint,
  ccmPods,
  deployCcm,
  doctor,
  lease,
  metricsToken,
  type NodeObject,
  NS,
  prepareDigitalOceanCluster,
  rolloutStatus,
  setArg,
  TAINT,
} from './digitalocean.js';
import {
  kubectl,
  kubectlJson,
  leaveCluster,
  NODE_NAME,
  nodeReady,
  recordFigure,
  saveCcmLogs,
  until,
} from './harness.js';

const RELEASE_ANNOTATION = 'ccm.io/allow-mass-deletion';
/** The credentials Secret `ccm secret create` writes on DigitalOcean (the official controller's name). */
const SECRET = 'digitalocean';

let sim: DigitalOceanSimulator;
let dropletId: number;
let workload: string;
let token: string;
/** The hand-registered Nodes: name → droplet id. */
const workers = new Map<string, number>();
/** The Nodes whose droplets vanish, and those that keep theirs. */
let lost: string[] = [];
let kept: string[] = [];
let holdId = '';
/** The NodeDeletionHeld Events once the hold was told: [Node, count]. */
let told: Array<[string, number]> = [];

interface KubeEvent {
  type: string;
  reason: string;
  message: string;
  count?: number;
  metadata: { annotations?: Record<string, string> };
  involvedObject: { name: string };
  source?: { component?: string };
}

interface Job {
  status: {
    failed?: number;
    succeeded?: number;
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
  };
}

async function events(reason: string): Promise<KubeEvent[]> {
  return (
    await kubectlJson<{ items: KubeEvent[] }>([
      '-n',
      'default',
      'get',
      'events',
      '--field-selector',
      `reason=${reason}`,
    ])
  ).items;
}

async function nodeNames(): Promise<string[]> {
  return (await kubectlJson<{ items: NodeObject[] }>(['get', 'nodes'])).items
    .map((n) => n.metadata.name)
    .sort();
}

async function readyz(): Promise<{ status: number; body: string }> {
  return ccmEndpoint('/readyz?verbose');
}

async function heldMetric(): Promise<number | undefined> {
  const metrics = await ccmEndpoint('/metrics', token);
  expect(metrics.status, metrics.body).toBe(200);
  const line = metrics.body.split('\n').find((l) => l.startsWith('ccm_node_deletions_held '));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
}

/**
 * ccm's one Pod, Ready: what a Deployment or a DaemonSet judges a rollout by; its name and restarts,
 * for the caller to see it neither replaced nor restarted since. (A Pod may restart as it starts: its
 * port 10258 on the host is also bound by quickstart and docs-commands tests of other checkouts.)
 */
async function expectPodReady(): Promise<{ name: string; restarts: number }> {
  const pods = (await ccmPods()).filter((p) => !p.metadata.deletionTimestamp);
  expect(pods).toHaveLength(1);
  const [pod] = pods;
  expect(pod?.status.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  return { name: pod?.metadata.name ?? '', restarts: pod?.status.containerStatuses?.[0]?.restartCount ?? -1 };
}

function release(id: string): string {
  return `kubectl -n ${NS} annotate secret ${SECRET} ${RELEASE_ANNOTATION}=${id} --overwrite`;
}

const allNodes = () => [NODE_NAME, ...workers.keys()].sort();

beforeAll(async () => {
  ({ sim, dropletId } = await prepareDigitalOceanCluster());
  workload = (await deployCcm(sim, dropletId)).workload;
  // The hand-registered Nodes are minutes old when their droplets vanish; the default grace period
  // (5m, a Node younger is never deleted nor counted missing) would leave them out. As an operator
  // sets it: in the DaemonSet's and the CronJob's arguments.
  await setArg('cronjob/ccm-nodes-init', 'deletion-grace-period', '0s');
  await setArg(workload, 'deletion-grace-period', '0s');
  const rolled = await rolloutStatus(workload);
  expect(rolled.exitCode, rolled.stdout + rolled.stderr).toBe(0);
  await until('a leader', async () => (await lease()).holderIdentity);
  token = await metricsToken();
});

afterAll(async () => {
  await saveCcmLogs('deletion-brake').catch(() => undefined);
  await sim?.stop();
  await leaveCluster();
});

describe('the deletion brake in a real kubeadm cluster (DigitalOcean)', () => {
  it('nine Nodes registered by hand beside the real one are initialised by the deployed ccm', async () => {
    for (let i = 1; i <= 9; i++) {
      const name = `ccm-worker-${i}`;
      const [droplet] = sim.addDroplets({ name, privateIP: `10.233.1.${i}` });
      workers.set(name, droplet?.id as number);
      const now = new Date().toISOString();
      // As a kubelet with --cloud-provider=external registers one: tainted until ccm initialises it,
      // Ready once. No kubelet posts again, so kube-controller-manager marks it Unknown in a minute.
      await kubectl(['create', '-f', '-'], {
        input: JSON.stringify({
          apiVersion: 'v1',
          kind: 'Node',
          metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux' } },
          spec: { taints: [{ key: TAINT, value: 'true', effect: 'NoSchedule' }] },
          status: {
            conditions: [
              {
                type: 'Ready',
                status: 'True',
                reason: 'KubeletReady',
                message: 'kubelet is posting ready status',
                lastHeartbeatTime: now,
                lastTransitionTime: now,
              },
            ],
            addresses: [
              { type: 'InternalIP', address: `10.233.1.${i}` },
              { type: 'Hostname', address: name },
            ],
          },
        }),
      });
    }
    await until('every hand-registered Node initialised', async () => {
      const nodes = (await kubectlJson<{ items: NodeObject[] }>(['get', 'nodes'])).items;
      return (
        nodes.length === 10 &&
        nodes.every((n) => n.spec.providerID && !n.spec.taints?.some((t) => t.key === TAINT))
      );
    });
    const nodes = (await kubectlJson<{ items: NodeObject[] }>(['get', 'nodes'])).items;
    for (const node of nodes) {
      const id = node.metadata.name === NODE_NAME ? dropletId : workers.get(node.metadata.name);
      expect(node.spec.providerID).toBe(`digitalocean://${id}`);
    }
    expect(await nodeNames()).toEqual(allNodes());
  });

  it('6 of the 10 droplets vanish at once: nothing deleted; an Event on each held Node, the /readyz note with the Pod Ready, the metric', {
    timeout: 420_000,
  }, async () => {
    const pod = await expectPodReady();
    lost = [...workers.keys()].slice(0, 6);
    kept = [...workers.keys()].slice(6);
    expect(await heldMetric()).toBe(0);
    const t0 = Date.now();
    for (const name of lost) sim.removeDroplet(workers.get(name) as number);

    // The lifecycle controller lists once a minute while a Node is NotReady.
    const held = await until(
      'a NodeDeletionHeld Event on each of the six',
      async () => {
        const found = await events('NodeDeletionHeld');
        return found.length >= lost.length ? found : undefined;
      },
      240_000,
    );
    recordFigure('6 of 10 droplets gone → every NodeDeletionHeld Event (real cluster)', {
      seconds: (Date.now() - t0) / 1000,
    });
    expect(held.map((e) => e.involvedObject.name).sort()).toEqual([...lost].sort());
    holdId = held[0]?.metadata.annotations?.['ccm.io/deletion-hold'] ?? '';
    expect(holdId).toMatch(/^6-[0-9a-f]{8}$/);
    for (const event of held) {
      expect(event.type).toBe('Warning');
      expect(event.source?.component).toBe('cloud-node-lifecycle-controller');
      expect(event.metadata.annotations?.['ccm.io/deletion-hold']).toBe(holdId);
      expect(event.message).toContain(
        `Deletion held (hold ${holdId}): the instances of 6 of 10 Nodes (60%) are missing from the cloud listing, above --max-deletion-ratio 0.55`,
      );
      expect(event.message).toContain(release(holdId));
    }

    const ready = await readyz();
    expect(ready.status).toBe(200);
    expect(ready.body).toContain(
      `[+]deletion-brake ok: holding the deletion of 6 Nodes (hold ${holdId}): the instances of 6 of 10 Nodes (60%) are missing from the cloud listing, above --max-deletion-ratio 0.55; release: ${release(holdId)}`,
    );
    expect(await heldMetric()).toBe(6);

    // Two more listings and several readiness probes later: still nothing deleted, the same Pod Ready
    // and never restarted, its rollout complete, one log line and one Event per held Node.
    await sleep(130_000);
    expect(await nodeNames()).toEqual(allNodes());
    expect(await events('DeletingNode')).toEqual([]);
    expect(await expectPodReady()).toEqual(pod);
    const status = await rolloutStatus(workload, '10s');
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
    told = held.map((e) => [e.involvedObject.name, e.count ?? 1]);
    expect(told.map(([, count]) => count)).toEqual(Array(6).fill(1));
    expect((await events('NodeDeletionHeld')).map((e) => [e.involvedObject.name, e.count ?? 1])).toEqual(
      told,
    );
    const logs = (await kubectl(['-n', NS, 'logs', pod.name])).stdout;
    expect(logs.split('\n').filter((l) => l.includes('holding every Node deletion'))).toHaveLength(1);
    expect(await heldMetric()).toBe(6);
    expect(await nodeReady()).toBe('True');
  });

  it("the CronJob's Job run by hand fails with exit code 3, ended at once by its podFailurePolicy", async () => {
    const job = 'nodes-init-held';
    await kubectl(['-n', NS, 'create', 'job', job, '--from=cronjob/ccm-nodes-init']);
    const failed = await until(
      `the Job ${job} to finish`,
      async () => {
        const { status } = await kubectlJson<Job>(['-n', NS, 'get', 'job', job]);
        return status.conditions?.some((c) => c.type === 'Failed' || c.type === 'Complete')
          ? status
          : undefined;
      },
      180_000,
    );
    expect(failed.succeeded ?? 0).toBe(0);
    // One Pod, not retried (backoffLimit 1 would have run a second): FailJob on exit code 3.
    expect(failed.failed).toBe(1);
    const condition = failed.conditions?.find((c) => c.type === 'Failed');
    expect(condition).toMatchObject({ status: 'True', reason: 'PodFailurePolicy' });
    expect(condition?.message).toMatch(/exit code 3/);
    const pods = await kubectlJson<{ items: unknown[] }>(['-n', NS, 'get', 'pods', '-l', `job-name=${job}`]);
    expect(pods.items).toHaveLength(1);
    const exit = await kubectl([
      '-n',
      NS,
      'get',
      'pods',
      '-l',
      `job-name=${job}`,
      '-o',
      'jsonpath={.items[0].status.containerStatuses[0].state.terminated.exitCode}',
    ]);
    expect(exit.stdout).toBe('3');
    const logs = (await kubectl(['-n', NS, 'logs', `job/${job}`])).stdout;
    expect(logs).toContain(holdId);
    expect(await nodeNames()).toEqual(allNodes());
  });

  it('ccm doctor against the cluster warns deletion-brake, naming the hold and its release', async () => {
    const run = await doctor(sim, ['--json']);
    const checks = (
      JSON.parse(run.stdout) as {
        checks: Array<{ id: string; status: string; message: string; fix?: string }>;
      }
    ).checks;
    const brake = checks.find((c) => c.id === 'deletion-brake');
    expect(brake, run.stdout + run.stderr).toMatchObject({ status: 'warn' });
    expect(JSON.stringify(brake)).toContain(holdId);
    expect(brake?.fix).toContain(`ccm nodes init --allow-mass-deletion ${holdId}`);
    expect(brake?.fix).toContain(release(holdId));
  });

  it('a rollout while deletions are held: nothing deleted, and the new Pod holds the same once it leads', {
    timeout: 420_000,
  }, async () => {
    const before = await lease();
    const [old] = await ccmPods();
    await kubectl(['-n', NS, 'rollout', 'restart', workload]);
    const status = await rolloutStatus(workload);
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
    await until('the Lease held by a new identity', async () => {
      const spec = await lease();
      return spec.holderIdentity && spec.holderIdentity !== before.holderIdentity;
    });
    const pod = await expectPodReady();
    expect(pod.name).not.toBe(old?.metadata.name);
    await until(
      'the new leader holding the same',
      async () => (await readyz()).body.includes(`holding the deletion of 6 Nodes (hold ${holdId})`),
      180_000,
    );
    expect(await heldMetric()).toBe(6);
    await sleep(30_000);
    expect(await nodeNames()).toEqual(allNodes());
    expect(await events('DeletingNode')).toEqual([]);
    expect(await expectPodReady()).toEqual(pod);
    expect(await heldMetric()).toBe(6);
    // The new leader read the hold's Events back: no held Node is told twice.
    expect((await events('NodeDeletionHeld')).map((e) => [e.involvedObject.name, e.count ?? 1])).toEqual(
      told,
    );
  });

  it('the Secret annotation releases the hold: exactly the held Nodes are deleted; the real Node is still there and Ready', {
    timeout: 420_000,
  }, async () => {
    await kubectl(['-n', NS, 'annotate', 'secret', SECRET, `${RELEASE_ANNOTATION}=${holdId}`, '--overwrite']);
    const t0 = Date.now();
    await until(
      'the six held Nodes deleted',
      async () => (await nodeNames()).length <= allNodes().length - lost.length,
      240_000,
    );
    recordFigure('Secret annotated → the six held Nodes deleted (real cluster)', {
      seconds: (Date.now() - t0) / 1000,
    });
    const rest = [NODE_NAME, ...kept].sort();
    expect(await nodeNames()).toEqual(rest);
    const deleting = await events('DeletingNode');
    expect(deleting.map((e) => e.involvedObject.name).sort()).toEqual([...lost].sort());
    for (const event of deleting)
      expect(event.metadata.annotations?.['ccm.io/deletion-release']).toBe(holdId);
    await until('the hold ended', async () => !(await readyz()).body.includes('holding'), 60_000);
    expect(await heldMetric()).toBe(0);

    // A listing later (and the CronJob's pass), nothing else: the three with droplets and the real Node stay.
    await sleep(70_000);
    expect(await nodeNames()).toEqual(rest);
    expect((await events('DeletingNode')).length).toBe(lost.length);
    expect(await nodeReady()).toBe('True');
    const job = 'nodes-init-released';
    await kubectl(['-n', NS, 'create', 'job', job, '--from=cronjob/ccm-nodes-init']);
    const done = await until(`the Job ${job} to finish`, async () => {
      const { status } = await kubectlJson<Job>(['-n', NS, 'get', 'job', job]);
      return status.succeeded || status.failed ? status : undefined;
    });
    expect(done).toMatchObject({ succeeded: 1 });
    expect(await nodeNames()).toEqual(rest);
    expect(await nodeReady()).toBe('True');
  });
});
