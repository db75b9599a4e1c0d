/**
 * The Helm chart (charts/ccm) in the real kubeadm cluster, with the DigitalOcean simulator as the cloud
 * (on loopback; ccm's Pods use hostNetwork): `helm install` with the image `npm run image` built and
 * imported into containerd initialises the Node; `helm upgrade` to a Deployment of one replica with the
 * CronJob rolls the controller over, the Lease is held again and the CronJob's Job succeeds; `helm
 * uninstall` removes ccm's Pods and RBAC. Both pods call the simulator (cloudApiUrl on the Node's
 * loopback, plain http, so insecureCloudApi), never the real DigitalOcean API.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { ccm } from '../helpers/cli.js';
import { CHART, helm, valuesFile } from '../helpers/helm.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import {
  ccmPods,
  doEnv,
  lease,
  type NodeObject,
  NS,
  prepareDigitalOceanCluster,
  rolloutStatus,
  TAINT,
} from './digitalocean.js';
import {
  CCM_IMAGE,
  KUBECONFIG,
  kubectl,
  kubectlJson,
  leaveCluster,
  NODE_NAME,
  recordFigure,
  runCronJobNow,
  saveCcmLogs,
  until,
} from './harness.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

let sim: DigitalOceanSimulator;
let dropletId: number;

/** The chart's values: the imported image (never pulled), the simulator as the cloud. */
const values = (extra: Record<string, unknown> = {}) => ({
  provider: 'digitalocean',
  image: { repository: CCM_IMAGE.slice(0, CCM_IMAGE.lastIndexOf(':')), pullPolicy: 'Never' },
  cloudApiUrl: sim.url,
  insecureCloudApi: true,
  ...extra,
});

beforeAll(async () => {
  ({ sim, dropletId } = await prepareDigitalOceanCluster());
  expect(CCM_IMAGE).toBe(`localhost/ccm:${version}`);
});

afterAll(async () => {
  await saveCcmLogs('helm').catch(() => undefined);
  await sim?.stop();
  await leaveCluster();
});

describe('the Helm chart in a real kubeadm cluster (DigitalOcean)', () => {
  it('secret create, helm install: the Pod runs and initialises the Node', async () => {
    const secret = await ccm(
      ['secret', 'create', '--provider', 'digitalocean', '--cloud-api-url', sim.url],
      doEnv(sim),
    );
    expect(secret.exitCode, secret.stderr).toBe(0);
    const t0 = Date.now();
    const install = await helm(
      ['install', 'ccm', CHART, '--namespace', NS, '-f', valuesFile(values())],
      KUBECONFIG,
    );
    expect(install.exitCode, install.stderr).toBe(0);
    await until(
      'ccm Ready, the Node initialised, untainted, with its addresses',
      async () => {
        const [pod] = await ccmPods();
        const node = await kubectlJson<NodeObject>(['get', 'node', NODE_NAME]);
        return (
          (pod?.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false) &&
          node.spec.providerID === `digitalocean://${dropletId}` &&
          !(node.spec.taints ?? []).some((t) => t.key === TAINT) &&
          node.status.addresses.some((a) => a.type === 'ExternalIP')
        );
      },
      180_000,
    );
    recordFigure('helm install → Node initialised (DigitalOcean)', { seconds: (Date.now() - t0) / 1000 });
    const node = await kubectlJson<NodeObject>(['get', 'node', NODE_NAME]);
    expect(node.metadata.labels['topology.kubernetes.io/region']).toBe('nyc3');
    await until('a leader', async () => (await lease()).holderIdentity);
    expect((await rolloutStatus('daemonset.apps/ccm')).exitCode).toBe(0);
  });

  it("helm upgrade to a Deployment of one replica with the CronJob: the new Pod holds the Lease, the CronJob's Job succeeds", async () => {
    const before = await lease();
    const upgrade = await helm(
      [
        'upgrade',
        'ccm',
        CHART,
        '--namespace',
        NS,
        '-f',
        valuesFile(values({ replicas: 1, cronjob: { enabled: true } })),
      ],
      KUBECONFIG,
    );
    expect(upgrade.exitCode, upgrade.stderr).toBe(0);
    expect((await kubectl(['-n', NS, 'get', 'daemonset', 'ccm'], { reject: false })).stderr).toContain(
      'NotFound',
    );
    const status = await rolloutStatus('deployment.apps/ccm');
    expect(status.exitCode, status.stdout + status.stderr).toBe(0);
    await until("the Lease held by the Deployment's Pod", async () => {
      const spec = await lease();
      return spec.holderIdentity && spec.holderIdentity !== before.holderIdentity;
    });
    const pods = (await ccmPods()).filter((p) => !p.metadata.deletionTimestamp);
    expect(pods).toHaveLength(1);
    expect(await runCronJobNow('helm-nodes-init-now')).toMatchObject({ succeeded: 1 });
    await kubectl(['-n', NS, 'delete', 'job', 'helm-nodes-init-now', '--wait=false']);
  });

  it('helm uninstall removes the Pods and the RBAC; the Node stays initialised', async () => {
    const uninstall = await helm(['uninstall', 'ccm', '--namespace', NS, '--wait'], KUBECONFIG);
    expect(uninstall.exitCode, uninstall.stderr).toBe(0);
    await until('no ccm Pod', async () => (await ccmPods()).length === 0);
    expect((await kubectl(['get', 'clusterrole', 'system:ccm'], { reject: false })).stderr).toContain(
      'NotFound',
    );
    const node = await kubectlJson<NodeObject>(['get', 'node', NODE_NAME]);
    expect(node.spec.providerID).toBe(`digitalocean://${dropletId}`);
  });
});

conformsToDigitalOceanOpenApi();
