/**
 * `ccm run`'s controllers stage (startControllers) against the real kube-apiserver: the Nodes informer
 * it starts, and the selected controllers run in leadership terms that start and stop.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/cli/log.js';
import { CloudBudget, startCloud } from '../../src/cli/run/cloud.js';
import { startControllers } from '../../src/cli/run/controllers.js';
import type { Informers } from '../../src/cli/run/kube.js';
import { registerSlot, selectControllers } from '../../src/controllers/manager.js';
import { createMetrics } from '../../src/controllers/metrics.js';
import { loadKubeConfig } from '../../src/kube/config.js';
import { KubeTransport } from '../../src/kube/transport.js';
import { loadProvider } from '../../src/providers/registry.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { writeInventory } from '../helpers/inventory.js';
import { logSink, TEST_CONTROLLER_OPTIONS, until, untilInitialised } from '../helpers/run.js';

let cp: ControlPlane;
let api: CoreV1Api;
let transport: KubeTransport;
beforeAll(async () => {
  cp = await startControlPlane();
  api = fixtureApi(cp.kubeconfigPath);
  transport = new KubeTransport(loadKubeConfig({ kubeconfig: cp.kubeconfigPath, env: {} }));
});
afterAll(async () => {
  await transport?.close();
  await cp?.stop();
});

const UNINITIALIZED = 'node.cloudprovider.kubernetes.io/uninitialized';
const tainted = async (name: string) =>
  ((await api.readNode({ name })).spec?.taints ?? []).some((t) => t.key === UNINITIALIZED);

async function stage(controllers: string, instances: string[]) {
  const sink = logSink();
  const log = createLogger('debug', { destination: sink.stream, pretty: false });
  const metrics = createMetrics();
  const informers: Informers = {};
  const definition = await loadProvider('cloudlycke');
  const inventory = writeInventory(
    instances.map((id, i) => ({ id, addresses: [{ type: 'InternalIP', address: `10.0.0.${i + 1}` }] })),
    { type: 't', region: 'r', zone: 'z' },
  );
  const cloud = startCloud({
    first: definition.create({ inventory }, {}),
    budget: new CloudBudget({ qps: 100, burst: 100 }),
    metrics,
    mayWrite: () => true,
    informers,
    phase: { current: 'running' },
    log,
  });
  const started = startControllers({
    deletionHold: {},
    selection: selectControllers(controllers),
    options: TEST_CONTROLLER_OPTIONS,
    transport,
    informers,
    cloud,
    metrics,
    log,
  });
  const said = () =>
    sink.lines.map((l) => JSON.parse(l) as { level: number; msg: string; controller?: string });
  return { started, informers, metrics, said };
}

describe('startControllers', () => {
  it('starts the Nodes informer at once, and the controllers only for a term', async () => {
    await createNodes(api, [{ name: 'ctl-a', tainted: true }]);
    const { started, informers, metrics, said } = await stage('cloud-node', ['ctl-a', 'ctl-b', 'ctl-c']);
    try {
      expect(Object.keys(informers)).toEqual(['nodes']);
      await until('Nodes synced', async () => informers.nodes?.hasSynced());
      await until('Nodes counted', async () => (await metrics.cachedNodes.get()).values[0]?.value === 1);
      // No term yet: a standby watches Nodes but initialises none.
      await new Promise((r) => setTimeout(r, 1000));
      expect(await tainted('ctl-a')).toBe(true);

      started.startTerm();
      await untilInitialised(api, 'ctl-a');
      const starts = () => said().filter((l) => l.controller === 'cloud-node' && l.msg === 'started');
      expect(starts()).toHaveLength(1);

      await started.stopTerm();
      await createNodes(api, [{ name: 'ctl-b', tainted: true }]);
      await new Promise((r) => setTimeout(r, 1500));
      expect(await tainted('ctl-b')).toBe(true);

      // A replica that leads again starts a new term, with the informer it kept.
      started.startTerm();
      await untilInitialised(api, 'ctl-b');
      expect(starts()).toHaveLength(2);
    } finally {
      started.abort();
      await started.stopTerm();
      await informers.nodes?.stop();
      await api.deleteCollectionNode({});
    }
  }, 60_000);

  it('says a named controller this build lacks, and runs the others', async () => {
    registerSlot('node-ipam');
    const { started, informers, said } = await stage('node-ipam,cloud-node', ['ctl-c']);
    try {
      expect(said()).toEqual([
        expect.objectContaining({
          level: 40,
          msg: 'controller "node-ipam" is not available in this build of ccm; running without it',
        }),
      ]);
      await createNodes(api, [{ name: 'ctl-c', tainted: true }]);
      started.startTerm();
      await untilInitialised(api, 'ctl-c');
    } finally {
      await started.stopTerm();
      await informers.nodes?.stop();
      await api.deleteCollectionNode({});
    }
  }, 60_000);
});
