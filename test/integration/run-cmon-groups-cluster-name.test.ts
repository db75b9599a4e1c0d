/**
 * `ccm run --cmon-groups cluster…` with a --cluster-name that is no CMON cluster group (a dot, "_",
 * or too long for the role groups) is refused at start in one line, exit 2, as `nodes init` refuses
 * it (docs/providers/triton.md "CMON groups"), instead of a sweep retrying a configuration error for
 * the life of the process (review 46, finding 3).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createNodes } from '../controlplane/fixtures.js';
import { tritonWorker } from '../helpers/cloud-nodes.js';
import { useCloudWorld } from '../helpers/cloud-world.js';

const world = useCloudWorld('triton');
afterEach(async () => {
  await world.stopRuns();
});

describe('ccm run with a --cluster-name that is no CMON cluster group', () => {
  it.each([
    ['prod.eu', 'cluster'],
    ['prod_eu', 'cluster'],
    ['a'.repeat(90), 'cluster,role'],
  ])(
    '--cluster-name %s --cmon-groups %s: refused at start, one line, exit 2',
    async (name, groups) => {
      const w1 = world.sim.addMachine(tritonWorker('w1', {}));
      await createNodes(world.api, [{ name: 'w1', providerID: `triton://${w1.id}`, tainted: false }]);
      // The built CLI, for its exit code: it would exit 2 at once if refused.
      const run = await world.ccm(
        [
          'run',
          '--cmon-groups',
          groups,
          '--cluster-name',
          name,
          '--secure-port',
          '0',
          '--bind-address',
          '127.0.0.1',
          '--leader-elect=false',
        ],
        { timeoutMs: 12_000 },
      );
      expect(run.exitCode).toBe(2);
      const lines = run.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('--cmon-groups: the cluster identity');
      expect(lines[0]).toContain('cluster=NAME');
      expect(run.stderr).not.toContain('trying again');
      await world.reset();
    },
    60_000,
  );
});
