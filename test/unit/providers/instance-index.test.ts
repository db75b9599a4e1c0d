import { describe, expect, it } from 'vitest';
import { InstanceIndex } from '../../../src/providers/instance-index.js';
import type { Instance } from '../../../src/providers/types.js';

function instance(providerID: string, name: string): Instance {
  return { providerID, name, state: 'running', type: '', region: '', zone: '', addresses: [], labels: {} };
}

describe('InstanceIndex', () => {
  const a = instance('cloudlycke://a', 'Worker-A');
  const b1 = instance('cloudlycke://b1', 'worker-b');
  const b2 = instance('cloudlycke://b2', 'WORKER-B');
  const index = new InstanceIndex([a, b1, b2]);

  it('counts every instance', () => {
    expect(index.size).toBe(3);
    expect(new InstanceIndex([]).size).toBe(0);
  });

  it('finds by exact provider ID only', () => {
    expect(index.byProviderID('cloudlycke://a')).toBe(a);
    expect(index.byProviderID('cloudlycke://A')).toBeUndefined();
    expect(index.byProviderID('cloudlycke://zzz')).toBeUndefined();
  });

  it('matches a provider ID with a location to the same id without one, never across two locations', () => {
    const bare = instance('openstack:///7d19ad6c-d549-453e-a5cd-05382c6be96a', 'n1');
    const regional = instance('openstack://RegionOne/f83832d5-1f22-45fa-866a-4abea36e0886', 'n2');
    const os = new InstanceIndex([bare, regional]);
    expect(os.byProviderID('openstack://RegionOne/7d19ad6c-d549-453e-a5cd-05382c6be96a')).toBe(bare);
    expect(os.byProviderID('openstack:///f83832d5-1f22-45fa-866a-4abea36e0886')).toBe(regional);
    expect(os.byProviderID('openstack://RegionTwo/f83832d5-1f22-45fa-866a-4abea36e0886')).toBeUndefined();
    expect(os.byProviderID('triton:///7d19ad6c-d549-453e-a5cd-05382c6be96a')).toBeUndefined();
  });

  it('finds by name case-insensitively', () => {
    expect(index.byNodeName('worker-a')).toBe(a);
    expect(index.byNodeName('WORKER-A')).toBe(a);
  });

  it('finds nothing for an unknown name', () => {
    expect(index.byNodeName('worker-c')).toBeUndefined();
    expect(index.nameIsAmbiguous('worker-c')).toBe(false);
  });

  it('finds nothing for a name several instances share, and says it is ambiguous', () => {
    expect(index.byNodeName('worker-b')).toBeUndefined();
    expect(index.nameIsAmbiguous('worker-b')).toBe(true);
    expect(index.nameIsAmbiguous('Worker-B')).toBe(true);
    expect(index.nameIsAmbiguous('worker-a')).toBe(false);
  });
});

describe('InstanceIndex, a Node named after its instance id', () => {
  const named = instance('brightbox://srv-abcde', 'web-1');
  const other = instance('brightbox://srv-zzzzz', 'srv-abcde');
  const index = new InstanceIndex([named, other]);

  it('matches the instance with that id before any instance of that name', () => {
    expect(index.byNodeName('srv-abcde')).toBe(named);
    expect(index.byNodeName('SRV-ABCDE')).toBe(named);
    expect(index.nameIsAmbiguous('srv-abcde')).toBe(false);
  });

  it('still matches by display name when the Node is named like that', () => {
    expect(index.byNodeName('web-1')).toBe(named);
    expect(index.byNodeName('srv-zzzzz')).toBe(other);
  });
});

describe('InstanceIndex, namesakes and records of deleted instances', () => {
  const gone = (providerID: string, name: string): Instance => ({
    ...instance(providerID, name),
    state: 'gone',
  });

  it('finds the one live instance among records of deleted namesakes, however many', () => {
    const live = instance('triton:///c1', 'web');
    const index = new InstanceIndex([gone('triton:///a1', 'web'), live, gone('triton:///b1', 'WEB')]);
    expect(index.byNodeName('web')).toBe(live);
    expect(index.nameIsAmbiguous('web')).toBe(false);
  });

  it('finds nothing when two of three namesakes are live, and nothing when all are deleted but two', () => {
    const index = new InstanceIndex([
      instance('triton:///a2', 'db'),
      gone('triton:///b2', 'db'),
      instance('triton:///c2', 'db'),
      gone('triton:///d2', 'cache'),
      gone('triton:///e2', 'cache'),
    ]);
    expect(index.byNodeName('db')).toBeUndefined();
    expect(index.nameIsAmbiguous('db')).toBe(true);
    expect(index.byNodeName('cache')).toBeUndefined();
    expect(index.nameIsAmbiguous('cache')).toBe(true);
  });

  it('a single deleted record is still found by name (the lifecycle reads its state)', () => {
    const record = gone('triton:///f2', 'old');
    expect(new InstanceIndex([record]).byNodeName('old')).toBe(record);
  });

  it('of one id listed under several locations, matches the one a location-less provider ID names', () => {
    const one = instance('openstack://RegionOne/9a', 'n1');
    const two = instance('openstack://RegionTwo/9a', 'n2');
    const index = new InstanceIndex([one, two]);
    expect(index.byProviderID('openstack:///9a')).toBe(one);
    expect(index.byProviderID('openstack://RegionTwo/9a')).toBe(two);
  });
});
