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
