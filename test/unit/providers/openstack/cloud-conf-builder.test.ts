import { describe, expect, it } from 'vitest';
import { cloudConfBuilder, gcfgValue } from '../../../../src/providers/openstack/cloud-conf-builder.js';
import { parseCloudConfig } from '../../../../src/providers/openstack/config.js';

const asked = (answers: Record<string, string>) =>
  cloudConfBuilder.questions.filter((q) => !q.when || q.when(answers)).map((q) => q.key);

describe('the cloud.conf built from answers', () => {
  it('asks for a password or an application credential, not both', () => {
    expect(asked({ auth: 'password' })).toEqual([
      'auth-url',
      'auth',
      'username',
      'password',
      'user-domain-name',
      'tenant-name',
      'tenant-domain-name',
      'region',
    ]);
    expect(asked({ auth: 'application-credential' })).toEqual([
      'auth-url',
      'auth',
      'application-credential-id',
      'application-credential-secret',
      'region',
    ]);
  });

  it('is read back by the provider parser with every value as typed, comment characters and quotes too', () => {
    const password = ' p;a#s"s\\w0rd ';
    const document = cloudConfBuilder.render({
      'auth-url': 'https://keystone.example.com:5000/v3',
      auth: 'password',
      username: 'demo',
      password,
      'user-domain-name': 'Default',
      'tenant-name': 'k8s',
      'tenant-domain-name': 'Default',
      region: 'RegionOne',
    });
    expect(document).toBe(
      [
        '[Global]',
        'auth-url = https://keystone.example.com:5000/v3',
        'username = demo',
        'password = " p;a#s\\"s\\\\w0rd "',
        'user-domain-name = Default',
        'tenant-name = k8s',
        'tenant-domain-name = Default',
        'region = RegionOne',
        '',
      ].join('\n'),
    );
    expect(cloudConfBuilder.check(document)).toBe(true);
    const global = parseCloudConfig(document).global;
    expect(global.region).toBe('RegionOne');
    expect(global.auth).toEqual({
      method: 'password',
      user: { name: 'demo', domain: { name: 'Default' } },
      password,
      project: { name: 'k8s', domain: { name: 'Default' } },
    });
  });

  it('an application credential, no region', () => {
    const document = cloudConfBuilder.render({
      'auth-url': 'http://10.0.0.5:5000/v3',
      auth: 'application-credential',
      'application-credential-id': 'abc123',
      'application-credential-secret': 's3cret',
    });
    expect(parseCloudConfig(document).global).toMatchObject({
      authUrl: 'http://10.0.0.5:5000/v3',
      region: '',
      auth: { method: 'application_credential', credential: { id: 'abc123' }, secret: 's3cret' },
    });
  });

  it('what the parser refuses is said in one line', () => {
    expect(cloudConfBuilder.check(cloudConfBuilder.render({ 'auth-url': 'https://k:5000/v3' }))).toMatch(
      /^the cloud.conf built from the answers: \[Global\] .*required/,
    );
    const url = cloudConfBuilder.questions.find((q) => q.key === 'auth-url');
    expect(url?.validate?.('keystone:5000')).toBe('an http(s) URL, please');
    expect(url?.validate?.('https://keystone:5000/v3')).toBe(true);
  });

  it('gcfg values: plain when safe, quoted with gcfg escapes otherwise', () => {
    expect(gcfgValue('RegionOne')).toBe('RegionOne');
    expect(gcfgValue('a;b')).toBe('"a;b"');
    expect(gcfgValue('tab\there')).toBe('"tab\\there"');
  });
});
