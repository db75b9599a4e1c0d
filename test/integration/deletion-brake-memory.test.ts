/**
 * The deletion brake's memory does not depend on an Event being written (review 45, finding 1). On an
 * API server with the EventRateLimit admission plugin (the CIS benchmark's 1.2.x recommendation)
 * during the event storm of an outage every Event of ccm's is refused with 429: the brake's window
 * was once read back from the DeletingNode Events, and an outage confirmed Node by Node emptied the
 * cluster (9 of 10 in 15 s). Each deletion is now written into the record of deletions (ConfigMap
 * kube-system/ccm-node-deletions) before its DELETE: the next `nodes init` pass (the CronJob), a
 * restarted `ccm run` or a new leader count every one.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { brakeKit, type ClusterNode, sleep } from '../helpers/brake-kit.js';
import { useCloudWorld } from '../helpers/cloud-world.js';
import { TEST_CONTROLLER_OPTIONS, until } from '../helpers/run.js';

const dir = mkdtempSync(join(tmpdir(), 'ccm-brake-erl-'));
const admission = join(dir, 'admission.yaml');
writeFileSync(
  admission,
  `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: EventRateLimit
  configuration:
    apiVersion: eventratelimit.admission.k8s.io/v1alpha1
    kind: Configuration
    limits:
    - type: Namespace
      qps: 1
      burst: 1
      cacheSize: 100
`,
);

const world = useCloudWorld('digitalocean', {
  controlPlane: {
    extraArgs: ['--enable-admission-plugins=EventRateLimit', `--admission-control-config-file=${admission}`],
  },
});

/**
 * The outage's event storm in namespace default (kubelets, kube-controller-manager's NodeNotReady…):
 * three writers, so that the namespace's one Event a second is always taken before ccm's.
 */
function storm(): { stop: () => Promise<void>; sent: () => number } {
  let on = true;
  let sent = 0;
  const writer = async () => {
    while (on) {
      sent++;
      await world.api
        .createNamespacedEvent({
          namespace: 'default',
          body: {
            metadata: { generateName: 'storm.' },
            involvedObject: { kind: 'Node', name: 'storm', apiVersion: 'v1' },
            reason: 'NodeNotReady',
            message: 'Node status is now: NodeNotReady',
            type: 'Normal',
            source: { component: 'node-controller' },
          },
        })
        .catch(() => undefined);
      await sleep(5);
    }
  };
  const loops = [writer(), writer(), writer()];
  return {
    stop: async () => {
      on = false;
      await Promise.all(loops);
    },
    sent: () => sent,
  };
}

describe('the brake remembers deletions whose Events the API server refused (EventRateLimit in an event storm)', () => {
  it('nodes init (the CronJob): an outage confirmed Node by Node within one window is held after 5 of 10', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    const s = storm();
    try {
      const pass = (args: string[] = []) => kit.nodesInit(['--node-deletion-rate', '2', ...args]);
      await kit.lose(nodes.slice(0, 5)); // 5 of 10: within the ratio, deleted at the rate
      for (let i = 0; i < 10 && (await kit.names()).length > 5; i++) {
        const p = await pass();
        expect(p.exitCode, p.stderr).toBe(0);
        if ((await kit.names()).length > 5) await sleep(600);
      }
      expect(await kit.names()).toEqual(nodes.slice(5).map((n) => n.name));
      console.log(
        `DeletingNode Events the API server took: ${(await kit.events('DeletingNode')).length} of 5`,
      );
      // 7 of 10 within the window: held, and nothing more deleted.
      await kit.lose(nodes.slice(5, 7));
      const held = await pass();
      expect(held.exitCode).toBe(3);
      expect(held.report?.hold?.reason).toMatch(/7 of 10 Nodes .* with 5 deleted in the last 10m/);
      await kit.lose(nodes.slice(7, 8));
      expect((await pass()).exitCode).toBe(3);
      expect(await kit.names()).toEqual(nodes.slice(5).map((n: ClusterNode) => n.name));
      // The Events were refused; the record has every deletion.
      expect(await kit.record()).toHaveLength(5);
    } finally {
      await s.stop();
    }
  });

  it('ccm run restarted mid-outage (a rollout, an OOM kill, a new leader): the sixth of 10 is held', async () => {
    const kit = brakeKit(world);
    const nodes = await kit.cluster(10);
    const s = storm();
    try {
      const opts = { controllerOptions: { ...TEST_CONTROLLER_OPTIONS, nodeDeletionRate: 20 } };
      const first = await world.run(opts);
      for (const node of nodes.slice(0, 5)) {
        await kit.lose([node]);
        await until(`${node.name} deleted`, async () => !(await kit.names()).includes(node.name));
      }
      await first.stop();
      const second = await world.run(opts);
      await kit.lose([nodes[5] as ClusterNode]);
      await until(
        'the hold',
        async () => second.logs.some((l) => l.includes('holding every Node deletion')),
        8000,
      ).catch(() => undefined);
      await sleep(1000);
      expect(await kit.names()).toEqual(nodes.slice(5).map((n) => n.name));
      expect(await kit.record()).toHaveLength(5);
    } finally {
      await s.stop();
    }
  });
});
