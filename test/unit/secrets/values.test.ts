import { describe, expect, it } from 'vitest';
import { brightbox } from '../../../src/providers/brightbox/index.js';
import { digitalocean } from '../../../src/providers/digitalocean/index.js';
import { triton } from '../../../src/providers/triton/index.js';
import { resolveGiven } from '../../../src/secrets/values.js';

const none = { set: [], fromFile: [], env: {} };

describe('resolveGiven', () => {
  it('takes a field by its key or by its Secret key; a secret on argv is marked so it can be warned about', () => {
    const byKey = resolveGiven(digitalocean, { ...none, set: ['token=abc'] });
    const bySecretKey = resolveGiven(digitalocean, { ...none, set: ['access-token=abc'] });
    expect(byKey.get('token')).toEqual({ value: 'abc', source: 'argv', origin: '--set token' });
    expect(bySecretKey.get('token')).toEqual({ value: 'abc', source: 'argv', origin: '--set access-token' });
    const plain = resolveGiven(brightbox, { ...none, set: ['client=cli-1'] });
    expect(plain.get('client')).toEqual({ value: 'cli-1', source: 'flag', origin: '--set client' });
  });

  it('refuses a field the provider does not have, naming its Secret keys (the given Secret) and the closest', () => {
    const secret = 'kube-system/do-trial';
    expect(() => resolveGiven(digitalocean, { ...none, set: ['acess-token=abc'], secret })).toThrow(
      '--set: expected one of access-token, region, vpc-id (the keys of Secret kube-system/do-trial) or apiUrl, timeoutSeconds (for the check, not stored), got "acess-token"; did you mean access-token?',
    );
    expect(() => resolveGiven(digitalocean, { ...none, set: ['vpc_id=abc'], secret })).toThrow(
      /got "vpc_id"; did you mean vpc-id\?$/,
    );
    expect(() => resolveGiven(digitalocean, { ...none, fromFile: ['bogus=/etc/hostname'] })).toThrow(
      /^--from-file: expected one of .*, got "bogus"$/,
    );
    expect(() => resolveGiven(digitalocean, { ...none, set: ['token'] })).toThrow(
      '--set: expected key=value, got "token"',
    );
    // What follows an "=" may be the token: never printed.
    expect(() => resolveGiven(digitalocean, { ...none, set: ['=dop_v1_x'] })).toThrow(/got ""$/);
  });

  it('an empty stdin is said as that, not as a missing value', () => {
    for (const stdin of ['', '\n', '  \n'])
      expect(() => resolveGiven(digitalocean, { ...none, stdin })).toThrow(
        '--from-stdin: expected the access-token on stdin, got nothing (stdin was empty)',
      );
  });

  it('gives stdin to the required secret field, without its final newline; flags win over env', () => {
    const resolved = resolveGiven(brightbox, {
      ...none,
      stdin: 's3cret\n',
      env: { BRIGHTBOX_CLIENT: 'cli-env', BRIGHTBOX_CLIENT_SECRET: 'from-env' },
      set: ['client=cli-flag'],
    });
    expect(resolved.get('clientSecret')).toEqual({
      value: 's3cret',
      source: 'stdin',
      origin: '--from-stdin',
    });
    expect(resolved.get('client')?.value).toBe('cli-flag');
  });

  it('reads the schema environment variables, first match wins (TRITON_* before SDC_*)', () => {
    const resolved = resolveGiven(triton, {
      ...none,
      env: { SDC_ACCOUNT: 'old', TRITON_ACCOUNT: 'new', SDC_URL: 'https://cloudapi.example' },
    });
    expect(resolved.get('account')).toEqual({ value: 'new', source: 'env', origin: 'env TRITON_ACCOUNT' });
    expect(resolved.get('url')).toEqual({
      value: 'https://cloudapi.example',
      source: 'env',
      origin: 'env SDC_URL',
    });
  });

  it('--cloud-api-url fills the field the provider names for it', () => {
    const resolved = resolveGiven(digitalocean, { ...none, cloudApiUrl: 'http://127.0.0.1:1' });
    expect(resolved.get('apiUrl')).toEqual({
      value: 'http://127.0.0.1:1',
      source: 'flag',
      origin: '--cloud-api-url',
    });
  });
});
