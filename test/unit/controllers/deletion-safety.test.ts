/**
 * Deletion safety, one rule at a time (issue 6, item 7). Every test starts from a cluster in which a
 * NotReady, long-registered Node WOULD be deleted — the listing is good, non-empty and knows the
 * cluster, and the cloud answers "not found" to every lookup — and changes exactly one thing, so
 * that the rule under test is the only thing standing between that Node and deletion. The first test
 * proves the baseline does delete.
 */
import { describe, expect, it } from 'vitest';
import { runNodesPass } from '../../../src/controllers/nodes-pass.js';
import { LABEL_EXCLUDE_FROM_LIFECYCLE } from '../../../src/kube/well-known.js';
import { NotFoundError, RetryableError, UnauthorizedError } from '../../../src/providers/errors.js';
import type { Instance } from '../../../src/providers/types.js';
import {
  FakeNodeClient,
  GRACE_MS,
  makeInstance,
  makeNode,
  makeProvider,
  NOW,
  type NodeOptions,
  passOptions,
} from './fixtures.js';

const options = passOptions(2);

/** A Ready Node whose instance is listed: the listing is non-empty and knows the cluster. */
const anchor = makeNode({ name: 'anchor', providerID: 'cloudlycke://i-1', ready: true });
const anchorInstance = makeInstance({ name: 'anchor', providerID: 'cloudlycke://i-1' });

const notFound = async (id: string): Promise<Instance> => {
  throw new NotFoundError(`instance ${id} not found`);
};

async function pass(
  victim: NodeOptions,
  cloud: { instances?: Instance[]; get?: (id: string) => Promise<Instance> } = {},
) {
  const node = makeNode({ name: 'victim', providerID: 'cloudlycke://i-9', ready: false, ...victim });
  const kube = new FakeNodeClient([anchor, node]);
  const provider = makeProvider(cloud.instances ?? [anchorInstance], cloud.get ?? notFound);
  const report = await runNodesPass(kube, provider, options);
  const row = report.nodes.find((n) => n.name === 'victim');
  return { kube, provider, row, deleted: !kube.nodes.has('victim') };
}

/** The pass kept the Node without asking the cloud about its instance. */
function expectKeptWithoutLookup({ deleted, provider }: Awaited<ReturnType<typeof pass>>): void {
  expect(deleted).toBe(false);
  expect(provider.getCalls).toEqual([]);
}

describe('deletion safety: each rule alone keeps its Node', () => {
  it('baseline: an unlisted NotReady Node the cloud says is not found IS deleted', async () => {
    const { deleted, row, provider } = await pass({});
    expect(deleted).toBe(true);
    expect(row?.result).toBe('deleted');
    expect(provider.getCalls).toEqual(['cloudlycke://i-9']);
  });

  it('a provider ID of another scheme is never touched', async () => {
    const { deleted, row, provider } = await pass({ providerID: 'digitalocean://12345' });
    expect(deleted).toBe(false);
    expect(row?.result).toBe('skipped');
    expect(provider.getCalls).toEqual([]);
  });

  it('a malformed provider ID is never touched', async () => {
    for (const providerID of ['i-9', 'cloudlycke:/i-9', 'cloudlycke://']) {
      const { deleted, provider } = await pass({ providerID });
      expect(deleted, providerID).toBe(false);
      expect(provider.getCalls, providerID).toEqual([]);
    }
  });

  it('a Node without a provider ID is never deleted', async () => {
    expectKeptWithoutLookup(await pass({ providerID: '' }));
  });

  it('the exclude label keeps the Node', async () => {
    expectKeptWithoutLookup(await pass({ labels: { [LABEL_EXCLUDE_FROM_LIFECYCLE]: 'true' } }));
  });

  it('a Ready Node is never deleted', async () => {
    expectKeptWithoutLookup(await pass({ ready: true }));
  });

  it('a Node whose instance is listed (running or stopped) is not a candidate', async () => {
    for (const state of ['running', 'stopped'] as const) {
      const listed = makeInstance({ name: 'victim', providerID: 'cloudlycke://i-9', state });
      const { deleted, provider } = await pass({}, { instances: [anchorInstance, listed] });
      expect(deleted, state).toBe(false);
      expect(provider.getCalls, state).toEqual([]);
    }
  });

  it("a listing that holds none of the cluster's instances deletes nothing", async () => {
    const stranger = makeInstance({ name: 'stranger', providerID: 'cloudlycke://other' });
    const { deleted, row, provider } = await pass({}, { instances: [stranger] });
    expect(deleted).toBe(false);
    expect(row?.notes?.join(' ')).toContain('none of this cluster');
    expect(provider.getCalls).toEqual([]);
  });

  it('a Node inside its deletion grace period is kept', async () => {
    expectKeptWithoutLookup(await pass({ created: new Date(NOW.getTime() - GRACE_MS + 1000) }));
  });

  it('a Node without a creationTimestamp is kept', async () => {
    expectKeptWithoutLookup(await pass({ created: null }));
  });

  it('a confirming lookup that fails in any way other than "not found" keeps the Node', async () => {
    const errors = [
      new UnauthorizedError('the cloud refused the credentials (401)'),
      new RetryableError('HTTP 500 from the cloud', 1000),
      new RetryableError('request timed out after 30s'),
      new Error('socket hang up'),
    ];
    for (const error of errors) {
      const { deleted, row } = await pass(
        {},
        {
          get: async () => {
            throw error;
          },
        },
      );
      expect(deleted, error.message).toBe(false);
      expect(row?.result).toBe('failed');
      expect(row?.reason).toContain(error.message);
    }
  });

  it('a confirming lookup that returns the instance, in any state, keeps the Node', async () => {
    for (const state of ['running', 'stopped', 'gone'] as const) {
      const { deleted } = await pass(
        {},
        { get: async (id) => makeInstance({ providerID: id, name: 'victim', state }) },
      );
      expect(deleted, state).toBe(false);
    }
  });
});
