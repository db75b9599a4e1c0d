/**
 * `ccm manifests --cloud-api-url` (and every other flag it takes) is not dropped: the built CLI's
 * output, applied to the real kube-apiserver, carries the DigitalOcean simulator's URL in the
 * DaemonSet and the CronJob as the server stores them, and each pod's own arguments then reach that
 * API: the DaemonSet's `ccm run` (as its ServiceAccount) and the CronJob's `ccm nodes init` both
 * initialise a Node from the simulator's droplets, with no DO_OVERRIDE_URL anywhere. Flags that mean
 * nothing in a pod are refused in one line, exit 2.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppsV1Api, BatchV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DigitalOceanSimulator } from '../clouds/digitalocean/server.js';
import { createNodes, fixtureClient } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { ccm } from '../helpers/cli.js';
import { conformsToDigitalOceanOpenApi } from '../helpers/openapi.js';
import { until } from '../helpers/run.js';
import { type ManifestDoc, ServiceAccountRun } from '../helpers/service-account-run.js';

const NS = 'kube-system';
const IMAGE = ['--image', 'registry.example.com/ccm:0.1.0'];

let cp: ControlPlane;
let sim: DigitalOceanSimulator;
let run: ServiceAccountRun;
let dir: string;

beforeAll(async () => {
  [cp, sim] = await Promise.all([startControlPlane(), DigitalOceanSimulator.start()]);
  run = new ServiceAccountRun(cp, NS);
  dir = mkdtempSync(join(tmpdir(), 'ccm-manifests-flags-'));
});
afterAll(async () => {
  await run?.stop();
  await Promise.all([cp?.stop(), sim?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});
afterEach((ctx) => {
  run.printIfFailed(ctx);
});

const argsOf = (spec: { containers?: { args?: string[] }[] } | undefined) =>
  spec?.containers?.[0]?.args ?? [];

describe('ccm manifests --cloud-api-url', () => {
  it("reaches the DaemonSet's `ccm run` and the CronJob's `ccm nodes init`, which both use it", async () => {
    const printed = await ccm(
      [
        'manifests',
        '--provider',
        'digitalocean',
        ...IMAGE,
        '--cronjob',
        '--cloud-api-url',
        sim.url,
        // The simulator answers plain http on this machine's loopback, as a proxy on a Node would.
        '--insecure-cloud-api',
        '--log-level',
        'debug',
        '--request-timeout',
        '45s',
      ],
      { DO_OVERRIDE_URL: undefined },
    );
    expect(printed.exitCode, printed.stderr).toBe(0);
    const docs = parseAllDocuments(printed.stdout).map((d) => d.toJS() as KubernetesObject) as ManifestDoc[];
    await run.apply({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'digitalocean', namespace: NS },
      stringData: { 'access-token': sim.token },
    } as KubernetesObject);
    await run.install(docs, dir, ['--node-monitor-period=200ms']);

    // As the API server stores them.
    const daemonSet = await fixtureClient(cp.kubeconfigPath, AppsV1Api).readNamespacedDaemonSet({
      name: 'ccm',
      namespace: NS,
    });
    const cronJob = await fixtureClient(cp.kubeconfigPath, BatchV1Api).readNamespacedCronJob({
      name: 'ccm-nodes-init',
      namespace: NS,
    });
    const nodesInit = argsOf(cronJob.spec?.jobTemplate.spec?.template.spec);
    for (const args of [argsOf(daemonSet.spec?.template.spec), nodesInit]) {
      expect(args).toContain(`--cloud-api-url=${sim.url}`);
      expect(args).toContain('--log-level=debug');
      expect(args).toContain('--request-timeout=45s');
    }

    // The DaemonSet's `ccm run`, its own arguments, as its ServiceAccount.
    const [first, second] = sim.addDroplets(
      { name: 'worker-1', privateIP: '10.114.0.2' },
      { name: 'worker-2', privateIP: '10.114.0.3' },
    );
    await createNodes(run.core, [{ name: 'worker-1' }]);
    await run.start();
    const providerID = await until(
      'worker-1 initialised from the simulator',
      async () => (await run.core.readNode({ name: 'worker-1' })).spec?.providerID,
      30_000,
    );
    expect(providerID).toBe(`digitalocean://${first?.id}`);
    await run.stop();

    // The CronJob's `ccm nodes init`, its own arguments (the kubeconfig of this machine added).
    await createNodes(run.core, [{ name: 'worker-2' }]);
    const pass = await ccm([...nodesInit, '--kubeconfig', cp.kubeconfigPath], { DO_OVERRIDE_URL: undefined });
    expect(pass.exitCode, pass.stderr).toBe(0);
    expect((await run.core.readNode({ name: 'worker-2' })).spec?.providerID).toBe(
      `digitalocean://${second?.id}`,
    );
    expect(sim.requestsTo('GET', '/v2/droplets').length).toBeGreaterThanOrEqual(2);
  }, 120_000);
});

describe('flags that mean nothing in a pod', () => {
  it.each([
    [
      ['--provider', 'digitalocean', '--kubeconfig', '/tmp/kubeconfig'],
      /^ccm: --kubeconfig does not apply to `ccm manifests`: .* give it to the kubectl that applies the output$/,
    ],
    [
      ['--provider', 'digitalocean', '--context', 'prod'],
      /^ccm: --context does not apply to `ccm manifests`/,
    ],
    [
      ['--provider', 'cloudlycke', '--cloud-config', 'inventory.yaml'],
      /^ccm: --cloud-config does not apply to `ccm manifests`: .*kubectl -n kube-system create configmap ccm-cloudlycke-config --from-file=config=inventory\.yaml$/,
    ],
    [
      ['--provider', 'openstack', '--cloud-config', 'cloud.conf'],
      /^ccm: --cloud-config does not apply .*ccm secret create --provider openstack --cloud-config cloud\.conf$/,
    ],
    [
      ['--provider', 'cloudlycke', '--cloud-api-url', 'https://x.example.com'],
      /^ccm: --cloud-api-url: the cloudlycke provider has no API URL/,
    ],
    [
      ['--provider', 'digitalocean', '--cloud-api-url', 'api.example.com'],
      /^ccm: --cloud-api-url: expected an http\(s\) URL \(e\.g\. https:\/\/api\.example\.com\), got "api\.example\.com"$/,
    ],
    [
      ['--provider', 'digitalocean', '--cloud-api-url', 'http://127.0.0.1:36173'],
      /^ccm: --cloud-api-url http:\/\/127\.0\.0\.1:36173 is plain http: .* the token unencrypted .* \(or add --insecure-cloud-api for a proxy you run on every Node\)$/,
    ],
  ])('%j: one line, exit 2, nothing printed', async (flags, message) => {
    const result = await ccm(['manifests', ...IMAGE, ...(flags as string[])]);
    expect(result).toMatchObject({ exitCode: 2, stdout: '' });
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr.trimEnd()).toMatch(message as RegExp);
  });
});

conformsToDigitalOceanOpenApi();
