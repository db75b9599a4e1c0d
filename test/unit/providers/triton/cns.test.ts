/** The `triton.cns.services` merge rules, without a cloud. */
import { describe, expect, it } from 'vitest';
import { formatOwnership, planTags, SERVICES_TAG, settled } from '../../../../src/providers/triton/cns.js';

const KEY = 'ccm.cns.uid-1';
const OWNER = { cluster: 'c1', service: 'default/web' };

describe('planTags', () => {
  it('appends its entries after the others, in their order, and claims only what it added', () => {
    const change = planTags({ [SERVICES_TAG]: 'b:1, a:2,web:80' }, KEY, OWNER, ['web:80', 'web:443']);
    expect(change.services).toEqual(['b:1', 'a:2', 'web:80', 'web:443']);
    expect(change.ownership?.entries).toEqual(['web:443']);
    expect(change.changed).toBe(true);
  });

  it('a change that shows is settled, and planning again changes nothing', () => {
    const change = planTags({ [SERVICES_TAG]: 'dns:53' }, KEY, OWNER, ['web:80']);
    const after = {
      [SERVICES_TAG]: change.services.join(','),
      [KEY]: formatOwnership(change.ownership ?? { ...OWNER, entries: [] }),
    };
    expect(settled(after, KEY, change)).toBe(true);
    expect(planTags(after, KEY, OWNER, ['web:80']).changed).toBe(false);
    expect(settled({ [SERVICES_TAG]: 'dns:53' }, KEY, change)).toBe(false);
  });

  it('removal takes only claimed entries no other owner claims, and drops the owner tag', () => {
    const tags = {
      [SERVICES_TAG]: 'dns:53,web:80,shared:1',
      [KEY]: formatOwnership({ ...OWNER, entries: ['web:80', 'shared:1'] }),
      'ccm.cns.uid-2': formatOwnership({ cluster: 'c1', service: 'default/api', entries: ['shared:1'] }),
    };
    const change = planTags(tags, KEY, OWNER, undefined);
    expect(change.services).toEqual(['dns:53', 'shared:1']);
    expect(change.removed).toEqual(['web:80']);
    expect(change.ownership).toBeUndefined();
    expect(settled({ [SERVICES_TAG]: 'dns:53,shared:1' }, KEY, change)).toBe(true);
  });

  it('an unreadable owner tag claims nothing', () => {
    const change = planTags({ [SERVICES_TAG]: 'web:80', [KEY]: 'not json' }, KEY, OWNER, undefined);
    expect(change.services).toEqual(['web:80']);
    expect(change.changed).toBe(true); // the owner tag itself goes
  });
});
