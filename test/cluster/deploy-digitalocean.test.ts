/**
 * The operator's path in a real kubeadm cluster, with the DigitalOcean simulator as the cloud (on
 * loopback; ccm's Pods use hostNetwork): prepare, secret create, manifests | kubectl apply with the
 * image `npm run image` built and imported into containerd, then what a running controller meets —
 * a rollout, the leader's Pod deleted, the CronJob, a LoadBalancer Service, `ccm doctor` healthy and
 * broken, and a Node whose instance is gone.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import {
  ccmPods,
  deployCcm,
  doctor as doctorOf,
  lease,
  type NodeObject,
  NS,
  prepareDigitalOceanCluster,
  rolloutStatus as rolloutStatusOf,
  setArg,
} from './digitalocean.js';
import {
  CCM_IMAGE,
  hostSystemctl,
  kubectl,
  kubectlJson,
  leaveCluster,
  NODE_NAME,
  nodeReady,
  recordFigure,
  runCronJobNow,
  saveCcmLogs,
  until,
} from './harness.js';

let sim: DigitalOceanSimulator;
let dropletId: number;
let workload: string;

const doctor = () => doctorOf(sim);
const rolloutStatus = () => rolloutStatusOf(workload);

beforeAll(async () => {
  ({ sim, dropletId } = await prepareDigitalOceanCluster());
});

afterAll(async () => {
  await saveCcmLogs('deploy-digitalocean').catch(() => undefined);
  await sim?.stop();
  await leaveCluster();
});

describe('ccm deployed in a real kubeadm cluster (DigitalOcean)', () => {
  it('secret create, manifests | kubectl apply: the Pod runs and initialises the Node', async () => {
    const deployed = await deployCcm(sim, dropletId);
    workload = deployed.workload;
    recordFigure('apply → Node initialised (DigitalOcean)', deployed.seen);
    const node = await kubectlJson<NodeObject>(['get', 'node', NODE_NAME]);
    expect(node.metadata.labels['topology.kubernetes.io/region']).toBe('nyc3');
    expect(node.status.addresses).toContainEqual({ type: 'ExternalIP', address: '203.0.113.10' });
  });

  it('ccm doctor exits 0 on the healthy cluster', async () => {
    const run = await doctor();
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
  });

  it('a LoadBalancer Service gets its ingress, though the only Node is excluded from load balancers', async () => {
    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: 'default' },
        spec: { type: 'LoadBalancer', selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
      }),
    });
    const ip = await until(
      'the Service ingress',
      async () =>
        (await kubectl(['get', 'service', 'web', '-o', 'jsonpath={.status.loadBalancer.ingress[0].ip}']))
          .stdout || undefined,
      180_000,
    );
    expect(ip).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    expect([...sim.loadBalancers.values()][0]?.region).toMatchObject({ slug: 'nyc3' });
  });

  it("the CronJob's Job succeeds", async () => {
    expect(await runCronJobNow('nodes-init-now')).toMatchObject({ succeeded: 1 });
  });

  it('a changed environment rolls out on one control-plane Node, and the Lease passes to the new Pod', async () => {
    const before = await lease();
    const t0 = Date.now();
    await kubectl(['-n', NS, 'set', 'env', workload, 'CCM_ROLLOUT=1']);
    const status = await rolloutStatus();
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
    const rolled = (Date.now() - t0) / 1000;
    const after = await until('the Lease held by a new identity', async () => {
      const spec = await lease();
      return spec.holderIdentity && spec.holderIdentity !== before.holderIdentity ? spec : undefined;
    });
    recordFigure('rollout of a changed environment (one control-plane Node)', {
      'rollout status': rolled,
      'Lease held again': (Date.now() - t0) / 1000,
    });
    expect(after.leaseTransitions ?? 0).toBeGreaterThan(before.leaseTransitions ?? 0);
    const pods = (await ccmPods()).filter((p) => !p.metadata.deletionTimestamp);
    expect(pods).toHaveLength(1);
  });

  it('in a Pod whose `kubernetes` Service does not answer, ccm names that Service, not --kubeconfig', async () => {
    // The test cluster's OUTPUT chain rejects the Service CIDR but the one DNAT of 10.96.0.1:443.
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'no-service', namespace: NS },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            restartPolicy: 'Never',
            serviceAccountName: 'ccm-nodes-init',
            hostNetwork: true,
            tolerations: [{ operator: 'Exists' }],
            containers: [
              {
                name: 'ccm',
                image: CCM_IMAGE,
                imagePullPolicy: 'Never',
                args: ['nodes', 'list', '--provider', 'digitalocean', '--cloud-api-url', sim.url],
                env: [
                  { name: 'KUBERNETES_SERVICE_HOST', value: '10.96.0.1' },
                  { name: 'KUBERNETES_SERVICE_PORT', value: '444' },
                ],
              },
            ],
          },
        },
      },
    };
    await kubectl(['apply', '-f', '-'], { input: JSON.stringify(job) });
    await until('the Job to fail', async () => {
      const status = await kubectlJson<{ status: { failed?: number } }>([
        '-n',
        NS,
        'get',
        'job',
        'no-service',
      ]);
      return status.status.failed === 1;
    });
    const logs = (await kubectl(['-n', NS, 'logs', 'job/no-service'])).stdout;
    expect(logs).toContain('`kubernetes` Service');
    expect(logs).not.toContain('--kubeconfig');
    expect(logs).not.toMatch(/^\s+at /m);
    await kubectl(['-n', NS, 'delete', 'job', 'no-service', '--wait=false']);
  });

  it("deleting the leader's Pod moves the Lease", async () => {
    const before = await lease();
    const [pod] = await ccmPods();
    const t0 = Date.now();
    await kubectl(['-n', NS, 'delete', 'pod', pod?.metadata.name as string, '--wait=false']);
    await until('the Lease held by a new identity', async () => {
      const spec = await lease();
      return spec.holderIdentity && spec.holderIdentity !== before.holderIdentity;
    });
    recordFigure("leader's Pod deleted → Lease held again", { seconds: (Date.now() - t0) / 1000 });
    expect((await rolloutStatus()).exitCode).toBe(0);
  });

  it('ccm doctor names the cause: the image missing, the Pods placed nowhere, the kubelet not external', async () => {
    const row = (out: string) =>
      /^status=\S+ check=controller-pods result="([^"]*(?:\\"[^"]*)*)"/m.exec(out)?.[1] ?? '';
    await kubectl(['-n', NS, 'set', 'image', workload, `ccm=${CCM_IMAGE}-missing`]);
    const missing = await until('doctor to name the missing image', async () => {
      const run = await doctor();
      return run.exitCode !== 0 && row(run.stdout).includes(`${CCM_IMAGE}-missing`) ? run : undefined;
    });
    expect(row(missing.stdout)).toMatch(/cannot start on Node ccm-cp-1: ErrImageNeverPull/);
    await kubectl(['-n', NS, 'rollout', 'undo', workload]);
    expect((await rolloutStatus()).exitCode).toBe(0);

    const nowhere = { spec: { template: { spec: { nodeSelector: { 'ccm.test/nowhere': 'true' } } } } };
    await kubectl(['-n', NS, 'patch', workload, '--type=merge', '-p', JSON.stringify(nowhere)]);
    const placed = await until('doctor to name the placement', async () => {
      const run = await doctor();
      return run.exitCode !== 0 && row(run.stdout).includes('runs on no Node') ? run : undefined;
    });
    expect(row(placed.stdout)).toContain('node selector ccm.test/nowhere=true');
    await kubectl(['-n', NS, 'rollout', 'undo', workload]);
    expect((await rolloutStatus()).exitCode).toBe(0);

    // The kubelet restarted without the flag: the Node object still looks initialised.
    const flags = '/var/lib/kubelet/kubeadm-flags.env';
    const prepared = readFileSync(flags, 'utf8');
    writeFileSync(flags, prepared.replace(' --cloud-provider=external', ''));
    await hostSystemctl('restart', 'kubelet');
    const plain = await doctor();
    expect(plain.exitCode).not.toBe(0);
    expect(plain.stdout).toMatch(
      /check=kubelet-local result="the kubelet on this host \(pid \d+\) runs without --cloud-provider/,
    );
    writeFileSync(flags, prepared);
    await hostSystemctl('restart', 'kubelet');
    await until('doctor to pass again', async () => (await doctor()).exitCode === 0);
  });

  it('a Node whose instance is gone and whose kubelet stopped becomes NotReady, and ccm deletes it', {
    timeout: 600_000,
  }, async () => {
    // A short grace period, as an operator would set it through the workload's args.
    await setArg(workload, 'deletion-grace-period', '0s');
    expect((await rolloutStatus()).exitCode).toBe(0);
    await until('a leader', async () => (await lease()).holderIdentity);

    // A second machine of the cluster keeps the listing credible: ccm never deletes on a listing that
    // holds none of the cluster's instances (src/controllers/lifecycle.ts).
    const [other] = sim.addDroplets({ name: 'ccm-worker-2', privateIP: '10.233.0.2' });
    await kubectl(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Node',
        metadata: { name: 'ccm-worker-2' },
        spec: { providerID: `digitalocean://${other?.id}` },
      }),
    });
    await hostSystemctl('stop', 'kubelet');
    sim.removeDroplet(dropletId);
    const t0 = Date.now();
    await until('the Node NotReady', async () => (await nodeReady()) !== 'True', 180_000);
    const notReady = (Date.now() - t0) / 1000;
    await until(
      'the Node deleted',
      async () => (await kubectl(['get', 'node', NODE_NAME], { reject: false })).stderr.includes('NotFound'),
      240_000,
    );
    recordFigure('kubelet stopped and instance gone → Node deleted', {
      NotReady: notReady,
      deleted: (Date.now() - t0) / 1000,
    });
  });
});

conformsToDigitalOceanOpenApi();
