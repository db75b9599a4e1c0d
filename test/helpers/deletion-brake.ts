/**
 * The deletion brake (issue 45, part 1) on one cloud: the built `ccm nodes init` and `ccm run` (in
 * process) against the real kube-apiserver and the cloud's simulator, whose instances vanish behind
 * ccm's back. Each cloud's file calls `deletionBrakeTests(cloud)`; the numbers are the issue's:
 * another account's credentials delete nothing however long they are used, 60% lost at once is held
 * (an Event on each held Node, the metric, the /readyz note, `nodes init` exits 3), 1 lost is deleted
 * as before, 10 of 30 lost are all deleted at the rate, Nodes lost one by one are held once the
 * window's share passes the ratio, and a release (the flag, the Secret's annotation) deletes the held
 * Nodes and nothing else, while a stale id releases nothing.
 */
import { AppsV1Api, type V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { fixtureClient } from '../controlplane/fixtures.js';
import { brakeKit, type ClusterNode, isDelete, MERGE_PATCH, sleep } from './brake-kit.js';
import { type CloudName, type CloudWorld, useCloudWorld } from './cloud-world.js';
import { type InProcess, TEST_CONTROLLER_OPTIONS, until } from './run.js';

interface HeldReport {
  exitCode: number;
  report: {
    summary: Record<string, number>;
    hold?: { id: string; count: number; nodes: string[]; reason: string; release: string };
    nodes: { name: string; result: string; reason?: string }[];
  };
}

/** Whether the deletion times keep to a token bucket of `burst` and `rate`: n deletions within any span t at most burst + t·rate. */
function keepsToRate(times: number[], rate: number, burst: number): string[] {
  const sorted = [...times].sort((a, b) => a - b);
  const broken: string[] = [];
  for (let i = 0; i < sorted.length; i++)
    for (let j = i; j < sorted.length; j++) {
      const span = ((sorted[j] as number) - (sorted[i] as number)) / 1000;
      // 250 ms: the brake spaces its decisions, and each DELETE follows its decision after the
      // DeletingNode Event's write, which took up to ~200 ms at load 9 (4 deletions within 0.34 s at
      // 2/s, burst 3). With no rate at all, 10 deletions come within about 0.5 s and still break this.
      if (j - i + 1 > burst + (span + 0.25) * rate) broken.push(`${j - i + 1} deletions within ${span}s`);
    }
  return broken;
}

export function deletionBrakeTests(cloud: CloudName): void {
  const world: CloudWorld = useCloudWorld(cloud, {
    // Rotated or annotated by a test: each test's `ccm run` creates it again as the cloud's docs do.
    afterEachTest: async (w) => {
      const secret = (await w.runProvider()).credentialsSecret;
      if (!secret) return;
      const [namespace = '', name = ''] = secret.split('/');
      await w.api.deleteNamespacedSecret({ namespace, name }).catch(() => undefined);
    },
  });

  /** `ccm run` as deployed, for `ccm doctor` to read its flags: a DaemonSet no controller runs here. */
  async function deployedRun(args: string[]): Promise<void> {
    await fixtureClient(world.kubeconfig, AppsV1Api).createNamespacedDaemonSet({
      namespace: 'kube-system',
      body: {
        metadata: { name: 'ccm', labels: { 'app.kubernetes.io/name': 'ccm' } },
        spec: {
          selector: { matchLabels: { 'app.kubernetes.io/name': 'ccm' } },
          template: {
            metadata: { labels: { 'app.kubernetes.io/name': 'ccm' } },
            spec: {
              containers: [{ name: 'ccm', image: 'registry.example.com/ccm:0.1.0', args: ['run', ...args] }],
            },
          },
        },
      },
    });
  }

  const names = async () =>
    (await world.api.listNode()).items.map((n: V1Node) => n.metadata?.name ?? '').sort();

  // n instances and their kubelets' Nodes, initialised by one `nodes init` pass; the instances lost at
  // once and their kubelets gone quiet; ccm's Node deletions since the cluster was ready.
  const { cluster, notReady, lose, nodeDeletes, events } = brakeKit(world);

  const nodesInit = async (args: string[] = [], options: Parameters<CloudWorld['ccm']>[1] = {}) => {
    const run = await world.ccm(
      ['nodes', 'init', '--deletion-grace-period', '0s', '--json', ...args],
      options,
    );
    return { ...run, report: run.stdout ? (JSON.parse(run.stdout) as HeldReport['report']) : undefined };
  };

  const secretRef = async () => {
    const secret = (await world.runProvider()).credentialsSecret;
    if (!secret) return undefined;
    const [namespace = '', name = ''] = secret.split('/');
    return { namespace, name };
  };

  async function annotateSecret(value: string): Promise<void> {
    const ref = await secretRef();
    if (!ref) throw new Error(`${cloud}: ccm run reads no credentials Secret`);
    await world.api.patchNamespacedSecret(
      { ...ref, body: { metadata: { annotations: { 'ccm.io/allow-mass-deletion': value } } } },
      MERGE_PATCH,
    );
  }

  const run = (rate?: number): Promise<InProcess> =>
    world.run({
      controllerOptions: { ...TEST_CONTROLLER_OPTIONS, ...(rate ? { nodeDeletionRate: rate } : {}) },
    });

  async function readyz(ccm: InProcess): Promise<string> {
    return (await fetch(`${ccm.url}/readyz?verbose`)).text();
  }

  async function heldMetric(ccm: InProcess): Promise<number> {
    const text = await (await fetch(`${ccm.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith('ccm_node_deletions_held '));
    return Number(line?.split(' ')[1]);
  }

  describe(`${cloud}: ccm nodes init`, () => {
    it("another account's credentials: no Node is deleted, however often the pass runs", async () => {
      const nodes = await cluster(10);
      for (const node of nodes) await notReady(node.name);
      const other = await world.otherAccount();
      for (let i = 0; i < 3; i++) {
        const pass = await nodesInit([], { cloudFlags: other.cli.flags, env: other.cli.env });
        // The other account answered: its listing, which holds nothing of this cluster.
        expect(pass.stdout).toContain("holds none of this cluster's instances");
        expect(pass.writes.filter(isDelete)).toEqual([]);
        expect(pass.report?.summary.deleted).toBe(0);
      }
      expect(await names()).toEqual(nodes.map((n) => n.name));
    });

    it('60% lost at once: nothing deleted, an Event on each held Node (once), exit 3; doctor warns', async () => {
      const nodes = await cluster(10);
      const lost = nodes.slice(0, 6);
      await lose(lost);
      const first = await nodesInit();
      expect(first.exitCode).toBe(3);
      expect(first.writes.filter(isDelete)).toEqual([]);
      const hold = first.report?.hold;
      expect(hold).toMatchObject({ count: 6, nodes: lost.map((n) => n.name) });
      expect(hold?.id).toMatch(/^6-[0-9a-f]{8}$/);
      expect(first.report?.summary).toMatchObject({ held: 6, deleted: 0 });
      for (const name of lost.map((n) => n.name))
        expect(first.report?.nodes.find((n) => n.name === name)?.reason).toMatch(
          /^deletion held: the instances of 6 of 10 Nodes \(60%\) are missing from the cloud listing, above --max-deletion-ratio 0\.55$/,
        );
      const held = await events('NodeDeletionHeld');
      expect(held.map((e) => e.involvedObject.name).sort()).toEqual(lost.map((n) => n.name));
      for (const event of held) {
        expect(event.type).toBe('Warning');
        expect(event.source?.component).toBe('cloud-node-lifecycle-controller');
        expect(event.message).toContain(`(hold ${hold?.id}): the instances of 6 of 10 Nodes (60%)`);
        expect(event.message).toContain(`ccm nodes init --allow-mass-deletion ${hold?.id}`);
      }
      // The CronJob's next run holds the same, and tells no Node twice.
      const second = await nodesInit();
      expect(second.exitCode).toBe(3);
      expect(second.report?.hold?.id).toBe(hold?.id);
      expect((await events('NodeDeletionHeld')).length).toBe(6);
      expect(await names()).toEqual(nodes.map((n) => n.name));

      await deployedRun(['--deletion-grace-period=0s']);
      const doctor = await world.ccm(['doctor', '--json']);
      await fixtureClient(world.kubeconfig, AppsV1Api).deleteNamespacedDaemonSet({
        name: 'ccm',
        namespace: 'kube-system',
      });
      const check = (
        JSON.parse(doctor.stdout) as { checks: { id: string; status: string; fix?: string }[] }
      ).checks.find((c) => c.id === 'deletion-brake');
      expect(check).toMatchObject({ status: 'warn' });
      expect(check?.fix).toContain(`ccm nodes init --allow-mass-deletion ${hold?.id}`);
    });

    it('1 lost: its Node is deleted as before', async () => {
      const nodes = await cluster(5);
      await lose([nodes[2] as ClusterNode]);
      const pass = await nodesInit();
      expect(pass.exitCode).toBe(0);
      expect(pass.report?.summary).toMatchObject({ deleted: 1, held: 0, waiting: 0 });
      expect(pass.writes.filter(isDelete).map((w) => w.objectRef?.name)).toEqual([nodes[2]?.name]);
      expect((await events('DeletingNode')).map((e) => e.involvedObject.name)).toEqual([nodes[2]?.name]);
    });

    it('10 of 30 lost: all deleted, 3 at once and then at --node-deletion-rate, pass after pass', async () => {
      const nodes = await cluster(30);
      const lost = nodes.slice(0, 10);
      await lose(lost);
      const first = await nodesInit(['--node-deletion-rate', '2']);
      expect(first.exitCode).toBe(0);
      expect(first.report?.summary).toMatchObject({ deleted: 3, waiting: 7, held: 0 });
      expect(first.report?.nodes.find((n) => n.result === 'waiting')?.reason).toMatch(
        /^deletion waits for --node-deletion-rate 2\/s \(3 deleted in the last 10m, 3 at most at once\); the next in 1s$/,
      );
      for (let i = 0; i < 30 && (await names()).length > 20; i++) {
        const pass = await nodesInit(['--node-deletion-rate', '2']);
        expect(pass.exitCode).toBe(0);
      }
      expect(await names()).toEqual(nodes.slice(10).map((n) => n.name));
      const times = (await nodeDeletes()).map((w) => Date.parse(w.requestReceivedTimestamp ?? ''));
      expect(times).toHaveLength(10);
      expect(keepsToRate(times, 2, 3)).toEqual([]);
      expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(3000);
    });

    it('--allow-mass-deletion: a stale id is refused and writes nothing; the current one deletes the held Nodes and nothing else', async () => {
      const nodes = await cluster(10);
      const lost = nodes.slice(0, 6);
      await lose(lost);
      const held = await nodesInit();
      expect(held.exitCode).toBe(3);
      const id = held.report?.hold?.id ?? '';

      const stale = await nodesInit(['--allow-mass-deletion', '6-00000000']);
      expect(stale.exitCode).toBe(2);
      expect(stale.stdout).toBe('');
      expect(stale.stderr.trim().split('\n')).toEqual([
        `ccm: --allow-mass-deletion 6-00000000: the current hold is ${id} (6 Nodes); look at \`ccm nodes list\` again and pass that id; nothing was written`,
      ]);
      expect(stale.writes).toEqual([]);

      const released = await nodesInit(['--allow-mass-deletion', id]);
      expect(released.exitCode).toBe(0);
      expect(released.report?.summary).toMatchObject({ deleted: 6, held: 0, waiting: 0 });
      expect(await names()).toEqual(nodes.slice(6).map((n) => n.name));
      const deleting = await events('DeletingNode');
      expect(deleting.map((e) => e.metadata?.annotations?.['ccm.io/deletion-release'])).toEqual(
        Array(6).fill(id),
      );

      // Nothing is held now: the same id releases nothing more.
      const again = await nodesInit(['--allow-mass-deletion', id]);
      expect(again.exitCode).toBe(2);
      expect(again.stderr).toMatch(/no deletion is held now/);
      // And the released deletions count towards no later share: one more lost is deleted.
      await lose([nodes[6] as ClusterNode]);
      expect((await nodesInit()).report?.summary).toMatchObject({ deleted: 1 });
    });
  });

  describe(`${cloud}: ccm run`, () => {
    it("credentials rotated to another account's: no Node is deleted, however long it runs", async () => {
      const nodes = await cluster(10);
      const ccm = await run();
      for (const node of nodes) await notReady(node.name);
      const other = await world.otherAccount();
      const before = ccm.logs.length;
      await other.rotate();
      // Cloudlycke reads its inventory at each listing; the others reload the Secret.
      if (await secretRef())
        await until(
          'the reload',
          async () => ccm.logs.slice(before).some((l) => l.includes('changed; using them from now on')),
          15_000,
        );
      await until('a listing of the other account', async () =>
        ccm.logs.slice(before).some((l) => l.includes("holds none of this cluster's instances")),
      );
      // 25 monitor periods and 10 listings more with the other account's credentials.
      await sleep(5000);
      expect(await nodeDeletes()).toEqual([]);
      expect(await names()).toEqual(nodes.map((n) => n.name));
    });

    it('60% lost at once: nothing deleted; one log line, an Event on each held Node, the metric and the /readyz note', async () => {
      const nodes = await cluster(10);
      const lost = nodes.slice(0, 6);
      const ccm = await run();
      await lose(lost);
      await until('an Event on each held Node', async () => (await events('NodeDeletionHeld')).length === 6);
      const held = await events('NodeDeletionHeld');
      expect(held.map((e) => e.involvedObject.name).sort()).toEqual(lost.map((n) => n.name));
      const id = held[0]?.metadata?.annotations?.['ccm.io/deletion-hold'] ?? '';
      expect(id).toMatch(/^6-[0-9a-f]{8}$/);
      const ref = await secretRef();
      const release = ref
        ? `kubectl -n ${ref.namespace} annotate secret ${ref.name} ccm.io/allow-mass-deletion=${id} --overwrite`
        : `ccm nodes init --allow-mass-deletion ${id}`;
      for (const event of held) {
        expect(event.type).toBe('Warning');
        expect(event.message).toContain(`Deletion held (hold ${id}): the instances of 6 of 10 Nodes (60%)`);
        expect(event.message).toContain(release);
      }
      expect(await heldMetric(ccm)).toBe(6);
      expect(await readyz(ccm)).toContain(
        `[+]deletion-brake ok: holding the deletion of 6 Nodes (hold ${id}): the instances of 6 of 10 Nodes (60%) are missing from the cloud listing, above --max-deletion-ratio 0.55; release: ${release}`,
      );
      expect((await fetch(`${ccm.url}/readyz`)).status).toBe(200);
      await sleep(2000);
      expect(await nodeDeletes()).toEqual([]);
      expect((await events('NodeDeletionHeld')).length).toBe(6);
      expect(ccm.logs.filter((l) => l.includes('holding every Node deletion'))).toHaveLength(1);
    });

    it('1 lost: its Node is deleted as before', async () => {
      const nodes = await cluster(5);
      const ccm = await run();
      await lose([nodes[1] as ClusterNode]);
      await until('the Node deleted', async () => (await names()).length === 4);
      expect(await names()).toEqual(nodes.filter((_, i) => i !== 1).map((n) => n.name));
      expect(await heldMetric(ccm)).toBe(0);
    });

    it('10 of 30 lost: all deleted, 3 at once and then at --node-deletion-rate', async () => {
      const nodes = await cluster(30);
      await run(2);
      await lose(nodes.slice(0, 10));
      await until('10 Nodes deleted', async () => (await names()).length === 20, 30_000);
      expect(await names()).toEqual(nodes.slice(10).map((n) => n.name));
      const times = (await nodeDeletes()).map((w) => Date.parse(w.requestReceivedTimestamp ?? ''));
      expect(times).toHaveLength(10);
      expect(keepsToRate(times, 2, 3)).toEqual([]);
      expect(Math.max(...times) - Math.min(...times)).toBeGreaterThanOrEqual(3000);
    });

    it('Nodes lost one by one: deleted until the share of the last 10 minutes passes the ratio, then held', async () => {
      const nodes = await cluster(10);
      const ccm = await run(20);
      for (const [i, node] of nodes.slice(0, 8).entries()) {
        await lose([node]);
        await until(`Node ${i + 1} deleted or held`, async () => {
          const gone = !(await names()).includes(node.name);
          const held = (await events('NodeDeletionHeld')).some((e) => e.involvedObject.name === node.name);
          return gone || held;
        });
      }
      await sleep(1500);
      // 5 of 10 (50%) may go; the sixth would make 6 of 10: every one lost after is held too.
      expect(await names()).toEqual(nodes.slice(5).map((n) => n.name));
      expect((await nodeDeletes()).map((w) => w.objectRef?.name).sort()).toEqual(
        nodes.slice(0, 5).map((n) => n.name),
      );
      expect(await heldMetric(ccm)).toBe(3);
    });

    it('a new leader counts the deletions of the one before: after 5 of 10 deleted, the next one lost is held', async () => {
      const nodes = await cluster(10);
      const first = await run(20);
      for (const node of nodes.slice(0, 5)) {
        await lose([node]);
        await until(`${node.name} deleted`, async () => !(await names()).includes(node.name));
      }
      // A leader change: the Lease's next holder is another process, with nothing in memory.
      await first.stop();
      const second = await run(20);
      await lose([nodes[5] as ClusterNode]);
      await until('the sixth held', async () =>
        (await events('NodeDeletionHeld')).some((e) => e.involvedObject.name === nodes[5]?.name),
      );
      await sleep(1000);
      expect(await names()).toEqual(nodes.slice(5).map((n) => n.name));
      expect(await heldMetric(second)).toBe(1);
    });

    it('a new leader tells no held Node twice: the NodeDeletionHeld Events of the one before count', async () => {
      // Found in the real cluster (test/cluster/deletion-brake.test.ts): a rollout while deletions
      // were held gave every held Node a second Event, from the new Pod with nothing in memory.
      const nodes = await cluster(10);
      const lost = nodes.slice(0, 6);
      const first = await run();
      await lose(lost);
      await until('an Event on each held Node', async () => (await events('NodeDeletionHeld')).length === 6);
      const id = (await events('NodeDeletionHeld'))[0]?.metadata?.annotations?.['ccm.io/deletion-hold'];
      await first.stop();
      const second = await run();
      await until('the new leader holding', async () => (await readyz(second)).includes(`(hold ${id})`));
      // Its workers have asked about every held Node many times by now (a monitor period is 200 ms).
      await sleep(2000);
      expect((await events('NodeDeletionHeld')).map((e) => e.involvedObject.name).sort()).toEqual(
        lost.map((n) => n.name),
      );
      expect(await nodeDeletes()).toEqual([]);
      expect(await heldMetric(second)).toBe(6);
    });

    it('the release: a stale id releases nothing; the current hold is deleted and nothing else; a later outage is held again', async () => {
      const nodes = await cluster(10);
      const lost = nodes.slice(0, 6);
      const ccm = await run();
      await lose(lost);
      await until('held', async () => (await events('NodeDeletionHeld')).length === 6);
      const id = (await events('NodeDeletionHeld'))[0]?.metadata?.annotations?.['ccm.io/deletion-hold'] ?? '';
      if (await secretRef()) {
        const before = ccm.logs.length;
        await annotateSecret('6-00000000');
        await until('the stale id ignored', async () =>
          ccm.logs.slice(before).some((l) => l.includes(`the current hold is ${id}: nothing released`)),
        );
        await sleep(1000);
        expect(await nodeDeletes()).toEqual([]);
        await annotateSecret(id);
      } else {
        // No credentials Secret (Cloudlycke reads a file): `nodes init` releases ccm run's hold, by the same id.
        const released = await nodesInit(['--allow-mass-deletion', id]);
        expect(released.exitCode).toBe(0);
      }
      await until('the held Nodes deleted', async () => (await names()).length === 4, 20_000);
      expect(await names()).toEqual(nodes.slice(6).map((n) => n.name));
      await until('the hold ended', async () => !(await readyz(ccm)).includes('holding'));
      expect(await heldMetric(ccm)).toBe(0);

      // Three of the four left lost: another hold, another id; the annotation left behind releases nothing.
      await lose(nodes.slice(6, 9));
      await until('held again', async () =>
        (await events('NodeDeletionHeld')).some(
          (e) => e.metadata?.annotations?.['ccm.io/deletion-hold'] !== id,
        ),
      );
      await sleep(1500);
      expect(await names()).toEqual(nodes.slice(6).map((n) => n.name));
      expect(await heldMetric(ccm)).toBe(3);
    });
  });
}
