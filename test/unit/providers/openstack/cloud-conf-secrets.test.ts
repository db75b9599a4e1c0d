/**
 * A password in cloud.conf written with a typo (`:` or a space for `=`, or a value wrapped onto the
 * next line) reads as an unknown key: it never reaches the error message (the start-up error, the
 * reload warning). gcfg, which the official controller uses, reports only the position. Nor does a
 * bare value in a clouds.yaml `auth` flow mapping. An outside review's reproductions (RV5-3, RV5-4;
 * they failed on e958b3c).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cloudsYamlGlobal } from '../../../../src/providers/openstack/clouds-yaml.js';
import { parseCloudConfig } from '../../../../src/providers/openstack/config.js';

const head = '[Global]\nauth-url=https://keystone.example.com:5000/v3\nusername=admin\n';
const messageOf = (f: () => unknown) => {
  try {
    f();
    return '';
  } catch (err) {
    return (err as Error).message;
  }
};

describe('RV5-3: cloud.conf typos around the password', () => {
  for (const [what, text] of [
    ['a colon for =', `${head}password:Kq83SecretPw\n`],
    ['a space for =', `${head}password Kq83SecretPw\n`],
    ['the value wrapped onto the next line', `${head}password=\n  Kq83SecretPw\n`],
    [
      'application-credential-secret with a colon',
      `${head}application-credential-id=abc\napplication-credential-secret:Kq83SecretPw\n`,
    ],
  ] as const) {
    it(`${what}: the error does not carry the password`, () => {
      const message = messageOf(() => parseCloudConfig(text));
      expect(message).not.toBe('');
      // Keys are lower-cased on the way: the password is there, lower-cased.
      expect(message.toLowerCase()).not.toContain('kq83secretpw');
    });
  }
});

describe('RV5-4: clouds.yaml auth as a flow mapping with a bare value', () => {
  it('the error does not carry the value', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'rv5-4-')), 'clouds.yaml');
    writeFileSync(file, 'clouds:\n  a:\n    auth: {auth_url: "https://k/v3", username: u, Kq83SecretPw}\n');
    const message = messageOf(() => cloudsYamlGlobal([file], 'a'));
    expect(message).not.toBe('');
    expect(message).not.toContain('Kq83SecretPw');
  });
});
