/**
 * CMON groups: the `--cmon-groups` value, and one machine's merge of ccm's groups with others'.
 * Every group ccm writes is checked with triton-tags (the validation sdc-vmapi applies, and that
 * triton-cmon lib/endpoints/discover.js applies to the `groups` query).
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import {
  GROUPS_OWNER_TAG,
  GROUPS_TAG,
  groupsFor,
  nodeLabelProblems,
  parseGroupsOwnership,
  planGroups,
} from '../../../../src/providers/triton/cmon.js';
import { parseCmonGroups } from '../../../../src/providers/triton/cmon-spec.js';

const tritonTags = createRequire(import.meta.url)('triton-tags') as {
  validateTritonTag(key: string, value: unknown): string | null;
};

describe('--cmon-groups', () => {
  it.each([
    ['cluster', { cluster: true, role: false }],
    ['cluster,role', { cluster: true, role: true }],
    ['role, cluster=prod-1', { cluster: true, role: true, name: 'prod-1' }],
    ['role', { cluster: false, role: true }],
    ['none', { cluster: false, role: false }],
  ])('%s', (text, spec) => expect(parseCmonGroups(text)).toEqual(spec));

  it.each([
    ['', 'cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none'],
    ['clsuter', 'cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none'],
    ['cluster,cluster', 'cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none'],
    ['none,role', 'cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none'],
    ['role=x', 'cluster, cluster=NAME and/or role, comma-separated (e.g. cluster,role), or none'],
    [
      'cluster=a.b',
      'cluster=NAME, NAME a CMON group of letters, digits and - (1 to 100 characters; _ is for role groups)',
    ],
    [
      'cluster=',
      'cluster=NAME, NAME a CMON group of letters, digits and - (1 to 100 characters; _ is for role groups)',
    ],
    // A role group's separator: a cluster group with it could be another cluster's role group.
    [
      'cluster=prod_worker',
      'cluster=NAME, NAME a CMON group of letters, digits and - (1 to 100 characters; _ is for role groups)',
    ],
    [
      `cluster=${'x'.repeat(87)},role`,
      'cluster=NAME of at most 86 characters with role (NAME_control-plane is a group too)',
    ],
  ])('refuses %j', (text, expected) =>
    expect(() => parseCmonGroups(text)).toThrow(`expected ${expected}, got ${JSON.stringify(text)}`),
  );

  it('every group it can name is one triton-tags accepts', () => {
    const spec = parseCmonGroups(`cluster=${'x'.repeat(86)},role`);
    const groups = groupsFor(spec, 'k8s-0123456789abcdef', ['control-plane', 'worker']);
    expect(tritonTags.validateTritonTag(GROUPS_TAG, groups.join(','))).toBeNull();
    const derived = groupsFor(parseCmonGroups('cluster,role'), 'k8s-0123456789abcdef', ['worker']);
    expect(derived).toEqual(['k8s-0123456789abcdef', 'k8s-0123456789abcdef_worker']);
  });

  it('a cluster identity that is no group name is refused, naming cluster=NAME', () => {
    expect(() => groupsFor(parseCmonGroups('cluster'), 'prod, eu', ['worker'])).toThrow(
      '--cmon-groups: the cluster identity "prod, eu" (--cluster-name) is no CMON cluster group name (letters, digits and -, at most 100 characters; _ is for role groups); name the group with cluster=NAME',
    );
    expect(() => groupsFor(parseCmonGroups('cluster'), 'prod_worker', ['worker'])).toThrow(
      'the cluster identity "prod_worker" (--cluster-name) is no CMON cluster group name',
    );
  });
});

describe('planGroups', () => {
  const owner = (groups: string[], cluster = 'c1') => JSON.stringify({ cluster, groups });

  it('adds its groups after those of others, and records only what it added', () => {
    const change = planGroups({ [GROUPS_TAG]: 'web,c1' }, 'c1', ['c1', 'c1_worker']);
    expect(change.groups).toEqual(['web', 'c1', 'c1_worker']);
    // c1 was there before ccm wanted it: not ccm's.
    expect(change.ownership).toEqual({ cluster: 'c1', groups: ['c1_worker'] });
    expect(change.added).toEqual(['c1_worker']);
    expect(tritonTags.validateTritonTag(GROUPS_TAG, change.groups.join(','))).toBeNull();
  });

  it('takes off only its own when the Node leaves', () => {
    const tags = { [GROUPS_TAG]: 'c1,web,c1_worker', [GROUPS_OWNER_TAG]: owner(['c1', 'c1_worker']) };
    const change = planGroups(tags, 'c1', undefined);
    expect(change).toMatchObject({ groups: ['web'], removed: ['c1', 'c1_worker'], changed: true });
    expect(change.ownership).toBeUndefined();
  });

  it('a role change swaps the role group', () => {
    const tags = { [GROUPS_TAG]: 'c1,c1_worker', [GROUPS_OWNER_TAG]: owner(['c1', 'c1_worker']) };
    const change = planGroups(tags, 'c1', ['c1', 'c1_control-plane']);
    expect(change.groups).toEqual(['c1', 'c1_control-plane']);
    expect(change.ownership?.groups).toEqual(['c1', 'c1_control-plane']);
  });

  it('nothing to do once done; another cluster’s record is never read as its own', () => {
    const done = { [GROUPS_TAG]: 'c1', [GROUPS_OWNER_TAG]: owner(['c1']) };
    expect(planGroups(done, 'c1', ['c1']).changed).toBe(false);
    const theirs = { [GROUPS_TAG]: 'c2', [GROUPS_OWNER_TAG]: owner(['c2'], 'c2') };
    expect(planGroups(theirs, 'c1', undefined).removed).toEqual([]);
    expect(parseGroupsOwnership('not json')).toBeUndefined();
  });
});

describe("nodeLabelProblems: the Node name Prometheus' CMON job gives (review 46, finding 7)", () => {
  const A = '11111111-1111-4111-8111-111111111111';
  const B = '22222222-2222-4222-8222-222222222222';
  const C = '33333333-3333-4333-8333-333333333333';
  const node = (name: string, id: string) => ({ name, providerID: `triton://${id}` });

  it('nothing when each Node is named as its machine, lowercased, or as its UUID when it has no name', () => {
    expect(
      nodeLabelProblems(
        [node('worker-1', A), node(B, B)],
        [
          { id: A, name: 'Worker-1' },
          { id: B, name: '' },
        ],
      ),
    ).toEqual([]);
  });

  it('a Node registered under another name than its machine', () => {
    const notes = nodeLabelProblems([node('w1.example.com', A)], [{ id: A, name: 'w1' }]);
    expect(notes).toEqual([
      {
        node: 'w1.example.com',
        providerID: `triton://${A}`,
        note: `its machine ${A} is named "w1": Prometheus' CMON job labels its series node="w1", not the Node's name (the job takes the machine's name, lowercased, else its UUID; rename the machine to the Node's name)`,
      },
    ]);
  });

  it('two machines whose names differ only in case: both Nodes are told, whichever is right', () => {
    const notes = nodeLabelProblems(
      [node('worker-1', A), node('worker-1b', B), node('db', C)],
      [
        { id: A, name: 'worker-1' },
        { id: B, name: 'Worker-1' },
        { id: C, name: 'db' },
        // A machine of no Node: not the cluster's.
        { id: '44444444-4444-4444-8444-444444444444', name: 'WORKER-1' },
      ],
    );
    expect(notes.map((n) => n.node)).toEqual(['worker-1', 'worker-1b']);
    expect(notes[0]?.note).toBe(
      `its machine's name "worker-1" is also machine ${B} ("Worker-1", Node worker-1b)'s, case aside: Prometheus' CMON job labels the series of both node="worker-1" (give the machines names that differ beyond case)`,
    );
  });
});
