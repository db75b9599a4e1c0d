/**
 * `ccm run` starting while the API server does not answer: it waits a while, as the upstream
 * cloud-controller-manager does (WaitForAPIServer, 10 s), says so once, then runs or fails with one
 * error; it never says it retries "until it answers" and then exits.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startRun } from '../../src/cli/run.js';
import { KubeUnreachableError } from '../../src/kube/errors.js';
import { createNodes, fixtureApi } from '../controlplane/fixtures.js';
import { type ControlPlane, startControlPlane } from '../controlplane/harness.js';
import { writeInventory } from '../helpers/inventory.js';
import { logSink, runInput, startInProcess, until } from '../helpers/run.js';
import { tempDir } from '../helpers/tmp.js';

let cp: ControlPlane;
let inventory: string;

beforeAll(async () => {
  cp = await startControlPlane();
  inventory = writeInventory([{ id: 'w1' }], { type: 't', region: 'r', zone: 'z' });
});
afterAll(async () => {
  await cp?.stop();
  if (inventory) rmSync(dirname(inventory), { recursive: true, force: true });
});

it('waits for an API server that comes back within 10 s, says so once, and runs', async () => {
  await cp.pause();
  const resumed = new Promise<void>((resolve) => setTimeout(() => void cp.resume().then(resolve), 3000));
  const ccm = await startInProcess(runInput(cp.kubeconfigPath, inventory));
  try {
    await resumed;
    const waited = ccm.logs.filter((l) => l.includes('waiting up to 10 s for the Kubernetes API server'));
    expect(waited).toHaveLength(1);
    expect(ccm.logs.join('\n')).not.toContain('retrying until it answers');
  } finally {
    await ccm.stop();
  }
}, 120_000);

it('fails the start with one error when it does not answer, without promising to retry', async () => {
  const closed = createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as { port: number }).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const kubeconfig = join(tempDir('ccm-run-start-'), 'kubeconfig');
  writeFileSync(
    kubeconfig,
    readFileSync(cp.kubeconfigPath, 'utf8').replace(cp.server, `https://127.0.0.1:${port}`),
  );
  const { lines, stream } = logSink();
  const started = Date.now();
  await expect(
    startRun(runInput(kubeconfig, inventory), { logDestination: stream, prettyLogs: false }),
  ).rejects.toBeInstanceOf(KubeUnreachableError);
  expect(Date.now() - started).toBeGreaterThanOrEqual(9_000);
  expect(lines.filter((l) => l.includes('waiting up to 10 s'))).toHaveLength(1);
  expect(lines.join('\n')).not.toContain('retrying until it answers');
}, 120_000);

it('logs one start line naming what runs, and warns when --controllers enables none', async () => {
  const allButRoute = await startInProcess(
    runInput(cp.kubeconfigPath, inventory, { controllers: '-route', version: '9.8.7' }),
    { identity: 'host-a_1234' },
  );
  try {
    const starts = allButRoute.logs.map((l) => JSON.parse(l)).filter((l) => l.msg.startsWith('ccm '));
    expect(starts).toHaveLength(1);
    expect(starts[0]).toMatchObject({
      msg: 'ccm 9.8.7 starting: provider cloudlycke, controllers cloud-node, cloud-node-lifecycle, service, leader election off, identity host-a_1234',
      controllers: ['cloud-node', 'cloud-node-lifecycle', 'service'],
    });
    expect(allButRoute.logs.join('\n')).not.toContain('enables no controller');
  } finally {
    await allButRoute.stop();
  }
  const none = await startInProcess(
    runInput(cp.kubeconfigPath, inventory, {
      controllers: '-cloud-node,-cloud-node-lifecycle,-service,-route',
    }),
  );
  try {
    const warnings = none.logs
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg.includes('enables no controller'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0].level).toBe(40); // pino's warn
  } finally {
    await none.stop();
  }
}, 60_000);

it('a shutdown during a cloud listing is no "cloud listing failed" warning', async () => {
  let hang = false;
  let hanging = false;
  const ccm = await startInProcess(runInput(cp.kubeconfigPath, inventory, { controllers: 'cloud-node' }), {
    wrapProvider: (p) => ({
      ...p,
      instances: {
        ...p.instances,
        list: (signal?: AbortSignal) => {
          if (!hang) return p.instances.list(signal);
          hanging = true;
          return new Promise((_, reject) =>
            signal?.addEventListener('abort', () => reject(signal.reason), { once: true }),
          );
        },
      },
    }),
  });
  try {
    hang = true;
    // A Node the listing does not know yet asks for a refresh, which now waits for a cloud that never answers.
    await createNodes(fixtureApi(cp.kubeconfigPath), [{ name: 'not-listed-yet' }]);
    await until('a listing in flight', async () => hanging);
  } finally {
    await ccm.stop();
    await fixtureApi(cp.kubeconfigPath).deleteNode({ name: 'not-listed-yet' });
  }
  const warnings = ccm.logs.map((l) => JSON.parse(l)).filter((l) => l.level >= 40); // pino's warn and above
  expect(warnings.filter((l) => l.msg.includes('cloud listing failed'))).toEqual([]);
}, 60_000);
