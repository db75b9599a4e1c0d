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
    expect(byKey.get('token')).toEqual({ value: 'abc', source: 'argv' });
    expect(bySecretKey.get('token')).toEqual({ value: 'abc', source: 'argv' });
    const plain = resolveGiven(brightbox, { ...none, set: ['client=cli-1'] });
    expect(plain.get('client')).toEqual({ value: 'cli-1', source: 'flag' });
  });

  it('refuses a field the provider does not have, naming the ones it has', () => {
    expect(() => resolveGiven(digitalocean, { ...none, set: ['tokn=abc'] })).toThrow(
      '--set tokn: digitalocean has no such field; use one of: token, apiUrl, timeoutSeconds',
    );
    expect(() => resolveGiven(digitalocean, { ...none, set: ['token'] })).toThrow('is not key=value');
  });

  it('gives stdin to the required secret field, without its final newline; flags win over env', () => {
    const resolved = resolveGiven(brightbox, {
      ...none,
      stdin: 's3cret\n',
      env: { BRIGHTBOX_CLIENT: 'cli-env', BRIGHTBOX_CLIENT_SECRET: 'from-env' },
      set: ['client=cli-flag'],
    });
    expect(resolved.get('clientSecret')).toEqual({ value: 's3cret', source: 'stdin' });
    expect(resolved.get('client')?.value).toBe('cli-flag');
  });

  it('reads the schema environment variables, first match wins (TRITON_* before SDC_*)', () => {
    const resolved = resolveGiven(triton, {
      ...none,
      env: { SDC_ACCOUNT: 'old', TRITON_ACCOUNT: 'new', SDC_URL: 'https://cloudapi.example' },
    });
    expect(resolved.get('account')).toEqual({ value: 'new', source: 'env' });
    expect(resolved.get('url')).toEqual({ value: 'https://cloudapi.example', source: 'env' });
  });

  it('--cloud-api-url fills the field the provider names for it', () => {
    const resolved = resolveGiven(digitalocean, { ...none, cloudApiUrl: 'http://127.0.0.1:1' });
    expect(resolved.get('apiUrl')).toEqual({ value: 'http://127.0.0.1:1', source: 'flag' });
  });
});
