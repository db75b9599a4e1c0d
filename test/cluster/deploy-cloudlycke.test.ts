/**
 * The operator's path in a real kubeadm cluster on Cloudlycke (an inventory file, as docs/deploy.md's
 * CronJob section shows): prepare with the provider (the kubelet gets its provider ID), the inventory
 * ConfigMap, manifests --cronjob | kubectl apply, the Node initialised, the CronJob's Job and a rollout.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ccm } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';
import {
  CCM_IMAGE,
  ccmWorkload,
  controllerManagerLeader,
  ensureImage,
  freshCluster,
  hostPath,
  KUBECONFIG,
  kubectl,
  kubectlJson,
  leaveCluster,
  NODE_IP,
  NODE_NAME,
  recordFigure,
  runCronJobNow,
  runningArgs,
  saveCcmLogs,
  until,
} from './harness.js';

const NS = 'kube-system';
const TAINT = 'node.cloudprovider.kubernetes.io/uninitialized';
let inventory: string;

interface NodeObject {
  metadata: { labels: Record<string, string> };
  spec: { providerID?: string; taints?: Array<{ key: string }> };
  status: { addresses: Array<{ type: string; address: string }> };
}

function env() {
  return { KUBECONFIG, PATH: hostPath() };
}

beforeAll(async () => {
  await freshCluster();
  await ensureImage();
  inventory = join(tempDir('ccm-cluster-inventory-'), 'inventory.yaml');
  writeFileSync(
    inventory,
    [
      'defaults: { type: vbox.vm.2g.2cpu, region: virtualbox, zone: virtualbox }',
      'instances:',
      `  - id: ${NODE_NAME}`,
      '    addresses:',
      `      - { type: InternalIP, address: ${NODE_IP} }`,
      '      - { type: ExternalIP, address: 203.0.113.20 }',
      '',
    ].join('\n'),
  );
});

afterAll(async () => {
  await saveCcmLogs('deploy-cloudlycke').catch(() => undefined);
  await leaveCluster();
});

describe('ccm deployed in a real kubeadm cluster (Cloudlycke)', () => {
  it('prepare with the provider gives the running kubelet its provider ID', async () => {
    const controllerManager = await controllerManagerLeader();
    const run = await ccm(
      [
        'cluster',
        'prepare',
        '--provider',
        'cloudlycke',
        '--cloud-config',
        inventory,
        '--yes',
        '--initialize-existing',
      ],
      env(),
      300_000,
    );
    expect(run.exitCode, run.stdout + run.stderr).toBe(0);
    await until('the kubelet running external with its provider ID', async () => {
      const [kubelet] = runningArgs('kubelet');
      const line = kubelet?.join(' ') ?? '';
      return (
        line.includes('--cloud-provider=external') && line.includes(`--provider-id=cloudlycke://${NODE_NAME}`)
      );
    });
    // As on a cluster prepared some time before ccm is applied: the restarted kube-controller-manager
    // (its DaemonSet controller) leads once the old instance's Lease has run out.
    await until(
      'the restarted kube-controller-manager leading',
      async () => (await controllerManagerLeader()) !== controllerManager,
    );
  });

  it('the inventory ConfigMap, manifests --cronjob | kubectl apply: the Node is initialised', async () => {
    await kubectl([
      '-n',
      NS,
      'create',
      'configmap',
      'ccm-cloudlycke-config',
      `--from-file=config=${inventory}`,
    ]);
    const manifests = await ccm(
      [
        'manifests',
        '--provider',
        'cloudlycke',
        '--cronjob',
        '--image',
        CCM_IMAGE,
        '--image-pull-policy',
        'Never',
      ],
      env(),
    );
    expect(manifests.exitCode, manifests.stderr).toBe(0);
    const t0 = Date.now();
    await kubectl(['apply', '--server-side', '-f', '-'], { input: manifests.stdout });
    const initialised = await until(
      'the Node initialised, untainted and given its addresses',
      async () => {
        const node = await kubectlJson<NodeObject>(['get', 'node', NODE_NAME]);
        // As upstream's cloud-node controller, the addresses are a status write after the taint is gone.
        return node.spec.providerID === `cloudlycke://${NODE_NAME}` &&
          !(node.spec.taints ?? []).some((t) => t.key === TAINT) &&
          node.status.addresses.some((a) => a.type === 'ExternalIP')
          ? node
          : undefined;
      },
      180_000,
    );
    recordFigure('apply → Node initialised (Cloudlycke)', { seconds: (Date.now() - t0) / 1000 });
    expect(initialised.metadata.labels['node.kubernetes.io/instance-type']).toBe('vbox.vm.2g.2cpu');
    expect(initialised.status.addresses).toContainEqual({ type: 'ExternalIP', address: '203.0.113.20' });
  });

  it("the CronJob's Job succeeds", async () => {
    expect(await runCronJobNow('nodes-init-now')).toMatchObject({ succeeded: 1 });
  });

  it('a rollout of a changed environment completes', async () => {
    const workload = await ccmWorkload();
    await kubectl(['-n', NS, 'set', 'env', workload, 'CCM_ROLLOUT=1']);
    const status = await kubectl(['-n', NS, 'rollout', 'status', workload, '--timeout=240s'], {
      reject: false,
      timeoutMs: 300_000,
    });
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
  });
});
