/** A kit for the deletion brake's regression tests (review 45): a cluster of initialised Nodes, losing some, passes, Events. */
import { PatchStrategy, setHeaderOptions, type V1Node } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { type AuditEvent, CCM_USER } from '../controlplane/harness.js';
import type { CloudWorld } from './cloud-world.js';

export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface ClusterNode {
  name: string;
  providerID: string;
}

export const isDelete = (w: AuditEvent) =>
  w.verb === 'delete' && w.objectRef?.resource === 'nodes' && !w.objectRef.subresource;

export function brakeKit(world: CloudWorld) {
  let mark = 0;
  const kit = {
    async cluster(n: number): Promise<ClusterNode[]> {
      await createNodes(world.api, world.seed(n));
      const init = await world.ccm(['nodes', 'init', '--json']);
      expect(init.stderr).toBe('');
      expect(init.exitCode).toBe(0);
      const nodes = (await world.api.listNode()).items.map((node) => ({
        name: node.metadata?.name ?? '',
        providerID: node.spec?.providerID ?? '',
      }));
      expect(nodes.filter((node) => !node.providerID)).toEqual([]);
      mark = (await world.cp.writes(CCM_USER)).length;
      return nodes.sort((a, b) => (a.name < b.name ? -1 : 1));
    },
    async notReady(name: string): Promise<void> {
      const now = new Date();
      await world.api.patchNodeStatus(
        {
          name,
          body: {
            status: {
              conditions: [
                {
                  type: 'Ready',
                  status: 'Unknown',
                  reason: 'NodeStatusUnknown',
                  message: 'Kubelet stopped posting node status.',
                  lastHeartbeatTime: now,
                  lastTransitionTime: now,
                },
              ],
            },
          },
        },
        MERGE_PATCH,
      );
    },
    async lose(nodes: ClusterNode[]): Promise<void> {
      for (const node of nodes) world.vanish(node.providerID);
      for (const node of nodes) await kit.notReady(node.name);
    },
    names: async () => (await world.api.listNode()).items.map((n: V1Node) => n.metadata?.name ?? '').sort(),
    nodeDeletes: async () => (await world.cp.writes(CCM_USER)).slice(mark).filter(isDelete),
    /** The deletion brake's record (ConfigMap kube-system/ccm-node-deletions): one line per deletion. */
    async record(): Promise<string[]> {
      const cm = await world.api
        .readNamespacedConfigMap({ name: 'ccm-node-deletions', namespace: 'kube-system' })
        .catch(() => undefined);
      return (cm?.data?.deletions ?? '').split('\n').filter(Boolean);
    },
    async events(reason: string) {
      return (
        await world.api.listNamespacedEvent({ namespace: 'default', fieldSelector: `reason=${reason}` })
      ).items;
    },
    async nodesInit(args: string[] = [], options: Parameters<CloudWorld['ccm']>[1] = {}) {
      const run = await world.ccm(
        ['nodes', 'init', '--deletion-grace-period', '0s', '--json', ...args],
        options,
      );
      let report:
        | {
            summary: Record<string, number>;
            hold?: { id: string; count: number; nodes: string[]; reason: string };
            nodes: { name: string; result: string; reason?: string; notes?: string[] }[];
          }
        | undefined;
      try {
        report = run.stdout ? JSON.parse(run.stdout) : undefined;
      } catch {
        report = undefined;
      }
      return { ...run, report };
    },
  };
  return kit;
}
