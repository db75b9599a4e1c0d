import { describe, expect, it } from 'vitest';
import { InvalidConfigError } from '../../../src/providers/errors.js';
import { formatProviderID, parseProviderID, providerIDScheme } from '../../../src/providers/provider-id.js';

describe('parseProviderID', () => {
  it.each([
    ['digitalocean://123456789', { scheme: 'digitalocean', location: '', id: '123456789' }],
    ['brightbox://srv-ab12c', { scheme: 'brightbox', location: '', id: 'srv-ab12c' }],
    [
      'openstack:///8d1b2a1e-7d62-4f0a-9f39-1c1f2f3e4d5a',
      { scheme: 'openstack', location: '', id: '8d1b2a1e-7d62-4f0a-9f39-1c1f2f3e4d5a' },
    ],
    [
      'openstack://RegionOne/8d1b2a1e-7d62-4f0a-9f39-1c1f2f3e4d5a',
      { scheme: 'openstack', location: 'RegionOne', id: '8d1b2a1e-7d62-4f0a-9f39-1c1f2f3e4d5a' },
    ],
    [
      'triton://0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b',
      { scheme: 'triton', location: '', id: '0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b' },
    ],
    ['cloudlycke://worker-1', { scheme: 'cloudlycke', location: '', id: 'worker-1' }],
  ])('parses %s', (value, expected) => {
    expect(parseProviderID(value)).toEqual(expected);
    expect(providerIDScheme(value)).toBe(expected.scheme);
  });

  it('returns undefined for an empty or missing value', () => {
    expect(parseProviderID('')).toBeUndefined();
    expect(parseProviderID(undefined)).toBeUndefined();
    expect(providerIDScheme(undefined)).toBeUndefined();
  });

  it('returns undefined for garbage', () => {
    for (const value of [
      '12345',
      'srv-ab12c',
      'digitalocean:123',
      'digitalocean:/123',
      '://123',
      '1abc://x',
      ' cloudlycke://a',
    ]) {
      expect(parseProviderID(value), value).toBeUndefined();
    }
  });

  it('returns undefined when the id is empty', () => {
    for (const value of ['digitalocean://', 'openstack:///', 'openstack://RegionOne/', 'cloudlycke://a/']) {
      expect(parseProviderID(value), value).toBeUndefined();
    }
  });
});

describe('formatProviderID', () => {
  it('writes each scheme as its official controller does', () => {
    expect(formatProviderID('digitalocean', '123456789')).toBe('digitalocean://123456789');
    expect(formatProviderID('brightbox', 'srv-ab12c')).toBe('brightbox://srv-ab12c');
    expect(formatProviderID('openstack', 'uuid-1')).toBe('openstack:///uuid-1');
    expect(formatProviderID('openstack', 'uuid-1', 'RegionOne')).toBe('openstack://RegionOne/uuid-1');
    expect(formatProviderID('triton', 'uuid-2')).toBe('triton://uuid-2');
    expect(formatProviderID('cloudlycke', 'worker-1')).toBe('cloudlycke://worker-1');
  });

  it('round-trips through parseProviderID', () => {
    const cases: [string, string, string?][] = [
      ['digitalocean', '42'],
      ['brightbox', 'srv-x1y2z'],
      ['openstack', 'u-1'],
      ['openstack', 'u-1', 'RegionTwo'],
      ['triton', 'u-2'],
      ['cloudlycke', 'c-3'],
    ];
    for (const [scheme, id, location] of cases) {
      expect(parseProviderID(formatProviderID(scheme, id, location))).toEqual({
        scheme,
        id,
        location: location ?? '',
      });
    }
  });

  it('refuses an empty id or one with a slash', () => {
    expect(() => formatProviderID('digitalocean', '')).toThrow(InvalidConfigError);
    expect(() => formatProviderID('openstack', 'a/b', 'RegionOne')).toThrow(InvalidConfigError);
  });
});
