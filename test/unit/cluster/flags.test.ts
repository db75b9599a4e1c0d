import { describe, expect, it } from 'vitest';
import * as flags from '../../../src/cluster/flags.js';
import { remove, set } from './support.js';

describe('flag lists', () => {
  it('reads the =, separate and bare forms, normalising names', () => {
    const args = ['kube-apiserver', '--a=1', '--b', '2', '--c', '--d_e=3', '$VAR', '--f'];
    expect(flags.parseArgs(args).map((f) => [f.name, f.value, f.form])).toEqual([
      ['a', '1', 'equals'],
      ['b', '2', 'separate'],
      ['c', undefined, 'bare'],
      ['d-e', '3', 'equals'],
      ['f', undefined, 'bare'],
    ]);
    expect(flags.getFlag(args, 'd-e')).toBe('3');
    expect(flags.getFlag(['--v=1', '--v=4'], 'v')).toBe('4'); // the last one counts
  });

  it('appends a new flag at the end and keeps the order of the others', () => {
    expect(flags.applyFlagChanges(['prog', '--a=1', '--b=2'], [set('cloud-provider', 'external')])).toEqual([
      'prog',
      '--a=1',
      '--b=2',
      '--cloud-provider=external',
    ]);
  });

  it('replaces a value in place, keeping its form', () => {
    expect(
      flags.applyFlagChanges(['--a=1', '--cloud-provider=aws', '--b=2'], [set('cloud-provider', 'external')]),
    ).toEqual(['--a=1', '--cloud-provider=external', '--b=2']);
    expect(
      flags.applyFlagChanges(
        ['--a=1', '--cloud-provider', 'aws', '--b=2'],
        [set('cloud-provider', 'external')],
      ),
    ).toEqual(['--a=1', '--cloud-provider', 'external', '--b=2']);
    expect(flags.applyFlagChanges(['--cloud_provider=aws'], [set('cloud-provider', 'external')])).toEqual([
      '--cloud_provider=external',
    ]);
  });

  it('keeps one occurrence of a duplicated flag (the first place, the new value)', () => {
    expect(
      flags.applyFlagChanges(
        ['--cloud-provider=aws', '--x=1', '--cloud-provider=gce'],
        [set('cloud-provider', 'external')],
      ),
    ).toEqual(['--cloud-provider=external', '--x=1']);
  });

  it('removes every occurrence in every form', () => {
    expect(
      flags.applyFlagChanges(
        ['p', '--cloud-config=/a', '--x=1', '--cloud-config', '/b', '--cloud_config=/c'],
        [remove('cloud-config')],
      ),
    ).toEqual(['p', '--x=1']);
  });

  it('is idempotent: a second pass plans nothing', () => {
    const changes = [set('cloud-provider', 'external'), set('provider-id', 'do://1'), remove('cloud-config')];
    const once = flags.applyFlagChanges(['kubelet', '--cloud-config=/x', '--cloud-provider=aws'], changes);
    expect(flags.planArgEdits(once, changes)).toEqual([]);
    expect(flags.effectiveChanges(once, changes)).toEqual([]);
    expect(flags.applyFlagChanges(once, changes)).toEqual(once);
  });

  it('reports only the changes not yet in effect', () => {
    const changes = [set('cloud-provider', 'external'), remove('cloud-config'), set('v', '2')];
    expect(
      flags.effectiveChanges(['--cloud-provider=external', '--v=4'], changes).map((c) => c.flag),
    ).toEqual(['v']);
  });

  it('a later change to the same flag wins', () => {
    expect(flags.applyFlagChanges(['--a=1'], [set('b', '1'), set('b', '2')])).toEqual(['--a=1', '--b=2']);
  });
});
