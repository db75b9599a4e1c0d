/**
 * The one writer of machine tags that CNS load balancing and CMON groups share, against the CloudAPI
 * simulator (which applies tag writes later, as CloudAPI does, with `tagDelayMs`): changes of one
 * machine run one after another whichever writer asked, each planned from the tags as the previous
 * change left them; a change another writer undoes is made again; one that never shows gives up.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RetryableError } from '../../../../src/providers/errors.js';
import { type Tags, TritonClient } from '../../../../src/providers/triton/client.js';
import { MachineTagWriter } from '../../../../src/providers/triton/machine-tags.js';
import { createSigner } from '../../../../src/providers/triton/signer.js';
import type { SimMachine } from '../../../clouds/triton/server.js';
import { rejection as error } from '../../../helpers/rejection.js';
import { useTritonSim } from '../../../helpers/use-simulator.js';

// These tests call the provider with no request budget, faster than CloudAPI's throttle allows
// (10 a second, bursts of 30): the throttle is tested in test/unit/clouds/triton-simulator.test.ts.
const tsim = useTritonSim({
  login: 'demo',
  accountId: 'b89d9dd3-62ce-4f6f-eb0d-f78e57d515d9',
  throttle: false,
});
const { sim } = tsim;
let client: TritonClient;
let machine: SimMachine;

beforeAll(() => {
  client = new TritonClient({
    url: sim.url,
    account: 'demo',
    signer: createSigner({ account: 'demo', keyMaterial: tsim.key.privateKey }),
    secrets: [],
    http: { sleep: async () => {}, retries: 1 },
  });
});
beforeEach(() => {
  sim.machines.clear();
  sim.requests.length = 0;
  sim.tagDelayMs = 0;
  sim.onTagsRead = undefined;
  machine = sim.addMachine({ name: 'w1', ips: ['10.0.0.1'], tags: { list: 'a' } });
});

/** Appends `item` to the comma list under `list`, as both real writers merge into a shared value. */
const append = (item: string) => (tags: Tags) => {
  const items = String(tags.list ?? '')
    .split(',')
    .filter(Boolean);
  if (items.includes(item)) return undefined;
  const want = [...items, item].join(',');
  return {
    add: { list: want },
    settled: (after: Tags) =>
      String(after.list ?? '')
        .split(',')
        .includes(item),
  };
};

const tagWrites = () => sim.requests.filter((r) => r.method !== 'GET' && r.path.includes('/tags'));

describe('MachineTagWriter', () => {
  it('serialises the changes of one machine: each is planned from what the previous one left', async () => {
    const writer = new MachineTagWriter(client, { settleDelayMs: 10 });
    await Promise.all([
      writer.change(machine.id, 'list', append('b')),
      writer.change(machine.id, 'list', append('c')),
      writer.change(machine.id, 'list', append('d')),
    ]);
    expect(machine.tags.list).toBe('a,b,c,d');
    expect(tagWrites()).toHaveLength(3);
  });

  it('two writers of their own (another process): each read-back catches the other overwriting it', async () => {
    const one = new MachineTagWriter(client, { settleDelayMs: 10 });
    const two = new MachineTagWriter(client, { settleDelayMs: 10 });
    await Promise.all([
      one.change(machine.id, 'list', append('b')),
      two.change(machine.id, 'list', append('c')),
    ]);
    expect(String(machine.tags.list).split(',').sort()).toEqual(['a', 'b', 'c']);
  });

  it('writes the additions, then the removals in order; a plan that says nothing is left writes nothing', async () => {
    machine.tags.owner = 'ccm';
    machine.tags.extra = 'x';
    const writer = new MachineTagWriter(client, { settleDelayMs: 1 });
    await writer.change(machine.id, 'tags', (tags) =>
      tags.owner === undefined
        ? undefined
        : { add: { list: 'a,z' }, remove: ['extra', 'owner'], settled: (after) => after.owner === undefined },
    );
    expect(machine.tags).toEqual({ list: 'a,z' });
    expect(tagWrites().map((r) => `${r.method} ${r.path.split('/tags')[1] || '/'}`)).toEqual([
      'POST /',
      'DELETE /extra',
      'DELETE /owner',
    ]);
    sim.requests.length = 0;
    await writer.change(machine.id, 'tags', () => undefined);
    expect(tagWrites()).toEqual([]);
  });

  it('gives up with a RetryableError naming the tag when the change never shows', async () => {
    // Someone else puts the value back after every read: ccm's write never reads back.
    sim.onTagsRead = (id) => {
      const m = sim.machines.get(id);
      if (m) m.tags.list = 'a';
    };
    const writer = new MachineTagWriter(client, { settleDelayMs: 1, attempts: 3 });
    const err = await error(writer.change(machine.id, 'list tag', append('b')));
    expect(err).toBeInstanceOf(RetryableError);
    expect(err.message).toBe(
      `the list tag of machine ${machine.id} did not settle after 3 attempts (another writer, or CloudAPI is slow); trying again later`,
    );
    expect(tagWrites()).toHaveLength(3);
  });
});
